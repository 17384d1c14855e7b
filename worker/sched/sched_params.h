/* sched_params: the engine's parameters, and how the scheduler section of
 * a configuration (or one of its profiles) becomes them. The plugins' own
 * settings are plugin_config's (plugin_config.h); these are the rest, and
 * the plugin entries they carry to it. No I/O. */
#ifndef VF_SCHED_PARAMS_H
#define VF_SCHED_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "near_best.h"

/* scheduler.vmid_stride auto with store.url (several workers may share it). */
#define SCHED_VMID_STRIDE_SHARED 64

typedef struct sched_params {
    double overcommit_cpu;    /* > 0: vCPUs allowed per core */
    double overcommit_memory; /* > 0 */
    double reserve_cpu;       /* cores per host kept free, before overcommit */
    int64_t reserve_memory;   /* MiB per host kept free, before overcommit */
    bool dedicated_exclusive; /* shared requests stay off dedicated hosts */
    int subset_size;          /* >= 1; > 1 picks at random among the top N */
    /* A pick among the near-best (near_best.h): by the request's task_id
     * among the near_best_width best (on when > 1), or by near_best_worker
     * among every host within near_best_max_loss (on when not empty). */
    near_best_key near_best_by;
    int near_best_width;
    double near_best_max_loss;  /* score points a near-best pick may give up, >= 0 */
    char near_best_worker[256]; /* the worker instance (its lease owner name, STORE_OWNER_SIZE) */
    /* > 1 with near_best_worker set: while other workers share the store
     * (sched_engine_set_vmid_spread), the worker takes the lowest free vmid
     * congruent to hash(near_best_worker) modulo this first, then the lowest
     * free one (vmid_pick_strided); 1: the lowest free vmid. */
    uint32_t vmid_stride;
    uint64_t seed;                /* random source for subset picks; 0 = from the clock */
    const config_plugin *plugins; /* borrowed during sched_engine_new only */
    size_t n_plugins;
    bool pack;         /* scheduler.strategy: pack (MostAllocated on, FreeResources off) */
    bool regex_search; /* scheduler.regex_match: search (default full: whole names) */
} sched_params;

/* Take the scheduler section of a loaded config (profile "default"). */
void sched_params_from_config(sched_params *out, const vf_config *config);

/* The params of profile scheduler.profiles.NAME: `base` (from
 * sched_params_from_config, with the caller's settings such as
 * near_best_worker) with the profile's strategy and plugins. */
void sched_params_for_profile(sched_params *out, const sched_params *base,
                              const config_profile *profile);

#endif
