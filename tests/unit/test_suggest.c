/* suggest: why not, and what would fix it. Minimal means minimal: each
 * suggestion applied makes the request fit on its host; one unit less (to
 * free) or one unit more (of the smaller request) does not. Several reasons
 * at once, over one fixture inventory. */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "sched_fixture.h"
#include "suggest.h"
#include "testlib.h"

/* 16 cores x 4 = 64 vCPUs, 65536 MiB, 1024 GiB, 100 slots each. */
#define N_HOSTS 8
static host base[N_HOSTS];

static void make_hosts(void)
{
    const char *names[N_HOSTS] = {"a-cpu",  "b-memory", "c-disk", "d-slots",
                                  "e-both", "f-gpu",    "g-off",  "h-room"};
    for (int i = 0; i < N_HOSTS; i++)
        base[i] = fixture_host(names[i]);
    base[0].allocated_cpu = 59;       /* 5 left */
    base[1].allocated_memory = 60000; /* 5536 left */
    base[2].storage = 30;             /* 30 GiB left */
    base[3].current_vms = 100;        /* no slot */
    base[4].allocated_cpu = 62.5;     /* 1.5 left: 1 whole vCPU */
    base[4].allocated_memory = 65000; /* 536 left */
    snprintf(base[5].pool, sizeof base[5].pool, "gpu");
    base[6].status = HOST_OFFLINE;
    base[7].allocated_cpu = 60; /* the roomiest default host: 4 vCPUs, all memory */
}

/* Whether `req` fits on the single host `h`. */
static bool fits_on(const host *h, const sched_request *req)
{
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    CHECK(hostset_add(set, h, &err) == 0);
    CHECK(hostset_finish(set, &err) == 0);
    sched_params p;
    fixture_params(&p);
    sched_engine *engine = sched_engine_new(&p, &err);
    CHECK(engine && sched_engine_set_hosts(engine, set, NULL, NULL, &err) == 0);
    sched_decision d;
    CHECK(sched_engine_decide(engine, req, &d, &err) == 0);
    bool placed = d.placed;
    sched_engine_free(engine);
    hostset_free(set);
    return placed;
}

static int64_t field(const json_t *obj, const char *key)
{
    return json_integer_value(json_object_get(obj, key));
}

/* Apply "free" (less `minus` of resource `which`) to a copy of `h`. */
static host freed(const host *h, const json_t *release, const char *which, int64_t minus)
{
    host c = *h;
    int64_t cpu = field(release, "cpu") - (strcmp(which, "cpu") == 0 ? minus : 0);
    int64_t memory = field(release, "memory_mib") - (strcmp(which, "memory_mib") == 0 ? minus : 0);
    int64_t disk = field(release, "disk_gib") - (strcmp(which, "disk_gib") == 0 ? minus : 0);
    int64_t slots = field(release, "vm_slots") - (strcmp(which, "vm_slots") == 0 ? minus : 0);
    c.allocated_cpu -= (double)cpu;
    c.allocated_memory -= memory;
    c.storage += disk;
    c.current_vms -= (int32_t)slots;
    return c;
}

static void check_host(const char *name, const json_t *entry, const sched_request *req)
{
    const host *h = NULL;
    for (int i = 0; i < N_HOSTS; i++)
        if (strcmp(base[i].name, name) == 0)
            h = &base[i];
    CHECK(h != NULL);
    if (!h)
        return;
    const json_t *release = json_object_get(entry, "free");
    if (release) {
        CHECKF(json_object_size(release) > 0, "%s: something to free", name);
        host applied = freed(h, release, "", 0);
        CHECKF(fits_on(&applied, req), "%s: freeing what it says makes the request fit", name);
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)release, key, value)
        {
            host less = freed(h, release, key, 1);
            CHECKF(!fits_on(&less, req), "%s: one %s less to free does not fit", name, key);
        }
    }
    const json_t *fits = json_object_get(entry, "fits");
    if (fits) {
        sched_request smaller = *req;
        smaller.cpu = (int32_t)field(fits, "cpu");
        smaller.memory = field(fits, "memory_mib");
        smaller.disk = field(fits, "disk_gib");
        CHECKF(fits_on(h, &smaller), "%s: the smaller request fits", name);
        if (smaller.cpu < req->cpu) {
            sched_request more = smaller;
            more.cpu++;
            CHECKF(!fits_on(h, &more), "%s: one vCPU more does not", name);
        }
        if (smaller.memory < req->memory) {
            sched_request more = smaller;
            more.memory++;
            CHECKF(!fits_on(h, &more), "%s: one MiB more does not", name);
        }
        if (smaller.disk < req->disk) {
            sched_request more = smaller;
            more.disk++;
            CHECKF(!fits_on(h, &more), "%s: one GiB more does not", name);
        }
    }
}

static void test_minimal(void)
{
    make_hosts();
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    for (int i = 0; i < N_HOSTS; i++)
        CHECK(hostset_add(set, &base[i], &err) == 0);
    CHECK(hostset_finish(set, &err) == 0);
    sched_params p;
    fixture_params(&p);
    sched_engine *engine = sched_engine_new(&p, &err);
    CHECK(engine && sched_engine_set_hosts(engine, set, NULL, NULL, &err) == 0);
    sched_request req;
    fixture_request(&req, 8, 16384);
    req.disk = 50;
    sched_decision d;
    CHECK(sched_engine_decide(engine, &req, &d, &err) == 0);
    CHECK(!d.placed);
    json_t *s = sched_suggest(engine, &req, &d, 100);
    CHECK(s != NULL);
    json_t *hosts = json_object_get(s, "hosts");
    CHECKF(json_object_size(hosts) == N_HOSTS, "every host has a suggestion (%zu)",
           json_object_size(hosts));
    /* The exact figures of a few, as an operator reads them. */
    CHECK(field(json_object_get(json_object_get(hosts, "a-cpu"), "free"), "cpu") == 3);
    CHECK(field(json_object_get(json_object_get(hosts, "b-memory"), "free"), "memory_mib") ==
          16384 - 5536);
    CHECK(field(json_object_get(json_object_get(hosts, "c-disk"), "free"), "disk_gib") == 20);
    CHECK(field(json_object_get(json_object_get(hosts, "d-slots"), "free"), "vm_slots") == 1);
    CHECK(json_object_get(json_object_get(hosts, "d-slots"), "fits") == NULL);
    json_t *both = json_object_get(json_object_get(hosts, "e-both"), "free");
    CHECK(field(both, "cpu") == 7 && field(both, "memory_mib") == 16384 - 536);
    CHECK_STR(json_string_value(json_object_get(json_object_get(hosts, "f-gpu"), "constraint")),
              "pool");
    CHECK_STR(json_string_value(json_object_get(json_object_get(hosts, "g-off"), "constraint")),
              "status");
    /* The cheapest change first: h-room needs 4 vCPUs of 8 (0.5), a-cpu 3 (0.375). */
    const char *first = NULL;
    const char *key;
    json_t *value;
    json_object_foreach(hosts, key, value)
    {
        if (!first)
            first = key;
        check_host(key, value, &req);
    }
    CHECK_STR(first, "a-cpu");

    /* Pools: the largest shapes in default (c-disk: every vCPU and MiB, but
     * 30 GiB of disk), and in gpu (a whole host). */
    json_t *pools = json_object_get(s, "pools");
    json_t *most_cpu = json_object_get(json_object_get(pools, "default"), "most_cpu");
    CHECK_STR(json_string_value(json_object_get(most_cpu, "host")), "c-disk");
    CHECK(field(most_cpu, "cpu") == 64 && field(most_cpu, "memory_mib") == 65536 &&
          field(most_cpu, "disk_gib") == 30);
    json_t *most_memory = json_object_get(json_object_get(pools, "default"), "most_memory");
    CHECK(field(most_memory, "memory_mib") == 65536);
    CHECK(field(json_object_get(json_object_get(pools, "gpu"), "most_cpu"), "cpu") == 64);
    json_decref(s);

    /* At most max_hosts listed, the rest counted. */
    s = sched_suggest(engine, &req, &d, 3);
    CHECK(json_object_size(json_object_get(s, "hosts")) == 3);
    CHECK(field(s, "hosts_omitted") == N_HOSTS - 3);
    json_decref(s);
    sched_engine_free(engine);
    hostset_free(set);
}

/* Why not, for traits and custom resources: the trait a host lacks or
 * carries against the request, and how many more units it would need. */
static void test_traits(void)
{
    vf_error err;
    vf_error_init(&err);
    host plain = fixture_host("a-plain"), gpu = fixture_host("b-gpu"),
         spot = fixture_host("c-spot");
    host_traits gpu_traits, spot_traits;
    memset(&gpu_traits, 0, sizeof gpu_traits);
    memset(&spot_traits, 0, sizeof spot_traits);
    CHECK(trait_set_add(&gpu_traits.traits, "CUSTOM_GPU", &err) == 0);
    CHECK(resource_amounts_set(&gpu_traits.resources, "gpu", 4, &err) == 0);
    CHECK(trait_set_add(&spot_traits.traits, "CUSTOM_GPU", &err) == 0);
    CHECK(trait_set_add(&spot_traits.traits, "CUSTOM_SPOT", &err) == 0);
    gpu.traits = &gpu_traits;
    spot.traits = &spot_traits;
    hostset *set = hostset_new();
    CHECK(hostset_add(set, &plain, &err) == 0 && hostset_add(set, &gpu, &err) == 0 &&
          hostset_add(set, &spot, &err) == 0 && hostset_finish(set, &err) == 0);
    sched_params p;
    fixture_params(&p);
    sched_engine *engine = sched_engine_new(&p, &err);
    CHECK(engine && sched_engine_set_hosts(engine, set, NULL, NULL, &err) == 0);
    sched_request req;
    fixture_request(&req, 1, 1024);
    CHECK(trait_set_add(&req.required_traits, "custom_gpu", &err) == 0);
    CHECK(trait_set_add(&req.forbidden_traits, "custom_spot", &err) == 0);
    CHECK(resource_amounts_set(&req.resources, "gpu", 3, &err) == 0);
    sched_decision d;
    CHECK(sched_engine_decide(engine, &req, &d, &err) == 0 && d.placed);
    sched_reservation res;
    sched_reservation_from_decision(&res, &d, &req, "t-1", 0);
    CHECK(sched_engine_reserve(engine, &res, &err) == 0);
    CHECK(sched_engine_decide(engine, &req, &d, &err) == 0 && !d.placed);
    json_t *s = sched_suggest(engine, &req, &d, 10);
    json_t *hosts = json_object_get(s, "hosts");
    json_t *a = json_object_get(hosts, "a-plain"), *b = json_object_get(hosts, "b-gpu"),
           *c = json_object_get(hosts, "c-spot");
    CHECK_STR(json_string_value(json_object_get(a, "reason")), "missing required trait");
    CHECK_STR(json_string_value(json_object_get(a, "detail")), "needs trait custom_gpu");
    CHECK_STR(json_string_value(json_object_get(c, "reason")), "forbidden trait");
    CHECK_STR(json_string_value(json_object_get(c, "detail")),
              "carries forbidden trait custom_spot");
    CHECK_STR(json_string_value(json_object_get(b, "constraint")), "resources");
    CHECK_STR(json_string_value(json_object_get(b, "detail")), "needs 2 more gpu (1 of 4 left)");
    json_decref(s);
    sched_engine_free(engine);
    hostset_free(set);
}

int main(void)
{
    test_minimal();
    test_traits();
    return test_summary();
}
