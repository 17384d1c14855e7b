/* The one place plugins are registered: the names configuration uses, the
 * defaults, and the rule (plugins.h) each name stands for. The order in which
 * filters run and scores sum is that of the ids, not of this table; the table
 * lists them in the same order so "known: ..." messages read the same way. */
#include "plugins.h"

const sched_plugin sched_plugins[] = {
    {"Pool", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_POOL},
    {"Dedicated", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_DEDICATED},
    {"NodeStatus", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_STATUS},
    {"NodeName", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_NODE_NAME},
    {"NodeRegex", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_NODE_REGEX},
    {"VMSlots", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_VM_SLOTS},
    {"CPUOvercommit", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_CPU},
    {"MemoryOvercommit", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_MEMORY},
    {"Disk", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_DISK},
    {"FreeResources", CONFIG_PLUGIN_SCORE, true, 1, SCHED_SCORE_FREE},
    {"MostAllocated", CONFIG_PLUGIN_SCORE, false, 1, SCHED_SCORE_MOST_ALLOCATED},
    {"Balanced", CONFIG_PLUGIN_SCORE, true, 1, SCHED_SCORE_BALANCED},
    {"VMSlots", CONFIG_PLUGIN_SCORE, true, 1, SCHED_SCORE_VM_SLOTS},
    {"Range", CONFIG_PLUGIN_VMID, true, 0, SCHED_VMID_RANGE},
    {"Regex", CONFIG_PLUGIN_VMID, true, 0, SCHED_VMID_REGEX},
};

const size_t sched_plugin_count = sizeof sched_plugins / sizeof sched_plugins[0];
