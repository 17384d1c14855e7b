/* The scheduling engine: filters, scores, selection, vmids, reservations and
 * explanations, over hand-built inventories. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins.h"
#include "sched_fixture.h"
#include "testlib.h"

typedef struct world {
    hostset *hosts;
    sched_engine *engine;
} world;

static void world_open(world *w, const host *hosts, size_t n, const uint32_t *vmids, size_t n_vmids,
                       const sched_params *params)
{
    vf_error err;
    vf_error_init(&err);
    w->hosts = hostset_new();
    for (size_t i = 0; i < n; i++)
        CHECK(hostset_add(w->hosts, &hosts[i], &err) == 0);
    for (size_t i = 0; i < n_vmids; i++)
        CHECK(hostset_add_vmid(w->hosts, vmids[i], &err) == 0);
    CHECK(hostset_finish(w->hosts, &err) == 0);
    sched_params defaults;
    fixture_params(&defaults);
    w->engine = sched_engine_new(params ? params : &defaults, &err);
    CHECKF(w->engine != NULL, "%s", err.text);
    CHECK(sched_engine_set_hosts(w->engine, w->hosts, NULL, NULL, &err) == 0);
}

static void world_close(world *w)
{
    sched_engine_free(w->engine);
    hostset_free(w->hosts);
}

static void decide_ok(world *w, const sched_request *req, sched_decision *d)
{
    vf_error err;
    vf_error_init(&err);
    int rc = sched_engine_decide(w->engine, req, d, &err);
    CHECKF(rc == 0, "decide failed: %s", err.text);
}

/* decide_ok, with each host's reason also when placed (virtflowctl place). */
static void decide_explained(world *w, const sched_request *req, sched_decision *d)
{
    vf_error err;
    vf_error_init(&err);
    sched_decide_options options = {.host_reasons = true};
    int rc = sched_engine_decide_with(w->engine, req, &options, d, &err);
    CHECKF(rc == 0, "decide failed: %s", err.text);
    CHECK(d->host_reasons != NULL);
}

/* The Python prototype sorted ascending and took the first: the most loaded
 * host. Under the default spread the least loaded one must win. */
static void test_least_loaded_wins(void)
{
    host hosts[3] = {fixture_host("bm-01"), fixture_host("bm-02"), fixture_host("bm-03")};
    /* Prototype-style inventory: only usage figures, allocations derived from them. */
    double usage[3] = {0.9, 0.2, 0.6};
    for (int i = 0; i < 3; i++) {
        hosts[i].usage_cpu = usage[i];
        hosts[i].usage_mem = usage[i];
        hosts[i].allocated_cpu = usage[i] * hosts[i].cpu;
        hosts[i].allocated_memory = (int64_t)(usage[i] * (double)hosts[i].memory);
    }
    world w;
    world_open(&w, hosts, 3, NULL, 0, NULL);
    sched_request req;
    fixture_request(&req, 4, 4096); /* fits all three, even the 90% one */
    sched_decision d;
    decide_ok(&w, &req, &d);
    CHECK(d.placed);
    CHECK_STR(d.node ? d.node->name : NULL, "bm-02");
    CHECK(d.n_feasible == 3);
    world_close(&w);
}

static void test_overcommit_limits(void)
{
    host h = fixture_host("bm-01");
    h.cpu = 4;            /* 4 cores x 4.0 = 16 vCPUs */
    h.allocated_cpu = 12; /* 4 left */
    h.memory = 16384;     /* ratio 1.0 */
    h.allocated_memory = 8192;
    world w;
    world_open(&w, &h, 1, NULL, 0, NULL);
    sched_request req;
    sched_decision d;

    fixture_request(&req, 4, 8192); /* exactly fills both */
    decide_ok(&w, &req, &d);
    CHECK(d.placed);
    fixture_request(&req, 5, 1024);
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    CHECK_STR(d.message, "0/1 nodes are available: 1 insufficient cpu");
    fixture_request(&req, 1, 8193);
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    CHECK_STR(d.message, "0/1 nodes are available: 1 insufficient memory");
    world_close(&w);

    /* A per-host reserve is kept free before overcommit: (4-1) x 4.0 = 12 vCPUs. */
    sched_params p;
    fixture_params(&p);
    p.reserve_cpu = 1;
    p.reserve_memory = 4096;
    h.allocated_cpu = 8;
    h.allocated_memory = 0;
    world_open(&w, &h, 1, NULL, 0, &p);
    fixture_request(&req, 4, 12288);
    decide_ok(&w, &req, &d);
    CHECK(d.placed);
    fixture_request(&req, 5, 1024);
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    fixture_request(&req, 1, 12289);
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    world_close(&w);

    /* Overcommit ratio for memory too. */
    fixture_params(&p);
    p.overcommit_memory = 1.5;
    h.allocated_cpu = 0;
    world_open(&w, &h, 1, NULL, 0, &p);
    fixture_request(&req, 1, 24576);
    decide_ok(&w, &req, &d);
    CHECK(d.placed);
    fixture_request(&req, 1, 24577);
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    world_close(&w);
}

static void test_regex_anchoring(void)
{
    host hosts[3] = {fixture_host("node1"), fixture_host("node10"), fixture_host("mynode1")};
    world w;
    world_open(&w, hosts, 3, NULL, 0, NULL);
    sched_request req;
    sched_decision d;

    fixture_request(&req, 1, 1024);
    strcpy(req.node_regex, "node1");
    decide_ok(&w, &req, &d);
    CHECK(d.placed);
    CHECK(d.n_feasible == 1);
    CHECK_STR(d.node ? d.node->name : NULL, "node1");

    strcpy(req.node_regex, "node[0-9]+");
    decide_explained(&w, &req, &d);
    CHECK(d.n_feasible == 2);
    CHECK(d.host_reasons[0] == SCHED_REASON_NODE_REGEX); /* mynode1 sorts first */

    /* An alternation is anchored as a whole: "a|node10" must not match mynode1 by its tail. */
    strcpy(req.node_regex, "x|node10");
    decide_ok(&w, &req, &d);
    CHECK(d.n_feasible == 1);
    CHECK_STR(d.node ? d.node->name : NULL, "node10");

    /* Parentheses that are escaped or inside brackets do not count as groups. */
    strcpy(req.node_regex, "(node1[)]?|\\)|node1[[:digit:])]+)");
    decide_ok(&w, &req, &d);
    CHECK(d.n_feasible == 2);

    /* Bounded repetition well inside the limits still works. */
    strcpy(req.node_regex, "(node|x){1}[0-9]{1,2}");
    decide_ok(&w, &req, &d);
    CHECK(d.n_feasible == 2);

    strcpy(req.node_regex, "gpu[0-9]+");
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    CHECK_STR(d.message, "0/3 nodes are available: 3 node regex mismatch");
    world_close(&w);

    /* scheduler.regex_match: search matches anywhere, as qemu-scheduler's
     * Go code: node1 then fits all three; ^ and $ still anchor. */
    sched_params p;
    fixture_params(&p);
    p.regex_search = true;
    world_open(&w, hosts, 3, NULL, 0, &p);
    fixture_request(&req, 1, 1024);
    strcpy(req.node_regex, "node1");
    decide_ok(&w, &req, &d);
    CHECK(d.n_feasible == 3);
    strcpy(req.node_regex, "^node1");
    decide_ok(&w, &req, &d);
    CHECK(d.n_feasible == 2);
    strcpy(req.node_regex, "^node1$");
    decide_ok(&w, &req, &d);
    CHECK(d.n_feasible == 1);
    /* The vmid pattern too: "5" is any vmid with a 5 in it; 105 is the lowest free. */
    strcpy(req.node_regex, "");
    strcpy(req.vmid_regex, "5");
    decide_ok(&w, &req, &d);
    CHECK(d.placed && d.vmid == 105);
    world_close(&w);
}

/* qemu-scheduler's users write Go's RE2: \d, \w, (?i), non-greedy, named
 * groups mean what they meant there; under POSIX ERE node\d+ was "node" and a
 * literal 'd', so such a request failed as unschedulable. */
static void test_re2_syntax(void)
{
    host hosts[4] = {fixture_host("node1"), fixture_host("node12"), fixture_host("Node7"),
                     fixture_host("nodex")};
    world w;
    world_open(&w, hosts, 4, NULL, 0, NULL);
    sched_request req;
    sched_decision d;
    fixture_request(&req, 1, 1024);

    strcpy(req.node_regex, "node\\d+");
    decide_ok(&w, &req, &d);
    CHECK(d.placed);
    CHECKF(d.n_feasible == 2, "node\\d+ kept %zu", d.n_feasible); /* node1, node12 */

    strcpy(req.node_regex, "(?i)NODE\\d");
    decide_ok(&w, &req, &d);
    CHECK(d.n_feasible == 2); /* Node7, node1 */

    strcpy(req.node_regex, "\\w+?\\d{2}");
    decide_ok(&w, &req, &d);
    CHECK(d.n_feasible == 1);
    CHECK_STR(d.node ? d.node->name : NULL, "node12");

    strcpy(req.node_regex, "(?P<kind>node)[[:alpha:]]");
    decide_ok(&w, &req, &d);
    CHECK(d.n_feasible == 1);
    CHECK_STR(d.node ? d.node->name : NULL, "nodex");

    /* Still whole-name: \d matches node1 but not node12's prefix alone. */
    strcpy(req.node_regex, "node\\d");
    decide_ok(&w, &req, &d);
    CHECK(d.n_feasible == 1);

    /* vmid patterns too: \d{3} after 12 in use leaves 120s... */
    req.node_regex[0] = '\0';
    strcpy(req.vmid_regex, "13\\d");
    decide_ok(&w, &req, &d);
    CHECK(d.vmid == 130);

    /* What RE2 does not accept is refused as invalid, with the reason. */
    static const struct {
        const char *pattern, *reason;
    } refused[] = {
        {"(node)\\1", "back-references (\\1..\\9) are not RE2 syntax"},
        {"(?<n>a)\\k<n>", "back-references (\\g, \\k) are not RE2 syntax"},
        {"node(?=1)\\d", "lookahead (?= (?! is not RE2 syntax"},
        {"(?<!x)node1", "lookbehind (?<= (?<! is not RE2 syntax"},
        {"(?>node)1", "atomic groups (?> are not RE2 syntax"},
        {"node\\d++", "possessive quantifiers (like a*+) are not RE2 syntax"},
        {"node\\C", "\\C (one code unit) is not RE2 syntax"},
        {"(a(?R)?b)", "recursion is not RE2 syntax"},
        {"node(?C1)1", "callouts (?C are not RE2 syntax"},
        {"(*LIMIT_MATCH=99999999)node1", "(*VERB) directives are not RE2 syntax"},
        {"(?x)node 1", "the flag (?x) is not RE2 syntax (RE2 knows i, m, s, U)"},
        {"node\\R", "the escape \\R is not RE2 syntax"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        fixture_request(&req, 1, 1024);
        strcpy(req.node_regex, refused[i].pattern);
        vf_error err;
        vf_error_init(&err);
        CHECKF(sched_engine_decide(w.engine, &req, &d, &err) == -1, "%s accepted",
               refused[i].pattern);
        CHECK(err.code == VF_EINVAL);
        char want[256];
        snprintf(want, sizeof want,
                 "annotations.node.qemu-scheduler/regex: \"%s\" is not a valid regex: %s",
                 refused[i].pattern, refused[i].reason);
        CHECK_STR(err.text, want);
    }
    world_close(&w);
}

/* PCRE2 backtracks: a pattern with nested repetition can take exponential
 * time on a long name. It is refused as invalid once it runs past the match
 * limits instead of stalling the worker, and refused at once when repeated. */
static void test_catastrophic_pattern_bounded(void)
{
    host hosts[200];
    for (int i = 0; i < 200; i++) {
        char name[64];
        snprintf(name, sizeof name, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa%03d", i);
        hosts[i] = fixture_host(name);
    }
    world w;
    world_open(&w, hosts, 200, NULL, 0, NULL);
    sched_request req;
    sched_decision d;
    vf_error err;
    static const char *const node_patterns[] = {"(a|aa)+(b|c)", "(a*)*(b|c)", ".*a.*a.*a.*-0"};
    for (size_t i = 0; i < sizeof node_patterns / sizeof node_patterns[0]; i++) {
        for (int round = 0; round < 2; round++) {
            fixture_request(&req, 1, 1024);
            strcpy(req.node_regex, node_patterns[i]);
            vf_error_init(&err);
            CHECKF(sched_engine_decide(w.engine, &req, &d, &err) == -1, "%s accepted",
                   node_patterns[i]);
            CHECK(err.code == VF_EINVAL);
            CHECK_CONTAINS(err.text, "is not a valid regex: too costly to match");
        }
    }
    /* A vmid pattern that costs 2^9 paths on every 9-digit candidate runs
     * out of its budget long before the million-id scan ends. */
    fixture_request(&req, 1, 1024);
    strcpy(req.vmid_regex, "(\\d|\\d)*(a|b)");
    vf_error_init(&err);
    CHECK(sched_engine_decide(w.engine, &req, &d, &err) == -1);
    CHECK_CONTAINS(err.text, "annotations.vmid.qemu-scheduler/regex: \"(\\d|\\d)*(a|b)\" is not "
                             "a valid regex: too costly");
    /* An ordinary pattern still works on the same engine. */
    fixture_request(&req, 1, 1024);
    strcpy(req.node_regex, "a+\\d{2}7");
    decide_ok(&w, &req, &d);
    CHECK(d.n_feasible == 20);
    world_close(&w);
}

/* node_name (or the annotation node.qemu-scheduler/name) asks for one exact
 * host, like the seeds' and CAPPX's NodeName filter. It is categorical: it
 * runs before capacity, so the named host's own shortage is its reason. */
static void test_node_name(void)
{
    host hosts[3] = {fixture_host("pve-a"), fixture_host("pve-b"), fixture_host("pve-c")};
    hosts[2].allocated_memory = 65000;
    world w;
    world_open(&w, hosts, 3, NULL, 0, NULL);
    sched_request req;
    sched_decision d;
    fixture_request(&req, 1, 1024);
    strcpy(req.node_name, "pve-b");
    decide_ok(&w, &req, &d);
    CHECK(d.placed);
    CHECK_STR(d.node ? d.node->name : NULL, "pve-b");
    CHECK(d.n_feasible == 1);
    CHECK(d.host_reasons[0] == SCHED_REASON_NODE_NAME);
    CHECK_CONTAINS(d.message, "1/3 nodes are available: 2 node name mismatch");

    /* The named host is full: its own reason, the others' name mismatch. */
    strcpy(req.node_name, "pve-c");
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    CHECK_STR(d.message, "0/3 nodes are available: 2 node name mismatch, 1 insufficient memory");

    /* A name no host has says so. */
    strcpy(req.node_name, "pve-z");
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    CHECK_STR(d.message, "0/3 nodes are available: 3 node name mismatch (no host is named pve-z)");

    /* Name and regex together: both must hold. */
    strcpy(req.node_name, "pve-a");
    strcpy(req.node_regex, "pve-[bc]");
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    CHECK(d.host_reasons[0] == SCHED_REASON_NODE_REGEX);
    world_close(&w);

    /* NodeName disabled: the name is ignored, as for any disabled plugin. */
    sched_params p;
    fixture_params(&p);
    config_plugin off[] = {{.kind = CONFIG_PLUGIN_FILTER,
                            .name = "NodeName",
                            .enable = false,
                            .has_weight = false,
                            .weight = 0,
                            .line = 3}};
    p.plugins = off;
    p.n_plugins = 1;
    world_open(&w, hosts, 3, NULL, 0, &p);
    fixture_request(&req, 1, 1024);
    strcpy(req.node_name, "pve-z");
    decide_ok(&w, &req, &d);
    CHECK(d.placed);
    world_close(&w);
}

/* The engine keeps scores per request shape, node regex included. A host the
 * pattern does not match stays rejected for that reason when reservations
 * fill it up, and capacity freed on a matching host counts again at once. */
static void test_kept_scores_follow_reservations(void)
{
    host hosts[2] = {fixture_host("node-a"), fixture_host("node-b")};
    world w;
    world_open(&w, hosts, 2, NULL, 0, NULL);
    sched_request req;
    sched_decision d;
    fixture_request(&req, 4, 4096);
    strcpy(req.node_regex, "node-a");
    for (int twice = 0; twice < 2; twice++) { /* the second decision reads kept scores */
        decide_ok(&w, &req, &d);
        CHECK_STR(d.node ? d.node->name : NULL, "node-a");
    }
    vf_error err;
    vf_error_init(&err);
    sched_reservation fill = {.task_id = "fill-b", .node = "node-b", .cpu = 64, .memory = 1024};
    CHECK(sched_engine_reserve(w.engine, &fill, &err) == 0);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "node-a");
    CHECK(d.reason_counts[SCHED_REASON_NODE_REGEX] == 1);
    CHECK(d.reason_counts[SCHED_REASON_CPU] == 0);

    sched_reservation full_a = {.task_id = "fill-a", .node = "node-a", .cpu = 64, .memory = 1024};
    CHECK(sched_engine_reserve(w.engine, &full_a, &err) == 0);
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    CHECK(d.reason_counts[SCHED_REASON_CPU] == 1);
    CHECK(d.host_reasons && d.host_reasons[0] == SCHED_REASON_CPU);
    CHECK(sched_engine_release(w.engine, "fill-a") == 1);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "node-a");
    world_close(&w);
}

static void test_vmid_lowest_free(void)
{
    host h = fixture_host("pve1");
    /* Used by a VM (100), a container (101), a template (103): all count. */
    uint32_t used[] = {100, 101, 103, 120};
    world w;
    world_open(&w, &h, 1, used, 4, NULL);
    sched_request req;
    sched_decision d;
    vf_error err;

    fixture_request(&req, 1, 512);
    decide_ok(&w, &req, &d);
    CHECK(d.vmid == 102);

    strcpy(req.vmid_range, "100-150");
    decide_ok(&w, &req, &d);
    CHECK(d.vmid == 102);

    strcpy(req.vmid_range, "120-121");
    decide_ok(&w, &req, &d);
    CHECK(d.vmid == 121);

    req.vmid_range[0] = '\0';
    strcpy(req.vmid_regex, "(12[0-9]|130)");
    decide_ok(&w, &req, &d);
    CHECK(d.vmid == 121);

    /* Range and regex together: both must hold. */
    strcpy(req.vmid_range, "125-200");
    decide_ok(&w, &req, &d);
    CHECK(d.vmid == 125);

    /* A reservation takes its vmid at once. */
    sched_reservation res;
    sched_reservation_from_decision(&res, &d, &req, "t-1", 0);
    vf_error_init(&err);
    CHECK(sched_engine_reserve(w.engine, &res, &err) == 0);
    decide_ok(&w, &req, &d);
    CHECK(d.vmid == 126);

    /* Full range: a decision, not an error, with the reason. */
    strcpy(req.vmid_range, "120-120");
    req.vmid_regex[0] = '\0';
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    CHECK_STR(d.message, "1/1 nodes are available, but no vmid is free in range 120-120");
    world_close(&w);
}

static void test_invalid_annotations(void)
{
    host h = fixture_host("pve1");
    world w;
    world_open(&w, &h, 1, NULL, 0, NULL);
    static const struct {
        const char *range, *vmid_regex, *node_regex, *error;
    } cases[] = {
        {"150-100", "", "",
         "annotations.vmid.qemu-scheduler/range: \"150-100\": start 150 is above end 100"},
        {"abc", "", "",
         "annotations.vmid.qemu-scheduler/range: \"abc\" is not START-END (e.g. 100-150)"},
        {"100-", "", "",
         "annotations.vmid.qemu-scheduler/range: \"100-\" is not START-END (e.g. 100-150)"},
        {"-100", "", "",
         "annotations.vmid.qemu-scheduler/range: \"-100\" is not START-END (e.g. 100-150)"},
        {"100 - 150", "", "",
         "annotations.vmid.qemu-scheduler/range: \"100 - 150\" is not START-END (e.g. 100-150)"},
        {"1-50", "", "",
         "annotations.vmid.qemu-scheduler/range: \"1-50\": vmids must lie within 100-999999999"},
        {"100-9999999999", "", "",
         "annotations.vmid.qemu-scheduler/range: \"100-9999999999\" is not START-END (e.g. "
         "100-150)"},
        {"", "(12[0-9]", "",
         "annotations.vmid.qemu-scheduler/regex: \"(12[0-9]\" is not a valid regex"},
        {"", "", "node[", "annotations.node.qemu-scheduler/regex: \"node[\" is not a valid regex"},
        {"", "", "*x{2,1}", "annotations.node.qemu-scheduler/regex:"},
        /* RE2 refuses what PCRE2 alone would give a meaning. */
        {"", "", "node[0-9]++",
         "annotations.node.qemu-scheduler/regex: \"node[0-9]++\" is not a "
         "valid regex: possessive quantifiers"},
        {"", "1{2}*", "",
         "annotations.vmid.qemu-scheduler/regex: \"1{2}*\" is not a valid regex: "
         "repetition operators may not follow one another"},
        {"", "", "a{1001}",
         "annotations.node.qemu-scheduler/regex: \"a{1001}\" is not a valid regex: "
         "repetition counts above 1000 are not RE2 syntax"},
        /* An unmatched ')' is an error, never a literal. */
        {"", "", "bm-001)|(x",
         "annotations.node.qemu-scheduler/regex: \"bm-001)|(x\" is not a valid regex: "
         "unmatched closing parenthesis"},
        {"", "12)|(1", "",
         "annotations.vmid.qemu-scheduler/regex: \"12)|(1\" is not a valid regex: unmatched "
         "closing parenthesis"},
        /* Back-references are not RE2 syntax (and backtrack for seconds). */
        {"", "", "(.*)(.*)\\1\\2b",
         "annotations.node.qemu-scheduler/regex: \"(.*)(.*)\\1\\2b\" is not a valid regex: "
         "back-references (\\1..\\9) are not RE2 syntax"},
        {"", "", "x'); DROP TABLE tasks;--",
         "annotations.node.qemu-scheduler/regex: \"x'); DROP TABLE tasks;--\" is not a valid "
         "regex"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sched_request req;
        fixture_request(&req, 1, 512);
        strcpy(req.vmid_range, cases[i].range);
        strcpy(req.vmid_regex, cases[i].vmid_regex);
        strcpy(req.node_regex, cases[i].node_regex);
        sched_decision d;
        vf_error err;
        vf_error_init(&err);
        int rc = sched_engine_decide(w.engine, &req, &d, &err);
        CHECKF(rc == -1, "case %zu accepted", i);
        CHECK(err.code == VF_EINVAL);
        CHECKF(strncmp(err.text, cases[i].error, strlen(cases[i].error)) == 0,
               "case %zu: got \"%s\", want prefix \"%s\"", i, err.text, cases[i].error);
    }
    world_close(&w);
}

static void test_explanation_counts(void)
{
    /* 12 hosts: 5 in another pool, 4 too small on memory, 3 not matching the regex. */
    host hosts[12];
    char name[16];
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "node%02d", i);
        hosts[i] = fixture_host(name);
        if (i < 5)
            strcpy(hosts[i].pool, "gpu");
        else if (i < 9)
            hosts[i].memory = 1024;
        else
            snprintf(hosts[i].name, sizeof hosts[i].name, "edge%02d", i);
    }
    world w;
    world_open(&w, hosts, 12, NULL, 0, NULL);
    sched_request req;
    fixture_request(&req, 2, 4096);
    strcpy(req.node_regex, "node[0-9]+");
    sched_decision d;
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    CHECK_STR(d.message,
              "0/12 nodes are available: 5 pool mismatch, 4 insufficient memory, 3 node regex "
              "mismatch");
    json_t *result = sched_decision_to_json(&d, w.hosts);
    CHECK_STR(json_string_value(json_object_get(result, "reason")), "unschedulable");
    json_t *rejections = json_object_get(result, "rejections");
    CHECK(json_object_size(rejections) == 12);
    CHECK_STR(json_string_value(json_object_get(rejections, "node00")), "pool mismatch");
    CHECK_STR(json_string_value(json_object_get(rejections, "node05")), "insufficient memory");
    CHECK_STR(json_string_value(json_object_get(rejections, "edge09")), "node regex mismatch");

    /* For the history: counts for every host, a sample of 5 with each reason,
     * then filled up in host (name) order. */
    sched_rejections_sample(result, 5);
    rejections = json_object_get(result, "rejections");
    CHECK(json_object_size(rejections) == 5);
    CHECK_STR(json_string_value(json_object_get(rejections, "node00")), "pool mismatch");
    CHECK_STR(json_string_value(json_object_get(rejections, "node05")), "insufficient memory");
    CHECK_STR(json_string_value(json_object_get(rejections, "edge09")), "node regex mismatch");
    CHECK(json_object_get(rejections, "edge10") && json_object_get(rejections, "edge11"));
    CHECK(json_integer_value(json_object_get(result, "rejections_omitted")) == 7);
    json_t *counts = json_object_get(result, "rejection_counts");
    CHECK(json_object_size(counts) == 3);
    CHECK(json_integer_value(json_object_get(counts, "pool mismatch")) == 5);
    CHECK(json_integer_value(json_object_get(counts, "insufficient memory")) == 4);
    CHECK(json_integer_value(json_object_get(counts, "node regex mismatch")) == 3);
    /* Under the bound nothing is left out and nothing says so. */
    json_decref(result);
    result = sched_decision_to_json(&d, w.hosts);
    sched_rejections_sample(result, 20);
    CHECK(json_object_size(json_object_get(result, "rejections")) == 12);
    CHECK(!json_object_get(result, "rejections_omitted"));
    json_decref(result);

    /* Unknown pool: an unschedulable decision that says so, not an error. */
    fixture_request(&req, 2, 4096);
    strcpy(req.pool, "nosuchpool");
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    CHECK_STR(d.message,
              "0/12 nodes are available: 12 pool mismatch (no host is in pool nosuchpool)");
    world_close(&w);

    /* Empty inventory. */
    world_open(&w, NULL, 0, NULL, 0, NULL);
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    CHECK_STR(d.message, "0/0 nodes are available: the inventory is empty");
    world_close(&w);
}

static void test_dedicated_and_status(void)
{
    host hosts[4] = {fixture_host("a-shared"), fixture_host("b-dedicated"),
                     fixture_host("c-offline"), fixture_host("d-maint")};
    hosts[1].dedicated = true;
    hosts[2].status = HOST_OFFLINE;
    hosts[3].status = HOST_MAINTENANCE;
    world w;
    world_open(&w, hosts, 4, NULL, 0, NULL);
    sched_request req;
    sched_decision d;
    fixture_request(&req, 1, 1024);
    req.dedicated = true;
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "b-dedicated");
    req.dedicated = false;
    decide_explained(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "a-shared");
    CHECK(d.n_feasible == 1);
    CHECK(d.host_reasons[1] == SCHED_REASON_DEDICATED_HOST);
    CHECK(d.host_reasons[2] == SCHED_REASON_OFFLINE);
    CHECK(d.host_reasons[3] == SCHED_REASON_MAINTENANCE);
    world_close(&w);

    /* dedicated_exclusive: false lets shared requests use dedicated hosts. */
    sched_params p;
    fixture_params(&p);
    p.dedicated_exclusive = false;
    hosts[0].allocated_cpu = 60; /* make the shared host the worse choice */
    world_open(&w, hosts, 4, NULL, 0, &p);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "b-dedicated");
    world_close(&w);
}

static void test_slots_disk_and_ties(void)
{
    host hosts[3] = {fixture_host("h3"), fixture_host("h1"), fixture_host("h2")};
    hosts[0].max_vms = 5;
    hosts[0].current_vms = 5;
    hosts[1].storage = 10;
    world w;
    world_open(&w, hosts, 3, NULL, 0, NULL);
    sched_request req;
    sched_decision d;
    fixture_request(&req, 1, 1024);
    req.disk = 20;
    decide_explained(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "h2");
    CHECK(d.host_reasons[0] == SCHED_REASON_DISK);     /* h1 */
    CHECK(d.host_reasons[2] == SCHED_REASON_VM_SLOTS); /* h3 */
    world_close(&w);

    /* Identical hosts: the lowest name wins, every time. */
    host same[3] = {fixture_host("c"), fixture_host("a"), fixture_host("b")};
    world_open(&w, same, 3, NULL, 0, NULL);
    fixture_request(&req, 1, 1024);
    for (int i = 0; i < 3; i++) {
        decide_ok(&w, &req, &d);
        CHECK_STR(d.node ? d.node->name : NULL, "a");
    }
    world_close(&w);
}

static void test_plugin_config(void)
{
    host hosts[2] = {fixture_host("busy"), fixture_host("idle")};
    hosts[0].allocated_cpu = 40;
    hosts[0].allocated_memory = 40000;
    sched_params p;
    fixture_params(&p);
    /* Pack instead of spread: the busier host that still fits wins. */
    config_plugin plugins[] = {
        {.kind = CONFIG_PLUGIN_SCORE,
         .name = "FreeResources",
         .enable = false,
         .has_weight = false,
         .weight = 0,
         .line = 10},
        {.kind = CONFIG_PLUGIN_SCORE,
         .name = "MostAllocated",
         .enable = true,
         .has_weight = true,
         .weight = 2,
         .line = 11},
        {.kind = CONFIG_PLUGIN_SCORE,
         .name = "Balanced",
         .enable = false,
         .has_weight = false,
         .weight = 0,
         .line = 12},
    };
    p.plugins = plugins;
    p.n_plugins = 3;
    world w;
    world_open(&w, hosts, 2, NULL, 0, &p);
    sched_request req;
    sched_decision d;
    fixture_request(&req, 2, 2048);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "busy");
    CHECK(d.n_parts == 2); /* MostAllocated and VMSlots */
    CHECK_STR(d.parts[0].plugin, "MostAllocated");
    CHECK(d.parts[0].weight == 2);
    world_close(&w);

    /* Disabling a filter removes its check. */
    config_plugin no_cpu[] = {{.kind = CONFIG_PLUGIN_FILTER,
                               .name = "CPUOvercommit",
                               .enable = false,
                               .has_weight = false,
                               .weight = 0,
                               .line = 5}};
    fixture_params(&p);
    p.plugins = no_cpu;
    p.n_plugins = 1;
    host small = fixture_host("small");
    small.cpu = 1;
    world_open(&w, &small, 1, NULL, 0, &p);
    fixture_request(&req, 64, 1024);
    decide_ok(&w, &req, &d);
    CHECK(d.placed);
    world_close(&w);

    /* An unknown plugin name is a configuration error naming the line and the known ones. */
    config_plugin typo[] = {{.kind = CONFIG_PLUGIN_FILTER,
                             .name = "CPUOvercomit",
                             .enable = false,
                             .has_weight = false,
                             .weight = 0,
                             .line = 17}};
    p.plugins = typo;
    vf_error err;
    vf_error_init(&err);
    sched_engine *engine = sched_engine_new(&p, &err);
    CHECK(engine == NULL);
    CHECK(err.code == VF_ECONFIG);
    CHECK_CONTAINS(err.text, "line 17: scheduler.plugins.filters.CPUOvercomit: unknown plugin");
    CHECK_CONTAINS(err.text, "CPUOvercommit");

    /* vmid plugins disabled: the annotation no longer narrows the choice. */
    config_plugin no_range[] = {{.kind = CONFIG_PLUGIN_VMID,
                                 .name = "Range",
                                 .enable = false,
                                 .has_weight = false,
                                 .weight = 0,
                                 .line = 3}};
    fixture_params(&p);
    p.plugins = no_range;
    p.n_plugins = 1;
    world_open(&w, &small, 1, NULL, 0, &p);
    fixture_request(&req, 1, 512);
    strcpy(req.vmid_range, "500-600");
    decide_ok(&w, &req, &d);
    CHECK(d.vmid == 100);
    world_close(&w);
}

/* scheduler.strategy: pack turns MostAllocated on and FreeResources off
 * (FreeResources is 100 - MostAllocated: both on at equal weight cancel
 * out). The fullest host that still fits wins; explicit plugins still win. */
static void test_strategy_pack(void)
{
    host hosts[4] = {fixture_host("empty"), fixture_host("half"), fixture_host("full"),
                     fixture_host("three-quarters")};
    hosts[1].allocated_cpu = 32;
    hosts[1].allocated_memory = 32768;
    hosts[2].allocated_cpu = 64; /* 16 cores x 4: no room for even one vCPU */
    hosts[2].allocated_memory = 65536;
    hosts[3].allocated_cpu = 48;
    hosts[3].allocated_memory = 49152;
    sched_params p;
    fixture_params(&p);
    world w;
    sched_request req;
    sched_decision d;
    fixture_request(&req, 2, 2048);

    /* spread (the default): the emptiest. */
    world_open(&w, hosts, 4, NULL, 0, &p);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "empty");
    world_close(&w);

    /* pack: the fullest that still fits (full has no room). */
    p.pack = true;
    world_open(&w, hosts, 4, NULL, 0, &p);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "three-quarters");
    bool free_part = false, most_part = false;
    for (size_t i = 0; i < d.n_parts; i++) {
        free_part |= strcmp(d.parts[i].plugin, "FreeResources") == 0;
        most_part |= strcmp(d.parts[i].plugin, "MostAllocated") == 0;
    }
    CHECK(most_part && !free_part);
    /* Successive placements keep filling that host first. */
    sched_reservation res;
    sched_reservation_from_decision(&res, &d, &req, "pack-1", 0);
    vf_error err;
    vf_error_init(&err);
    CHECK(sched_engine_reserve(w.engine, &res, &err) == 0);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "three-quarters");
    world_close(&w);

    /* Weights refine it, explicit entries win: FreeResources switched back
     * on at weight 3 outweighs MostAllocated at 1 and spreads again. */
    config_plugin back[] = {{.kind = CONFIG_PLUGIN_SCORE,
                             .name = "FreeResources",
                             .enable = true,
                             .has_weight = true,
                             .weight = 3,
                             .line = 9}};
    p.plugins = back;
    p.n_plugins = 1;
    world_open(&w, hosts, 4, NULL, 0, &p);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "empty");
    world_close(&w);
}

/* A SIGHUP reload (issue 26): the same engine decides with other parameters,
 * keeping its snapshot and its reservations; a rejected change keeps it whole. */
static void test_set_params(void)
{
    host hosts[2] = {fixture_host("a"), fixture_host("b")};
    sched_params p;
    fixture_params(&p);
    world w;
    world_open(&w, hosts, 2, NULL, 0, &p);
    sched_request req;
    sched_decision d;
    fixture_request(&req, 8, 8192);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "a");
    sched_reservation res;
    sched_reservation_from_decision(&res, &d, &req, "first", 0);
    vf_error err;
    vf_error_init(&err);
    CHECK(sched_engine_reserve(w.engine, &res, &err) == 0);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "b"); /* spread: away from the reservation */

    p.pack = true;
    CHECK(sched_engine_set_params(w.engine, &p, &err) == 0);
    CHECK(sched_engine_reservation_count(w.engine) == 1);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "a"); /* pack: beside it */

    /* Overcommit 1: 16 vCPUs a host; with 8 held on a, 12 fit on b only. */
    p.overcommit_cpu = 1.0;
    CHECK(sched_engine_set_params(w.engine, &p, &err) == 0);
    fixture_request(&req, 12, 1024);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "b");

    /* Refused: an unknown plugin; the engine keeps pack and overcommit 1. */
    config_plugin unknown[] = {
        {.kind = CONFIG_PLUGIN_SCORE, .name = "NoSuchScore", .enable = true, .line = 3}};
    sched_params bad = p;
    bad.pack = false;
    bad.overcommit_cpu = 4.0;
    bad.plugins = unknown;
    bad.n_plugins = 1;
    vf_error_init(&err);
    CHECK(sched_engine_set_params(w.engine, &bad, &err) < 0);
    CHECK_CONTAINS(err.text, "NoSuchScore");
    CHECK(sched_engine_params(w.engine)->pack);
    CHECK(sched_engine_params(w.engine)->overcommit_cpu == 1.0);
    fixture_request(&req, 12, 1024);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "b");
    world_close(&w);
}

/* Issue 24, item 2: under pack every default score prefers the fuller host.
 * Hosts differ in CPU, memory and VM slots at once: a host 75% full on all
 * three must beat one 44% full, which VMSlots (free slots) used to prefer
 * strongly enough to win. Under spread the emptier one still wins. */
static void test_pack_means_pack(void)
{
    host hosts[2] = {fixture_host("emptier"), fixture_host("fuller")};
    hosts[0].allocated_cpu = 28;
    hosts[0].allocated_memory = 28672;
    hosts[0].max_vms = 100;
    hosts[0].current_vms = 40;
    hosts[1].allocated_cpu = 48;
    hosts[1].allocated_memory = 49152;
    hosts[1].max_vms = 100;
    hosts[1].current_vms = 75;
    sched_params p;
    fixture_params(&p);
    world w;
    sched_request req;
    sched_decision d;
    fixture_request(&req, 2, 2048);

    world_open(&w, hosts, 2, NULL, 0, &p);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "emptier");
    world_close(&w);

    p.pack = true;
    world_open(&w, hosts, 2, NULL, 0, &p);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "fuller");
    bool slots_part = false;
    for (size_t i = 0; i < d.n_parts; i++)
        if (strcmp(d.parts[i].plugin, "VMSlots") == 0) {
            slots_part = true;
            CHECKF(d.parts[i].score == 76.0, "VMSlots under pack: %g (76 of 100 slots used)",
                   d.parts[i].score);
        }
    CHECK(slots_part);
    world_close(&w);
}

/* Per-plugin args, qemu-scheduler's and CAPPX's names, and Random. */
static void test_plugin_args_and_aliases(void)
{
    host h = fixture_host("small"); /* 16 cores, 64 GiB */
    sched_params p;
    fixture_params(&p);
    world w;
    sched_request req;
    sched_decision d;
    vf_error err;

    /* CPUOvercommit's ratio overrides scheduler.overcommit.cpu (4 here):
     * 16 cores x 1 = 16 vCPUs, so 20 no longer fit; its reserve too. */
    config_plugin ratio[] = {
        {.kind = CONFIG_PLUGIN_FILTER,
         .name = "CPUOvercommit",
         .enable = true,
         .line = 4,
         .has_ratio = true,
         .ratio = 1},
        {.kind = CONFIG_PLUGIN_FILTER,
         .name = "MemoryOvercommit",
         .enable = true,
         .line = 5,
         .has_reserve = true,
         .reserve = 65000},
    };
    p.plugins = ratio;
    p.n_plugins = 2;
    world_open(&w, &h, 1, NULL, 0, &p);
    CHECK(sched_engine_params(w.engine)->overcommit_cpu == 1);
    CHECK(sched_engine_params(w.engine)->reserve_memory == 65000);
    fixture_request(&req, 20, 512);
    decide_ok(&w, &req, &d);
    CHECK(!d.placed);
    CHECK_STR(d.message, "0/1 nodes are available: 1 insufficient cpu");
    fixture_request(&req, 2, 1024); /* 536 MiB left after the reserve */
    decide_ok(&w, &req, &d);
    CHECK_STR(d.message, "0/1 nodes are available: 1 insufficient memory");
    world_close(&w);

    /* An argument the plugin does not take is refused, naming what it takes. */
    config_plugin wrong[] = {{.kind = CONFIG_PLUGIN_FILTER,
                              .name = "Disk",
                              .enable = true,
                              .line = 8,
                              .has_ratio = true,
                              .ratio = 2}};
    p.plugins = wrong;
    p.n_plugins = 1;
    vf_error_init(&err);
    CHECK(sched_engine_new(&p, &err) == NULL);
    CHECK_STR(err.text,
              "line 8: scheduler.plugins.filters.Disk.args.ratio: Disk takes no argument ratio (it "
              "takes: none)");

    /* From a plugin-config file, the message names that file. */
    wrong[0].file = "/etc/virtflow/plugin-config.yaml";
    wrong[0].has_ratio = false;
    snprintf(wrong[0].name, sizeof wrong[0].name, "NodeResourceFit");
    vf_error_init(&err);
    CHECK(sched_engine_new(&p, &err) == NULL);
    CHECK_CONTAINS(err.text, "/etc/virtflow/plugin-config.yaml:8: filters.NodeResourceFit: "
                             "unknown plugin (known: Pool, ");

    /* qemu-scheduler's score names: NodeResource is FreeResources; Random a
     * random pick among the top subset_size (seeded). */
    config_plugin seeds[] = {
        {.kind = CONFIG_PLUGIN_SCORE,
         .name = "NodeResource",
         .enable = true,
         .has_weight = true,
         .weight = 5,
         .line = 2},
        {.kind = CONFIG_PLUGIN_SCORE,
         .name = "Random",
         .enable = true,
         .line = 3,
         .has_subset_size = true,
         .subset_size = 4,
         .has_seed = true,
         .seed = 99},
    };
    fixture_params(&p);
    p.plugins = seeds;
    p.n_plugins = 2;
    host many[6] = {fixture_host("r1"), fixture_host("r2"), fixture_host("r3"),
                    fixture_host("r4"), fixture_host("r5"), fixture_host("r6")};
    world_open(&w, many, 6, NULL, 0, &p);
    CHECK(sched_engine_params(w.engine)->subset_size == 4);
    CHECK(sched_engine_params(w.engine)->seed == 99);
    bool seen[6] = {false};
    fixture_request(&req, 1, 512);
    for (int i = 0; i < 64; i++) {
        decide_ok(&w, &req, &d);
        if (d.node)
            seen[d.node - w.hosts->hosts] = true;
        CHECK(d.n_parts >= 1 && strcmp(d.parts[0].plugin, "FreeResources") == 0 &&
              d.parts[0].weight == 5);
    }
    int distinct = 0;
    for (int i = 0; i < 6; i++)
        distinct += seen[i];
    CHECKF(distinct == 4, "Random with subset_size 4 picked %d distinct hosts", distinct);
    world_close(&w);

    /* The seeds call the vmid regex plugin VMIDRegex: the same as Regex. */
    config_plugin vmid_alias[] = {
        {.kind = CONFIG_PLUGIN_VMID, .name = "VMIDRegex", .enable = false, .line = 4}};
    fixture_params(&p);
    p.plugins = vmid_alias;
    p.n_plugins = 1;
    world_open(&w, many, 6, NULL, 0, &p);
    fixture_request(&req, 1, 512);
    strcpy(req.vmid_regex, "9\\d\\d");
    decide_ok(&w, &req, &d);
    CHECKF(d.placed && d.vmid == 100, "VMIDRegex off: the pattern is ignored (vmid %u)", d.vmid);
    world_close(&w);
    fixture_params(&p);
    p.plugins = seeds;
    p.n_plugins = 2;

    /* Random takes no weight. */
    seeds[1].has_weight = true;
    seeds[1].weight = 1;
    vf_error_init(&err);
    CHECK(sched_engine_new(&p, &err) == NULL);
    CHECK_CONTAINS(err.text,
                   "line 3: scheduler.plugins.scores.Random.weight: Random takes no weight");
}

static void test_subset_random_pick(void)
{
    host hosts[6];
    char name[8];
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "h%d", i);
        hosts[i] = fixture_host(name);
        hosts[i].allocated_cpu = i * 8; /* h0 best, h5 worst */
    }
    sched_params p;
    fixture_params(&p);
    p.subset_size = 3;
    world w;
    world_open(&w, hosts, 6, NULL, 0, &p);
    int seen[6] = {0};
    sched_request req;
    fixture_request(&req, 1, 512);
    for (int i = 0; i < 300; i++) {
        sched_decision d;
        decide_ok(&w, &req, &d);
        seen[d.node->name[1] - '0']++;
    }
    CHECK(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
    CHECK(seen[3] == 0 && seen[4] == 0 && seen[5] == 0);
    world_close(&w);
}

static void test_reservation_lifecycle(void)
{
    host h = fixture_host("only");
    h.cpu = 2; /* 8 vCPUs */
    world w;
    world_open(&w, &h, 1, NULL, 0, NULL);
    sched_request req;
    sched_decision d;
    sched_reservation res;
    vf_error err;
    vf_error_init(&err);
    fixture_request(&req, 4, 1024);
    decide_ok(&w, &req, &d);
    sched_reservation_from_decision(&res, &d, &req, "t-a", 1000);
    CHECK(sched_engine_reserve(w.engine, &res, &err) == 0);
    decide_ok(&w, &req, &d);
    sched_reservation_from_decision(&res, &d, &req, "t-b", 2000);
    CHECK(sched_engine_reserve(w.engine, &res, &err) == 0);
    CHECK(res.vmid == 101);
    decide_ok(&w, &req, &d);
    CHECK(!d.placed); /* 8 of 8 vCPUs held */
    CHECK(sched_engine_expire(w.engine, 999) == 0);
    CHECK(sched_engine_expire(w.engine, 1000) == 1);
    decide_ok(&w, &req, &d);
    CHECK(d.placed);
    CHECK(d.vmid == 100); /* the expired reservation's vmid is free again */
    CHECK(sched_engine_release(w.engine, "t-b") == 1);
    CHECK(sched_engine_reservation_count(w.engine) == 0);

    /* A reservation's vmid seen elsewhere (another host's guest, or only in
     * the list of used ids) is not its VM: the hold and its capacity stay. */
    sched_reservation_from_decision(&res, &d, &req, "t-c", 0);
    CHECK(sched_engine_reserve(w.engine, &res, &err) == 0);
    host other = fixture_host("another");
    hostset *elsewhere = hostset_new();
    CHECK(hostset_add(elsewhere, &h, &err) == 0);
    CHECK(hostset_add(elsewhere, &other, &err) == 0);
    CHECK(hostset_add_guest(elsewhere, 100, 1, &err) == 0);
    CHECK(hostset_add_vmid(elsewhere, 100, &err) == 0);
    CHECK(hostset_finish(elsewhere, &err) == 0);
    CHECK(!hostset_guest_on(elsewhere, 100, "only") && hostset_guest_on(elsewhere, 100, "another"));
    CHECK(sched_engine_set_hosts(w.engine, elsewhere, NULL, NULL, &err) == 0);
    CHECK(sched_engine_reservation_count(w.engine) == 1);
    const host *only = hostset_find(elsewhere, "only");
    CHECK(sched_engine_host_load(w.engine, (size_t)(only - elsewhere->hosts))->cpu == 4);

    /* A reservation whose VM shows up on its own host ends by itself. */
    hostset *next = hostset_new();
    h.allocated_cpu = 4;
    CHECK(hostset_add(next, &h, &err) == 0);
    CHECK(hostset_add_guest(next, 100, 0, &err) == 0);
    CHECK(hostset_finish(next, &err) == 0);
    CHECK(sched_engine_set_hosts(w.engine, next, NULL, NULL, &err) == 0);
    CHECK(sched_engine_reservation_count(w.engine) == 0);
    decide_ok(&w, &req, &d);
    CHECK(d.placed); /* 4 allocated + 4 requested = 8: the VM is not counted twice */
    CHECK(d.vmid == 101);
    sched_engine_free(w.engine);
    hostset_free(w.hosts);
    hostset_free(elsewhere);
    hostset_free(next);
}

/* 1,000 decisions against a fixed inventory, each reserved before the next:
 * no host ends above its capacity and no vmid is handed out twice. Checked
 * independently of the engine's own arithmetic. */
static void test_burst_never_overcommits(void)
{
    enum { HOSTS = 40, DECISIONS = 1000 };
    host hosts[HOSTS];
    char name[16];
    for (int i = 0; i < HOSTS; i++) {
        snprintf(name, sizeof name, "bm-%03d", i);
        hosts[i] = fixture_host(name);
        hosts[i].cpu = 8 + (i % 5) * 8;
        hosts[i].memory = 32768 + (i % 3) * 32768;
        hosts[i].allocated_cpu = (i % 7) * 4;
        hosts[i].allocated_memory = (i % 4) * 4096;
        hosts[i].max_vms = 20 + i % 10;
        hosts[i].current_vms = i % 6;
        hosts[i].storage = 500 + i * 10;
    }
    uint32_t used[] = {100, 102, 104, 150, 151};
    world w;
    world_open(&w, hosts, HOSTS, used, 5, NULL);
    double cpu_used[HOSTS] = {0};
    int64_t mem_used[HOSTS] = {0}, disk_used[HOSTS] = {0};
    int vms[HOSTS] = {0};
    static uint8_t vmid_seen[20000];
    memset(vmid_seen, 0, sizeof vmid_seen);
    int placed = 0, duplicates = 0;
    unsigned seed = 7;
    for (int i = 0; i < DECISIONS; i++) {
        sched_request req;
        seed = seed * 1103515245u + 12345u;
        fixture_request(&req, 1 + (int)(seed >> 16) % 8, 512 * (1 + (int)(seed >> 8) % 16));
        req.disk = (seed >> 4) % 50;
        if (i % 3 == 0)
            strcpy(req.vmid_range, "100-5000");
        sched_decision d;
        decide_ok(&w, &req, &d);
        if (!d.placed)
            continue;
        placed++;
        int index = (int)(d.node - w.hosts->hosts);
        cpu_used[index] += req.cpu;
        mem_used[index] += req.memory;
        disk_used[index] += req.disk;
        vms[index]++;
        if (d.vmid < sizeof vmid_seen && vmid_seen[d.vmid]++)
            duplicates++;
        for (size_t u = 0; u < 5; u++)
            if (d.vmid == used[u])
                duplicates++;
        sched_reservation res;
        char task[32];
        snprintf(task, sizeof task, "t-%d", i);
        sched_reservation_from_decision(&res, &d, &req, task, 0);
        vf_error err;
        vf_error_init(&err);
        CHECK(sched_engine_reserve(w.engine, &res, &err) == 0);
    }
    int over = 0;
    for (int i = 0; i < HOSTS; i++) {
        const host *h = &w.hosts->hosts[i];
        if (h->allocated_cpu + cpu_used[i] > h->cpu * 4.0 ||
            h->allocated_memory + mem_used[i] > h->memory || disk_used[i] > h->storage ||
            h->current_vms + vms[i] > h->max_vms)
            over++;
    }
    CHECKF(placed > 300, "only %d placed", placed);
    CHECKF(placed < DECISIONS, "all %d placed: the inventory never filled up", placed);
    CHECKF(over == 0, "%d hosts overcommitted", over);
    CHECKF(duplicates == 0, "%d vmids handed out twice", duplicates);
    world_close(&w);
}

static void test_decision_json(void)
{
    host h = fixture_host("bm-001");
    strcpy(h.ip, "10.0.0.1");
    world w;
    world_open(&w, &h, 1, NULL, 0, NULL);
    sched_request req;
    fixture_request(&req, 4, 8192);
    sched_decision d;
    decide_ok(&w, &req, &d);
    json_t *result = sched_decision_to_json(&d, w.hosts);
    CHECK_STR(json_string_value(json_object_get(result, "status")), "completed");
    json_t *node = json_object_get(result, "node");
    CHECK_STR(json_string_value(json_object_get(node, "name")), "bm-001");
    CHECK_STR(json_string_value(json_object_get(node, "ip")), "10.0.0.1");
    CHECK_STR(json_string_value(json_object_get(node, "pool")), "default");
    CHECK(json_integer_value(json_object_get(result, "vmid")) == 100);
    double score = json_real_value(json_object_get(result, "score"));
    CHECK(score > 0 && score <= 100);
    CHECK(json_object_get(json_object_get(result, "scores"), "FreeResources") != NULL);
    CHECK_CONTAINS(json_string_value(json_object_get(result, "explanation")),
                   "bm-001 chosen with score");
    json_decref(result);
    world_close(&w);
}

/* TargetLoadPacking on measured use: the busiest host still below the
 * target wins, an idle one comes after it, an overloaded one last; a host
 * without usage figures scores args.missing_score (default 50). All hosts
 * have the same committed figures, so only measured use tells them apart. */
static host usage_host(const char *name, bool measured, double usage)
{
    host h = fixture_host(name); /* 16 cores, 64 GiB, nothing allocated */
    h.has_usage_cpu = h.has_usage_mem = measured;
    h.usage_cpu = h.usage_mem = measured ? usage : 0;
    return h;
}

static void test_target_load_packing(void)
{
    host hosts[4] = {usage_host("idle", true, 0), usage_host("near", true, 0.30),
                     usage_host("over", true, 0.70), usage_host("unmeasured", false, 0)};
    sched_params p;
    fixture_params(&p);
    /* Only TargetLoadPacking scores; the index would be taken otherwise. */
    config_plugin plugins[] = {
        {.kind = CONFIG_PLUGIN_SCORE, .name = "FreeResources", .enable = false, .line = 1},
        {.kind = CONFIG_PLUGIN_SCORE, .name = "Balanced", .enable = false, .line = 2},
        {.kind = CONFIG_PLUGIN_SCORE, .name = "VMSlots", .enable = false, .line = 3},
        {.kind = CONFIG_PLUGIN_SCORE, .name = "TargetLoadPacking", .enable = true, .line = 4},
    };
    p.plugins = plugins;
    p.n_plugins = 4;
    world w;
    sched_request req;
    sched_decision d;
    world_open(&w, hosts, 4, NULL, 0, &p);
    fixture_request(&req, 1, 512); /* +6.25 % cpu, +0.78 % memory */
    decide_explained(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "near");
    CHECK(d.n_parts == 1);
    CHECK_STR(d.parts[0].plugin, "TargetLoadPacking");
    /* cpu 36.25 % -> 40 + 60 x 36.25 / 40; memory 30.78 % likewise; the mean. */
    double cpu = 40 + 60 * 36.25 / 40, memory = 40 + 60 * (30 + 51200.0 / 65536) / 40;
    CHECKF(fabs(d.parts[0].score - (cpu + memory) / 2) < 1e-9, "score %.6f", d.parts[0].score);

    /* The rule host by host: near > unmeasured (50) > idle > over. */
    double score[4];
    sched_host_load none = {0};
    for (int i = 0; i < 4; i++)
        score[i] = sched_score_target_load(&hosts[i], &none, 1, 512, 40, 50);
    CHECK(score[1] > score[3] && score[3] == 50 && score[3] > score[0] && score[0] > score[2]);
    CHECK(score[0] > 40 && score[0] < 50); /* idle: about T, plus the request */
    CHECK(sched_target_load_curve(40, 40) == 100 && sched_target_load_curve(0, 40) == 40);
    CHECK(sched_target_load_curve(100, 40) == 0 && sched_target_load_curve(150, 40) == 0);
    CHECK(sched_target_load_curve(70, 40) == 40.0 * 30 / 60);

    /* Reservations count as use: with 5 vCPUs and 20 GiB reserved on near
     * (cpu 67.5 %, memory 62 %, both past the target), idle's 45 beats it. */
    sched_host_load reserved = {.cpu = 5, .memory = 20480};
    CHECK(sched_score_target_load(&hosts[1], &reserved, 1, 512, 40, 50) < score[0]);
    world_close(&w);

    /* Without the host near the target, the unmeasured host's neutral 50
     * beats idle's 45; missing_score 0 puts it last. */
    host three[3] = {usage_host("idle", true, 0), usage_host("over", true, 0.70),
                     usage_host("unmeasured", false, 0)};
    world_open(&w, three, 3, NULL, 0, &p);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "unmeasured");
    CHECK(d.n_parts == 1 && d.parts[0].score == 50);
    world_close(&w);
    plugins[3].has_missing_score = true;
    plugins[3].missing_score = 0;
    world_open(&w, three, 3, NULL, 0, &p);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "idle");
    world_close(&w);

    /* target_percent 80: over (76 % cpu, 71 % memory) is now the one just
     * below the target. */
    plugins[3].has_missing_score = false;
    plugins[3].has_target_percent = true;
    plugins[3].target_percent = 80;
    world_open(&w, hosts, 4, NULL, 0, &p);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "over");
    /* A reload (SIGHUP) that sets the target back to 40 takes effect. */
    plugins[3].target_percent = 40;
    vf_error err;
    vf_error_init(&err);
    CHECKF(sched_engine_set_params(w.engine, &p, &err) == 0, "%s", err.text);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "near");
    world_close(&w);

    /* Off by default: the default scores alone, spread to the idle host
     * (committed figures are equal; ties go to the lower name). */
    fixture_params(&p);
    world_open(&w, hosts, 4, NULL, 0, &p);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "idle");
    for (size_t i = 0; i < d.n_parts; i++)
        CHECK(strcmp(d.parts[i].plugin, "TargetLoadPacking") != 0);
    world_close(&w);

    /* On with its weight beside the default scores: it is summed in, and the
     * decision lists it last. */
    config_plugin beside[] = {{.kind = CONFIG_PLUGIN_SCORE,
                               .name = "TargetLoadPacking",
                               .enable = true,
                               .has_weight = true,
                               .weight = 3,
                               .line = 1}};
    p.plugins = beside;
    p.n_plugins = 1;
    world_open(&w, hosts, 4, NULL, 0, &p);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "near");
    CHECK(d.n_parts == 4 && strcmp(d.parts[3].plugin, "TargetLoadPacking") == 0 &&
          d.parts[3].weight == 3);
    world_close(&w);

    /* Its args, and only its: ratio is refused, naming what it takes. */
    config_plugin wrong[] = {{.kind = CONFIG_PLUGIN_SCORE,
                              .name = "TargetLoadPacking",
                              .enable = true,
                              .line = 7,
                              .has_ratio = true,
                              .ratio = 2}};
    p.plugins = wrong;
    vf_error_init(&err);
    CHECK(sched_engine_new(&p, &err) == NULL);
    CHECK_STR(err.text, "line 7: scheduler.plugins.scores.TargetLoadPacking.args.ratio: "
                        "TargetLoadPacking takes no argument ratio (it takes: target_percent, "
                        "missing_score)");
    config_plugin misplaced[] = {{.kind = CONFIG_PLUGIN_SCORE,
                                  .name = "Balanced",
                                  .enable = true,
                                  .line = 8,
                                  .has_target_percent = true,
                                  .target_percent = 50}};
    p.plugins = misplaced;
    vf_error_init(&err);
    CHECK(sched_engine_new(&p, &err) == NULL);
    CHECK_CONTAINS(err.text, "Balanced takes no argument target_percent");
}

/* Traits and custom resources: required and forbidden traits pick the hosts
 * (names without regard to case), resources are held by reservations as
 * vCPUs are and come back when they end; each rejection names its reason. */
static void test_traits_and_resources(void)
{
    vf_error err;
    vf_error_init(&err);
    host hosts[4] = {fixture_host("a-plain"), fixture_host("b-gpu"), fixture_host("c-gpu-spot"),
                     fixture_host("d-ssd")};
    host_traits traits[4];
    memset(traits, 0, sizeof traits);
    CHECK(trait_set_add(&traits[1].traits, "CUSTOM_GPU", &err) == 0);
    CHECK(resource_amounts_set(&traits[1].resources, "gpu", 2, &err) == 0);
    CHECK(trait_set_add(&traits[2].traits, "custom_gpu", &err) == 0);
    CHECK(trait_set_add(&traits[2].traits, "spot", &err) == 0);
    CHECK(resource_amounts_set(&traits[2].resources, "GPU", 4, &err) == 0);
    CHECK(trait_set_add(&traits[3].traits, "ssd", &err) == 0);
    for (int i = 0; i < 4; i++)
        hosts[i].traits = &traits[i]; /* hostset_add copies them; a's, empty, as none */
    /* The GPU hosts are the busiest: only their traits can draw a request there. */
    hosts[1].allocated_cpu = 8;
    hosts[2].allocated_cpu = 12;
    world w;
    world_open(&w, hosts, 4, NULL, 0, NULL);
    sched_request req;
    sched_decision d;
    fixture_request(&req, 1, 1024);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "a-plain"); /* asks none: as before */

    fixture_request(&req, 1, 1024);
    CHECK(trait_set_add(&req.required_traits, "custom_GPU", &err) == 0);
    decide_explained(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "b-gpu");
    CHECK(d.host_reasons[0] == SCHED_REASON_TRAIT_MISSING);
    CHECK(d.host_reasons[2] == SCHED_REASON_NONE);
    CHECK(d.host_reasons[3] == SCHED_REASON_TRAIT_MISSING);

    CHECK(trait_set_add(&req.forbidden_traits, "SPOT", &err) == 0);
    CHECK(trait_set_add(&req.forbidden_traits, "ssd", &err) == 0);
    decide_explained(&w, &req, &d);
    CHECK(d.host_reasons[2] == SCHED_REASON_TRAIT_FORBIDDEN);
    CHECK_STR(d.node ? d.node->name : NULL, "b-gpu");

    /* Forbidden alone keeps hosts without the trait. */
    fixture_request(&req, 1, 1024);
    CHECK(trait_set_add(&req.forbidden_traits, "custom_gpu", &err) == 0);
    CHECK(trait_set_add(&req.forbidden_traits, "ssd", &err) == 0);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "a-plain");

    /* Resources: 3 GPUs fit only c-gpu-spot (4), once; then nowhere. */
    fixture_request(&req, 1, 1024);
    CHECK(resource_amounts_set(&req.resources, "gpu", 3, &err) == 0);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "c-gpu-spot");
    sched_reservation res;
    sched_reservation_from_decision(&res, &d, &req, "t-gpu", 0);
    CHECK(res.resources.n == 1 && res.resources.items[0].amount == 3);
    CHECK(sched_engine_reserve(w.engine, &res, &err) == 0);
    CHECK(sched_engine_resource_free(w.engine, 2, "gpu") == 1);
    CHECK(sched_engine_resource_free(w.engine, 1, "gpu") == 2);
    CHECK(sched_engine_resource_free(w.engine, 0, "gpu") == 0);
    decide_explained(&w, &req, &d);
    CHECK(!d.placed);
    CHECK(d.reason_counts[SCHED_REASON_RESOURCES] == 4);
    CHECKF(strstr(d.message, "4 insufficient custom resource") != NULL, "%s", d.message);
    /* 1 GPU still fits b-gpu and c-gpu-spot; the held 3 stay held across a new snapshot. */
    fixture_request(&req, 1, 1024);
    CHECK(resource_amounts_set(&req.resources, "gpu", 2, &err) == 0);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "b-gpu");
    CHECK(sched_engine_set_hosts(w.engine, w.hosts, NULL, NULL, &err) == 0);
    CHECK(sched_engine_resource_free(w.engine, 2, "gpu") == 1);
    /* Released: the GPUs come back. */
    CHECK(sched_engine_release(w.engine, "t-gpu") == 1);
    CHECK(sched_engine_resource_free(w.engine, 2, "gpu") == 4);
    fixture_request(&req, 1, 1024);
    CHECK(resource_amounts_set(&req.resources, "gpu", 3, &err) == 0);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "c-gpu-spot");

    /* Switched off, the filters let every host through. */
    world_close(&w);
    sched_params p;
    fixture_params(&p);
    config_plugin off[] = {
        {.kind = CONFIG_PLUGIN_FILTER, .name = "Traits", .enable = false, .line = 3},
        {.kind = CONFIG_PLUGIN_FILTER, .name = "Resources", .enable = false, .line = 4}};
    p.plugins = off;
    p.n_plugins = 2;
    world_open(&w, hosts, 4, NULL, 0, &p);
    fixture_request(&req, 1, 1024);
    CHECK(trait_set_add(&req.required_traits, "nowhere", &err) == 0);
    CHECK(resource_amounts_set(&req.resources, "gpu", 9, &err) == 0);
    decide_ok(&w, &req, &d);
    CHECK_STR(d.node ? d.node->name : NULL, "a-plain");
    world_close(&w);
}

int main(void)
{
    test_least_loaded_wins();
    test_overcommit_limits();
    test_regex_anchoring();
    test_kept_scores_follow_reservations();
    test_re2_syntax();
    test_catastrophic_pattern_bounded();
    test_node_name();
    test_vmid_lowest_free();
    test_invalid_annotations();
    test_explanation_counts();
    test_dedicated_and_status();
    test_slots_disk_and_ties();
    test_plugin_config();
    test_subset_random_pick();
    test_strategy_pack();
    test_pack_means_pack();
    test_set_params();
    test_plugin_args_and_aliases();
    test_target_load_packing();
    test_reservation_lifecycle();
    test_burst_never_overcommits();
    test_decision_json();
    test_traits_and_resources();
    return test_summary();
}
