# Writes version_generated.h: VERSION (given) and the git commit of
# SOURCE_DIR when git can tell it. Run at every build (cheap: one git call);
# the file is rewritten only when its text changes, so nothing recompiles
# unless the commit did.
#   cmake -DVERSION=0.1.0 -DSOURCE_DIR=... -DOUT=.../version_generated.h -P version.cmake
set(commit "")
find_program(GIT git)
if(GIT)
  execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0 OR NOT commit MATCHES "^[0-9a-f]+$")
    set(commit "")
  endif()
endif()
set(text "/* Written by common/base/version.cmake at build time. */\n#define VF_VERSION \"${VERSION}\"\n#define VF_VERSION_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
