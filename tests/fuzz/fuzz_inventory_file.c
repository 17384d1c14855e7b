/* fuzz_inventory_file: an inventory file (YAML or JSON) through the streaming
 * loader, host by host, as source_file_fetch reads it. */
#include "fuzz_common.h"
#include "source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hostset *set = source_file_parse((const char *)data, size, NULL);
    hostset_free(set);
    return 0;
}
