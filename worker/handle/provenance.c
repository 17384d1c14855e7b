/* provenance: see provenance.h. */
#include "provenance.h"

#include <stdlib.h>
#include <string.h>

#include "holds.h"
#include "store_inventory.h"
#include "store_provenance.h"
#include "yaml_json.h"

void provenance_capture(task_attempt *a)
{
    const holds *held = a->h->engine ? sched_engine_holds(a->h->engine) : NULL;
    a->holds_before = held ? held->digest : 0;
}

int provenance_write(const task_attempt *a, vf_error *err)
{
    const decision_view *view = a->h->view;
    if (!view)
        return 0;
    store_provenance p = {.snapshot_id = view->snapshot_id,
                          .holds = a->holds_before,
                          .config_id = view->config_id,
                          .clock_ms = view->clock_ms,
                          .decided_ms = a->now_ms};
    return store_provenance_record(a->h->store, a->out->task_id, &p, err);
}

char *provenance_config_body(const vf_config *config, vf_error *err)
{
    json_t *file = config->path ? yaml_json_load_file(config->path, err) : json_object();
    if (!file)
        return NULL;
    json_t *section = json_object_get(file, "scheduler");
    json_t *kept = json_is_object(section) ? json_incref(section) : json_object();
    json_t *body = json_pack("{s:o}", "scheduler", kept);
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(body);
    json_decref(file);
    if (!text)
        vf_error_set(err, VF_ENOMEM, "out of memory recording the scheduler configuration");
    return text;
}

int provenance_config_record(store *s, const vf_config *config, int64_t *id, vf_error *err)
{
    char *body = provenance_config_body(config, err);
    if (!body)
        return -1;
    char digest[STORE_INVENTORY_HASH_SIZE], now[STORE_TIME_SIZE];
    store_inventory_hash(body, strlen(body), digest);
    store_now(now);
    int rc = store_engine_config_record(s, digest, now, body, id, err);
    free(body);
    return rc;
}
