/* never_fits: what no host of a snapshot could ever hold, and, as much, what
 * only waits: a full host, an offline one, a disk that may free up. */
#include "never_fits.h"
#include "sched_fixture.h"
#include "testlib.h"

#include <stdlib.h>
#include <string.h>

/* bm-a, bm-b (pool default, 16 cores x 4 = 64 vCPUs, 64 GiB, 1 TiB free),
 * big-1 (pool fast, 32 cores, 256 GiB, offline) and ded-1 (pool default,
 * dedicated, 64 cores). */
static hostset *make_set(void)
{
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    host a = fixture_host("bm-a"), b = fixture_host("bm-b"), big = fixture_host("big-1"),
         dedicated = fixture_host("ded-1");
    snprintf(big.pool, sizeof big.pool, "fast");
    big.cpu = 32;
    big.memory = 262144;
    big.status = HOST_OFFLINE;
    dedicated.dedicated = true;
    dedicated.cpu = 64;
    if (!set || hostset_add(set, &a, &err) < 0 || hostset_add(set, &b, &err) < 0 ||
        hostset_add(set, &big, &err) < 0 || hostset_add(set, &dedicated, &err) < 0 ||
        hostset_finish(set, &err) < 0) {
        hostset_free(set);
        return NULL;
    }
    return set;
}

static sched_engine *make_engine(const hostset *set, const sched_params *params)
{
    vf_error err;
    vf_error_init(&err);
    sched_engine *engine = sched_engine_new(params, &err);
    if (engine && set && sched_engine_set_hosts(engine, set, NULL, NULL, &err) < 0) {
        sched_engine_free(engine);
        return NULL;
    }
    return engine;
}

/* Decides `req` (as the worker does first: a placed request is never asked
 * about, but the answer must not depend on that) and asks never_fits. */
static bool never(sched_engine *engine, const sched_request *req, char *why, size_t size)
{
    sched_decision d;
    vf_error err;
    vf_error_init(&err);
    why[0] = '\0';
    CHECKF(sched_engine_decide(engine, req, &d, &err) == 0, "%s", err.text);
    return sched_never_fits(engine, req, why, size);
}

static void test_cases(void)
{
    hostset *set = make_set();
    sched_params params;
    fixture_params(&params);
    sched_engine *engine = make_engine(set, &params);
    CHECK(set && engine);
    if (!set || !engine)
        goto out;
    char why[512];
    sched_request req;

    /* No such pool: at once, with the pools there are. */
    fixture_request(&req, 2, 1024);
    snprintf(req.pool, sizeof req.pool, "gpu");
    CHECK(never(engine, &req, why, sizeof why));
    CHECK_STR(why, "no host is in pool \"gpu\"; the inventory's pools: default, fast");

    /* More vCPUs than any shared host of the pool holds empty (the
     * dedicated one is kept for dedicated requests): the largest is named. */
    fixture_request(&req, 65, 1024);
    CHECK(never(engine, &req, why, sizeof why));
    CHECK_CONTAINS(why, "asks for 65 vCPUs; the most any host of pool \"default\" holds empty is "
                        "64 (bm-a");
    /* Exactly the largest: it could. */
    fixture_request(&req, 64, 1024);
    CHECK(!never(engine, &req, why, sizeof why));

    /* More memory than any host of the pool. */
    fixture_request(&req, 1, 65537);
    CHECK(never(engine, &req, why, sizeof why));
    CHECK_CONTAINS(why, "asks for 65537 MiB; the most any host of pool \"default\" holds empty is "
                        "65536 MiB");

    /* An offline host that would hold it: it may come back, so it waits. */
    fixture_request(&req, 100, 200000);
    snprintf(req.pool, sizeof req.pool, "fast");
    CHECK(!never(engine, &req, why, sizeof why));

    /* Full hosts are not never: every vCPU of the pool held, the request
     * fits an empty host. */
    vf_error err;
    vf_error_init(&err);
    const char *names[] = {"bm-a", "bm-b", "ded-1"};
    for (size_t i = 0; i < 3; i++) {
        sched_reservation fill;
        memset(&fill, 0, sizeof fill);
        snprintf(fill.task_id, sizeof fill.task_id, "fill-%zu", i);
        snprintf(fill.node, sizeof fill.node, "%s", names[i]);
        fill.cpu = 1000;
        CHECK(sched_engine_reserve(engine, &fill, &err) == 0);
    }
    fixture_request(&req, 8, 1024);
    CHECK(!never(engine, &req, why, sizeof why));
    sched_engine_release_all(engine);

    /* A disk larger than any host's free storage waits: free storage grows
     * as guests go. */
    fixture_request(&req, 1, 1024);
    req.disk = 5000;
    CHECK(!never(engine, &req, why, sizeof why));

    /* Names: a host the inventory does not have; one it has, offline. */
    fixture_request(&req, 1, 1024);
    snprintf(req.node_name, sizeof req.node_name, "bm-z");
    CHECK(never(engine, &req, why, sizeof why));
    CHECK_STR(why, "no host of pool \"default\" is named \"bm-z\"");
    fixture_request(&req, 1, 1024);
    snprintf(req.pool, sizeof req.pool, "fast");
    snprintf(req.node_name, sizeof req.node_name, "big-1");
    CHECK(!never(engine, &req, why, sizeof why));

    /* A node regex that matches no host of the pool, and one that does. */
    fixture_request(&req, 1, 1024);
    snprintf(req.node_regex, sizeof req.node_regex, "node[0-9]+");
    CHECK(never(engine, &req, why, sizeof why));
    CHECK_STR(why, "node.qemu-scheduler/regex \"node[0-9]+\" matches no host of pool \"default\"");
    snprintf(req.node_regex, sizeof req.node_regex, "bm-[ab]");
    CHECK(!never(engine, &req, why, sizeof why));

    /* Dedicated requests need a dedicated host of the pool. */
    fixture_request(&req, 1, 1024);
    req.dedicated = true;
    CHECK(!never(engine, &req, why, sizeof why));
    snprintf(req.pool, sizeof req.pool, "fast");
    CHECK(never(engine, &req, why, sizeof why));
    CHECK_STR(why, "no host of pool \"fast\" is dedicated");

    /* A short buffer is cut, not overrun. */
    fixture_request(&req, 2, 1024);
    snprintf(req.pool, sizeof req.pool, "gpu");
    char small[24];
    CHECK(never(engine, &req, small, sizeof small));
    CHECK(strlen(small) == sizeof small - 1);
out:
    sched_engine_free(engine);
    hostset_free(set);
}

/* The engine's parameters, plugin arguments and filters count. */
static void test_params(void)
{
    hostset *set = make_set();
    char why[512];
    sched_request req;

    /* scheduler.reserve comes off before overcommit: (16 - 4) x 4 = 48. */
    sched_params params;
    fixture_params(&params);
    params.reserve_cpu = 4;
    sched_engine *engine = make_engine(set, &params);
    fixture_request(&req, 49, 1024);
    CHECK(engine && never(engine, &req, why, sizeof why));
    CHECK_CONTAINS(why, "holds empty is 48");
    fixture_request(&req, 48, 1024);
    CHECK(engine && !never(engine, &req, why, sizeof why));
    sched_engine_free(engine);

    /* CPUOvercommit turned off: no vCPU count is too many; and a ratio
     * given as its argument replaces scheduler.overcommit.cpu. */
    config_plugin off = {.kind = CONFIG_PLUGIN_FILTER, .name = "CPUOvercommit", .enable = false};
    fixture_params(&params);
    params.plugins = &off;
    params.n_plugins = 1;
    engine = make_engine(set, &params);
    fixture_request(&req, 1000, 1024);
    CHECK(engine && !never(engine, &req, why, sizeof why));
    sched_engine_free(engine);
    config_plugin ratio = {.kind = CONFIG_PLUGIN_FILTER,
                           .name = "CPUOvercommit",
                           .enable = true,
                           .has_ratio = true,
                           .ratio = 1.0};
    params.plugins = &ratio;
    engine = make_engine(set, &params);
    fixture_request(&req, 17, 1024);
    CHECK(engine && never(engine, &req, why, sizeof why));
    sched_engine_free(engine);

    /* Pool filter off: the pool names nothing to miss. */
    config_plugin no_pool = {.kind = CONFIG_PLUGIN_FILTER, .name = "Pool", .enable = false};
    params.plugins = &no_pool;
    engine = make_engine(set, &params);
    fixture_request(&req, 1, 1024);
    snprintf(req.pool, sizeof req.pool, "gpu");
    CHECK(engine && !never(engine, &req, why, sizeof why));
    sched_engine_free(engine);

    /* No snapshot yet, and an empty one (a source gone blank): never never. */
    fixture_params(&params);
    engine = make_engine(NULL, &params);
    fixture_request(&req, 1000, 1024);
    CHECK(engine && !sched_never_fits(engine, &req, why, sizeof why));
    sched_engine_free(engine);
    vf_error err;
    vf_error_init(&err);
    hostset *empty = hostset_new();
    CHECK(empty && hostset_finish(empty, &err) == 0);
    engine = make_engine(empty, &params);
    CHECK(engine && !sched_never_fits(engine, &req, why, sizeof why));
    sched_engine_free(engine);
    hostset_free(empty);
    hostset_free(set);
}

/* Traits and custom resources come from the inventory: a trait or a total
 * no host has is never; resources only held by reservations just wait. */
static void test_traits(void)
{
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    host plain = fixture_host("bm-a"), gpu = fixture_host("gpu-1");
    host_traits traits;
    memset(&traits, 0, sizeof traits);
    CHECK(trait_set_add(&traits.traits, "CUSTOM_GPU", &err) == 0);
    CHECK(resource_amounts_set(&traits.resources, "gpu", 2, &err) == 0);
    gpu.traits = &traits;
    CHECK(hostset_add(set, &plain, &err) == 0 && hostset_add(set, &gpu, &err) == 0 &&
          hostset_finish(set, &err) == 0);
    sched_params params;
    fixture_params(&params);
    sched_engine *engine = make_engine(set, &params);
    char why[512];
    sched_request req;

    fixture_request(&req, 1, 1024);
    CHECK(trait_set_add(&req.required_traits, "CUSTOM_FPGA", &err) == 0);
    CHECK(never(engine, &req, why, sizeof why));
    CHECK_STR(why, "no host of pool \"default\" has the traits asked (1 required, 0 forbidden; "
                   "the first required: CUSTOM_FPGA)");

    fixture_request(&req, 1, 1024);
    CHECK(resource_amounts_set(&req.resources, "gpu", 3, &err) == 0);
    CHECK(never(engine, &req, why, sizeof why));
    CHECK_STR(why, "asks for 3 gpu; the most any host of pool \"default\" has is 2 (gpu-1)");

    fixture_request(&req, 1, 1024);
    CHECK(resource_amounts_set(&req.resources, "tpu", 1, &err) == 0);
    CHECK(never(engine, &req, why, sizeof why));
    CHECK_STR(why, "asks for 1 tpu; the most any host of pool \"default\" has is 0 (bm-a)");

    /* 2 GPUs all held by a reservation: waits, not never. */
    fixture_request(&req, 1, 1024);
    CHECK(resource_amounts_set(&req.resources, "gpu", 2, &err) == 0);
    sched_decision d;
    CHECK(sched_engine_decide(engine, &req, &d, &err) == 0 && d.placed);
    sched_reservation res;
    sched_reservation_from_decision(&res, &d, &req, "t-1", 0);
    CHECK(sched_engine_reserve(engine, &res, &err) == 0);
    CHECK(!never(engine, &req, why, sizeof why));
    CHECK(sched_engine_decide(engine, &req, &d, &err) == 0 && !d.placed);
    sched_engine_free(engine);
    hostset_free(set);
}

int main(void)
{
    test_cases();
    test_params();
    test_traits();
    return test_summary();
}
