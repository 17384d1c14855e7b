/* GET /v1/hosts: the inventory beside the store's live reservations, what
 * is free on each host (host_capacity, as virtflowctl nodes --json), per
 * pool, and per failure domain (failure_domains.h: CAPI's failureDomains
 * shape, one map per label key). The inventory is fetched by a thread of its own every
 * inventory.refresh_s (inventory_refresher.h, as the worker's), so a request never
 * waits for a slow inventory source; it reads the latest snapshot. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_internal.h"
#include "failure_domains.h"
#include "host_capacity.h"
#include "log.h"
#include "problem.h"

int api_hosts_start(api *a, vf_error *err)
{
    vf_error inventory_err;
    vf_error_init(&inventory_err);
    if (!(a->inventory = inventory_new(a->config, &inventory_err))) {
        /* The API's other routes need no inventory: say why /v1/hosts will not answer. */
        log_warn("inventory: %s: GET /v1/hosts answers 503", inventory_err.text);
        return 0;
    }
    /* Fetched on the thread, the first time at once: the API answers its
     * other routes while a slow source is read. */
    a->refresher =
        inventory_refresher_start(a->inventory, a->config->inventory.refresh_s, true, err);
    return a->refresher ? 0 : -1;
}

void api_hosts_stop(api *a)
{
    inventory_refresher_stop(a->refresher);
    a->refresher = NULL;
    inventory_free(a->inventory);
    a->inventory = NULL;
}

/* Per pool: hosts, and the sums of what is free on its online hosts (a host
 * with nothing left counts 0, not less). */
static json_t *pools_json(const json_t *hosts)
{
    json_t *pools = json_object();
    size_t i;
    const json_t *h;
    json_array_foreach(hosts, i, h)
    {
        const char *name = json_string_value(json_object_get(h, "pool"));
        json_t *pool = json_object_get(pools, name);
        if (!pool) {
            pool = json_pack("{s:s, s:i, s:i, s:f, s:f, s:I, s:I}", "name", name, "hosts", 0,
                             "online", 0, "cpu_free", 0.0, "memory_free", 0.0, "disk_free",
                             (json_int_t)0, "vms_free", (json_int_t)0);
            json_object_set_new(pools, name, pool);
        }
        json_object_set_new(pool, "hosts",
                            json_integer(json_integer_value(json_object_get(pool, "hosts")) + 1));
        if (strcmp(json_string_value(json_object_get(h, "status")), "online") != 0)
            continue;
        json_object_set_new(pool, "online",
                            json_integer(json_integer_value(json_object_get(pool, "online")) + 1));
        static const char *const reals[][2] = {{"cpu", "cpu_free"}, {"memory", "memory_free"}};
        for (int k = 0; k < 2; k++) {
            double free_now =
                json_real_value(json_object_get(json_object_get(h, reals[k][0]), "free"));
            double sum = json_real_value(json_object_get(pool, reals[k][1]));
            json_object_set_new(pool, reals[k][1], json_real(sum + fmax(free_now, 0)));
        }
        static const char *const ints[][2] = {{"disk", "disk_free"}, {"vms", "vms_free"}};
        for (int k = 0; k < 2; k++) {
            json_int_t free_now =
                json_integer_value(json_object_get(json_object_get(h, ints[k][0]), "free"));
            json_int_t sum = json_integer_value(json_object_get(pool, ints[k][1]));
            json_object_set_new(pool, ints[k][1],
                                json_integer(sum + (free_now > 0 ? free_now : 0)));
        }
    }
    json_t *array = json_array();
    const char *key;
    json_t *value;
    json_object_foreach(pools, key, value) json_array_append(array, value);
    json_decref(pools);
    return array;
}

void api_hosts(api *a, const httpd_request *req, httpd_response *resp)
{
    static const char *const known[] = {NULL};
    if (httpd_query_unknown(req, known)) {
        problem_reply(resp, 400, "/v1/hosts takes no parameters");
        return;
    }
    if (!a->inventory) {
        problem_reply(resp, 503, "no inventory configured for virtflow-api (see its log)");
        return;
    }
    inventory_view view;
    inventory_acquire(a->inventory, &view);
    if (!view.hosts) {
        inventory_release(&view);
        problem_reply(resp, 503, "no inventory fetched yet; try again");
        return;
    }
    vf_error err;
    vf_error_init(&err);
    json_t *hosts = host_capacity_json(a->config, view.hosts, a->store, NULL, &err);
    if (!hosts) {
        inventory_release(&view);
        log_error("GET /v1/hosts: %s", err.text);
        problem_reply(resp, err.code == VF_EUNAVAILABLE ? 503 : 500,
                      "the store is unavailable; try again");
        return;
    }
    json_t *answer = json_pack("{s:O, s:o, s:o, s:{s:f, s:b}}", "hosts", hosts, "pools",
                               pools_json(hosts), "failure_domains", failure_domains_json(hosts),
                               "inventory", "age_s", view.age_s, "stale", view.stale);
    json_decref(hosts);
    inventory_release(&view);
    api_reply_json(resp, 200, answer);
}
