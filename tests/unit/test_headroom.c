/* headroom: free room and VMs of reference shapes per pool. Hosts of
 * different sizes, holds, overcommit and reserves, slots, disk, offline and
 * dedicated hosts; and the count is exact: placing the shape through the
 * engine, with each placement held, succeeds that many times and no more. */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "headroom.h"
#include "sched_fixture.h"
#include "testlib.h"

static char small_name[] = "small", large_name[] = "large", disky_name[] = "disky",
            half_name[] = "half", medium_name[] = "medium";
static config_shape shapes[] = {
    {small_name, 2, 4096, 0, 0},
    {large_name, 8, 16384, 0, 0},
    {disky_name, 1, 1024, 100, 0},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

static hostset *make_set(const host *hosts, size_t n)
{
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    CHECK(set != NULL);
    for (size_t i = 0; i < n; i++)
        CHECK(hostset_add(set, &hosts[i], &err) == 0);
    CHECK(hostset_finish(set, &err) == 0);
    return set;
}

static const sched_headroom_pool *pool_of(const sched_headroom *h, const char *name)
{
    for (size_t p = 0; p < h->n_pools; p++)
        if (strcmp(h->pools[p].pool, name) == 0)
            return &h->pools[p];
    return NULL;
}

/* 16 cores x 4 and 64 GiB beside 8 cores x 4 and 32 GiB; a gpu pool; an
 * offline host and a dedicated one, which count for no shape. */
static void test_sizes_pools_status(void)
{
    host hosts[5];
    hosts[0] = fixture_host("a-big");
    hosts[1] = fixture_host("b-half");
    hosts[1].cpu = 8;
    hosts[1].memory = 32768;
    hosts[2] = fixture_host("c-off");
    hosts[2].status = HOST_OFFLINE;
    hosts[3] = fixture_host("d-dedicated");
    hosts[3].dedicated = true;
    hosts[4] = fixture_host("e-gpu");
    snprintf(hosts[4].pool, sizeof hosts[4].pool, "gpu");
    hosts[4].storage = 250;
    hostset *set = make_set(hosts, 5);
    sched_params p;
    fixture_params(&p);
    sched_headroom h;
    CHECK(sched_headroom_compute(&h, &p, set, NULL, shapes, N_SHAPES) == 0);
    CHECK(h.n_pools == 2 && h.n_shapes == N_SHAPES);
    const sched_headroom_pool *def = pool_of(&h, "default"), *gpu = pool_of(&h, "gpu");
    CHECK(def && gpu);
    if (def && gpu) {
        /* Free room: online hosts, the dedicated one included. */
        CHECKF(def->free_cpu == 64 + 32 + 64, "%g", def->free_cpu);
        CHECKF(def->free_memory == 65536 + 32768 + 65536, "%g", def->free_memory);
        CHECK(def->free_slots == 300);
        /* small: a-big min(32 by cpu, 16 by memory) + b-half 8. */
        CHECKF(def->shapes[0].vms == 16 + 8, "%lld", (long long)def->shapes[0].vms);
        CHECK(def->shapes[0].hosts == 2);
        CHECKF(def->shapes[1].vms == 4 + 2, "%lld", (long long)def->shapes[1].vms);
        /* disky: 1024 GiB each, 100 a VM: 10 each by disk. */
        CHECKF(def->shapes[2].vms == 10 + 10, "%lld", (long long)def->shapes[2].vms);
        CHECK(gpu->shapes[0].vms == 16 && gpu->shapes[0].hosts == 1);
        CHECK(gpu->shapes[2].vms == 2); /* 250 GiB: 2 of 100 */
    }
    sched_headroom_close(&h);
    /* Shared requests may use dedicated hosts: the dedicated one counts. */
    p.dedicated_exclusive = false;
    CHECK(sched_headroom_compute(&h, &p, set, NULL, shapes, N_SHAPES) == 0);
    def = pool_of(&h, "default");
    CHECK(def && def->shapes[0].vms == 16 + 8 + 16 && def->shapes[0].hosts == 3);
    sched_headroom_close(&h);
    hostset_free(set);
}

/* Overcommit and reserves change capacity; allocated figures and slots
 * bound it; a fraction of a vCPU left counts as the filters count it. */
static void test_overcommit_reserve_slots(void)
{
    host hosts[3];
    hosts[0] = fixture_host("a");
    hosts[1] = fixture_host("b");
    hosts[1].current_vms = 99; /* one slot */
    hosts[2] = fixture_host("c");
    hosts[2].allocated_cpu = 62.5; /* 1.5 vCPUs left */
    hostset *set = make_set(hosts, 3);
    sched_params p;
    fixture_params(&p);
    p.overcommit_cpu = 1.0;  /* 16 vCPUs a host */
    p.reserve_cpu = 2;       /* 14 */
    p.reserve_memory = 1024; /* 64512 MiB */
    config_shape half = {half_name, 0.5, 1024, 0, 0};
    sched_headroom h;
    CHECK(sched_headroom_compute(&h, &p, set, NULL, &half, 1) == 0);
    CHECK(h.n_pools == 1);
    if (h.n_pools == 1) {
        /* a: min(28 by cpu, 63 by memory); b: 1 slot; c: 14 - 62.5 < 0: none. */
        CHECKF(h.pools[0].shapes[0].vms == 28 + 1, "%lld", (long long)h.pools[0].shapes[0].vms);
        CHECK(h.pools[0].shapes[0].hosts == 2);
        CHECKF(h.pools[0].free_cpu == 14 + 14, "%g", h.pools[0].free_cpu); /* c adds none */
        CHECKF(h.pools[0].free_memory == 3 * 64512.0, "%g", h.pools[0].free_memory);
        CHECK(h.pools[0].free_slots == 100 + 1 + 100);
    }
    sched_headroom_close(&h);
    p.overcommit_cpu = 4.0;
    p.reserve_cpu = 0;
    CHECK(sched_headroom_compute(&h, &p, set, NULL, &half, 1) == 0);
    /* a: 63 by memory (64512 MiB, reserve kept); c: 1.5 vCPUs left take 3 halves exactly. */
    CHECKF(h.n_pools == 1 && h.pools[0].shapes[0].vms == 63 + 1 + 3, "%lld",
           (long long)h.pools[0].shapes[0].vms);
    sched_headroom_close(&h);
    hostset_free(set);
}

/* The engine's holds reduce headroom; and the count is what the engine
 * then places: that many decisions of the shape succeed, the next fails. */
static void test_holds_match_placements(void)
{
    host hosts[3];
    hosts[0] = fixture_host("a");
    hosts[1] = fixture_host("b");
    hosts[1].cpu = 6; /* 24 vCPUs */
    hosts[1].allocated_memory = 50000;
    hosts[2] = fixture_host("c");
    hosts[2].max_vms = 3;
    hostset *set = make_set(hosts, 3);
    sched_params p;
    fixture_params(&p);
    vf_error err;
    vf_error_init(&err);
    sched_engine *engine = sched_engine_new(&p, &err);
    CHECK(engine && sched_engine_set_hosts(engine, set, NULL, NULL, &err) == 0);
    sched_reservation held = {.cpu = 30, .memory = 8192};
    snprintf(held.task_id, sizeof held.task_id, "held-1");
    snprintf(held.node, sizeof held.node, "a");
    CHECK(sched_engine_reserve(engine, &held, &err) == 0);
    sched_host_load loads[3];
    for (size_t i = 0; i < 3; i++)
        loads[i] = *sched_engine_host_load(engine, i);
    config_shape shape = {medium_name, 3, 6000, 0, 0};
    sched_headroom h;
    CHECK(sched_headroom_compute(&h, sched_engine_params(engine), set, loads, &shape, 1) == 0);
    /* a: min(34/3 = 11, 57344/6000 = 9) = 9; b: min(24/3 = 8, 15536/6000 = 2) = 2;
     * c: 3 slots. */
    int64_t predicted = h.n_pools == 1 ? h.pools[0].shapes[0].vms : -1;
    CHECKF(predicted == 9 + 2 + 3, "%lld", (long long)predicted);
    CHECK(h.n_pools == 1 && h.pools[0].shapes[0].hosts == 3);
    sched_headroom_close(&h);
    CHECK(sched_headroom_compute(&h, sched_engine_params(engine), set, NULL, &shape, 1) == 0);
    CHECKF(h.n_pools == 1 && h.pools[0].shapes[0].vms == 10 + 2 + 3, "without the hold: %lld",
           (long long)(h.n_pools ? h.pools[0].shapes[0].vms : -1));
    sched_headroom_close(&h);
    int64_t placed = 0;
    for (int64_t attempt = 0; attempt <= predicted; attempt++) {
        sched_request req;
        fixture_request(&req, 3, 6000);
        sched_decision d;
        CHECK(sched_engine_decide(engine, &req, &d, &err) == 0);
        if (!d.placed)
            break;
        char task[32];
        snprintf(task, sizeof task, "t-%lld", (long long)attempt);
        sched_reservation r;
        sched_reservation_from_decision(&r, &d, &req, task, 0);
        CHECK(sched_engine_reserve(engine, &r, &err) == 0);
        placed++;
    }
    CHECKF(placed == predicted, "placed %lld, headroom said %lld", (long long)placed,
           (long long)predicted);
    for (size_t i = 0; i < 3; i++)
        loads[i] = *sched_engine_host_load(engine, i);
    CHECK(sched_headroom_compute(&h, sched_engine_params(engine), set, loads, &shape, 1) == 0);
    CHECK(h.n_pools == 1 && h.pools[0].shapes[0].vms == 0 && h.pools[0].shapes[0].hosts == 0);
    sched_headroom_close(&h);
    sched_engine_free(engine);
    hostset_free(set);
}

static void test_empty(void)
{
    hostset *set = make_set(NULL, 0);
    sched_params p;
    fixture_params(&p);
    sched_headroom h;
    CHECK(sched_headroom_compute(&h, &p, set, NULL, shapes, N_SHAPES) == 0);
    CHECK(h.n_pools == 0);
    sched_headroom_close(&h);
    hostset_free(set);
}

int main(void)
{
    test_sizes_pools_status();
    test_overcommit_reserve_slots();
    test_holds_match_placements();
    test_empty();
    return test_summary();
}
