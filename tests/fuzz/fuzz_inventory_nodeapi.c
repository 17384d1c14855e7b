/* fuzz_inventory_nodeapi: a virtflow-scheduler node API response (JSON array
 * of hosts, or {"nodes": [...]}) as source_http_fetch parses it, host by host. */
#include "fuzz_common.h"
#include "source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t syntax;
    hostset *set = source_http_parse((const char *)data, size, &syntax, NULL);
    hostset_free(set);
    return 0;
}
