/* failure_domains: CAPI's failureDomains of the hosts' labels
 * (failure_domains.h). */
#include "failure_domains.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

/* A new domain of value `value`: controlPlane false, every label of its
 * first host as attributes (narrowed by each next host), room empty. */
static json_t *new_domain(const json_t *labels)
{
    /* A copy: narrowing it must leave the host's own labels alone. */
    return json_pack("{s:b, s:o, s:{s:i, s:i, s:f, s:f, s:I, s:I}}", "controlPlane", 0,
                     "attributes", json_deep_copy(labels), "room", "hosts", 0, "online", 0,
                     "cpu_free", 0.0, "memory_free", 0.0, "disk_free", (json_int_t)0, "vms_free",
                     (json_int_t)0);
}

/* Keep only the attributes `labels` has too, with the same value. */
static void narrow_attributes(json_t *attributes, const json_t *labels)
{
    const char *key;
    json_t *value;
    void *tmp;
    json_object_foreach_safe(attributes, tmp, key, value)
    {
        if (!json_equal(value, json_object_get(labels, key)))
            json_object_del(attributes, key);
    }
}

static void add_number(json_t *room, const char *field, double add)
{
    json_t *now = json_object_get(room, field);
    if (json_is_integer(now))
        json_integer_set(now, json_integer_value(now) + (json_int_t)add);
    else
        json_real_set(now, json_real_value(now) + add);
}

/* Count host `h` (its labels `labels`) into `domain`. */
static void add_host(json_t *domain, const json_t *h, const json_t *labels, bool first)
{
    json_t *room = json_object_get(domain, "room");
    if (!first)
        narrow_attributes(json_object_get(domain, "attributes"), labels);
    add_number(room, "hosts", 1);
    if (strcmp(json_string_value(json_object_get(h, "status")), "online") != 0)
        return;
    json_object_set_new(domain, "controlPlane", json_true());
    add_number(room, "online", 1);
    static const char *const sums[][2] = {
        {"cpu", "cpu_free"}, {"memory", "memory_free"}, {"disk", "disk_free"}, {"vms", "vms_free"}};
    for (size_t k = 0; k < sizeof sums / sizeof sums[0]; k++) {
        double free_now =
            json_number_value(json_object_get(json_object_get(h, sums[k][0]), "free"));
        add_number(room, sums[k][1], fmax(free_now, 0));
    }
}

json_t *failure_domains_json(const json_t *hosts)
{
    json_t *all = json_object();
    size_t i;
    const json_t *h;
    json_array_foreach(hosts, i, h)
    {
        const json_t *labels = json_object_get(h, "labels");
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)labels, key, value)
        {
            json_t *domains = json_object_get(all, key);
            if (!domains && json_object_set_new(all, key, domains = json_object()) < 0)
                goto fail;
            const char *name = json_string_value(value);
            json_t *domain = json_object_get(domains, name);
            bool first = !domain;
            if (first &&
                (!(domain = new_domain(labels)) || json_object_set_new(domains, name, domain) < 0))
                goto fail;
            add_host(domain, h, labels, first);
        }
    }
    return all;
fail:
    json_decref(all);
    return NULL;
}
