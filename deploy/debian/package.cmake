# The .deb (cpack -G DEB, or `cpack` in the build tree): what `cmake --install`
# installs, with its shared-library dependencies computed by dpkg-shlibdeps
# (dpkg-dev), /etc/virtflow/config.yaml as a conffile, a postinst that
# creates the `virtflow` user the systemd units run as and the directories and
# files the configuration names, a prerm that stops the services on removal
# and a postrm that reloads systemd. Configure with
# -DCMAKE_INSTALL_PREFIX=/usr for a package: GNUInstallDirs then puts the
# configuration in /etc (not /usr/etc) and the units' ExecStart names /usr/bin.
include(GNUInstallDirs)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME virtflow)
set(CPACK_PACKAGE_VENDOR virtflow)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "VM placement service: worker, webhook relay, HTTP API and virtflowctl")
set(CPACK_PACKAGE_CONTACT "virtflow maintainers <virtflow@example.org>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# adduser only where systemd-sysusers is missing (postinst).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "systemd, rabbitmq-server")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(VF_DEB_CONFFILES ${PROJECT_BINARY_DIR}/debian/conffiles)
file(WRITE ${VF_DEB_CONFFILES} "${CMAKE_INSTALL_FULL_SYSCONFDIR}/virtflow/config.yaml\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${VF_DEB_CONFFILES}
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
