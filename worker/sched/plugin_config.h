/* plugin_config: what the configuration says the engine runs.
 *
 * scheduler.strategy, then the plugin entries (scheduler.plugins and
 * plugin_config's entries, or a profile's), over the registry's defaults
 * (registry.c): which filters are on, the weight of each score, and the
 * plugins' args. Pure: no I/O; the engine (engine.c) keeps the result and
 * reads it on every decision. */
#ifndef VF_PLUGIN_CONFIG_H
#define VF_PLUGIN_CONFIG_H

#include <stdbool.h>

#include "plugins.h"
#include "sched_params.h"
#include "vf_error.h"

/* The plugins a configuration turns on, ready for the engine. */
typedef struct plugin_config {
    bool filter_on[SCHED_FILTER_COUNT];
    double score_weight[SCHED_SCORE_COUNT];    /* 0: the score is off */
    const char *score_name[SCHED_SCORE_COUNT]; /* static: the registry's names */
    double weights;        /* sum of score_weight but TopologySpread's, added in id order */
    double target_percent; /* TargetLoadPacking: 0 < T < 100 */
    double missing_score;  /* TargetLoadPacking: a host without usage figures */
    bool vmid_range_enabled;
    bool vmid_regex_enabled;
} plugin_config;

/* Fill *setup from params->pack and params->plugins (read only during the
 * call). The plugins' args that are engine parameters (CPUOvercommit's and
 * MemoryOvercommit's ratio and reserve, Random's subset_size and seed) are
 * written into *applied, which the caller has set to *params beforehand.
 * Returns 0, or -1 with VF_ECONFIG in err for an unknown plugin, an argument
 * the plugin does not take, or a weight on Random ("file:line: ..." when the
 * entry came from a file). */
int plugin_config_apply(plugin_config *setup, sched_params *applied, const sched_params *params,
                        vf_error *err) __attribute__((warn_unused_result));

#endif
