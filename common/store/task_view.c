#include "task_view.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ids.h"
#include "json_util.h"
#include "store_reservations.h"
#include "store_stats.h"

const char *const task_view_statuses[] = {
    "queued",        "processing", "retrying",  "completed", "failed",    "provisioning",
    "waiting_ready", "ready",      "releasing", "released",  "cancelled", NULL,
};
const char *const task_view_reasons[] = {"invalid",   "unschedulable", "never_fits",
                                         "exhausted", "lost",          NULL};
const char *const task_view_kinds[] = {"schedule", "spare", NULL};

bool task_view_is_final(const char *status)
{
    return status && (strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
                      strcmp(status, "cancelled") == 0 || strcmp(status, "released") == 0);
}

bool task_view_is_settled(const char *status)
{
    return task_view_is_final(status) || (status && strcmp(status, "ready") == 0);
}

json_t *task_view_stored_json(const char *text)
{
    if (!text)
        return json_null();
    json_t *value = json_loads(text, JSON_DECODE_ANY, NULL);
    return value ? value : json_string(text); /* keep what is there, even if it is not JSON */
}

json_t *task_view_json(const store_task *t)
{
    json_t *obj = json_object();
    json_object_set_new(obj, "id", json_string(t->id));
    json_object_set_new(obj, "kind", json_util_string_or_null(t->kind));
    json_object_set_new(obj, "status", json_util_string_or_null(t->status));
    json_object_set_new(obj, "reason", json_util_string_or_null(t->reason));
    json_object_set_new(obj, "attempts", json_integer(t->attempts));
    json_object_set_new(obj, "node", json_util_string_or_null(t->node));
    json_object_set_new(obj, "vmid", t->vmid >= 0 ? json_integer(t->vmid) : json_null());
    json_object_set_new(obj, "error", json_util_string_or_null(t->error));
    json_object_set_new(obj, "created_at", json_util_string_or_null(t->created_at));
    json_object_set_new(obj, "updated_at", json_util_string_or_null(t->updated_at));
    json_object_set_new(obj, "request", task_view_stored_json(t->request));
    json_object_set_new(obj, "result", task_view_stored_json(t->result));
    return obj;
}

static int collect_event(const store_task_event *e, void *user)
{
    json_t *array = user;
    json_array_append_new(array, json_pack("{s:s, s:s, s:o}", "at", e->at, "status", e->status,
                                           "detail", task_view_stored_json(e->detail)));
    return 0;
}

static int collect_reservation(const store_reservation *r, void *user)
{
    json_t *array = user;
    json_t *obj = json_pack("{s:s, s:f, s:I, s:I, s:o, s:s, s:s, s:o}", "node", r->node, "cpu",
                            r->cpu, "memory", (json_int_t)r->memory, "disk", (json_int_t)r->disk,
                            "vmid", r->vmid >= 0 ? json_integer(r->vmid) : json_null(),
                            "created_at", r->created_at, "expires_at", r->expires_at, "released_at",
                            r->released_at ? json_string(r->released_at) : json_null());
    json_array_append_new(array, obj);
    return 0;
}

json_t *task_view_event_json(const store_task_event *e)
{
    return json_pack("{s:s, s:I, s:s, s:s, s:o}", "task_id", e->task_id, "seq", (json_int_t)e->id,
                     "at", e->at, "status", e->status, "detail", task_view_stored_json(e->detail));
}

json_t *task_view_spare_json(const store_spare *spare)
{
    json_t *obj = json_object();
    json_object_set_new(obj, "name", json_util_string_or_null(spare->name));
    json_object_set_new(obj, "index", json_integer(spare->index));
    json_object_set_new(obj, "host", json_util_string_or_null(spare->node));
    json_object_set_new(obj, "ip", json_util_string_or_null(spare->ip));
    json_object_set_new(obj, "vmid", spare->vmid >= 0 ? json_integer(spare->vmid) : json_null());
    json_object_set_new(obj, "state", json_util_string_or_null(spare->state));
    json_object_set_new(obj, "attempts", json_integer(spare->attempts));
    json_object_set_new(obj, "ready_by", json_util_string_or_null(spare->ready_by));
    json_object_set_new(obj, "last_error", json_util_string_or_null(spare->last_error));
    json_object_set_new(obj, "pipeline_url", json_util_string_or_null(spare->pipeline_url));
    json_object_set_new(obj, "release_task_id", json_util_string_or_null(spare->release_task_id));
    json_object_set_new(obj, "created_at", json_util_string_or_null(spare->created_at));
    json_object_set_new(obj, "updated_at", json_util_string_or_null(spare->updated_at));
    return obj;
}

static int collect_spare(const store_spare *spare, void *user)
{
    json_array_append_new(user, task_view_spare_json(spare));
    return 0;
}

json_t *task_view_spares_json(store *s, const char *task_id, vf_error *err)
{
    json_t *spares = json_array();
    if (!spares) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    /* A task either prepared spares or released them: one of the two lists
     * is empty. */
    if (store_spare_list(s, STORE_SPARES_OF_TASK, task_id, 0, collect_spare, spares, err) < 0 ||
        (json_array_size(spares) == 0 && store_spare_list(s, STORE_SPARES_OF_RELEASE, task_id, 0,
                                                          collect_spare, spares, err) < 0)) {
        json_decref(spares);
        return NULL;
    }
    return spares;
}

json_t *task_view_detail_json(store *s, const store_task *task, vf_error *err)
{
    json_t *history = json_array(), *reservations = json_array();
    json_t *all = json_pack("{s:o, s:o, s:o}", "task", task_view_json(task), "history", history,
                            "reservations", reservations);
    if (!all) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    if (store_task_events(s, task->id, collect_event, history, err) < 0 ||
        store_task_reservations(s, task->id, collect_reservation, reservations, err) < 0) {
        json_decref(all);
        return NULL;
    }
    if (task->kind && strcmp(task->kind, "spare") == 0) {
        json_t *spares = task_view_spares_json(s, task->id, err);
        if (!spares) {
            json_decref(all);
            return NULL;
        }
        json_object_set_new(all, "spares", spares);
    }
    return all;
}

int task_view_parse_since(const char *text, char out[STORE_TIME_SIZE])
{
    char *end = NULL;
    errno = 0;
    long long amount = strtoll(text, &end, 10);
    if (errno == 0 && end != text && amount >= 0 && end[0] && !end[1] &&
        isdigit((unsigned char)text[0])) {
        long long unit = end[0] == 's'   ? 1
                         : end[0] == 'm' ? 60
                         : end[0] == 'h' ? 3600
                         : end[0] == 'd' ? 86400
                                         : 0;
        if (unit == 0 || amount > 100LL * 365 * 86400 / unit)
            return -1;
        return store_format_time(((long long)time(NULL) - amount * unit) * 1000, out);
    }
    int64_t unix_s;
    if (ids_parse_time(text, &unix_s) == 0)
        return store_format_time(unix_s * 1000, out);
    return -1;
}

json_t *task_view_retry(const json_t *detail, int max_attempts)
{
    const json_t *task = json_object_get(detail, "task");
    const char *status = json_string_value(json_object_get(task, "status"));
    if (!status || strcmp(status, "retrying") != 0)
        return NULL;
    const json_t *history = json_object_get(detail, "history");
    for (size_t i = json_array_size(history); i > 0; i--) {
        const json_t *row = json_array_get(history, i - 1);
        const char *row_status = json_string_value(json_object_get(row, "status"));
        if (!row_status || strcmp(row_status, "retrying") != 0)
            continue;
        const json_t *why = json_object_get(row, "detail");
        int64_t at_s = 0;
        const char *at = json_string_value(json_object_get(row, "at"));
        if (!at || ids_parse_time(at, &at_s) < 0)
            return NULL;
        char next_at[32];
        ids_rfc3339(at_s + json_integer_value(json_object_get(why, "delay_s")), next_at);
        return json_pack(
            "{s:I, s:i, s:I, s:s}", "attempt", json_integer_value(json_object_get(why, "attempt")),
            "max_attempts", max_attempts, "next_attempt",
            json_integer_value(json_object_get(why, "next_attempt")), "next_attempt_at", next_at);
    }
    return NULL;
}
