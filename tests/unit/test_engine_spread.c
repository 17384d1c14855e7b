/* The engine's per-decision host exclusion (anti-affinity for spares). */
#include <stdlib.h>
#include <string.h>

#include "sched_fixture.h"
#include "testlib.h"

typedef struct world {
    hostset *hosts;
    sched_engine *engine;
} world;

static void world_open(world *w, const host *hosts, size_t n)
{
    vf_error err;
    vf_error_init(&err);
    w->hosts = hostset_new();
    for (size_t i = 0; i < n; i++)
        CHECK(hostset_add(w->hosts, &hosts[i], &err) == 0);
    CHECK(hostset_finish(w->hosts, &err) == 0);
    sched_params params;
    fixture_params(&params);
    w->engine = sched_engine_new(&params, &err);
    CHECKF(w->engine != NULL, "%s", err.text);
    CHECK(sched_engine_set_hosts(w->engine, w->hosts, NULL, NULL, &err) == 0);
}

static void world_close(world *w)
{
    sched_engine_free(w->engine);
    hostset_free(w->hosts);
}

static void decide(world *w, const sched_request *req, const size_t *excluded, size_t n_excluded,
                   sched_decision *d)
{
    vf_error err;
    vf_error_init(&err);
    sched_decide_options options = {.excluded = excluded, .n_excluded = n_excluded};
    int rc = sched_engine_decide_with(w->engine, req, &options, d, &err);
    CHECKF(rc == 0, "decide failed: %s", err.text);
}

/* The best host is excluded: the next best wins and the excluded one says why. */
static void test_excluded_host_is_skipped(void)
{
    host hosts[3] = {fixture_host("bm-01"), fixture_host("bm-02"), fixture_host("bm-03")};
    hosts[1].allocated_cpu = 40; /* bm-01 and bm-03 are the emptiest */
    world w;
    world_open(&w, hosts, 3);
    sched_request req;
    fixture_request(&req, 2, 1024);
    sched_decision d;
    decide(&w, &req, NULL, 0, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-01");
    size_t first = sched_decision_host_index(w.engine, &d);
    CHECK(first == 0);

    decide(&w, &req, &first, 1, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-03");
    CHECK(d.n_feasible == 2);
    CHECK(d.host_reasons[0] == SCHED_REASON_ANTI_AFFINITY);
    CHECK(d.reason_counts[SCHED_REASON_ANTI_AFFINITY] == 1);
    CHECK_CONTAINS(d.message, "1 anti-affinity");
    world_close(&w);
}

/* Placing one per host until none is left: every pick distinct, then an
 * unschedulable decision that says anti-affinity was the cause. */
static void test_spread_until_exhausted(void)
{
    host hosts[3] = {fixture_host("bm-01"), fixture_host("bm-02"), fixture_host("bm-03")};
    world w;
    world_open(&w, hosts, 3);
    sched_request req;
    fixture_request(&req, 2, 1024);
    size_t used[3];
    sched_decision d;
    for (size_t i = 0; i < 3; i++) {
        decide(&w, &req, used, i, &d);
        CHECK(d.placed);
        if (!d.placed)
            break;
        used[i] = sched_decision_host_index(w.engine, &d);
        for (size_t j = 0; j < i; j++)
            CHECK(used[j] != used[i]);
        sched_reservation res;
        sched_reservation_from_decision(&res, &d, &req, "spare-task", 0);
        vf_error err;
        vf_error_init(&err);
        CHECK(sched_engine_reserve(w.engine, &res, &err) == 0);
    }
    decide(&w, &req, used, 3, &d);
    CHECK(!d.placed);
    CHECK(d.n_feasible == 0);
    CHECK_STR(d.message, "0/3 nodes are available: 3 anti-affinity");
    /* Without the exclusion the same request still fits. */
    decide(&w, &req, NULL, 0, &d);
    CHECK(d.placed);
    world_close(&w);
}

/* A host excluded but failing a filter anyway keeps the filter's reason, and
 * out-of-range indexes are ignored rather than read. */
static void test_filter_reason_wins_and_bad_index_ignored(void)
{
    host hosts[2] = {fixture_host("bm-01"), fixture_host("bm-02")};
    snprintf(hosts[0].pool, sizeof hosts[0].pool, "other");
    world w;
    world_open(&w, hosts, 2);
    sched_request req;
    fixture_request(&req, 2, 1024);
    size_t excluded[3] = {0, 1, 99};
    sched_decision d;
    decide(&w, &req, excluded, 3, &d);
    CHECK(!d.placed);
    CHECK(d.host_reasons[0] == SCHED_REASON_POOL);
    CHECK(d.host_reasons[1] == SCHED_REASON_ANTI_AFFINITY);
    CHECK_CONTAINS(d.message, "1 pool mismatch");
    CHECK_CONTAINS(d.message, "1 anti-affinity");
    /* The plain decide is unchanged by an earlier exclusion. */
    sched_decision plain;
    vf_error err;
    vf_error_init(&err);
    CHECK(sched_engine_decide(w.engine, &req, &plain, &err) == 0);
    CHECK(plain.placed);
    CHECK_STR(plain.node->name, "bm-02");
    world_close(&w);
}

int main(void)
{
    test_excluded_host_is_skipped();
    test_spread_until_exhausted();
    test_filter_reason_wins_and_bad_index_ignored();
    return test_summary();
}
