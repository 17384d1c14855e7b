/* The topology spread (spread.c, engine_spread.c): Kubernetes'
 * topologySpreadConstraints over hosts' labels, as docs/scheduling.md
 * "Failure domains and topology spread" states it. Three control-plane VMs
 * decided one after the other, as a count or a group's members are (each
 * decision counting the ones before): one per rack over three racks; 2 + 1
 * over two; all three in a single rack unless min_domains asks for more
 * domains, when the second is refused naming the rack; a rack whose hosts
 * are full holds the minimum down and is named as lacking room; a host
 * without the key is refused; a soft spread only scores. */
#include <stdlib.h>
#include <string.h>

#include "never_fits.h"
#include "sched_fixture.h"
#include "suggest.h"
#include "testlib.h"

typedef struct world {
    hostset *hosts;
    sched_engine *engine;
} world;

/* One host per entry: its name and rack ("" none), the hosts listed
 * emptiest first so that without a spread the first would win every time;
 * `full` hosts have no vCPU left. */
typedef struct spot {
    const char *name;
    const char *rack;
    bool full;
    host_status status;
} spot;

static void world_open(world *w, const spot *spots, size_t n)
{
    vf_error err;
    vf_error_init(&err);
    w->hosts = hostset_new();
    for (size_t i = 0; i < n; i++) {
        host h = fixture_host(spots[i].name);
        h.allocated_cpu = spots[i].full ? 64 : (double)i;
        h.status = spots[i].status;
        host_traits traits;
        memset(&traits, 0, sizeof traits);
        if (spots[i].rack[0]) {
            CHECK(label_set_put(&traits.labels, "rack", spots[i].rack, &err) == 0);
            h.traits = &traits;
        }
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

static void spread_request(sched_request *req, int32_t max_skew, int32_t min_domains, bool soft)
{
    fixture_request(req, 2, 1024);
    snprintf(req->spread.key, sizeof req->spread.key, "rack");
    req->spread.max_skew = max_skew;
    req->spread.min_domains = min_domains;
    req->spread.soft = soft;
}

/* Decide `count` VMs one after the other, each counted for the next (as
 * place_all counts a request's own VMs), writing each host's rack into
 * racks[] (the decisions' placements) and leaving the last decision in *d.
 * Returns how many were placed before one was not. */
static int place(world *w, const sched_request *req, int count, uint32_t *members,
                 const char **racks, sched_decision *d)
{
    vf_error err;
    vf_error_init(&err);
    for (int k = 0; k < count; k++) {
        sched_decide_options options = {.group_members = members};
        CHECKF(sched_engine_decide_with(w->engine, req, &options, d, &err) == 0, "%s", err.text);
        if (!d->placed)
            return k;
        members[sched_decision_host_index(w->engine, d)]++;
        racks[k] = host_traits_label(d->node->traits, "rack");
    }
    return count;
}

static const spot three_racks[] = {
    {"a1", "r1", false, HOST_ONLINE}, {"a2", "r1", false, HOST_ONLINE},
    {"b1", "r2", false, HOST_ONLINE}, {"b2", "r2", false, HOST_ONLINE},
    {"c1", "r3", false, HOST_ONLINE}, {"c2", "r3", false, HOST_ONLINE},
};

static void test_three_racks_one_each(void)
{
    world w;
    world_open(&w, three_racks, 6);
    sched_request req;
    spread_request(&req, 1, 1, false);
    uint32_t members[6] = {0};
    const char *racks[3] = {NULL};
    sched_decision d;
    CHECK(place(&w, &req, 3, members, racks, &d) == 3);
    /* a1 is the emptiest host: without the spread all three would land
     * there; with it, one per rack. */
    CHECK(racks[0] && racks[1] && racks[2] && strcmp(racks[0], "r1") == 0 &&
          strcmp(racks[1], "r2") == 0 && strcmp(racks[2], "r3") == 0);
    CHECK_CONTAINS(d.message, "c1 chosen");
    CHECK_CONTAINS(d.message, "4 spread over rack");
    /* Why not a1 for a second VM while r2 and r3 have room: the spread, and
     * no domain lacks room (a placed decision explains itself too). */
    uint32_t one[6] = {1, 0, 0, 0, 0, 0};
    sched_decide_options why = {.group_members = one, .host_reasons = true};
    vf_error err;
    vf_error_init(&err);
    CHECK(sched_engine_decide_with(w.engine, &req, &why, &d, &err) == 0 && d.placed);
    json_t *suggested = sched_suggest(w.engine, &req, &d, 10);
    json_t *a1 = json_object_get(json_object_get(suggested, "hosts"), "a1");
    CHECK_STR(json_string_value(json_object_get(a1, "reason")), "spread over rack");
    CHECK(json_array_size(json_object_get(a1, "lacks_room")) == 0);
    CHECK_STR(json_string_value(json_object_get(a1, "detail")),
              "rack r1 holds 1, 1 more than the least (max_skew 1)");
    json_decref(suggested);
    /* A fourth may go anywhere (every rack holds one): the emptiest. */
    CHECK(place(&w, &req, 1, members, racks, &d) == 1);
    CHECK_STR(d.node->name, "a1");
    world_close(&w);
}

static void test_two_racks_two_and_one(void)
{
    world w;
    world_open(&w, three_racks, 4); /* a1 a2 (r1), b1 b2 (r2) */
    sched_request req;
    spread_request(&req, 1, 1, false);
    uint32_t members[4] = {0};
    const char *racks[3] = {NULL};
    sched_decision d;
    CHECK(place(&w, &req, 3, members, racks, &d) == 3);
    CHECK(racks[0] && racks[1] && racks[2] && strcmp(racks[0], "r1") == 0 &&
          strcmp(racks[1], "r2") == 0 && strcmp(racks[2], "r1") == 0);
    CHECK(members[0] + members[1] == 2 && members[2] + members[3] == 1);
    world_close(&w);
}

/* One rack: Kubernetes measures skew between the domains there are, and a
 * single domain has none, so all three land in it. min_domains (Kubernetes'
 * minDomains) asks for more: the least domain then counts as 0, the second
 * VM is refused naming the rack, and the request never fits. */
static void test_one_rack(void)
{
    world w;
    world_open(&w, three_racks, 2); /* a1 a2, both r1 */
    sched_request req;
    spread_request(&req, 1, 1, false);
    uint32_t members[2] = {0};
    const char *racks[3] = {NULL};
    sched_decision d;
    CHECK(place(&w, &req, 3, members, racks, &d) == 3);
    CHECK(members[0] + members[1] == 3);

    spread_request(&req, 1, 3, false);
    req.count = 3;
    memset(members, 0, sizeof members);
    CHECK(place(&w, &req, 3, members, racks, &d) == 1);
    CHECK_STR(d.message, "0/2 nodes are available: 2 spread over rack (1 domain of rack, "
                         "min_domains 3: rack r1)");
    json_t *result = sched_decision_to_json(&d, w.hosts);
    CHECK_STR(json_string_value(json_object_get(json_object_get(result, "rejections"), "a1")),
              "spread over rack");
    json_decref(result);
    char why[512];
    CHECK(sched_never_fits(w.engine, &req, why, sizeof why));
    CHECK_STR(why, "3 VMs spread over rack (max_skew 1, min_domains 3): pool \"default\" has 1 "
                   "rack domain(s) (r1), so at most 1 fit");
    /* max_skew 3 would take them: not never. */
    req.spread.max_skew = 3;
    CHECK(!sched_never_fits(w.engine, &req, why, sizeof why));
    world_close(&w);
}

/* A rack whose hosts are full still counts as a domain (its count, 0,
 * is the minimum): the third VM waits, and the message and the suggestions
 * name the rack that lacks room. */
static void test_full_rack_lacks_room(void)
{
    static const spot spots[] = {
        {"a1", "r1", false, HOST_ONLINE}, {"a2", "r1", false, HOST_ONLINE},
        {"b1", "r2", false, HOST_ONLINE}, {"b2", "r2", false, HOST_ONLINE},
        {"c1", "r3", true, HOST_ONLINE},  {"c2", "r3", true, HOST_ONLINE},
    };
    world w;
    world_open(&w, spots, 6);
    sched_request req;
    spread_request(&req, 1, 1, false);
    uint32_t members[6] = {0};
    const char *racks[3] = {NULL};
    sched_decision d;
    /* The second goes to r2 (r1 holds one more than r3's 0); the third
     * finds r1 and r2 one ahead of r3, which has no room. */
    CHECK(place(&w, &req, 3, members, racks, &d) == 2);
    CHECK(racks[0] && strcmp(racks[0], "r1") == 0 && racks[1] && strcmp(racks[1], "r2") == 0);
    CHECK_STR(d.message, "0/6 nodes are available: 4 spread over rack, 2 insufficient cpu (rack "
                         "r3 lacks room)");
    json_t *why = sched_suggest(w.engine, &req, &d, 10);
    json_t *a1 = json_object_get(json_object_get(why, "hosts"), "a1");
    CHECK_STR(json_string_value(json_object_get(a1, "constraint")), "spread");
    CHECK_STR(json_string_value(json_object_get(a1, "domain")), "r1");
    CHECK_STR(json_string_value(json_array_get(json_object_get(a1, "lacks_room"), 0)), "r3");
    CHECK_CONTAINS(json_string_value(json_object_get(a1, "detail")),
                   "rack r1 holds 1, 1 more than the least (max_skew 1): room is needed in rack "
                   "r3");
    CHECK_STR(json_string_value(json_object_get(a1, "reason")), "spread over rack");
    json_decref(why);
    world_close(&w);
}

/* Offline hosts make no domain: a rack that is all offline is out of the
 * count, and the others share the VMs (2 + 1 over r1, r2). */
static void test_offline_rack_is_no_domain(void)
{
    static const spot spots[] = {
        {"a1", "r1", false, HOST_ONLINE},
        {"b1", "r2", false, HOST_ONLINE},
        {"c1", "r3", false, HOST_OFFLINE},
        {"c2", "r3", false, HOST_MAINTENANCE},
    };
    world w;
    world_open(&w, spots, 4);
    sched_request req;
    spread_request(&req, 1, 1, false);
    uint32_t members[4] = {0};
    const char *racks[3] = {NULL};
    sched_decision d;
    CHECK(place(&w, &req, 3, members, racks, &d) == 3);
    CHECK(members[0] == 2 && members[1] == 1);
    world_close(&w);
}

/* A host without the key is no place for a spread request (Kubernetes:
 * "missing required label"); a key no host carries never fits. */
static void test_missing_label(void)
{
    static const spot spots[] = {
        {"a1", "", false, HOST_ONLINE},
        {"b1", "r2", false, HOST_ONLINE},
    };
    world w;
    world_open(&w, spots, 2);
    sched_request req;
    spread_request(&req, 1, 1, false);
    uint32_t members[2] = {0};
    const char *racks[1] = {NULL};
    sched_decision d;
    CHECK(place(&w, &req, 1, members, racks, &d) == 1);
    CHECK_STR(d.node->name, "b1");
    CHECK_CONTAINS(d.message, "1 missing label rack");
    snprintf(req.spread.key, sizeof req.spread.key, "pdu");
    CHECK(place(&w, &req, 1, members, racks, &d) == 0);
    CHECK_STR(d.message, "0/2 nodes are available: 2 missing label pdu");
    char why[256];
    CHECK(sched_never_fits(w.engine, &req, why, sizeof why));
    CHECK_STR(why, "no host of pool \"default\" has the label pdu its spread is over");
    world_close(&w);
}

/* when_unsatisfiable: score prefers the emptier domain but refuses
 * nothing, and adds TopologySpread to the breakdown; a request without a
 * spread scores as before (no TopologySpread part, the same score). */
static void test_soft_spread(void)
{
    world w;
    world_open(&w, three_racks, 6);
    sched_request plain;
    fixture_request(&plain, 2, 1024);
    sched_decision before;
    vf_error err;
    vf_error_init(&err);
    CHECK(sched_engine_decide(w.engine, &plain, &before, &err) == 0);
    CHECK(before.placed && before.n_parts == 3);

    sched_request req;
    spread_request(&req, 1, 1, true);
    uint32_t members[6] = {2, 0, 0, 0, 0, 0}; /* two in r1 already */
    const char *racks[1] = {NULL};
    sched_decision d;
    CHECK(place(&w, &req, 1, members, racks, &d) == 1);
    CHECK(racks[0] && strcmp(racks[0], "r1") != 0);
    CHECK(d.n_parts == 4 && strcmp(d.parts[3].plugin, "TopologySpread") == 0 &&
          d.parts[3].score == 100 && d.parts[3].weight == 3);
    /* Every rack but one full of members: still placed, nothing refused. */
    uint32_t crowded[6] = {5, 5, 5, 5, 0, 0};
    CHECK(place(&w, &req, 1, crowded, racks, &d) == 1);
    CHECK(racks[0] && strcmp(racks[0], "r3") == 0);
    CHECK(d.n_feasible == 6);

    sched_decision after;
    CHECK(sched_engine_decide(w.engine, &plain, &after, &err) == 0);
    CHECK(after.placed && after.n_parts == 3 && after.score == before.score);
    world_close(&w);
}

/* The spread's plugins switched off: the filter off lets a hard spread
 * through; the score off (weight 0) leaves a soft one unscored. */
static void test_plugins_off(void)
{
    world w;
    world_open(&w, three_racks, 6);
    sched_params params;
    fixture_params(&params);
    config_plugin off[2] = {
        {.kind = CONFIG_PLUGIN_FILTER, .name = "TopologySpread", .enable = false},
        {.kind = CONFIG_PLUGIN_SCORE, .name = "TopologySpread", .enable = false},
    };
    params.plugins = off;
    params.n_plugins = 2;
    vf_error err;
    vf_error_init(&err);
    CHECK(sched_engine_set_params(w.engine, &params, &err) == 0);
    sched_request req;
    spread_request(&req, 1, 1, false);
    uint32_t members[6] = {0};
    const char *racks[3] = {NULL};
    sched_decision d;
    CHECK(place(&w, &req, 3, members, racks, &d) == 3);
    CHECK(members[0] == 3); /* the emptiest host each time */
    spread_request(&req, 1, 1, true);
    CHECK(place(&w, &req, 1, members, racks, &d) == 1);
    CHECK(d.n_parts == 3);
    world_close(&w);
}

/* The domains of a key are interned once per snapshot and key; a new
 * snapshot (even at the same address) is interned again. */
static void test_domains_follow_the_snapshot(void)
{
    world w;
    world_open(&w, three_racks, 6);
    sched_request req;
    spread_request(&req, 1, 1, false);
    uint32_t members[6] = {0};
    const char *racks[1] = {NULL};
    sched_decision d;
    CHECK(place(&w, &req, 1, members, racks, &d) == 1);
    const spread_view *v = sched_engine_spread(w.engine);
    CHECK(v && v->n_domains == 3 && v->n_eligible == 3 && strcmp(v->key, "rack") == 0);
    /* Another snapshot: two racks. */
    hostset *other = hostset_new();
    vf_error err;
    vf_error_init(&err);
    for (int i = 0; i < 2; i++) {
        host h = fixture_host(i ? "y" : "x");
        host_traits traits;
        memset(&traits, 0, sizeof traits);
        CHECK(label_set_put(&traits.labels, "rack", i ? "q2" : "q1", &err) == 0);
        h.traits = &traits;
        CHECK(hostset_add(other, &h, &err) == 0);
    }
    CHECK(hostset_finish(other, &err) == 0);
    CHECK(sched_engine_set_hosts(w.engine, other, NULL, NULL, &err) == 0);
    CHECK(sched_engine_spread(w.engine) == NULL);
    memset(members, 0, sizeof members);
    CHECK(place(&w, &req, 1, members, racks, &d) == 1);
    v = sched_engine_spread(w.engine);
    CHECK(v && v->n_domains == 2 && racks[0] && racks[0][0] == 'q');
    sched_engine_free(w.engine);
    hostset_free(other);
    hostset_free(w.hosts);
}

/* The score's formula: Kubernetes' normalisation over eligible domains. */
static void test_score_formula(void)
{
    spread_view v;
    memset(&v, 0, sizeof v);
    uint32_t count[3] = {0, 1, 3};
    bool eligible[3] = {true, true, true};
    v.count = count;
    v.eligible = eligible;
    v.n_domains = 3;
    v.max_skew = 1;
    /* s = count + 0: most 3, least 0: 100 * (3 + 0 - s) / 3. */
    CHECK(spread_score(&v, 0) == 100);
    CHECK(spread_score(&v, 1) > 66.66 && spread_score(&v, 1) < 66.67);
    CHECK(spread_score(&v, 2) == 0);
    CHECK(spread_score(&v, SPREAD_NO_DOMAIN) == 0);
    uint32_t none[3] = {0, 0, 0};
    v.count = none;
    CHECK(spread_score(&v, 1) == 100);
}

int main(void)
{
    test_three_racks_one_each();
    test_two_racks_two_and_one();
    test_one_rack();
    test_full_rack_lacks_room();
    test_offline_rack_is_no_domain();
    test_missing_label();
    test_soft_spread();
    test_plugins_off();
    test_domains_follow_the_snapshot();
    test_score_formula();
    return test_summary();
}
