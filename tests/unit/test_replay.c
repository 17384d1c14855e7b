/* worker/sched/replay.c: the same configuration replays with exactly zero
 * difference; a pack candidate against spread moves placements and uses
 * fewer hosts; a tighter overcommit makes requests newly unschedulable (and
 * the other way round newly schedulable); releases and expiries free room
 * under both; peaks are the highest committed figures per host. spare.prepare
 * requests replay as the worker places them: every spare on a host of its
 * own or none, strict or not per configuration, moves counted as a set. The
 * terse decisions a replay takes choose as full ones do. */
#include "config.h"
#include "replay.h"
#include "sched_fixture.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1800000000000LL /* Unix ms */

/* n hosts, the first with `first_allocated_cpu` vCPUs and half its memory
 * already allocated. */
static hostset *hosts_loaded(int n, double first_allocated_cpu)
{
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "bm-%02d", i);
        host h = fixture_host(name);
        if (i == 0) { /* half its vCPUs and memory: Balanced scores it as the others */
            h.allocated_cpu = first_allocated_cpu;
            h.allocated_memory = h.memory / 2;
        }
        CHECK(hostset_add(set, &h, &err) == 0);
    }
    CHECKF(hostset_finish(set, &err) == 0, "%s", err.text);
    return set;
}

static hostset *hosts_of(int n)
{
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "bm-%02d", i);
        host h = fixture_host(name);
        CHECK(hostset_add(set, &h, &err) == 0);
    }
    CHECKF(hostset_finish(set, &err) == 0, "%s", err.text);
    return set;
}

typedef struct run {
    vf_config *config[2];
    sched_engine *engine[2];
    replay *r;
} run;

static void start(run *x, config_strategy b_strategy, double b_overcommit_cpu)
{
    vf_error err;
    vf_error_init(&err);
    memset(x, 0, sizeof *x);
    for (int c = 0; c < 2; c++) {
        x->config[c] = config_defaults();
        CHECK(x->config[c] != NULL);
    }
    x->config[1]->scheduler.strategy = b_strategy;
    x->config[1]->scheduler.overcommit_cpu = b_overcommit_cpu;
    for (int c = 0; c < 2; c++) {
        x->engine[c] = sched_engine_from_config(x->config[c], NULL, &err);
        CHECKF(x->engine[c] != NULL, "%s", err.text);
    }
    x->r = replay_new(x->engine[0], x->engine[1], x->config[0]->scheduler.reservation_ttl_s,
                      x->config[1]->scheduler.reservation_ttl_s, &err);
    CHECK(x->r != NULL);
}

static void stop(run *x)
{
    replay_free(x->r);
    for (int c = 0; c < 2; c++) {
        sched_engine_free(x->engine[c]);
        config_free(x->config[c]);
    }
}

static void decide(run *x, int n, int cpu, int64_t memory, int64_t at_ms)
{
    vf_error err;
    vf_error_init(&err);
    for (int i = 0; i < n; i++) {
        sched_request req;
        fixture_request(&req, cpu, memory);
        snprintf(req.task_id, sizeof req.task_id, "t-%lld-%d", (long long)at_ms, i);
        CHECKF(replay_decide(x->r, &req, at_ms, &err) == 0, "%s", err.text);
    }
}

/* Same configuration: zero difference, over snapshots, releases, failures. */
static void test_same_config(void)
{
    run x;
    start(&x, CONFIG_STRATEGY_SPREAD, 4.0);
    hostset *first = hosts_of(4), *second = hosts_of(6);
    vf_error err;
    vf_error_init(&err);
    decide(&x, 1, 2, 1024, T0 - 1000); /* before any inventory: unplaced under both */
    CHECK(replay_inventory(x.r, first, T0, &err) == 0);
    decide(&x, 40, 6, 4096, T0 + 1000);
    replay_release(x.r, "t-1800000001000-3", 0);
    CHECK(replay_inventory(x.r, second, T0 + 60000, &err) == 0);
    decide(&x, 200, 16, 8192, T0 + 61000); /* until full */
    replay_totals t;
    replay_result(x.r, &t);
    CHECK(t.decisions == 241);
    CHECK(t.moved == 0 && t.newly_unschedulable == 0 && t.newly_schedulable == 0);
    CHECK(t.placed[0] == t.placed[1] && t.hosts_used[0] == t.hosts_used[1]);
    CHECKF(t.placed[0] > 40 && t.placed[0] < 241, "%llu", (unsigned long long)t.placed[0]);
    size_t n = 0;
    const replay_host_peak *peaks = replay_peaks(x.r, &n);
    CHECK(n == 6);
    for (size_t i = 0; i < n; i++)
        CHECK(peaks[i].cpu[0] == peaks[i].cpu[1] && peaks[i].memory[0] == peaks[i].memory[1]);
    stop(&x);
    hostset_free(first);
    hostset_free(second);
}

/* Spread against pack on 8 hosts and 8 small VMs: spread puts one on each,
 * pack fills the first host; so 7 of 8 move, and pack uses 1 host. */
static void test_pack_uses_fewer_hosts(void)
{
    run x;
    start(&x, CONFIG_STRATEGY_PACK, 4.0);
    hostset *set = hosts_of(8);
    vf_error err;
    vf_error_init(&err);
    CHECK(replay_inventory(x.r, set, T0, &err) == 0);
    decide(&x, 8, 1, 1024, T0 + 1000);
    replay_totals t;
    replay_result(x.r, &t);
    CHECKF(t.hosts_used[0] == 8 && t.hosts_used[1] == 1, "spread %zu, pack %zu", t.hosts_used[0],
           t.hosts_used[1]);
    CHECKF(t.moved == 7, "%llu", (unsigned long long)t.moved);
    CHECK(t.newly_unschedulable == 0 && t.newly_schedulable == 0);
    /* Peaks: under pack one host carries all 8 vCPUs and 8 GiB. */
    size_t n = 0;
    const replay_host_peak *peaks = replay_peaks(x.r, &n);
    double max_b = 0, max_a = 0;
    for (size_t i = 0; i < n; i++) {
        max_a = peaks[i].cpu[0] > max_a ? peaks[i].cpu[0] : max_a;
        max_b = peaks[i].cpu[1] > max_b ? peaks[i].cpu[1] : max_b;
    }
    CHECK(max_a == 1 && max_b == 8);
    CHECK(peaks[0].memory[1] == 8 * 1024 || peaks[n - 1].memory[1] == 8 * 1024);
    CHECK(peaks[0].cpu_capacity[0] == 64);
    stop(&x);
    hostset_free(set);
}

/* B overcommits CPU 1:1 instead of 4:1: one host of 16 cores takes 16
 * vCPUs under B, 64 under A. Releases and expiry give the room back. */
static void test_new_failures_and_releases(void)
{
    run x;
    start(&x, CONFIG_STRATEGY_SPREAD, 1.0);
    hostset *set = hosts_of(1);
    vf_error err;
    vf_error_init(&err);
    CHECK(replay_inventory(x.r, set, T0, &err) == 0);
    decide(&x, 8, 4, 1024, T0 + 1000); /* 32 vCPUs: A all 8, B 4 */
    replay_totals t;
    replay_result(x.r, &t);
    CHECK(t.placed[0] == 8 && t.placed[1] == 4);
    CHECK(t.newly_unschedulable == 4 && t.newly_schedulable == 0 && t.moved == 0);
    /* Release B's 4 (and A's same tasks): A has 16 vCPUs held of 64, B 0 of
     * 16; 8 more: A places 8 (48 of 64), B 4 again. */
    for (int i = 0; i < 4; i++) {
        char id[64];
        snprintf(id, sizeof id, "t-%lld-%d", (long long)(T0 + 1000), i);
        replay_release(x.r, id, 0);
    }
    decide(&x, 8, 4, 1024, T0 + 2000);
    replay_result(x.r, &t);
    CHECK(t.placed[0] == 16 && t.placed[1] == 8);
    CHECK(t.newly_unschedulable == 8);
    /* A full at 64: everything held expires by a snapshot past the TTL. */
    decide(&x, 4, 4, 1024, T0 + 3000);
    replay_result(x.r, &t);
    CHECK(t.placed[0] == 20 && t.placed[1] == 8);
    CHECK(replay_inventory(x.r, set, T0 + 3000 + 901000, &err) == 0);
    decide(&x, 1, 16, 1024, T0 + 905000); /* fits both once the holds expired */
    replay_result(x.r, &t);
    CHECK(t.placed[0] == 21 && t.placed[1] == 9);
    size_t n = 0;
    const replay_host_peak *peaks = replay_peaks(x.r, &n);
    CHECK(n == 1 && peaks[0].cpu[0] == 64 && peaks[0].cpu[1] == 16);
    /* Stranded now: 21 requests, 20 of 4 vCPUs and one of 16, all 1024 MiB:
     * the median is 4 vCPUs. A holds 16 of 64 vCPUs: 48 free, not stranded.
     * B holds 16 of 16: its 63 GiB free are stranded, with no vCPU to go. */
    replay_stranded s;
    CHECK(replay_stranded_now(x.r, 0, &s, &err) == 0);
    CHECK(s.median_cpu == 4 && s.median_memory == 1024);
    CHECK(s.hosts == 0 && s.cpu == 0 && s.memory == 0);
    CHECK(replay_stranded_now(x.r, 1, &s, &err) == 0);
    CHECK(s.hosts == 1 && s.cpu == 0 && s.memory == 65536 - 1024);
    /* A 45-vCPU request, which only A places: A keeps 3 vCPUs, less than
     * the median, so they and its free memory are stranded. */
    decide(&x, 1, 45, 1024, T0 + 906000);
    replay_result(x.r, &t);
    CHECK(t.placed[0] == 22 && t.placed[1] == 9);
    CHECK(replay_stranded_now(x.r, 0, &s, &err) == 0);
    CHECKF(s.hosts == 1 && s.cpu == 3 && s.memory == 65536 - 2 * 1024,
           "A: %zu hosts, %.1f vCPUs, %.0f MiB stranded", s.hosts, s.cpu, s.memory);
    stop(&x);
    hostset_free(set);
}

static void spares(run *x, const char *task_id, int count, int64_t at_ms)
{
    vf_error err;
    vf_error_init(&err);
    sched_request req;
    fixture_request(&req, 2, 1024);
    snprintf(req.task_id, sizeof req.task_id, "%s", task_id);
    CHECKF(replay_decide_spares(x->r, &req, count, 600, at_ms, &err) == 0, "%s", err.text);
}

/* Anti-affine spares: one a host under both, all or none; a configuration
 * that allows sharing places what a strict one cannot. */
static void test_spares_same_config(void)
{
    run x;
    start(&x, CONFIG_STRATEGY_SPREAD, 4.0);
    hostset *set = hosts_of(4);
    vf_error err;
    vf_error_init(&err);
    CHECK(replay_inventory(x.r, set, T0, &err) == 0);
    spares(&x, "up-1", 3, T0 + 1000);
    spares(&x, "up-2", 5, T0 + 2000); /* 5 on 4 hosts: none, under either */
    replay_totals t;
    replay_result(x.r, &t);
    CHECK(t.spare_prepares == 2 && t.decisions == 0);
    CHECK(t.spares_placed[0] == 1 && t.spares_placed[1] == 1);
    CHECK(t.spares_moved == 0 && t.spares_newly_unschedulable == 0 &&
          t.spares_newly_schedulable == 0);
    CHECK(t.hosts_used[0] == 3 && t.hosts_used[1] == 3);
    size_t n = 0;
    const replay_host_peak *peaks = replay_peaks(x.r, &n);
    uint32_t total = 0;
    for (size_t i = 0; i < n; i++) {
        CHECK(peaks[i].placements[0] <= 1 && peaks[i].placements[1] <= 1);
        total += peaks[i].placements[0];
    }
    CHECK(total == 3); /* up-2 held nothing */
    /* B may share hosts: 5 spares on 4 hosts under B only. */
    replay_spare_policy(x.r, 1, false, 900);
    spares(&x, "up-3", 5, T0 + 3000);
    replay_result(x.r, &t);
    CHECK(t.spares_newly_schedulable == 1 && t.spares_newly_unschedulable == 0);
    CHECK(t.spares_placed[0] == 1 && t.spares_placed[1] == 2);
    CHECK(t.hosts_used[1] == 4);
    /* Anti-affinity is among one request's spares: 4 more fit beside up-1's. */
    spares(&x, "up-4", 4, T0 + 4000);
    replay_result(x.r, &t);
    CHECK(t.spares_placed[0] == 2);
    stop(&x);
    hostset_free(set);
}

/* Spread avoids the host half allocated, pack fills it first: of
 * 3 spares on 4 hosts exactly one lands where A has none. 4 spares on 4
 * hosts take every host under both: the order differs, nothing moves. */
static void test_spares_moved(void)
{
    run x;
    start(&x, CONFIG_STRATEGY_PACK, 4.0);
    hostset *set = hosts_loaded(4, 32);
    vf_error err;
    vf_error_init(&err);
    CHECK(replay_inventory(x.r, set, T0, &err) == 0);
    spares(&x, "up-1", 3, T0 + 1000);
    replay_totals t;
    replay_result(x.r, &t);
    CHECKF(t.spares_moved == 1, "%llu", (unsigned long long)t.spares_moved);
    size_t n = 0;
    const replay_host_peak *peaks = replay_peaks(x.r, &n);
    CHECK(n == 4 && peaks[0].placements[0] == 0 && peaks[0].placements[1] == 1);
    replay_release(x.r, "up-1", 0);
    spares(&x, "up-2", 4, T0 + 2000);
    replay_result(x.r, &t);
    CHECK(t.spares_moved == 1 && t.spares_placed[0] == 2 && t.spares_placed[1] == 2);
    stop(&x);
    hostset_free(set);
}

/* Two engines alike, one deciding tersely: the same hosts, vmids and
 * scores, request after request; the terse one formats no message. */
static void test_terse_decides_alike(void)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *config = config_defaults();
    sched_engine *full = sched_engine_from_config(config, NULL, &err);
    sched_engine *terse = sched_engine_from_config(config, NULL, &err);
    hostset *set = hosts_loaded(5, 20);
    CHECK(full && terse && sched_engine_set_hosts(full, set, NULL, NULL, &err) == 0 &&
          sched_engine_set_hosts(terse, set, NULL, NULL, &err) == 0);
    sched_decide_options quiet = {.terse = true};
    for (int i = 0; full && terse && i < 60; i++) {
        sched_request req;
        fixture_request(&req, 1 + i % 5, 1024 * (1 + i % 3));
        snprintf(req.task_id, sizeof req.task_id, "t-%d", i);
        sched_decision a, b;
        CHECK(sched_engine_decide(full, &req, &a, &err) == 0);
        CHECK(sched_engine_decide_with(terse, &req, &quiet, &b, &err) == 0);
        CHECKF(a.placed == b.placed && a.node == b.node && a.vmid == b.vmid && a.score == b.score,
               "request %d: %s/%u vs %s/%u", i, a.node ? a.node->name : "-", a.vmid,
               b.node ? b.node->name : "-", b.vmid);
        CHECK(!b.placed || (b.message[0] == '\0' && b.n_parts == 0));
        CHECK(!a.placed || a.message[0] != '\0');
        sched_reservation res;
        if (a.placed) {
            sched_reservation_from_decision(&res, &a, &req, req.task_id, 0);
            CHECK(sched_engine_reserve(full, &res, &err) == 0);
            sched_reservation_from_decision(&res, &b, &req, req.task_id, 0);
            CHECK(sched_engine_reserve(terse, &res, &err) == 0);
        }
        if (i % 7 == 6) { /* releases lower the vmid hints */
            char id[32];
            snprintf(id, sizeof id, "t-%d", i - 4);
            CHECK(sched_engine_release(full, id) == sched_engine_release(terse, id));
        }
    }
    sched_engine_free(full);
    sched_engine_free(terse);
    hostset_free(set);
    config_free(config);
}

int main(void)
{
    test_terse_decides_alike();
    test_spares_same_config();
    test_spares_moved();
    test_same_config();
    test_pack_uses_fewer_hosts();
    test_new_failures_and_releases();
    return test_summary();
}
