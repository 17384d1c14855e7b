/* engine_profiles: scheduling profiles (scheduler.profiles): engines that
 * decide by their own filters, scores and strategy over the snapshot and
 * reservations of the engine that owns them (engine_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "grow.h"

int sched_engine_add_profile(sched_engine *engine, const char *name, const sched_params *params,
                             vf_error *err)
{
    if (!name[0] || strlen(name) >= SCHED_PROFILE_NAME_LEN ||
        strcmp(name, SCHED_PROFILE_DEFAULT) == 0 || sched_engine_profile(engine, name)) {
        vf_error_set(err, VF_ECONFIG,
                     "scheduler.profiles.%.64s: a profile name is 1..%d "
                     "characters, not \"default\", and given once",
                     name, SCHED_PROFILE_NAME_LEN - 1);
        return -1;
    }
    if (resize_array((void **)&engine->profiles, engine->n_profiles + 1, sizeof *engine->profiles) <
        0) {
        vf_error_set(err, VF_ENOMEM, "out of memory creating scheduler profile %s", name);
        return -1;
    }
    sched_engine *profile = sched_engine_new(params, err);
    if (!profile)
        return -1;
    snprintf(profile->profile_name, sizeof profile->profile_name, "%s", name);
    profile->vmids.spread = engine->vmids.spread;
    if (engine->vmids.slot_given)
        vmid_hints_set_slot(&profile->vmids, engine->vmids.slot);
    /* Added late (tests; the worker adds them first): catch up. */
    int rc = engine->hosts ? sched_engine_set_hosts(profile, engine->hosts, NULL, NULL, err) : 0;
    for (size_t i = 0; rc == 0 && i < engine->holds.n_held; i++) {
        sched_reservation res;
        hold_to_reservation(&engine->holds.held[i], &res);
        rc = sched_engine_reserve(profile, &res, err);
    }
    if (rc < 0) {
        sched_engine_free(profile);
        return -1;
    }
    engine->profiles[engine->n_profiles++] = profile;
    return 0;
}

sched_engine *sched_engine_from_config(const vf_config *config, const char *worker, vf_error *err)
{
    sched_params params;
    sched_params_from_config(&params, config);
    if (worker)
        snprintf(params.near_best_worker, sizeof params.near_best_worker, "%s", worker);
    sched_engine *engine = sched_engine_new(&params, err);
    for (size_t i = 0; engine && i < config->scheduler.n_profiles; i++) {
        const config_profile *profile = &config->scheduler.profiles[i];
        sched_params profile_params;
        sched_params_for_profile(&profile_params, &params, profile);
        if (sched_engine_add_profile(engine, profile->name, &profile_params, err) < 0) {
            sched_engine_free(engine);
            engine = NULL;
        }
    }
    return engine;
}

sched_engine *sched_engine_profile(sched_engine *engine, const char *name)
{
    if (!name || !name[0] || strcmp(name, engine->profile_name) == 0)
        return engine;
    for (size_t i = 0; i < engine->n_profiles; i++)
        if (strcmp(engine->profiles[i]->profile_name, name) == 0)
            return engine->profiles[i];
    return NULL;
}

const char *sched_engine_profile_name(const sched_engine *engine)
{
    return engine->profile_name;
}
