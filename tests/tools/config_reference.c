/* config_reference: prints docs/configuration.md from the key table.
 *   build/tests/config_reference > docs/configuration.md
 * The test docs.configuration_reference compares its output with the
 * committed page. */
#include <stdio.h>

#include "config.h"

int main(void)
{
    vf_error err = {0};
    if (config_write_reference(stdout, &err) < 0) {
        fprintf(stderr, "config_reference: %s\n", err.text);
        return 1;
    }
    return 0;
}
