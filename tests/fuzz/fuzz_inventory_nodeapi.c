/* fuzz_inventory_nodeapi: a virtflow-scheduler node API response (JSON array
 * of hosts, or {"nodes": [...]}) as source_http_fetch parses it. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *root = json_loadb((const char *)data, size, 0, &jerr);
    if (!root)
        return 0;
    hostset *set = host_json_inventory(root, NULL);
    hostset_free(set);
    json_decref(root);
    return 0;
}
