/* The one place plugins are registered. Order matters: filters run in this
 * order and a rejected host is charged to the first filter that fails, so
 * categorical checks (pool, dedicated, status, name) come before capacity. */
#include "plugins.h"

const sched_plugin sched_plugins[] = {
    {"Pool", CONFIG_PLUGIN_FILTER, true, 0, sched_filter_pool, NULL, 0},
    {"Dedicated", CONFIG_PLUGIN_FILTER, true, 0, sched_filter_dedicated, NULL, 0},
    {"NodeStatus", CONFIG_PLUGIN_FILTER, true, 0, sched_filter_status, NULL, 0},
    {"NodeRegex", CONFIG_PLUGIN_FILTER, true, 0, sched_filter_node_regex, NULL, 0},
    {"VMSlots", CONFIG_PLUGIN_FILTER, true, 0, sched_filter_vm_slots, NULL, 0},
    {"CPUOvercommit", CONFIG_PLUGIN_FILTER, true, 0, sched_filter_cpu, NULL, 0},
    {"MemoryOvercommit", CONFIG_PLUGIN_FILTER, true, 0, sched_filter_memory, NULL, 0},
    {"Disk", CONFIG_PLUGIN_FILTER, true, 0, sched_filter_disk, NULL, 0},
    {"FreeResources", CONFIG_PLUGIN_SCORE, true, 1, NULL, sched_score_free, 0},
    {"MostAllocated", CONFIG_PLUGIN_SCORE, false, 1, NULL, sched_score_most_allocated, 0},
    {"Balanced", CONFIG_PLUGIN_SCORE, true, 1, NULL, sched_score_balanced, 0},
    {"VMSlots", CONFIG_PLUGIN_SCORE, true, 1, NULL, sched_score_vm_slots, 0},
    {"Range", CONFIG_PLUGIN_VMID, true, 0, NULL, NULL, SCHED_VMID_RANGE},
    {"Regex", CONFIG_PLUGIN_VMID, true, 0, NULL, NULL, SCHED_VMID_REGEX},
};

const size_t sched_plugin_count = sizeof sched_plugins / sizeof sched_plugins[0];
