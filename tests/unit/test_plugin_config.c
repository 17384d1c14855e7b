/* plugin_config on its own: the registry's defaults, the strategy's swap of
 * FreeResources for MostAllocated, entries over them (off, weight, args into
 * the engine's parameters), aliases, Random, and the errors: an unknown name
 * listing the known ones, an argument the plugin does not take, a weight on
 * Random, each saying where the entry was written. */
#include <string.h>

#include "config.h"
#include "plugin_config.h"
#include "testlib.h"

static config_plugin entry(config_plugin_kind kind, const char *name, int line)
{
    config_plugin p;
    memset(&p, 0, sizeof p);
    p.kind = kind;
    snprintf(p.name, sizeof p.name, "%s", name);
    p.enable = true;
    p.line = line;
    return p;
}

static sched_params base_params(const config_plugin *plugins, size_t n, bool pack)
{
    vf_config *config = config_defaults();
    sched_params params;
    sched_params_from_config(&params, config);
    config_free(config);
    params.plugins = plugins;
    params.n_plugins = n;
    params.pack = pack;
    return params;
}

static void test_defaults(void)
{
    sched_params params = base_params(NULL, 0, false), applied = params;
    plugin_config setup;
    vf_error err;
    vf_error_init(&err);
    CHECK(plugin_config_apply(&setup, &applied, &params, &err) == 0);
    for (int f = 0; f < SCHED_FILTER_COUNT; f++)
        CHECKF(setup.filter_on[f], "filter %d on by default", f);
    CHECK(setup.score_weight[SCHED_SCORE_FREE] == 1);
    CHECK(setup.score_weight[SCHED_SCORE_MOST_ALLOCATED] == 0);
    CHECK(setup.score_weight[SCHED_SCORE_BALANCED] == 1);
    CHECK(setup.score_weight[SCHED_SCORE_VM_SLOTS] == 1);
    CHECK(setup.score_weight[SCHED_SCORE_TARGET_LOAD] == 0);
    CHECK(setup.weights == 3);
    CHECK_STR(setup.score_name[SCHED_SCORE_FREE], "FreeResources");
    CHECK(setup.score_name[SCHED_SCORE_MOST_ALLOCATED] == NULL);
    CHECK(setup.target_percent == SCHED_TARGET_LOAD_DEFAULT_PERCENT);
    CHECK(setup.missing_score == SCHED_TARGET_LOAD_DEFAULT_MISSING);
    CHECK(setup.vmid_range_enabled && setup.vmid_regex_enabled);
    CHECK(applied.overcommit_cpu == params.overcommit_cpu);

    /* strategy: pack turns MostAllocated on and FreeResources off. */
    params = base_params(NULL, 0, true);
    applied = params;
    CHECK(plugin_config_apply(&setup, &applied, &params, &err) == 0);
    CHECK(setup.score_weight[SCHED_SCORE_FREE] == 0);
    CHECK(setup.score_weight[SCHED_SCORE_MOST_ALLOCATED] == 1);
    CHECK(setup.weights == 3);
}

static void test_entries(void)
{
    config_plugin plugins[6];
    plugins[0] = entry(CONFIG_PLUGIN_FILTER, "Pool", 3);
    plugins[0].enable = false;
    plugins[1] = entry(CONFIG_PLUGIN_FILTER, "CPUOvercommit", 4);
    plugins[1].has_ratio = true;
    plugins[1].ratio = 8;
    plugins[1].has_reserve = true;
    plugins[1].reserve = 2;
    plugins[2] = entry(CONFIG_PLUGIN_SCORE, "NodeResource", 5); /* FreeResources */
    plugins[2].has_weight = true;
    plugins[2].weight = 3;
    plugins[3] = entry(CONFIG_PLUGIN_SCORE, "TargetLoadPacking", 6);
    plugins[3].has_target_percent = true;
    plugins[3].target_percent = 60;
    plugins[4] = entry(CONFIG_PLUGIN_SCORE, "Random", 7);
    plugins[4].has_subset_size = true;
    plugins[4].subset_size = 4;
    plugins[4].has_seed = true;
    plugins[4].seed = 42;
    plugins[5] = entry(CONFIG_PLUGIN_VMID, "VMIDRegex", 8); /* Regex */
    plugins[5].enable = false;
    sched_params params = base_params(plugins, 6, false), applied = params;
    plugin_config setup;
    vf_error err;
    vf_error_init(&err);
    CHECKF(plugin_config_apply(&setup, &applied, &params, &err) == 0, "%s", err.text);
    CHECK(!setup.filter_on[SCHED_FILTER_POOL]);
    CHECK(setup.filter_on[SCHED_FILTER_CPU]);
    CHECK(applied.overcommit_cpu == 8 && applied.reserve_cpu == 2);
    CHECK(applied.overcommit_memory == params.overcommit_memory);
    CHECK(setup.score_weight[SCHED_SCORE_FREE] == 3);
    CHECK(setup.score_weight[SCHED_SCORE_TARGET_LOAD] == 1);
    CHECK(setup.target_percent == 60);
    CHECK(setup.weights == 3 + 1 + 1 + 1);
    CHECK(applied.subset_size == 4 && applied.seed == 42);
    CHECK(setup.vmid_range_enabled && !setup.vmid_regex_enabled);
}

static void refused(config_plugin p, const char *want)
{
    sched_params params = base_params(&p, 1, false), applied = params;
    plugin_config setup;
    vf_error err;
    vf_error_init(&err);
    CHECK(plugin_config_apply(&setup, &applied, &params, &err) == -1);
    CHECK(err.code == VF_ECONFIG);
    CHECK_CONTAINS(err.text, want);
}

static void test_errors(void)
{
    refused(entry(CONFIG_PLUGIN_FILTER, "CPUOvercomit", 17),
            "line 17: scheduler.plugins.filters.CPUOvercomit: unknown plugin (known: Pool, ");
    refused(entry(CONFIG_PLUGIN_SCORE, "Nope", 2), "Random)"); /* the last known score */
    config_plugin p = entry(CONFIG_PLUGIN_FILTER, "Disk", 8);
    p.has_ratio = true;
    p.ratio = 2;
    refused(p, "line 8: scheduler.plugins.filters.Disk.args.ratio: Disk takes no argument ratio "
               "(it takes: none)");
    p = entry(CONFIG_PLUGIN_SCORE, "TargetLoadPacking", 9);
    p.has_seed = true;
    p.seed = 1;
    refused(p, "TargetLoadPacking takes no argument seed (it takes: target_percent, "
               "missing_score)");
    p = entry(CONFIG_PLUGIN_SCORE, "Random", 4);
    p.has_weight = true;
    p.weight = 1;
    p.file = "plugin-config.yaml";
    refused(p, "plugin-config.yaml:4: scores.Random.weight: Random takes no weight");
    p = entry(CONFIG_PLUGIN_FILTER, "Nope", 5);
    p.section = "scheduler.profiles.gpu";
    refused(p, "line 5: scheduler.profiles.gpu.plugins.filters.Nope: unknown plugin");
}

int main(void)
{
    test_defaults();
    test_entries();
    test_errors();
    return test_summary();
}
