/* The one place plugins are registered: the names configuration uses, the
 * defaults, and the rule (plugins.h) each name stands for. The order in which
 * filters run and scores sum is that of the ids, not of this table; the table
 * lists them in the same order so "known: ..." messages read the same way. */
#include "plugins.h"

const sched_plugin sched_plugins[] = {
    {"Pool", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_POOL, NULL},
    {"Dedicated", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_DEDICATED, NULL},
    {"NodeStatus", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_STATUS, NULL},
    {"NodeName", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_NODE_NAME, NULL},
    {"NodeRegex", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_NODE_REGEX, NULL},
    {"Traits", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_TRAITS, NULL},
    {"VMSlots", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_VM_SLOTS, NULL},
    {"CPUOvercommit", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_CPU, "ratio, reserve"},
    {"MemoryOvercommit", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_MEMORY, "ratio, reserve"},
    {"Disk", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_DISK, NULL},
    {"Resources", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_RESOURCES, NULL},
    {"TopologySpread", CONFIG_PLUGIN_FILTER, true, 0, SCHED_FILTER_TOPOLOGY_SPREAD, NULL},
    {"FreeResources", CONFIG_PLUGIN_SCORE, true, 1, SCHED_SCORE_FREE, NULL},
    {"MostAllocated", CONFIG_PLUGIN_SCORE, false, 1, SCHED_SCORE_MOST_ALLOCATED, NULL},
    {"Balanced", CONFIG_PLUGIN_SCORE, true, 1, SCHED_SCORE_BALANCED, NULL},
    {"VMSlots", CONFIG_PLUGIN_SCORE, true, 1, SCHED_SCORE_VM_SLOTS, NULL},
    {"TargetLoadPacking", CONFIG_PLUGIN_SCORE, false, 1, SCHED_SCORE_TARGET_LOAD,
     "target_percent, missing_score"},
    /* As much as the three default scores together, as Kubernetes weighs
     * its PodTopologySpread above its resource scores: a preference asked
     * for should mostly be followed. Only for requests with a soft spread. */
    {"TopologySpread", CONFIG_PLUGIN_SCORE, true, 3, SCHED_SCORE_TOPOLOGY_SPREAD, NULL},
    {"Range", CONFIG_PLUGIN_VMID, true, 0, SCHED_VMID_RANGE, NULL},
    {"Regex", CONFIG_PLUGIN_VMID, true, 0, SCHED_VMID_REGEX, NULL},
};

const size_t sched_plugin_count = sizeof sched_plugins / sizeof sched_plugins[0];

/* qemu-scheduler's (and CAPPX's) score NodeResource prefers the node with
 * the most free CPU and memory: FreeResources. */
const sched_plugin_alias sched_plugin_aliases[] = {
    {"NodeResource", CONFIG_PLUGIN_SCORE, "FreeResources"},
    /* the seeds' name for the vmid regex plugin */
    {"VMIDRegex", CONFIG_PLUGIN_VMID, "Regex"},
};

const size_t sched_plugin_alias_count =
    sizeof sched_plugin_aliases / sizeof sched_plugin_aliases[0];
