/* Scheduling profiles (scheduler.profiles, engine.h): a request's
 * scheduler_name picks the engine that decides; every profile sees the same
 * snapshot and reservations; an unknown name finds no engine; a bad plugin
 * in a profile is reported under the profile's key path. */
#include <stdlib.h>
#include <string.h>

#include "sched_fixture.h"
#include "testlib.h"

/* Two hosts, one a quarter full, one empty: spread takes the empty one,
 * pack the fuller one. */
static hostset *two_hosts(void)
{
    vf_error err;
    vf_error_init(&err);
    host hosts[2] = {fixture_host("empty"), fixture_host("quarter")};
    hosts[1].allocated_cpu = 16;
    hosts[1].allocated_memory = 16384;
    hosts[1].current_vms = 25;
    hostset *set = hostset_new();
    for (size_t i = 0; i < 2; i++)
        CHECK(hostset_add(set, &hosts[i], &err) == 0);
    CHECK(hostset_finish(set, &err) == 0);
    return set;
}

static sched_engine *engine_with_pack_profile(const hostset *hosts, bool hosts_first)
{
    vf_error err;
    vf_error_init(&err);
    sched_params base;
    fixture_params(&base);
    sched_engine *engine = sched_engine_new(&base, &err);
    CHECKF(engine != NULL, "%s", err.text);
    if (hosts_first)
        CHECK(sched_engine_set_hosts(engine, hosts, NULL, NULL, &err) == 0);
    config_profile profile = {.name = (char *)"packer",
                              .section = (char *)"scheduler.profiles.packer",
                              .strategy = CONFIG_STRATEGY_PACK};
    sched_params packed;
    sched_params_for_profile(&packed, &base, &profile);
    CHECKF(sched_engine_add_profile(engine, "packer", &packed, &err) == 0, "%s", err.text);
    if (!hosts_first)
        CHECK(sched_engine_set_hosts(engine, hosts, NULL, NULL, &err) == 0);
    return engine;
}

static const char *decide_on(sched_engine *engine, const char *scheduler_name)
{
    vf_error err;
    vf_error_init(&err);
    sched_request req;
    fixture_request(&req, 2, 2048);
    snprintf(req.scheduler_name, sizeof req.scheduler_name, "%s", scheduler_name);
    sched_engine *decider = sched_engine_profile(engine, req.scheduler_name);
    CHECK(decider != NULL);
    if (!decider)
        return NULL;
    sched_decision d;
    CHECKF(sched_engine_decide(decider, &req, &d, &err) == 0, "%s", err.text);
    return d.placed && d.node ? d.node->name : NULL;
}

/* The same request, two profiles, two hosts; no name is the default. */
static void test_profile_chosen(void)
{
    for (int order = 0; order < 2; order++) {
        hostset *hosts = two_hosts();
        sched_engine *engine = engine_with_pack_profile(hosts, order == 0);
        CHECK_STR(decide_on(engine, ""), "empty");
        CHECK_STR(decide_on(engine, "default"), "empty");
        CHECK_STR(decide_on(engine, "packer"), "quarter");
        CHECK_STR(sched_engine_profile_name(sched_engine_profile(engine, "packer")), "packer");
        CHECK_STR(sched_engine_profile_name(engine), "default");
        sched_engine_free(engine);
        hostset_free(hosts);
    }
}

/* No such profile: no engine (the worker keeps the task waiting). */
static void test_unknown_profile(void)
{
    hostset *hosts = two_hosts();
    sched_engine *engine = engine_with_pack_profile(hosts, true);
    CHECK(sched_engine_profile(engine, "gpu") == NULL);
    CHECK(sched_engine_profile(engine, "Packer") == NULL);
    sched_engine_free(engine);
    hostset_free(hosts);
}

/* A reservation made through the default engine holds in every profile, and
 * its release frees it in every profile: the profiles never promise the same
 * room twice. */
static void test_profiles_share_reservations(void)
{
    vf_error err;
    vf_error_init(&err);
    hostset *hosts = two_hosts();
    sched_engine *engine = engine_with_pack_profile(hosts, true);
    sched_engine *packer = sched_engine_profile(engine, "packer");
    /* Fill "quarter" (64 vCPUs of capacity, 16 allocated). */
    sched_reservation res = {
        .task_id = "t-1", .node = "quarter", .cpu = 48, .memory = 1024, .vmid = 100};
    CHECK(sched_engine_reserve(engine, &res, &err) == 0);
    CHECK(sched_engine_reservation_count(packer) == 1);
    CHECK_STR(decide_on(engine, "packer"), "empty");
    sched_request req;
    fixture_request(&req, 1, 512);
    snprintf(req.scheduler_name, sizeof req.scheduler_name, "packer");
    sched_decision d;
    CHECK(sched_engine_decide(packer, &req, &d, &err) == 0);
    CHECKF(d.placed && d.vmid == 101, "the profile skips the held vmid (got %u)", d.vmid);
    CHECK(sched_engine_release(engine, "t-1") == 1);
    CHECK(sched_engine_reservation_count(packer) == 0);
    CHECK_STR(decide_on(engine, "packer"), "quarter");
    /* Expiry too. */
    res.expires = 1000;
    CHECK(sched_engine_reserve(engine, &res, &err) == 0);
    CHECK(sched_engine_expire(engine, 999) == 0);
    CHECK(sched_engine_reservation_count(packer) == 1);
    CHECK(sched_engine_expire(engine, 1000) == 1);
    CHECK(sched_engine_reservation_count(packer) == 0);
    /* And a profile added after reservations were held starts with them. */
    CHECK(sched_engine_reserve(engine, &res, &err) == 0);
    sched_params base;
    fixture_params(&base);
    CHECK(sched_engine_add_profile(engine, "late", &base, &err) == 0);
    CHECK(sched_engine_reservation_count(sched_engine_profile(engine, "late")) == 1);
    sched_engine_free(engine);
    hostset_free(hosts);
}

/* An unknown plugin inside a profile names the profile's key path; a bad or
 * repeated name is refused. */
static void test_profile_errors(void)
{
    vf_error err;
    vf_error_init(&err);
    sched_params base;
    fixture_params(&base);
    sched_engine *engine = sched_engine_new(&base, &err);
    CHECK(engine != NULL);
    config_plugin wrong[] = {{.kind = CONFIG_PLUGIN_FILTER,
                              .name = "Gpu",
                              .enable = true,
                              .line = 14,
                              .section = "scheduler.profiles.gpu"}};
    config_profile profile = {.name = (char *)"gpu",
                              .section = (char *)"scheduler.profiles.gpu",
                              .plugins = wrong,
                              .n_plugins = 1};
    sched_params params;
    sched_params_for_profile(&params, &base, &profile);
    CHECK(sched_engine_add_profile(engine, "gpu", &params, &err) == -1);
    CHECK(err.code == VF_ECONFIG);
    CHECK_CONTAINS(err.text, "line 14: scheduler.profiles.gpu.plugins.filters.Gpu: unknown "
                             "plugin (known: Pool, ");
    CHECK(sched_engine_profile(engine, "gpu") == NULL);
    /* From the profile's plugin_config file: the file, and whose it is. */
    wrong[0].file = "/etc/virtflow/gpu.yaml";
    vf_error_init(&err);
    CHECK(sched_engine_add_profile(engine, "gpu", &params, &err) == -1);
    CHECK_CONTAINS(err.text, "/etc/virtflow/gpu.yaml:14: filters.Gpu (scheduler.profiles.gpu."
                             "plugin_config): unknown plugin");
    vf_error_init(&err);
    CHECK(sched_engine_add_profile(engine, "default", &base, &err) == -1);
    CHECK(err.code == VF_ECONFIG);
    CHECK(sched_engine_add_profile(engine, "ok", &base, &err) == 0);
    CHECK(sched_engine_add_profile(engine, "ok", &base, &err) == -1);
    sched_engine_free(engine);
}

int main(void)
{
    test_profile_chosen();
    test_unknown_profile();
    test_profiles_share_reservations();
    test_profile_errors();
    return test_summary();
}
