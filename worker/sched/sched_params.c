#include "sched_params.h"

#include <string.h>

void sched_params_from_config(sched_params *out, const vf_config *config)
{
    memset(out, 0, sizeof *out);
    out->overcommit_cpu = config->scheduler.overcommit_cpu;
    out->overcommit_memory = config->scheduler.overcommit_memory;
    out->reserve_cpu = config->scheduler.reserve_cpu;
    out->reserve_memory = config->scheduler.reserve_memory;
    out->dedicated_exclusive = config->scheduler.dedicated_exclusive;
    out->subset_size = config->scheduler.subset_size;
    /* Several workers share a PostgreSQL store (one per machine): spread
     * their picks over the near-best so they do not all claim one host. By
     * worker, not by task: a batch keyed by task touches most of the hosts,
     * so two batches decided at once nearly always met on one, and 35-50% of
     * them were decided again (docs/benchmarks.md). The worker's id is the
     * caller's to set. */
    config_near_best by = config->scheduler.near_best_by;
    if (by == CONFIG_NEAR_BEST_AUTO)
        by = config->store.url ? CONFIG_NEAR_BEST_WORKER : CONFIG_NEAR_BEST_OFF;
    out->near_best_by = by == CONFIG_NEAR_BEST_WORKER ? NEAR_BEST_BY_WORKER : NEAR_BEST_BY_TASK;
    out->near_best_width = by == CONFIG_NEAR_BEST_OFF ? 1 : config->scheduler.near_best_hosts;
    out->near_best_max_loss = config->scheduler.near_best_max_loss;
    /* Likewise the vmids: each worker its own residue class first. */
    int stride = config->scheduler.vmid_stride;
    if (stride == 0)
        stride = config->store.url ? SCHED_VMID_STRIDE_SHARED : 1;
    out->vmid_stride = (uint32_t)stride;
    out->plugins = config->scheduler.plugins;
    out->n_plugins = config->scheduler.n_plugins;
    out->pack = config->scheduler.strategy == CONFIG_STRATEGY_PACK;
    out->regex_search = config->scheduler.regex_match == CONFIG_REGEX_SEARCH;
}

void sched_params_for_profile(sched_params *out, const sched_params *base,
                              const config_profile *profile)
{
    *out = *base;
    out->plugins = profile->plugins;
    out->n_plugins = profile->n_plugins;
    out->pack = profile->strategy == CONFIG_STRATEGY_PACK;
}
