/* version: what the programs print for --version and export as
 * virtflow_build_info, fixed when they are built. */
#ifndef VF_VERSION_H
#define VF_VERSION_H

/* The project's version, project(... VERSION ...) in CMakeLists.txt ("0.1.0"). */
const char *vf_version(void);

/* The git commit the build was made from (12 hex digits), or "" when the
 * source was not a git checkout or git was missing when it was built. */
const char *vf_version_commit(void);

/* "<program> <version>" and " (commit <commit>)" when known, one line, to
 * stdout: every program's --version. */
void vf_version_print(const char *program);

#endif
