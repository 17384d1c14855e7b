/* Shared by the fuzz targets: quiet logging and a small fixed inventory, so
 * every target starts from the same world. Header-only on purpose: each
 * target is one program. */
#ifndef VF_FUZZ_COMMON_H
#define VF_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "host_json.h"
#include "hostset.h"
#include "log.h"

/* Four hosts over two pools, one dedicated, one in maintenance, with used
 * vmids, traits and custom resources, so the filters, scores and vmid
 * selection all have work to do. */
static const char fuzz_inventory_json[] =
    "{\"nodes\": ["
    "{\"name\":\"bm-001\",\"ip\":\"10.0.0.1\",\"pool\":\"default\",\"cpu\":16,\"memory\":65536,"
    "\"storage\":1000,\"max_vms\":10,\"current_vms\":2,\"vmids\":[100,101]},"
    "{\"name\":\"bm-002\",\"ip\":\"10.0.0.2\",\"pool\":\"default\",\"cpu\":32,\"memory\":131072,"
    "\"storage\":2000,\"usage_cpu\":0.5,\"usage_mem\":0.25,\"traits\":[\"ssd\",\"CUSTOM_A\"],"
    "\"resources\":{\"gpu\":2}},"
    "{\"name\":\"bm-003\",\"pool\":\"gpu\",\"dedicated\":true,\"cpu\":64,\"memory\":262144,"
    "\"storage\":4000,\"vmids\":[120],\"traits\":[\"CUSTOM_GPU\"],\"resources\":{\"gpu\":8,"
    "\"fpga\":1}},"
    "{\"name\":\"node7\",\"pool\":\"default\",\"status\":\"maintenance\",\"cpu\":8,"
    "\"memory\":16384}],"
    "\"vmids\": [102, 130]}";

/* The fixed inventory as a finished hostset, or NULL (a bug in the fixture). */
static inline hostset *fuzz_hosts(void)
{
    json_error_t jerr;
    json_t *root = json_loads(fuzz_inventory_json, 0, &jerr);
    if (!root)
        return NULL;
    hostset *set = host_json_inventory(root, NULL);
    json_decref(root);
    return set;
}

/* Fuzzing makes every error path run millions of times: keep stderr for
 * the sanitizers' reports. */
static inline void fuzz_quiet(void)
{
    vf_log_set_level(VF_LOG_ERROR);
}

#endif
