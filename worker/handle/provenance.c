/* provenance: see provenance.h. */
#include "provenance.h"

#include <stdlib.h>
#include <string.h>

#include "holds.h"
#include "sched_params.h"
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
    /* An operator's cancel decides nothing: the record stays the last
     * decision's. */
    if (!view || strcmp(a->out->status, "cancelled") == 0)
        return 0;
    store_provenance p = {.snapshot_id = view->snapshot_id,
                          .holds = a->holds_before,
                          .config_id = view->config_id,
                          .clock_ms = view->clock_ms,
                          .decided_ms = a->now_ms};
    return store_provenance_record(a->h->store, a->out->task_id, &p, err);
}

void provenance_resolve_auto(vf_config *config)
{
    if (config->scheduler.near_best_by == CONFIG_NEAR_BEST_AUTO)
        config->scheduler.near_best_by =
            config->store.url ? CONFIG_NEAR_BEST_WORKER : CONFIG_NEAR_BEST_OFF;
    if (config->scheduler.vmid_stride == 0)
        config->scheduler.vmid_stride = config->store.url ? SCHED_VMID_STRIDE_SHARED : 1;
}

char *provenance_config_body(const vf_config *config, vf_error *err)
{
    json_t *file = config->path ? yaml_json_load_file(config->path, err) : json_object();
    if (!file)
        return NULL;
    json_t *section = json_object_get(file, "scheduler");
    json_t *kept = json_is_object(section) ? json_deep_copy(section) : json_object();
    /* Keys whose "auto" depends on keys outside the section (store.url): as
     * they were resolved, so the section alone decides alike. */
    vf_config resolved = *config;
    provenance_resolve_auto(&resolved);
    if (kept && config->scheduler.near_best_by == CONFIG_NEAR_BEST_AUTO)
        json_object_set_new(kept, "near_best_by",
                            json_string(resolved.scheduler.near_best_by == CONFIG_NEAR_BEST_WORKER
                                            ? "worker"
                                            : "off"));
    if (kept && config->scheduler.vmid_stride == 0)
        json_object_set_new(kept, "vmid_stride", json_integer(resolved.scheduler.vmid_stride));
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
