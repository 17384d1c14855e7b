/* failure_domains: the hosts' labels as CAPI's status.failureDomains, with
 * each domain's room (docs/scheduling.md "Failure domains and topology
 * spread"), from host_capacity_json's array as GET /v1/hosts makes it. */
#include <string.h>

#include "config.h"
#include "failure_domains.h"
#include "host_capacity.h"
#include "sched_fixture.h"
#include "testlib.h"

typedef struct spot {
    const char *name, *rack, *zone;
    host_status status;
} spot;

static hostset *hosts_of(const spot *spots, size_t n)
{
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    for (size_t i = 0; i < n; i++) {
        host h = fixture_host(spots[i].name);
        h.status = spots[i].status;
        h.cpu = 8;
        h.allocated_cpu = 4;
        h.max_vms = 10;
        host_traits traits;
        memset(&traits, 0, sizeof traits);
        if (spots[i].rack)
            CHECK(label_set_put(&traits.labels, "rack", spots[i].rack, &err) == 0);
        if (spots[i].zone)
            CHECK(label_set_put(&traits.labels, "zone", spots[i].zone, &err) == 0);
        h.traits = traits.labels.n ? &traits : NULL;
        CHECK(hostset_add(set, &h, &err) == 0);
    }
    CHECK(hostset_finish(set, &err) == 0);
    return set;
}

static void test_domains(void)
{
    static const spot spots[] = {
        {"a1", "r1", "z1", HOST_ONLINE},  {"a2", "r1", "z1", HOST_ONLINE},
        {"b1", "r2", "z1", HOST_ONLINE},  {"b2", "r2", "z1", HOST_OFFLINE},
        {"c1", "r3", "z2", HOST_OFFLINE}, {"d1", NULL, NULL, HOST_ONLINE},
    };
    hostset *set = hosts_of(spots, 6);
    vf_config *config = config_defaults();
    vf_error err;
    vf_error_init(&err);
    json_t *hosts = host_capacity_json(config, set, NULL, NULL, &err);
    CHECKF(hosts != NULL, "%s", err.text);
    json_t *domains = failure_domains_json(hosts);
    CHECK(domains && json_object_size(domains) == 2);
    json_t *rack = json_object_get(domains, "rack");
    CHECK(json_object_size(rack) == 3);
    json_t *r1 = json_object_get(rack, "r1");
    CHECK(json_is_true(json_object_get(r1, "controlPlane")));
    char *attributes = json_dumps(json_object_get(r1, "attributes"), JSON_COMPACT | JSON_SORT_KEYS);
    CHECK_STR(attributes, "{\"rack\":\"r1\",\"zone\":\"z1\"}");
    free(attributes);
    json_t *room = json_object_get(r1, "room");
    /* Two online hosts, each 8 cores x 4 - 4 allocated = 28 vCPUs free, 10 slots. */
    CHECK(json_integer_value(json_object_get(room, "hosts")) == 2 &&
          json_integer_value(json_object_get(room, "online")) == 2 &&
          json_number_value(json_object_get(room, "cpu_free")) == 56 &&
          json_integer_value(json_object_get(room, "vms_free")) == 20);
    room = json_object_get(json_object_get(rack, "r2"), "room");
    CHECK(json_integer_value(json_object_get(room, "hosts")) == 2 &&
          json_integer_value(json_object_get(room, "online")) == 1 &&
          json_number_value(json_object_get(room, "cpu_free")) == 28);
    /* A rack whose hosts are all offline takes no control plane now. */
    CHECK(json_is_false(json_object_get(json_object_get(rack, "r3"), "controlPlane")));
    /* A zone over two racks: only the zone is shared. */
    attributes = json_dumps(
        json_object_get(json_object_get(json_object_get(domains, "zone"), "z1"), "attributes"),
        JSON_COMPACT | JSON_SORT_KEYS);
    CHECK_STR(attributes, "{\"zone\":\"z1\"}");
    free(attributes);
    /* The hosts' own labels are left as they were. */
    CHECK(json_object_size(json_object_get(json_array_get(hosts, 0), "labels")) == 2);
    CHECK(json_object_get(json_array_get(hosts, 5), "labels") == NULL);
    json_decref(domains);
    json_decref(hosts);
    /* No labels anywhere: no domains. */
    static const spot bare[] = {{"x", NULL, NULL, HOST_ONLINE}};
    hostset *plain = hosts_of(bare, 1);
    hosts = host_capacity_json(config, plain, NULL, NULL, &err);
    domains = failure_domains_json(hosts);
    CHECK(domains && json_object_size(domains) == 0);
    json_decref(domains);
    json_decref(hosts);
    hostset_free(plain);
    config_free(config);
    hostset_free(set);
}

int main(void)
{
    test_domains();
    return test_summary();
}
