/* vmid: the lowest free vmid, and a worker's own residue class first when
 * several workers share a store (scheduler.vmid_stride). */
#include <stdlib.h>
#include <string.h>

#include "near_best.h"
#include "sched_fixture.h"
#include "testlib.h"
#include "vmid.h"

static void test_first_in_slot(void)
{
    CHECK(vmid_first_in_slot(100, 1, 0) == 100);
    CHECK(vmid_first_in_slot(100, 64, 0) == 128);
    CHECK(vmid_first_in_slot(100, 64, 36) == 100);
    CHECK(vmid_first_in_slot(100, 64, 37) == 101);
    CHECK(vmid_first_in_slot(101, 64, 36) == 164);
    CHECK(vmid_first_in_slot(VMID_MAX, 64, (VMID_MAX + 1) % 64) == VMID_MAX + 1u);
}

/* The strided pick takes the lowest free id of the class, skipping used and
 * reserved ones, and answers 0 when the domain holds none of the class. */
static void test_pick_strided(void)
{
    vf_error err;
    vf_error_init(&err);
    hostset *used = hostset_new();
    host h = fixture_host("bm-01");
    CHECK(hostset_add(used, &h, &err) == 0);
    CHECK(hostset_finish(used, &err) == 0);
    vmidset reserved;
    vmidset_init(&reserved);
    vmid_query q = {.lo = 100, .hi = 1000, .regex = NULL};
    uint32_t scanned = 0;
    CHECK(vmid_pick_strided(&q, used, &reserved, 10, 3, 0, &scanned) == 103);
    CHECK(vmidset_add(&reserved, 103) == 0);
    CHECK(vmidset_add(&reserved, 113) == 0);
    CHECK(vmid_pick_strided(&q, used, &reserved, 10, 3, 0, &scanned) == 123);
    CHECK(scanned == 3);
    /* The lowest free overall is unchanged: 100. */
    CHECK(vmid_pick(&q, used, &reserved, 0, &scanned) == 100);
    /* A range with no id of the class: none (the engine falls back). */
    vmid_query narrow = {.lo = 104, .hi = 112, .regex = NULL};
    CHECK(vmid_pick_strided(&narrow, used, &reserved, 10, 3, 0, &scanned) == 0);
    vmidset_close(&reserved);
    hostset_free(used);
}

/* An engine for `worker`, told other workers are alive when `spread`. */
static sched_engine *engine_for(const char *worker, uint32_t stride, bool spread,
                                const hostset *hosts)
{
    vf_error err;
    vf_error_init(&err);
    sched_params params;
    fixture_params(&params);
    params.vmid_stride = stride;
    snprintf(params.near_best_worker, sizeof params.near_best_worker, "%s", worker);
    sched_engine *engine = sched_engine_new(&params, &err);
    CHECKF(engine != NULL, "%s", err.text);
    if (engine) {
        CHECK(sched_engine_set_hosts(engine, hosts, NULL, NULL, &err) == 0);
        sched_engine_set_vmid_spread(engine, spread);
    }
    return engine;
}

/* Place on `decider` (an engine or one of its profiles) and hold on
 * `engine` `n` one-vCPU VMs; their vmids into out[]. */
static void place_with(sched_engine *decider, sched_engine *engine, const char *prefix,
                       uint32_t *out, size_t n)
{
    sched_request req;
    fixture_request(&req, 1, 16);
    for (size_t i = 0; i < n; i++) {
        vf_error err;
        vf_error_init(&err);
        sched_decision d;
        CHECK(sched_engine_decide(decider, &req, &d, &err) == 0);
        CHECK(d.placed);
        out[i] = d.vmid;
        sched_reservation res;
        char id[64];
        snprintf(id, sizeof id, "%s-%zu", prefix, i);
        sched_reservation_from_decision(&res, &d, &req, id, 0);
        CHECK(sched_engine_reserve(engine, &res, &err) == 0);
    }
}

static void place(sched_engine *engine, const char *prefix, uint32_t *out, size_t n)
{
    place_with(engine, engine, prefix, out, n);
}

/* Two workers with different classes take disjoint vmids from the same
 * picture; a worker alone on its store, one with stride 1 or one without a
 * worker id (a dry run) takes the lowest free ones; a released id of the
 * class is taken again; alone again, the worker takes the lowest free. */
static void test_engine_stride(void)
{
    vf_error err;
    vf_error_init(&err);
    hostset *hosts = hostset_new();
    host h = fixture_host("bm-01");
    h.cpu = 64;
    h.max_vms = 1000;
    CHECK(hostset_add(hosts, &h, &err) == 0);
    CHECK(hostset_finish(hosts, &err) == 0);

    /* Two worker names whose classes modulo 64 differ. */
    const char *a = "worker-a", *b = "worker-b";
    char other[32];
    for (int i = 0; near_best_hash(a) % 64 == near_best_hash(b) % 64; i++) {
        snprintf(other, sizeof other, "worker-b%d", i);
        b = other;
    }
    uint32_t slot_a = (uint32_t)(near_best_hash(a) % 64);
    sched_engine *ea = engine_for(a, 64, true, hosts), *eb = engine_for(b, 64, true, hosts);
    uint32_t va[5], vb[5];
    place(ea, "a", va, 5);
    place(eb, "b", vb, 5);
    for (size_t i = 0; i < 5; i++) {
        CHECK(va[i] % 64 == slot_a);
        CHECK(i == 0 || va[i] == va[i - 1] + 64);
        for (size_t j = 0; j < 5; j++)
            CHECK(va[i] != vb[j]);
    }
    CHECK(va[0] == vmid_first_in_slot(VMID_MIN, 64, slot_a));
    /* Given back, the lowest of the class is the next pick again. */
    CHECK(sched_engine_release(ea, "a-0") == 1);
    uint32_t again;
    place(ea, "a-again", &again, 1);
    CHECK(again == va[0]);

    sched_engine_set_vmid_spread(ea, false);
    uint32_t alone;
    place(ea, "a-alone", &alone, 1);
    CHECK(alone == (va[0] == VMID_MIN ? VMID_MIN + 1 : VMID_MIN));

    sched_engine *lowest = engine_for(a, 1, true, hosts), *dry = engine_for("", 64, true, hosts),
                 *single = engine_for(a, 64, false, hosts);
    uint32_t vl[3], vd[3], vs[3];
    place(lowest, "l", vl, 3);
    place(dry, "d", vd, 3);
    place(single, "s", vs, 3);
    for (uint32_t i = 0; i < 3; i++) {
        CHECK(vl[i] == VMID_MIN + i);
        CHECK(vd[i] == VMID_MIN + i);
        CHECK(vs[i] == VMID_MIN + i);
    }
    sched_engine_free(ea);
    sched_engine_free(eb);
    sched_engine_free(lowest);
    sched_engine_free(dry);
    sched_engine_free(single);
    hostset_free(hosts);
}

/* A range annotation holding no id of the worker's class: the lowest free
 * id of the range, as with one worker. */
static void test_engine_stride_narrow_range(void)
{
    vf_error err;
    vf_error_init(&err);
    hostset *hosts = hostset_new();
    host h = fixture_host("bm-01");
    CHECK(hostset_add(hosts, &h, &err) == 0);
    CHECK(hostset_finish(hosts, &err) == 0);
    sched_engine *engine = engine_for("worker-a", 64, true, hosts);
    uint32_t slot = (uint32_t)(near_best_hash("worker-a") % 64);
    uint32_t lo = vmid_first_in_slot(200, 64, slot) + 1; /* the class's next id is lo + 63 */
    sched_request req;
    fixture_request(&req, 1, 16);
    snprintf(req.vmid_range, sizeof req.vmid_range, "%u-%u", lo, lo + 9);
    sched_decision d;
    CHECK(sched_engine_decide(engine, &req, &d, &err) == 0);
    CHECK(d.placed);
    CHECK(d.vmid == lo);
    sched_engine_free(engine);
    hostset_free(hosts);
}

/* A scheduling profile follows its engine: spreading when told, and its
 * ids taken by the default profile are taken for it too. */
static void test_profile_follows(void)
{
    vf_error err;
    vf_error_init(&err);
    hostset *hosts = hostset_new();
    host h = fixture_host("bm-01");
    CHECK(hostset_add(hosts, &h, &err) == 0);
    CHECK(hostset_finish(hosts, &err) == 0);
    sched_engine *engine = engine_for("worker-a", 64, false, hosts);
    sched_params params;
    fixture_params(&params);
    params.vmid_stride = 64;
    snprintf(params.near_best_worker, sizeof params.near_best_worker, "worker-a");
    CHECKF(sched_engine_add_profile(engine, "small", &params, &err) == 0, "%s", err.text);
    sched_engine *small = sched_engine_profile(engine, "small");
    CHECK(small != NULL);
    if (small) {
        uint32_t slot = (uint32_t)(near_best_hash("worker-a") % 64);
        uint32_t v[2];
        uint32_t first = vmid_first_in_slot(VMID_MIN + 1, 64, slot);
        place_with(small, engine, "alone", v, 1);
        CHECK(v[0] == VMID_MIN);
        sched_engine_set_vmid_spread(engine, true);
        place_with(engine, engine, "spread", v, 1);
        place_with(small, engine, "spread-small", v + 1, 1);
        CHECK(v[0] == first);
        CHECK(v[1] == first + 64);
        /* The class the worker holds a lease on replaces the hash's, for
         * its profiles too, and survives a reload with the same stride. */
        uint32_t given = (slot + 1) % 64;
        sched_engine_set_vmid_slot(engine, given);
        CHECK(sched_engine_vmid_slot(engine) == given);
        CHECK(sched_engine_vmid_slot(small) == given);
        place_with(small, engine, "given-small", v, 1);
        CHECK(v[0] == vmid_first_in_slot(VMID_MIN + 1, 64, given));
        sched_params again;
        fixture_params(&again);
        again.vmid_stride = 64;
        snprintf(again.near_best_worker, sizeof again.near_best_worker, "worker-a");
        CHECKF(sched_engine_set_params(engine, &again, &err) == 0, "%s", err.text);
        CHECK(sched_engine_vmid_slot(engine) == given);
        again.vmid_stride = 32;
        CHECKF(sched_engine_set_params(engine, &again, &err) == 0, "%s", err.text);
        CHECK(sched_engine_vmid_stride(engine) == 32);
        CHECK(sched_engine_vmid_slot(engine) == (uint32_t)(near_best_hash("worker-a") % 32));
    }
    sched_engine_free(engine);
    hostset_free(hosts);
}

int main(void)
{
    test_first_in_slot();
    test_pick_strided();
    test_engine_stride();
    test_engine_stride_narrow_range();
    test_profile_follows();
    return test_summary();
}
