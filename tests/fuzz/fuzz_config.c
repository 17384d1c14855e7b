/* fuzz_config: a YAML configuration file through config_load_string. */
#include "config.h"
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *config = config_load_string((const char *)data, size, "fuzz.yaml", &err);
    config_free(config);
    return 0;
}
