/* delivery_view: see delivery_view.h. */
#include "delivery_view.h"

#include "clock.h"
#include "ids.h"
#include "json_util.h"
#include "task_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const delivery_view_statuses[] = {"pending", "delivering", "delivered", "failed", NULL};

json_t *delivery_view_json(const store_delivery *d)
{
    json_t *event = d->body ? json_loads(d->body, 0, NULL) : NULL;
    const char *type = json_string_value(json_object_get(event, "type"));
    const char *task_id =
        json_string_value(json_object_get(json_object_get(event, "data"), "task_id"));
    json_t *obj = json_object();
    if (obj) {
        json_object_set_new(obj, "event_id", json_util_string_or_null(d->event_id));
        json_object_set_new(obj, "event_type", json_util_string_or_null(type));
        json_object_set_new(obj, "task_id", json_util_string_or_null(task_id));
        json_object_set_new(obj, "receiver", json_util_string_or_null(d->receiver));
        json_object_set_new(obj, "status", json_util_string_or_null(d->status));
        json_object_set_new(obj, "attempts", json_integer(d->attempts));
        json_object_set_new(obj, "next_attempt_at", json_util_string_or_null(d->next_attempt_at));
        json_object_set_new(obj, "last_code",
                            d->last_code ? json_integer(d->last_code) : json_null());
        json_object_set_new(obj, "last_error", json_util_string_or_null(d->last_error));
        json_object_set_new(obj, "delivered_at", json_util_string_or_null(d->delivered_at));
        json_object_set_new(obj, "created_at", json_util_string_or_null(d->created_at));
    }
    json_decref(event);
    return obj;
}

json_t *delivery_view_redelivery_json(const store_redelivery *r)
{
    json_t *progress = json_pack("{s:I, s:I, s:I, s:I}", "pending", (json_int_t)r->pending,
                                 "delivering", (json_int_t)r->delivering, "delivered",
                                 (json_int_t)r->delivered, "failed", (json_int_t)r->failed);
    return json_pack("{s:s, s:s, s:s, s:o, s:I, s:s, s:o, s:b}", "id", r->id, "receiver",
                     r->receiver, "status", r->status_filter, "rate_per_s",
                     r->rate_per_s > 0 ? json_real(r->rate_per_s) : json_null(), "matched",
                     (json_int_t)r->matched, "created_at", r->created_at, "progress", progress,
                     "done", r->pending + r->delivering == 0);
}

static bool configured(const vf_config *config, const char *receiver)
{
    for (size_t i = 0; i < config->relay.n_receivers; i++)
        if (strcmp(config->relay.receivers[i].name, receiver) == 0)
            return true;
    return false;
}

int delivery_view_redeliver(store *s, const vf_config *config,
                            const delivery_view_redeliver_ask *ask, store_redelivery *out,
                            vf_error *err)
{
    char since[STORE_TIME_SIZE], id[IDS_LEN];
    if (!ask->receiver || !configured(config, ask->receiver)) {
        vf_error_set(err, VF_EINVAL, "receiver: expected a name of relay.receivers, got %.64s",
                     ask->receiver ? ask->receiver : "none");
        return -1;
    }
    if (!ask->since || task_view_parse_since(ask->since, since) < 0) {
        vf_error_set(err, VF_EINVAL,
                     "since: expected 30m, 2h, 1d or an RFC 3339 UTC time like "
                     "2026-11-22T01:02:03Z");
        return -1;
    }
    bool exhausted = ask->status && strcmp(ask->status, "exhausted") == 0;
    if (ask->status && !exhausted && strcmp(ask->status, "failed") != 0) {
        vf_error_set(err, VF_EINVAL, "status: expected failed or exhausted");
        return -1;
    }
    if (ask->rate_per_s < 0 || ask->rate_per_s > 100000) {
        vf_error_set(err, VF_EINVAL,
                     "rate: expected deliveries per second, above 0 and at most "
                     "100000");
        return -1;
    }
    if (ask->id)
        snprintf(id, sizeof id, "%s", ask->id);
    else
        ids_new("rdl", id);
    /* The filters as given ("2h", not the time it meant): a repeat a while
     * later is the same request. */
    json_t *request =
        json_pack("{s:s, s:s, s:s, s:o}", "receiver", ask->receiver, "since", ask->since, "status",
                  exhausted ? "exhausted" : "failed", "rate_per_s",
                  ask->rate_per_s > 0 ? json_real(ask->rate_per_s) : json_null());
    char *text = request ? json_util_dump(request) : NULL;
    json_decref(request);
    if (!text) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    store_redelivery_request req = {.id = id,
                                    .receiver = ask->receiver,
                                    .since = since,
                                    .exhausted_only = exhausted,
                                    .rate_per_s = ask->rate_per_s,
                                    .requested_by = ask->requested_by,
                                    .request = text,
                                    .now_ms = clock_wall_ms()};
    int rc = store_redelivery_start(s, &req, out, err);
    free(text);
    return rc;
}
