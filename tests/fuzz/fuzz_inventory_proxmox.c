/* fuzz_inventory_proxmox: a Proxmox VE cluster/resources response through
 * source_proxmox_parse, as source_proxmox_fetch parses it. */
#include "fuzz_common.h"
#include "source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *root = json_loadb((const char *)data, size, 0, &jerr);
    if (!root)
        return 0;
    hostset *set = source_proxmox_parse(root, NULL);
    hostset_free(set);
    json_decref(root);
    return 0;
}
