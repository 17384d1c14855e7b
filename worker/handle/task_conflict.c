/* task_conflict: see task_conflict.h. */
#include "task_conflict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "json_util.h"
#include "store_outbox.h"
#include "store_tasks.h"

/* A copy of `body` naming `task_id`, NULL when out of memory. */
static json_t *naming(const json_t *body, const char *task_id)
{
    json_t *copy = json_deep_copy(body);
    if (copy && json_object_set_new(copy, "task_id", json_string(task_id)) < 0) {
        json_decref(copy);
        return NULL;
    }
    return copy;
}

bool task_conflict_same_request(const char *recorded, const char *task_id, const json_t *body)
{
    if (!recorded || !json_is_object(body))
        return false;
    json_t *first = json_loads(recorded, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(first)) {
        json_decref(first);
        return false; /* a body is an object: never the same */
    }
    json_t *again = naming(body, task_id);
    bool same = again && json_object_set_new(first, "task_id", json_string(task_id)) == 0 &&
                json_equal(first, again);
    json_decref(again);
    json_decref(first);
    return same;
}

void task_conflict_error(const task_conflict *c, char *out, size_t size)
{
    snprintf(out, size,
             "task id %s already names another %s request, recorded first; this one is refused "
             "and the first left as it was: use a new task id",
             c->task_id, c->kind ? c->kind : "schedule");
}

char *task_conflict_reply(const task_conflict *c)
{
    char error[512];
    task_conflict_error(c, error, sizeof error);
    json_t *reply =
        json_pack("{s:s, s:s, s:s}", "task_id", c->task_id, "status", "conflict", "error", error);
    char *text = reply ? json_util_dump(reply) : NULL;
    json_decref(reply);
    return text;
}

/* Who sent the refused submission, and how: shared by the history row and
 * the event. */
static json_t *who(const task_conflict *c, const char *error)
{
    return json_pack("{s:s, s:s, s:s, s:s*, s:s*, s:s*, s:s*}", "task_id", c->task_id, "status",
                     "conflict", "error", error, "via", c->via, "publisher", c->publisher,
                     "submitter", c->submitter, "message_id", c->message_id);
}

int task_conflict_record(store *s, const task_conflict *c, char **event_id, char **event_key,
                         char **event_body, vf_error *err)
{
    char error[512], at[STORE_TIME_SIZE], id[IDS_LEN], key[64];
    task_conflict_error(c, error, sizeof error);
    store_format_time(c->now_ms, at);
    json_t *history = who(c, error);
    json_t *data = who(c, error);
    char *history_text = NULL, *body = NULL;
    int rc = -1;
    if (!history || !data)
        goto nomem;
    /* The history row keeps what was refused, for the operator who reads
     * the task; the event names the submission only. */
    json_object_del(history, "task_id");
    json_object_del(history, "status");
    if ((c->routing_key &&
         json_object_set_new(history, "routing_key", json_string(c->routing_key)) < 0) ||
        json_object_set(history, "request", (json_t *)c->request) < 0 ||
        !(history_text = json_util_dump(history)))
        goto nomem;
    body = events_build(EVENT_TASK_CONFLICT, data, c->now_ms / 1000, id, key);
    data = NULL; /* events_build took it */
    if (!body)
        goto nomem;
    if (store_task_event_add(s, c->task_id, at, "conflict", history_text, err) < 0 ||
        store_outbox_add(s, id, key, body, at, err) < 0)
        goto out;
    if (event_id && event_key && event_body) {
        *event_id = strdup(id);
        *event_key = strdup(key);
        *event_body = body;
        body = NULL;
        if (!*event_id || !*event_key)
            goto nomem;
    }
    rc = 0;
    goto out;
nomem:
    vf_error_set(err, VF_ENOMEM, "out of memory recording a conflict on task %s", c->task_id);
out:
    json_decref(history);
    json_decref(data);
    free(history_text);
    free(body);
    return rc;
}
