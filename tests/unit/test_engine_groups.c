/* Groups (sched_decide_options.group_members): the hard policies as a
 * filter, max_per_host, the soft ones as the ServerGroup score, and a
 * request without a group unchanged by them. */
#include <string.h>

#include "sched_fixture.h"
#include "testlib.h"

typedef struct world {
    hostset *hosts;
    sched_engine *engine;
} world;

/* bm-01 .. bm-0n; bm-01 the emptiest, each next one busier, so that
 * without a group bm-01 wins. */
static void world_open(world *w, size_t n)
{
    vf_error err;
    vf_error_init(&err);
    w->hosts = hostset_new();
    for (size_t i = 0; i < n; i++) {
        char name[32]; /* room for any size_t: gcc's -Wformat-truncation */
        snprintf(name, sizeof name, "bm-%02zu", i + 1);
        host h = fixture_host(name);
        h.allocated_cpu = (double)(8 * i);
        h.allocated_memory = (int64_t)(8192 * i);
        CHECK(hostset_add(w->hosts, &h, &err) == 0);
    }
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

static void group_request(sched_request *req, sched_group_policy policy, int32_t max_per_host)
{
    fixture_request(req, 2, 1024);
    snprintf(req->group, sizeof req->group, "web");
    req->group_policy = policy;
    req->group_max_per_host = max_per_host;
}

static void decide(world *w, const sched_request *req, const uint32_t *members, sched_decision *d)
{
    vf_error err;
    vf_error_init(&err);
    sched_decide_options options = {.group_members = members};
    int rc = sched_engine_decide_with(w->engine, req, &options, d, &err);
    CHECKF(rc == 0, "decide failed: %s", err.text);
}

static void test_anti_affinity(void)
{
    world w;
    world_open(&w, 3);
    sched_request req;
    group_request(&req, SCHED_GROUP_ANTI_AFFINITY, 1);
    sched_decision d;
    /* No member anywhere: the best host. */
    decide(&w, &req, NULL, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-01");
    uint32_t members[3] = {1, 0, 0};
    decide(&w, &req, members, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-02");
    CHECK_CONTAINS(d.message, "1 group anti-affinity");
    /* Every host holds one: nowhere, and the reason says why. */
    uint32_t everywhere[3] = {1, 1, 1};
    decide(&w, &req, everywhere, &d);
    CHECK(!d.placed);
    CHECK_STR(d.message, "0/3 nodes are available: 3 group anti-affinity");
    CHECK(d.host_reasons[2] == SCHED_REASON_GROUP_ANTI_AFFINITY);
    /* max_per_host 2: a host with one member still takes another. */
    req.group_max_per_host = 2;
    decide(&w, &req, everywhere, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-01");
    uint32_t two_first[3] = {2, 1, 1};
    decide(&w, &req, two_first, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-02");
    world_close(&w);
}

static void test_affinity(void)
{
    world w;
    world_open(&w, 3);
    sched_request req;
    group_request(&req, SCHED_GROUP_AFFINITY, 0);
    sched_decision d;
    decide(&w, &req, NULL, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-01");
    /* The members are on the busiest host: there, not on the emptiest. */
    uint32_t members[3] = {0, 0, 2};
    decide(&w, &req, members, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-03");
    CHECK_CONTAINS(d.message, "2 group affinity");
    /* Their host cannot take it: nowhere (a hard policy), each reason named. */
    req.cpu = 50; /* bm-03 has 64 - 16 = 48 vCPUs left, bm-01 64 */
    decide(&w, &req, members, &d);
    CHECK(!d.placed);
    CHECK(d.host_reasons[0] == SCHED_REASON_GROUP_AFFINITY);
    CHECK(d.host_reasons[2] == SCHED_REASON_CPU);
    CHECK_CONTAINS(d.message, "2 group affinity");
    CHECK_CONTAINS(d.message, "1 insufficient cpu");
    /* max_per_host caps the group's host too. */
    req.cpu = 2;
    req.group_max_per_host = 2;
    decide(&w, &req, members, &d);
    CHECK(!d.placed);
    CHECK(d.host_reasons[2] == SCHED_REASON_GROUP_FULL);
    CHECK_CONTAINS(d.message, "1 group max_per_host");
    world_close(&w);
}

static bool has_part(const sched_decision *d, const char *name, double *score)
{
    for (size_t i = 0; i < d->n_parts; i++)
        if (strcmp(d->parts[i].plugin, name) == 0) {
            *score = d->parts[i].score;
            return true;
        }
    return false;
}

static void test_soft_anti_affinity(void)
{
    world w;
    world_open(&w, 3);
    sched_request req;
    group_request(&req, SCHED_GROUP_SOFT_ANTI_AFFINITY, 0);
    sched_decision d;
    double part = -1;
    /* No member: no ServerGroup score at all, the plain decision. */
    decide(&w, &req, NULL, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-01");
    CHECK(!has_part(&d, SCHED_GROUP_SCORE_NAME, &part));
    /* A member on the emptiest host: the next one. */
    uint32_t members[3] = {1, 0, 0};
    decide(&w, &req, members, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-02");
    CHECK(has_part(&d, SCHED_GROUP_SCORE_NAME, &part));
    CHECK(part == 100.0);
    /* Members everywhere: the host with the fewest. */
    uint32_t uneven[3] = {3, 2, 1};
    decide(&w, &req, uneven, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-03");
    /* Soft: only hosts with members fit, so one of them is used. */
    uint32_t all[3] = {1, 1, 1};
    req.cpu = 60; /* only bm-01 (64 free) fits */
    decide(&w, &req, all, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-01");
    world_close(&w);
}

static void test_soft_affinity(void)
{
    world w;
    world_open(&w, 3);
    sched_request req;
    group_request(&req, SCHED_GROUP_SOFT_AFFINITY, 0);
    sched_decision d;
    uint32_t members[3] = {0, 1, 0};
    decide(&w, &req, members, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-02");
    /* Its host full: placed elsewhere rather than not at all. */
    req.cpu = 60; /* bm-02 has 64 - 8 = 56 vCPUs left, bm-01 64 */
    decide(&w, &req, members, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-01");
    /* max_per_host is hard whatever the policy. */
    req.cpu = 2;
    req.group_max_per_host = 1;
    decide(&w, &req, members, &d);
    CHECK(d.placed);
    CHECK_STR(d.node->name, "bm-01");
    CHECK_CONTAINS(d.message, "1 group max_per_host");
    world_close(&w);
}

/* A request without a group ignores group_members, and takes the same
 * decision as sched_engine_decide. */
static void test_no_group_unchanged(void)
{
    world w;
    world_open(&w, 3);
    sched_request req;
    fixture_request(&req, 2, 1024);
    uint32_t members[3] = {5, 0, 0};
    sched_decision with, plain;
    decide(&w, &req, members, &with);
    vf_error err;
    vf_error_init(&err);
    CHECK(sched_engine_decide(w.engine, &req, &plain, &err) == 0);
    CHECK(with.placed && plain.placed);
    CHECK_STR(with.node->name, "bm-01");
    CHECK_STR(plain.node->name, "bm-01");
    CHECK(with.score == plain.score);
    CHECK(with.n_parts == plain.n_parts);
    world_close(&w);
}

int main(void)
{
    test_anti_affinity();
    test_affinity();
    test_soft_anti_affinity();
    test_soft_affinity();
    test_no_group_unchanged();
    return test_summary();
}
