/* plugin_config: turning scheduler.strategy and the plugin entries of the
 * configuration (scheduler.plugins, plugin_config, a profile's plugins) into
 * what the engine runs: which filters are on, each score's weight, the
 * plugins' args. Pure: no I/O, no engine; the engine keeps the result. */
#include "plugin_config.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "plugins.h"

static const char *kind_key(config_plugin_kind kind)
{
    switch (kind) {
    case CONFIG_PLUGIN_FILTER:
        return "filters";
    case CONFIG_PLUGIN_SCORE:
        return "scores";
    case CONFIG_PLUGIN_VMID:
        return "vmids";
    }
    return "?";
}

/* Where a plugin entry was written, for messages. */
static void entry_where(const config_plugin *conf, char *out, size_t size)
{
    const char *section = conf->section ? conf->section : "scheduler";
    if (conf->file && conf->section)
        snprintf(out, size, "%s:%d: %s.%s (%s.plugin_config)", conf->file, conf->line,
                 kind_key(conf->kind), conf->name, section);
    else if (conf->file)
        snprintf(out, size, "%s:%d: %s.%s", conf->file, conf->line, kind_key(conf->kind),
                 conf->name);
    else
        snprintf(out, size, "line %d: %s.plugins.%s.%s", conf->line, section, kind_key(conf->kind),
                 conf->name);
}

/* The registry index of the plugin `conf` names (directly or by an alias),
 * or sched_plugin_count. */
static size_t plugin_index(const config_plugin *conf)
{
    const char *name = conf->name;
    for (size_t a = 0; a < sched_plugin_alias_count; a++)
        if (sched_plugin_aliases[a].kind == conf->kind &&
            strcmp(sched_plugin_aliases[a].name, name) == 0)
            name = sched_plugin_aliases[a].means;
    size_t p = 0;
    while (p < sched_plugin_count &&
           !(sched_plugins[p].kind == conf->kind && strcmp(sched_plugins[p].name, name) == 0))
        p++;
    return p;
}

/* Refuse an `args:` entry the plugin does not take. `takes` lists the ones
 * it does ("ratio, reserve"), NULL for none. */
static int check_args(const config_plugin *conf, const char *takes, vf_error *err)
{
    /* config_plugin_arg_set walks the key table, so an argument added there
     * is refused here until a plugin's registry row lists it. */
    const char *arg;
    for (size_t i = 0; (arg = config_plugin_arg_set(conf, i)); i++) {
        if (takes && strstr(takes, arg))
            continue;
        char where[320];
        entry_where(conf, where, sizeof where);
        vf_error_set(err, VF_ECONFIG, "%s.args.%s: %s takes no argument %s (it takes: %s)", where,
                     arg, conf->name, arg, takes ? takes : "none");
        return -1;
    }
    return 0;
}

/* Random: qemu-scheduler's random score, here a random pick among the top
 * subset_size hosts (a random score at equal weight does the same: it
 * reorders hosts whose resource scores are close). */
static int configure_random(sched_params *applied, const config_plugin *conf, vf_error *err)
{
    if (check_args(conf, "subset_size, seed", err) < 0)
        return -1;
    if (conf->has_weight) {
        char where[320];
        entry_where(conf, where, sizeof where);
        vf_error_set(err, VF_ECONFIG,
                     "%s.weight: Random takes no weight: it picks at random among the top "
                     "args.subset_size hosts",
                     where);
        return -1;
    }
    if (!conf->enable) {
        applied->subset_size = 1;
        return 0;
    }
    applied->subset_size = conf->has_subset_size ? conf->subset_size : SCHED_RANDOM_DEFAULT_SUBSET;
    if (conf->has_seed)
        applied->seed = (uint64_t)conf->seed;
    return 0;
}

/* A plugin's args: the overcommit filters carry scheduler.overcommit and
 * scheduler.reserve for their resource; TargetLoadPacking its target and the
 * score of a host without usage figures. */
static void apply_args(plugin_config *setup, sched_params *applied, const sched_plugin *plugin,
                       const config_plugin *conf)
{
    if (plugin->kind == CONFIG_PLUGIN_SCORE && plugin->id == SCHED_SCORE_TARGET_LOAD) {
        if (conf->has_target_percent)
            setup->target_percent = conf->target_percent;
        if (conf->has_missing_score)
            setup->missing_score = conf->missing_score;
        return;
    }
    if (plugin->kind != CONFIG_PLUGIN_FILTER)
        return;
    if (plugin->id == SCHED_FILTER_CPU) {
        if (conf->has_ratio)
            applied->overcommit_cpu = conf->ratio;
        if (conf->has_reserve)
            applied->reserve_cpu = conf->reserve;
    } else if (plugin->id == SCHED_FILTER_MEMORY) {
        if (conf->has_ratio)
            applied->overcommit_memory = conf->ratio;
        if (conf->has_reserve)
            applied->reserve_memory = (int64_t)llround(conf->reserve);
    }
}

int plugin_config_apply(plugin_config *setup, sched_params *applied, const sched_params *params,
                        vf_error *err)
{
    memset(setup, 0, sizeof *setup);
    setup->target_percent = SCHED_TARGET_LOAD_DEFAULT_PERCENT;
    setup->missing_score = SCHED_TARGET_LOAD_DEFAULT_MISSING;
    bool enabled[64];
    double weight[64];
    if (sched_plugin_count > 64) {
        vf_error_set(err, VF_EINTERNAL, "too many plugins registered");
        return -1;
    }
    for (size_t p = 0; p < sched_plugin_count; p++) {
        enabled[p] = sched_plugins[p].enabled_by_default;
        weight[p] = sched_plugins[p].default_weight;
        /* FreeResources is 100 - MostAllocated: with both on at equal weight
         * they cancel out, so the strategy switches one off as it turns the
         * other on. Explicit entries below still win. */
        if (params->pack && sched_plugins[p].kind == CONFIG_PLUGIN_SCORE &&
            (sched_plugins[p].id == SCHED_SCORE_FREE ||
             sched_plugins[p].id == SCHED_SCORE_MOST_ALLOCATED))
            enabled[p] = sched_plugins[p].id == SCHED_SCORE_MOST_ALLOCATED;
    }
    for (size_t i = 0; i < params->n_plugins; i++) {
        const config_plugin *conf = &params->plugins[i];
        if (conf->kind == CONFIG_PLUGIN_SCORE && strcmp(conf->name, SCHED_PLUGIN_RANDOM) == 0) {
            if (configure_random(applied, conf, err) < 0)
                return -1;
            continue;
        }
        size_t p = plugin_index(conf);
        if (p == sched_plugin_count) {
            char known[320] = "";
            size_t used = 0;
            for (size_t q = 0; q < sched_plugin_count + sched_plugin_alias_count + 1; q++) {
                const char *name = NULL;
                if (q < sched_plugin_count && sched_plugins[q].kind == conf->kind)
                    name = sched_plugins[q].name;
                else if (q >= sched_plugin_count &&
                         q < sched_plugin_count + sched_plugin_alias_count &&
                         sched_plugin_aliases[q - sched_plugin_count].kind == conf->kind)
                    name = sched_plugin_aliases[q - sched_plugin_count].name;
                else if (q == sched_plugin_count + sched_plugin_alias_count &&
                         conf->kind == CONFIG_PLUGIN_SCORE)
                    name = SCHED_PLUGIN_RANDOM;
                if (!name)
                    continue;
                int wrote =
                    snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "", name);
                if (wrote > 0 && (size_t)wrote < sizeof known - used)
                    used += (size_t)wrote;
            }
            char where[320];
            entry_where(conf, where, sizeof where);
            vf_error_set(err, VF_ECONFIG, "%s: unknown plugin (known: %s)", where, known);
            return -1;
        }
        if (check_args(conf, sched_plugins[p].args, err) < 0)
            return -1;
        apply_args(setup, applied, &sched_plugins[p], conf);
        enabled[p] = conf->enable;
        if (conf->has_weight)
            weight[p] = conf->weight;
    }
    for (size_t p = 0; p < sched_plugin_count; p++) {
        const sched_plugin *plugin = &sched_plugins[p];
        if (!enabled[p])
            continue;
        switch (plugin->kind) {
        case CONFIG_PLUGIN_FILTER:
            setup->filter_on[plugin->id] = true;
            break;
        case CONFIG_PLUGIN_SCORE:
            if (weight[p] > 0) {
                setup->score_weight[plugin->id] = weight[p];
                setup->score_name[plugin->id] = plugin->name;
            }
            break;
        case CONFIG_PLUGIN_VMID:
            if (plugin->id == SCHED_VMID_RANGE)
                setup->vmid_range_enabled = true;
            else
                setup->vmid_regex_enabled = true;
            break;
        }
    }
    /* In the order the scores are summed, so the division per host uses
     * exactly the figure a per-score accumulation would. TopologySpread
     * scores only requests with a soft spread, which add its weight then. */
    for (int s = 0; s < SCHED_SCORE_COUNT; s++)
        if (s != SCHED_SCORE_TOPOLOGY_SPREAD)
            setup->weights += setup->score_weight[s];
    return 0;
}
