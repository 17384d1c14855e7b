/* version: see version.h. The numbers come from version_generated.h, which
 * the build writes (common/base/version.cmake) and rewrites only when they change. */
#include "version.h"

#include <stdio.h>

#include "version_generated.h"

const char *vf_version(void)
{
    return VF_VERSION;
}

const char *vf_version_commit(void)
{
    return VF_VERSION_COMMIT;
}

void vf_version_print(const char *program)
{
    if (VF_VERSION_COMMIT[0])
        printf("%s %s (commit %s)\n", program, VF_VERSION, VF_VERSION_COMMIT);
    else
        printf("%s %s\n", program, VF_VERSION);
}
