/* fuzz_inventory_file: an inventory file (YAML or JSON) through yaml_json_load
 * and host_json_inventory, as source_file_fetch reads it. */
#include "fuzz_common.h"
#include "yaml_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *root = yaml_json_load((const char *)data, size, NULL);
    if (!root)
        return 0;
    hostset *set = host_json_inventory(root, NULL);
    hostset_free(set);
    json_decref(root);
    return 0;
}
