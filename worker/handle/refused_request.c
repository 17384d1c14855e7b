/* refused_request: see refused_request.h. */
#include "refused_request.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "json_util.h"
#include "store_outbox.h"
#include "store_tasks.h"

/* The failed task's result, history row and event, and their writes. */
static int fail_task(store *s, const store_task *task, const char *why, const char *at,
                     int64_t now_ms, vf_error *err)
{
    json_t *result = json_pack("{s:s, s:s, s:s, s:s, s:i}", "task_id", task->id, "status", "failed",
                               "reason", "exhausted", "error", why, "attempts", task->attempts);
    char *result_text = result ? json_util_dump(result) : NULL;
    json_decref(result);
    json_t *data = json_pack("{s:s, s:s, s:s, s:s, s:i}", "task_id", task->id, "status", "failed",
                             "error", why, "reason", "exhausted", "attempts", task->attempts);
    char id[IDS_LEN], key[64];
    char *event = data ? events_build(EVENT_TASK_FAILED, data, now_ms / 1000, id, key) : NULL;
    int rc = -1;
    if (!result_text || !event) {
        vf_error_set(err, VF_ENOMEM, "out of memory failing task %s", task->id);
        goto out;
    }
    store_task_fields fields = {.id = task->id,
                                .status = "failed",
                                .reason = "exhausted",
                                .attempts = task->attempts,
                                .result = result_text,
                                .error = why,
                                .vmid = -1,
                                .at = at,
                                .check_attempts = true,
                                .expected_attempts = task->attempts};
    int updated = store_task_update(s, &fields, err);
    if (updated != 0) {
        if (updated == 1)
            vf_error_set(err, VF_ECONFLICT, "task %s was recorded by another worker meanwhile",
                         task->id);
        goto out;
    }
    if (store_task_event_add(s, task->id, at, "failed", result_text, err) < 0 ||
        store_outbox_add(s, id, key, event, at, err) < 0)
        goto out;
    rc = 0;
out:
    free(result_text);
    free(event);
    return rc;
}

int refused_request_settle(store *s, const char *outbox_id, const char *body, const char *why,
                           int64_t now_ms, vf_error *err)
{
    char at[STORE_TIME_SIZE];
    store_format_time(now_ms, at);
    if (store_outbox_mark_confirmed(s, outbox_id, at, err) < 0)
        return -1;
    json_t *request = json_loads(body, 0, NULL);
    const char *task_id = json_string_value(json_object_get(request, "task_id"));
    store_task task;
    memset(&task, 0, sizeof task);
    int rc = 0;
    int found = task_id ? store_task_get(s, task_id, &task, err) : 1;
    if (found < 0)
        rc = -1;
    else if (found == 0 && strcmp(task.status, "retrying") == 0)
        rc = fail_task(s, &task, why, at, now_ms, err) < 0 ? -1 : 1;
    store_task_clear(&task);
    json_decref(request);
    return rc;
}
