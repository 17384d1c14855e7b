/* preempt: which host and which reservations a request that fits nowhere
 * takes, over small fixture inventories: fewest victims, then the lowest
 * priority, then the oldest; never a reservation without a priority (a
 * spare's, one bound to its VM), never one of equal or higher priority,
 * never one placed within the grace (its answer is a promise), never on a
 * host refused for something capacity cannot fix. After the
 * victims are released the engine places the request on the chosen host. */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "preempt.h"
#include "sched_fixture.h"
#include "testlib.h"

/* 16 cores x 4 = 64 vCPUs, 65536 MiB each. */
typedef struct world {
    hostset *hosts;
    sched_engine *engine;
} world;

static void world_open(world *w, const char *const *names, size_t n)
{
    vf_error err;
    vf_error_init(&err);
    w->hosts = hostset_new();
    for (size_t i = 0; i < n; i++) {
        host h = fixture_host(names[i]);
        if (strncmp(names[i], "gpu", 3) == 0)
            snprintf(h.pool, sizeof h.pool, "gpu");
        CHECK(hostset_add(w->hosts, &h, &err) == 0);
    }
    CHECK(hostset_finish(w->hosts, &err) == 0);
    sched_params p;
    fixture_params(&p);
    w->engine = sched_engine_new(&p, &err);
    CHECK(w->engine && sched_engine_set_hosts(w->engine, w->hosts, NULL, NULL, &err) == 0);
}

static void world_close(world *w)
{
    sched_engine_free(w->engine);
    hostset_free(w->hosts);
}

/* Hold `cpu` vCPUs of `node` for `task`, placed at `priority` (has: with
 * one) at `created` ms. */
static void hold_on(world *w, const char *task, const char *node, double cpu, bool has,
                    int32_t priority, int64_t created)
{
    sched_reservation r;
    memset(&r, 0, sizeof r);
    snprintf(r.task_id, sizeof r.task_id, "%s", task);
    snprintf(r.node, sizeof r.node, "%s", node);
    r.cpu = cpu;
    r.memory = 1024;
    r.has_priority = has;
    r.priority = priority;
    r.created = created;
    vf_error err;
    vf_error_init(&err);
    CHECK(sched_engine_reserve(w->engine, &r, &err) == 0);
}

/* Decide `req`, expect no placement, and choose at `priority` among holds
 * placed at or before `not_after_ms`. */
static void choose_placed_by(world *w, const sched_request *req, int32_t priority,
                             int64_t not_after_ms, sched_preemption *p)
{
    vf_error err;
    vf_error_init(&err);
    sched_decision d;
    CHECK(sched_engine_decide(w->engine, req, &d, &err) == 0);
    CHECK(!d.placed);
    CHECK(sched_preempt_choose(w->engine, req, priority, not_after_ms, &d, p, &err) == 0);
}

static void choose(world *w, const sched_request *req, int32_t priority, sched_preemption *p)
{
    choose_placed_by(w, req, priority, INT64_MAX, p);
}

static bool has_victim(const sched_preemption *p, const char *task)
{
    for (size_t i = 0; i < p->n_victims; i++)
        if (strcmp(p->victims[i].task_id, task) == 0)
            return true;
    return false;
}

/* a: two 32-vCPU holds at 10; b: four 16-vCPU holds at 5. A 32-vCPU
 * request at 100 takes one hold on a, not two on b (fewest first), and of
 * a's two the older (the newer's client is likelier to be creating its VM).
 * Released, the engine places it on a. */
static void test_fewest_then_oldest(void)
{
    const char *names[] = {"a", "b"};
    world w;
    world_open(&w, names, 2);
    hold_on(&w, "a-old", "a", 32, true, 10, 1000);
    hold_on(&w, "a-new", "a", 32, true, 10, 2000);
    for (int i = 0; i < 4; i++) {
        char task[16];
        snprintf(task, sizeof task, "b-%d", i);
        hold_on(&w, task, "b", 16, true, 5, 3000 + i);
    }
    sched_request req;
    fixture_request(&req, 32, 1024);
    sched_preemption p;
    choose(&w, &req, 100, &p);
    CHECK(p.found);
    CHECK_STR(p.node ? p.node->name : "", "a");
    CHECK(p.n_victims == 1);
    CHECK(has_victim(&p, "a-old"));
    CHECK(p.max_priority == 10);
    CHECK(sched_engine_release(w.engine, p.victims[0].task_id) == 1);
    sched_decision d;
    vf_error err;
    vf_error_init(&err);
    CHECK(sched_engine_decide(w.engine, &req, &d, &err) == 0);
    CHECK(d.placed && strcmp(d.node->name, "a") == 0);
    sched_preemption_close(&p);
    sched_preemption_close(&p); /* twice: a no-op */
    world_close(&w);
}

/* Equal counts: the lower priority goes, whatever their ages. */
static void test_lowest_priority(void)
{
    const char *names[] = {"a", "b"};
    world w;
    world_open(&w, names, 2);
    hold_on(&w, "a-7", "a", 64, true, 7, 5000);
    hold_on(&w, "b-3", "b", 64, true, 3, 1000);
    sched_request req;
    fixture_request(&req, 8, 1024);
    sched_preemption p;
    choose(&w, &req, 50, &p);
    CHECK(p.found && p.n_victims == 1 && has_victim(&p, "b-3"));
    CHECK_STR(p.node ? p.node->name : "", "b");
    sched_preemption_close(&p);
    world_close(&w);
}

/* Several small holds on one host: the lowest-priority ones go first, and
 * only as many as the request needs (the others are given back). */
static void test_only_what_is_needed(void)
{
    const char *names[] = {"a"};
    world w;
    world_open(&w, names, 1);
    hold_on(&w, "p1", "a", 16, true, 1, 1000);
    hold_on(&w, "p2", "a", 16, true, 2, 1000);
    hold_on(&w, "p3", "a", 16, true, 3, 1000);
    hold_on(&w, "p4", "a", 16, true, 4, 1000);
    sched_request req;
    fixture_request(&req, 20, 1024);
    sched_preemption p;
    choose(&w, &req, 9, &p);
    CHECK(p.found && p.n_victims == 2);
    CHECK(has_victim(&p, "p1") && has_victim(&p, "p2"));
    CHECK(!has_victim(&p, "p3") && !has_victim(&p, "p4"));
    CHECK(p.max_priority == 2);
    sched_preemption_close(&p);
    world_close(&w);
}

/* Fewest first, even above lower priorities: taking back the most
 * important first (kube's reprieve) would end the two small low ones; the
 * one large hold of a higher (still lower than the request's) priority
 * alone makes room, so it is the one. */
static void test_fewest_beats_reprieve(void)
{
    const char *names[] = {"a"};
    world w;
    world_open(&w, names, 1);
    hold_on(&w, "small-1", "a", 16, true, 1, 1000);
    hold_on(&w, "small-2", "a", 16, true, 2, 1000);
    hold_on(&w, "large-3", "a", 32, true, 3, 1000);
    sched_request req;
    fixture_request(&req, 32, 1024);
    sched_preemption p;
    choose(&w, &req, 10, &p);
    CHECK(p.found && p.n_victims == 1 && has_victim(&p, "large-3"));
    CHECK(p.max_priority == 3);
    sched_preemption_close(&p);
    world_close(&w);
}

/* Nothing to take: equal priority, no priority (spares, bound ones), a
 * host of another pool, or not enough even with every candidate gone. */
static void test_nothing_to_take(void)
{
    const char *names[] = {"a", "b", "gpu-1"};
    world w;
    world_open(&w, names, 3);
    hold_on(&w, "same", "a", 64, true, 10, 1000);
    hold_on(&w, "spare", "b", 64, false, 0, 1000);
    hold_on(&w, "gpu-low", "gpu-1", 64, true, 0, 1000);
    sched_request req;
    fixture_request(&req, 8, 1024);
    sched_preemption p;
    choose(&w, &req, 10, &p);
    CHECK(!p.found && p.n_victims == 0 && p.victims == NULL);
    /* Higher than "same": a is the one host with a candidate. */
    choose(&w, &req, 11, &p);
    CHECK(p.found && p.n_victims == 1 && has_victim(&p, "same"));
    CHECK(p.hosts_examined == 1);
    sched_preemption_close(&p);
    /* More than a host holds even empty. */
    fixture_request(&req, 65, 1024);
    choose(&w, &req, 1000, &p);
    CHECK(!p.found);
    sched_preemption_close(&p);
    world_close(&w);
}

/* Issue 34, item 2: a placement answered within the grace is a promise:
 * never a victim, however low. a-new (placed at 2000) is past a cutoff of
 * 1500 only for a-old (1000); with the cutoff before both, nothing is
 * taken, and the request waits. */
static void test_grace(void)
{
    const char *names[] = {"a"};
    world w;
    world_open(&w, names, 1);
    hold_on(&w, "a-old", "a", 32, true, 1, 1000);
    hold_on(&w, "a-new", "a", 32, true, 1, 2000);
    sched_request req;
    fixture_request(&req, 32, 1024);
    sched_preemption p;
    choose_placed_by(&w, &req, 100, 1500, &p);
    CHECK(p.found && p.n_victims == 1 && has_victim(&p, "a-old"));
    sched_preemption_close(&p);
    choose_placed_by(&w, &req, 100, 999, &p);
    CHECK(!p.found && p.n_victims == 0);
    /* Both are needed for 64: only when both are past the grace. */
    fixture_request(&req, 64, 1024);
    choose_placed_by(&w, &req, 100, 1500, &p);
    CHECK(!p.found);
    choose_placed_by(&w, &req, 100, 2000, &p);
    CHECK(p.found && p.n_victims == 2);
    sched_preemption_close(&p);
    world_close(&w);
}

/* A placed decision, or one with feasible hosts, preempts nothing. */
static void test_placed_takes_nothing(void)
{
    const char *names[] = {"a"};
    world w;
    world_open(&w, names, 1);
    hold_on(&w, "low", "a", 32, true, 0, 1000);
    sched_request req;
    fixture_request(&req, 8, 1024);
    vf_error err;
    vf_error_init(&err);
    sched_decision d;
    CHECK(sched_engine_decide(w.engine, &req, &d, &err) == 0 && d.placed);
    sched_preemption p;
    CHECK(sched_preempt_choose(w.engine, &req, 100, INT64_MAX, &d, &p, &err) == 0);
    CHECK(!p.found);
    world_close(&w);
}

/* Only a class whose preemption is `lower` preempts; a bare priority never. */
static void test_allowed(void)
{
    config_priority_class classes[] = {
        {(char *)"high", 1000, CONFIG_PREEMPT_LOWER},
        {(char *)"polite", 1000, CONFIG_PREEMPT_NEVER},
    };
    vf_config config;
    memset(&config, 0, sizeof config);
    config.scheduler.priority_classes = classes;
    config.scheduler.n_priority_classes = 2;
    sched_request req;
    fixture_request(&req, 1, 1);
    CHECK(!sched_preempt_allowed(&req, &config));
    snprintf(req.priority_class, sizeof req.priority_class, "high");
    CHECK(sched_preempt_allowed(&req, &config));
    snprintf(req.priority_class, sizeof req.priority_class, "polite");
    CHECK(!sched_preempt_allowed(&req, &config));
    req.priority_class[0] = '\0';
    req.has_priority = true;
    req.priority = 5000;
    config.scheduler.default_priority_class = (char *)"high";
    CHECK(!sched_preempt_allowed(&req, &config)); /* a bare priority */
    req.has_priority = false;
    CHECK(sched_preempt_allowed(&req, &config)); /* the default class */
}

/* Evicting frees vCPUs, never custom resources a host lacks: a GPU request
 * takes nothing from a host without GPUs left, however full its CPUs. */
static void test_resources_not_freed(void)
{
    const char *names[] = {"a"};
    world w;
    world_open(&w, names, 1);
    hold_on(&w, "low", "a", 60, true, 0, 1000);
    sched_request req;
    fixture_request(&req, 8, 1024);
    vf_error err;
    vf_error_init(&err);
    CHECK(resource_amounts_set(&req.resources, "gpu", 1, &err) == 0);
    sched_preemption p;
    choose(&w, &req, 100, &p);
    CHECK(!p.found && p.n_victims == 0);
    sched_preemption_close(&p);
    /* Without the GPU, the same request takes "low". */
    fixture_request(&req, 8, 1024);
    choose(&w, &req, 100, &p);
    CHECK(p.found && has_victim(&p, "low"));
    sched_preemption_close(&p);
    world_close(&w);
}

/* ---- the bounded search against examining every host ---- */

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint32_t rnd(uint32_t n) /* 0..n-1 */
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return n ? (uint32_t)((x * 2685821657736338717ULL) >> 33) % n : 0;
}

/* Whether two choices are the same: host and victims, in order. */
static bool same_choice(const sched_preemption *a, const sched_preemption *b)
{
    if (a->found != b->found || a->n_victims != b->n_victims)
        return false;
    if (!a->found)
        return true;
    if (a->host_index != b->host_index || a->max_priority != b->max_priority)
        return false;
    for (size_t k = 0; k < a->n_victims; k++)
        if (strcmp(a->victims[k].task_id, b->victims[k].task_id) != 0)
            return false;
    return true;
}

/* Holds alike but for their task ids (one batch's claims: the same
 * priority, the same millisecond), reserved in one order on one engine and
 * in the reverse order on another: both take the same victims — what a
 * replay, which rebuilds a millisecond's holds in an order of its own, must
 * find again (explain --replay). */
static void test_same_victims_whatever_the_order(void)
{
    const char *names[] = {"a"};
    const char *tasks[] = {"t-3", "t-1", "t-4", "t-0", "t-2"};
    world w[2];
    sched_preemption p[2];
    for (int k = 0; k < 2; k++) {
        world_open(&w[k], names, 1);
        for (int i = 0; i < 5; i++)
            hold_on(&w[k], tasks[k == 0 ? i : 4 - i], "a", 12, true, 10, 5000);
        sched_request req;
        fixture_request(&req, 20, 1024);
        choose(&w[k], &req, 100, &p[k]);
        CHECK(p[k].found && p[k].n_victims == 2);
    }
    CHECK(same_choice(&p[0], &p[1]));
    CHECK(has_victim(&p[0], "t-0") && has_victim(&p[0], "t-1"));
    for (int k = 0; k < 2; k++) {
        sched_preemption_close(&p[k]);
        world_close(&w[k]);
    }
}

/* A fleet of `n` hosts of a few sizes, some full of VMs, every free slot or
 * vCPU partly held by reservations of random priorities, sizes and ages
 * (some without a priority), a few hosts of another pool or offline. */
static void random_fleet(world *w, size_t n)
{
    vf_error err;
    vf_error_init(&err);
    w->hosts = hostset_new();
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "h-%05zu", i);
        host h = fixture_host(name);
        h.cpu = (double)(8 << rnd(3));
        h.memory = (int64_t)(16384 << rnd(3));
        h.max_vms = 4 + (int32_t)rnd(30);
        h.current_vms = (int32_t)rnd((uint32_t)h.max_vms);
        h.allocated_cpu = (double)rnd((uint32_t)h.cpu * 2);
        h.storage = 200 + (int64_t)rnd(400);
        if (rnd(20) == 0)
            snprintf(h.pool, sizeof h.pool, "gpu");
        if (rnd(25) == 0)
            h.status = HOST_OFFLINE;
        CHECK(hostset_add(w->hosts, &h, &err) == 0);
    }
    CHECK(hostset_finish(w->hosts, &err) == 0);
    sched_params p;
    fixture_params(&p);
    w->engine = sched_engine_new(&p, &err);
    CHECK(w->engine && sched_engine_set_hosts(w->engine, w->hosts, NULL, NULL, &err) == 0);
    for (size_t i = 0; i < n; i++) {
        const host *h = &w->hosts->hosts[i];
        /* Most hosts' every free slot held; the others' all but one, their
         * vCPUs short instead. */
        int32_t leave = rnd(5) == 0 ? 1 : 0;
        for (int32_t k = h->current_vms; k < h->max_vms - leave; k++) {
            sched_reservation r;
            memset(&r, 0, sizeof r);
            snprintf(r.task_id, sizeof r.task_id, "t-%05zu-%d", i, (int)k);
            snprintf(r.node, sizeof r.node, "%s", h->name);
            r.cpu = 1 + rnd(leave ? 24 : 8);
            r.memory = 512 * (int64_t)(1 + rnd(16));
            r.disk = rnd(3) ? (int64_t)rnd(60) : 0;
            r.has_priority = rnd(10) != 0;
            r.priority = (int32_t)rnd(5) * 10;
            r.created = (int64_t)rnd(100000);
            CHECK(sched_engine_reserve(w->engine, &r, &err) == 0);
        }
        if (leave) {
            /* And all but a few of its vCPUs. */
            const sched_host_load *load = sched_engine_host_load(w->engine, i);
            double room = h->cpu * 4 - h->allocated_cpu - load->cpu - (double)rnd(4);
            sched_reservation r;
            memset(&r, 0, sizeof r);
            snprintf(r.task_id, sizeof r.task_id, "big-%05zu", i);
            snprintf(r.node, sizeof r.node, "%s", h->name);
            r.cpu = room > 1 ? room : 1;
            r.memory = 1024;
            r.has_priority = rnd(3) != 0;
            r.priority = (int32_t)rnd(5) * 10;
            r.created = (int64_t)rnd(100000);
            CHECK(sched_engine_reserve(w->engine, &r, &err) == 0);
        }
    }
    /* And end some, so that positions in the list of holds move. */
    for (size_t k = 0; k < n / 40; k++) {
        char task[32];
        snprintf(task, sizeof task, "t-%05u-%d", rnd((uint32_t)n), (int)rnd(30));
        (void)sched_engine_release(w->engine, task);
    }
}

/* Requests that fit nowhere, preempting at random priorities and graces: the bounded
 * search chooses what examining every host chooses, from per-host reasons
 * and from reasons the index kept in aggregate alike; and it examines
 * fewer hosts. */
static void test_bounded_search_matches_every_host(void)
{
    size_t compared = 0, found = 0, examined = 0, examined_every = 0;
    for (int round = 0; round < 12; round++) {
        world w;
        random_fleet(&w, 50 + rnd(round < 6 ? 200 : 3000));
        for (int k = 0; k < 25; k++) {
            sched_request req;
            fixture_request(&req, 1 + (int)rnd(24), 1024 * (int64_t)(1 + rnd(32)));
            req.disk = rnd(2) ? (int64_t)rnd(300) : 0;
            int32_t priority = (int32_t)rnd(60);
            /* Half the time a grace leaves the newer holds out. */
            int64_t not_after = rnd(2) ? INT64_MAX : (int64_t)rnd(100000);
            vf_error err;
            vf_error_init(&err);
            sched_decision full, lazy;
            sched_decide_options lazily = {.lazy_host_reasons = true};
            CHECK(sched_engine_decide_with(w.engine, &req, &lazily, &lazy, &err) == 0);
            sched_preemption a, c;
            CHECK(sched_preempt_choose(w.engine, &req, priority, not_after, &lazy, &a, &err) == 0);
            CHECK(sched_engine_decide(w.engine, &req, &full, &err) == 0);
            if (full.placed) {
                sched_preemption_close(&a);
                continue;
            }
            sched_preemption b;
            CHECK(sched_preempt_choose(w.engine, &req, priority, not_after, &full, &b, &err) == 0);
            CHECK(sched_preempt_choose_every(w.engine, &req, priority, not_after, &full, &c,
                                             &err) == 0);
            bool ok = same_choice(&b, &c) && (lazy.host_reasons || same_choice(&a, &c));
            CHECKF(ok, "round %d request %d: bounded %s/%zu victims, every host %s/%zu", round, k,
                   b.found ? b.node->name : "-", b.n_victims, c.found ? c.node->name : "-",
                   c.n_victims);
            compared++;
            found += c.found;
            examined += b.hosts_examined;
            examined_every += c.hosts_examined;
            sched_preemption_close(&a);
            sched_preemption_close(&b);
            sched_preemption_close(&c);
        }
        world_close(&w);
    }
    printf("%zu preemptions compared, %zu found a host; hosts examined %zu bounded, %zu every\n",
           compared, found, examined, examined_every);
    CHECK(compared > 100 && found > compared / 4);
    CHECK(examined * 4 < examined_every);
}

int main(void)
{
    test_resources_not_freed();
    test_fewest_then_oldest();
    test_grace();
    test_lowest_priority();
    test_only_what_is_needed();
    test_fewest_beats_reprieve();
    test_nothing_to_take();
    test_placed_takes_nothing();
    test_allowed();
    test_same_victims_whatever_the_order();
    test_bounded_search_matches_every_host();
    return test_summary();
}
