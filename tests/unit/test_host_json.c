/* host_json: one host from JSON, field by field: defaults, derived
 * allocations, ranges and the exact error a user reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_json.h"
#include "testlib.h"

/* Parse one host (as host 1) into a fresh set; returns the set or NULL. */
static hostset *parse(const char *json_text, vf_error *err)
{
    vf_error_init(err);
    json_error_t json_err;
    json_t *object = json_loads(json_text, 0, &json_err);
    if (!object) {
        vf_error_set(err, VF_EINTERNAL, "test JSON: %s", json_err.text);
        return NULL;
    }
    hostset *set = hostset_new();
    if (host_json_add(set, object, 1, err) < 0) {
        hostset_free(set);
        set = NULL;
    }
    json_decref(object);
    return set;
}

static void expect_error(const char *json_text, const char *want)
{
    vf_error err;
    hostset *set = parse(json_text, &err);
    CHECKF(set == NULL, "accepted %s", json_text);
    CHECK(err.code == VF_EINVAL);
    const char *text = err.text;
    CHECK_STR(text, want);
    hostset_free(set);
}

static void test_virtflow_scheduler_node(void)
{
    /* Exactly what virtflow-scheduler's node API sends. */
    vf_error err;
    hostset *set = parse("{\"name\": \"node1\", \"cpu\": 32, \"memory\": 131072, \"storage\": 1000,"
                         " \"usage_cpu\": 0.3, \"usage_mem\": 0.5, \"pool\": \"general\","
                         " \"dedicated\": true, \"model\": \"R650\", \"max_vms\": 50,"
                         " \"current_vms\": 10, \"uptime\": 12345}",
                         &err);
    CHECKF(set != NULL, "%s", err.text);
    if (!set)
        return;
    const host *h = &set->hosts[0];
    CHECK_STR(h->name, "node1");
    CHECK_STR(h->pool, "general");
    CHECK_STR(h->model, "R650");
    CHECK(h->dedicated);
    CHECK(h->status == HOST_ONLINE);
    CHECK(h->cpu == 32 && h->memory == 131072 && h->storage == 1000);
    CHECK(h->usage_cpu == 0.3 && h->usage_mem == 0.5);
    CHECK(h->allocated_cpu > 9.59 && h->allocated_cpu < 9.61); /* 0.3 x 32 */
    CHECK(h->allocated_memory == 65536);                       /* 0.5 x 131072 */
    CHECK(h->max_vms == 50 && h->current_vms == 10);
    hostset_free(set);
}

static void test_defaults(void)
{
    vf_error err;
    hostset *set = parse("{\"name\": \"a\", \"cpu\": 0.5, \"memory\": 512, \"ip\": null}", &err);
    CHECKF(set != NULL, "%s", err.text);
    if (!set)
        return;
    const host *h = &set->hosts[0];
    CHECK_STR(h->pool, "default");
    CHECK_STR(h->ip, "");
    CHECK(!h->dedicated && h->status == HOST_ONLINE);
    CHECK(h->storage == 0 && h->allocated_cpu == 0 && h->allocated_memory == 0);
    CHECK(h->max_vms == HOST_JSON_DEFAULT_MAX_VMS && h->current_vms == 0);
    CHECK(set->n_used_vmids == 0);
    hostset_free(set);
}

static void test_vmids(void)
{
    vf_error err;
    hostset *set = parse("{\"name\": \"a\", \"cpu\": 1, \"memory\": 512,"
                         " \"vmids\": [100, 999999999, 4242]}",
                         &err);
    CHECKF(set != NULL, "%s", err.text);
    if (!set)
        return;
    CHECK(hostset_finish(set, &err) == 0);
    CHECK(hostset_vmid_used(set, 100) && hostset_vmid_used(set, 999999999) &&
          hostset_vmid_used(set, 4242));
    CHECK(!hostset_vmid_used(set, 101));
    hostset_free(set);
}

static void test_errors(void)
{
    expect_error("{\"cpu\": 1, \"memory\": 1}", "host 1: name: missing");
    expect_error("{\"name\": \"\", \"cpu\": 1, \"memory\": 1}",
                 "host 1: name: expected 1-63 characters of [A-Za-z0-9._-]");
    expect_error("{\"name\": \"bm/1\", \"cpu\": 1, \"memory\": 1}",
                 "host 1: name: expected 1-63 characters of [A-Za-z0-9._-]");
    expect_error("{\"name\": 7, \"cpu\": 1, \"memory\": 1}",
                 "host 1: name: expected 1-63 characters of [A-Za-z0-9._-]");
    expect_error("{\"name\": \"bm-1\", \"memory\": 1}", "host 1 (bm-1): cpu: missing");
    expect_error("{\"name\": \"bm-1\", \"cpu\": -2, \"memory\": 1}",
                 "host 1 (bm-1): cpu: expected a number > 0");
    expect_error("{\"name\": \"bm-1\", \"cpu\": true, \"memory\": 1}",
                 "host 1 (bm-1): cpu: expected a number > 0");
    expect_error("{\"name\": \"bm-1\", \"cpu\": 1, \"memory\": 0.5}",
                 "host 1 (bm-1): memory: expected a number of MiB >= 1");
    expect_error("{\"name\": \"bm-1\", \"cpu\": 1, \"memory\": 1, \"storage\": -1}",
                 "host 1 (bm-1): storage: expected a number of GiB >= 0");
    expect_error("{\"name\": \"bm-1\", \"cpu\": 1, \"memory\": 1, \"usage_mem\": 1.5}",
                 "host 1 (bm-1): usage_mem: expected a fraction 0..1 (0.3 means 30%)");
    expect_error("{\"name\": \"bm-1\", \"cpu\": 1, \"memory\": 1, \"allocated_cpu\": \"2\"}",
                 "host 1 (bm-1): allocated_cpu: expected a number of vCPUs >= 0");
    expect_error("{\"name\": \"bm-1\", \"cpu\": 1, \"memory\": 1, \"allocated_memory\": -5}",
                 "host 1 (bm-1): allocated_memory: expected a number of MiB >= 0");
    expect_error("{\"name\": \"bm-1\", \"cpu\": 1, \"memory\": 1, \"current_vms\": 1.5}",
                 "host 1 (bm-1): current_vms: expected a whole number >= 0");
    expect_error("{\"name\": \"bm-1\", \"cpu\": 1, \"memory\": 1, \"dedicated\": \"true\"}",
                 "host 1 (bm-1): dedicated: expected true or false");
    expect_error("{\"name\": \"bm-1\", \"cpu\": 1, \"memory\": 1, \"status\": \"Online\"}",
                 "host 1 (bm-1): status: expected one of online, offline, maintenance, unknown");
    expect_error("{\"name\": \"bm-1\", \"cpu\": 1, \"memory\": 1, \"ip\": 10}",
                 "host 1 (bm-1): ip: expected text of at most 63 bytes");
    expect_error("{\"name\": \"bm-1\", \"cpu\": 1, \"memory\": 1, \"vmids\": 100}",
                 "host 1 (bm-1): vmids: expected a list of vmids");
    expect_error("{\"name\": \"bm-1\", \"cpu\": 1, \"memory\": 1, \"vmids\": [1000000000]}",
                 "host 1 (bm-1): vmids[0]: expected an integer 100..999999999");
}

static void test_host_numbers_in_a_list(void)
{
    json_t *hosts = json_loads("[{\"name\": \"bm-001\", \"cpu\": 8, \"memory\": 1024},"
                               " {\"name\": \"bm-002\", \"cpu\": 8, \"memory\": 1024},"
                               " {\"name\": \"bm-003\", \"cpu\": 0, \"memory\": 1024}]",
                               0, NULL);
    hostset *set = hostset_new();
    vf_error err;
    vf_error_init(&err);
    CHECK(host_json_add_all(set, hosts, &err) == -1);
    const char *text = err.text;
    CHECK_STR(text, "host 3 (bm-003): cpu: expected a number > 0");
    hostset_free(set);
    json_decref(hosts);
}

/* A host's vmids are its guests, wherever sorting by name moves the host;
 * the top-level list only marks ids as used. */
static void test_guests_stay_on_their_hosts(void)
{
    json_t *root = json_loads("{\"nodes\": [{\"name\": \"zz\", \"cpu\": 8, \"memory\": 1024,"
                              " \"vmids\": [100, 101]},"
                              " {\"name\": \"aa\", \"cpu\": 8, \"memory\": 1024,"
                              " \"vmids\": [200]}], \"vmids\": [300]}",
                              0, NULL);
    vf_error err;
    vf_error_init(&err);
    hostset *set = host_json_inventory(root, &err);
    CHECKF(set != NULL, "%s", err.text);
    json_decref(root);
    if (!set)
        return;
    CHECK_STR(set->hosts[0].name, "aa");
    CHECK(hostset_guest_on(set, 100, "zz") && hostset_guest_on(set, 101, "zz"));
    CHECK(hostset_guest_on(set, 200, "aa"));
    CHECK(!hostset_guest_on(set, 100, "aa") && !hostset_guest_on(set, 200, "zz"));
    CHECK(hostset_vmid_used(set, 300) && !hostset_guest_on(set, 300, "aa") &&
          !hostset_guest_on(set, 300, "zz") && !hostset_guest_on(set, 100, "absent"));
    hostset_free(set);
}

static hostset *load_inventory(const char *text)
{
    json_t *root = json_loads(text, 0, NULL);
    CHECK(root != NULL);
    vf_error err;
    vf_error_init(&err);
    hostset *set = root ? host_json_inventory(root, &err) : NULL;
    CHECKF(set != NULL, "%s", err.text);
    json_decref(root);
    return set;
}

static void check_same_hosts(const hostset *a, const hostset *b)
{
    CHECK(a->n_hosts == b->n_hosts && a->n_used_vmids == b->n_used_vmids &&
          a->n_guests == b->n_guests && a->n_pools == b->n_pools);
    if (a->n_hosts != b->n_hosts || a->n_used_vmids != b->n_used_vmids ||
        a->n_guests != b->n_guests)
        return;
    for (size_t i = 0; i < a->n_hosts; i++) {
        const host *x = &a->hosts[i], *y = &b->hosts[i];
        CHECK_STR(x->name, y->name);
        CHECK_STR(x->ip, y->ip);
        CHECK_STR(x->pool, y->pool);
        CHECK_STR(x->model, y->model);
        CHECKF(x->dedicated == y->dedicated && x->status == y->status && x->cpu == y->cpu &&
                   x->memory == y->memory && x->storage == y->storage &&
                   x->usage_cpu == y->usage_cpu && x->usage_mem == y->usage_mem &&
                   x->has_usage_cpu == y->has_usage_cpu && x->has_usage_mem == y->has_usage_mem &&
                   x->allocated_cpu == y->allocated_cpu &&
                   x->allocated_memory == y->allocated_memory && x->max_vms == y->max_vms &&
                   x->current_vms == y->current_vms && x->pool_id == y->pool_id,
               "host %s differs", x->name);
    }
    for (size_t i = 0; i < a->n_used_vmids; i++)
        CHECK(a->used_vmids[i] == b->used_vmids[i]);
    for (size_t i = 0; i < a->n_guests; i++)
        CHECK(a->guests[i].vmid == b->guests[i].vmid &&
              a->guests[i].host_index == b->guests[i].host_index);
}

/* host_json_from_hostset reads back into the same hostset (every field,
 * measured and unmeasured usage, guests and loose vmids), and the same
 * hostset always dumps to the same text (the snapshot hash relies on it). */
static void test_round_trip(void)
{
    hostset *set = load_inventory(
        "{\"nodes\": [{\"name\": \"zz\", \"cpu\": 8.5, \"memory\": 1024.7, \"ip\": \"10.0.0.9\","
        " \"pool\": \"gpu\", \"dedicated\": true, \"model\": \"R650\", \"storage\": 500,"
        " \"usage_cpu\": 0.1234567890123, \"usage_mem\": 0.5, \"max_vms\": 7,"
        " \"current_vms\": 2, \"status\": \"maintenance\", \"vmids\": [101, 100],"
        " \"labels\": {\"rack\": \"r1\", \"zone\": \"z1\"}},"
        " {\"name\": \"aa\", \"cpu\": 16, \"memory\": 2048, \"allocated_cpu\": 3.25,"
        " \"allocated_memory\": 512, \"status\": \"offline\", \"vmids\": [200]},"
        " {\"name\": \"mm\", \"cpu\": 4, \"memory\": 64, \"usage_cpu\": 0}],"
        " \"vmids\": [300, 100]}");
    if (!set)
        return;
    json_t *doc = host_json_from_hostset(set);
    CHECK(doc != NULL);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    /* Written host by host, the same bytes as the tree's dump. */
    char *streamed = host_json_dump_hostset(set);
    CHECK_STR(streamed, text);
    free(streamed);
    hostset *back = text ? load_inventory(text) : NULL;
    if (back) {
        check_same_hosts(set, back);
        /* Labels come back as they were; a host without keeps none. */
        const host *zz = hostset_find(back, "zz");
        CHECK(zz && zz->traits && zz->traits->labels.n == 2 &&
              strcmp(host_traits_label(zz->traits, "zone"), "z1") == 0);
        CHECK(hostset_find(back, "aa")->traits == NULL);
        /* Unmeasured stays unmeasured, measured 0 stays measured. */
        const host *mm = hostset_find(back, "mm");
        CHECK(mm && mm->has_usage_cpu && !mm->has_usage_mem);
        CHECK(!hostset_find(back, "aa")->has_usage_cpu);
        CHECK(hostset_guest_on(back, 100, "zz") && hostset_guest_on(back, 200, "aa") &&
              hostset_vmid_used(back, 300) && !hostset_guest_on(back, 300, "zz"));
        /* The content hash: the same for both, another after any change. */
        char h1[HOST_JSON_HASH_SIZE], h2[HOST_JSON_HASH_SIZE];
        CHECK(host_json_content_hash(set, h1) == 0 && host_json_content_hash(back, h2) == 0);
        CHECK(strlen(h1) == 64);
        CHECK_STR(h1, h2);
        back->hosts[0].allocated_cpu += 0.5;
        CHECK(host_json_content_hash(back, h2) == 0 && strcmp(h1, h2) != 0);
        back->hosts[0].allocated_cpu -= 0.5;
        back->hosts[1].has_usage_mem = !back->hosts[1].has_usage_mem;
        CHECK(host_json_content_hash(back, h2) == 0 && strcmp(h1, h2) != 0);
        back->hosts[1].has_usage_mem = !back->hosts[1].has_usage_mem;
        back->guests[0].host_index = (back->guests[0].host_index + 1) % (uint32_t)back->n_hosts;
        CHECK(host_json_content_hash(back, h2) == 0 && strcmp(h1, h2) != 0);
        back->guests[0].host_index =
            (back->guests[0].host_index + (uint32_t)back->n_hosts - 1) % (uint32_t)back->n_hosts;
        CHECK(host_json_content_hash(back, h2) == 0);
        CHECK_STR(h2, h1);
        /* A label's value is part of the content too. */
        host_traits *labelled = (host_traits *)hostset_find(back, "zz")->traits;
        if (labelled) {
            labelled->labels.items[0].value[1] = '2';
            CHECK(host_json_content_hash(back, h2) == 0 && strcmp(h1, h2) != 0);
            labelled->labels.items[0].value[1] = '1';
        }
        json_t *again = host_json_from_hostset(back);
        char *text2 = again ? json_dumps(again, JSON_COMPACT) : NULL;
        CHECK_STR(text2, text);
        free(text2);
        json_decref(again);
    }
    free(text);
    json_decref(doc);
    hostset_free(back);
    hostset_free(set);
}

/* The streamed dump against the tree's for an inventory without guests or
 * loose vmids (empty arrays), and for an empty hostset. */
static void test_dump_without_vmids(void)
{
    hostset *set = load_inventory("{\"nodes\": [{\"name\": \"a\", \"cpu\": 2, \"memory\": 64},"
                                  " {\"name\": \"b\", \"cpu\": 4, \"memory\": 128}]}");
    hostset *empty = hostset_new();
    hostset *sets[] = {set, empty};
    for (size_t k = 0; k < 2; k++) {
        if (!sets[k])
            continue;
        json_t *doc = host_json_from_hostset(sets[k]);
        char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        char *streamed = host_json_dump_hostset(sets[k]);
        CHECK_STR(streamed, text);
        free(streamed);
        free(text);
        json_decref(doc);
    }
    hostset_free(set);
    hostset_free(empty);
}

int main(void)
{
    test_round_trip();
    test_dump_without_vmids();
    test_guests_stay_on_their_hosts();
    test_virtflow_scheduler_node();
    test_defaults();
    test_vmids();
    test_errors();
    test_host_numbers_in_a_list();
    return test_summary();
}
