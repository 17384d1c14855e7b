/* GET /result/{task_id}: the task's row, in the prototype's shapes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "api_routes.h"
#include "json_util.h"
#include "log.h"
#include "problem.h"
#include "request.h"

/* Copies `key` from `from` to `to` when present and not null. */
static void copy_member(json_t *to, const json_t *from, const char *key)
{
    json_t *value = json_object_get(from, key);
    if (value && !json_is_null(value))
        json_object_set(to, key, value);
}

static json_t *completed_json(const store_task *task)
{
    json_t *recorded = task->result ? json_loads(task->result, 0, NULL) : NULL;
    json_t *node = json_object_get(recorded, "node");
    /* The prototype's result is the host: name and ip first, then ours. */
    json_t *result = json_object();
    json_t *name = json_object_get(node, "name");
    json_object_set_new(result, "name",
                        json_is_string(name) ? json_copy(name)
                        : task->node         ? json_string(task->node)
                                             : json_null());
    json_t *ip = json_object_get(node, "ip");
    json_object_set_new(result, "ip", json_is_string(ip) ? json_copy(ip) : json_null());
    copy_member(result, node, "pool");
    if (task->vmid >= 0)
        json_object_set_new(result, "vmid", json_integer(task->vmid));
    json_t *out = json_pack("{s:s, s:o}", "status", "completed", "result", result);
    if (out) {
        json_object_set_new(out, "task_id", json_string(task->id));
        copy_member(out, recorded, "score");
        json_object_set_new(out, "attempts", json_integer(task->attempts));
    }
    json_decref(recorded);
    return out;
}

json_t *api_result_json(const store_task *task)
{
    const char *status = task->status ? task->status : "";
    json_t *out;
    if (strcmp(status, "completed") == 0) {
        out = completed_json(task);
    } else if (strcmp(status, "failed") == 0) {
        out = json_pack("{s:s, s:s, s:s, s:s?, s:i}", "status", "failed", "error",
                        task->error ? task->error : "failed", "task_id", task->id, "reason",
                        task->reason, "attempts", task->attempts);
    } else if (strcmp(status, "cancelled") == 0) {
        /* The prototype's failed shape, so its clients see an end; `state`
         * and `reason` say an operator ended it. */
        out = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "status", "failed", "error",
                        task->error ? task->error : "cancelled", "task_id", task->id, "reason",
                        "cancelled", "state", "cancelled", "attempts", task->attempts);
    } else {
        /* queued, processing, retrying (and a spare task's steps): not
         * final, which is all the prototype's "processing" says. */
        out = json_pack("{s:s, s:s, s:s, s:i}", "status", "processing", "task_id", task->id,
                        "state", status, "attempts", task->attempts);
    }
    return out;
}

/* The answer for `task`: the one made from an equal row before, or made
 * now and kept. */
static void reply_result(result_cache *results, const store_task *task, httpd_response *resp)
{
    size_t len = 0;
    const char *kept = result_cache_get(results, task, &len);
    char *body = NULL;
    if (kept) {
        if ((body = malloc(len + 1)))
            memcpy(body, kept, len + 1);
    } else {
        json_t *answer = api_result_json(task);
        body = answer ? json_util_dump(answer) : NULL;
        json_decref(answer);
        if (body) {
            len = strlen(body);
            result_cache_put(results, task, body, len);
        }
    }
    if (!body) {
        problem_reply(resp, 500, "out of memory");
        return;
    }
    httpd_reply_take(resp, 200, "application/json", body, len);
}

int api_find_task(api *a, const char *task_id, store_task *task, const char *what,
                  httpd_response *resp)
{
    char detail[REQUEST_TASK_ID_LEN + 64];
    if (!api_task_id_is_valid(task_id)) {
        problem_reply(resp, 404, "no such task: a task id is 1 to 128 of A-Z a-z 0-9 . _ : -");
        return -1;
    }
    vf_error err;
    vf_error_init(&err);
    int found = store_task_get(a->store, task_id, task, &err);
    if (found < 0) {
        log_error("task %s: %s: store: %s", task_id, what, err.text);
        problem_reply(resp, err.code == VF_EUNAVAILABLE ? 503 : 500,
                      "the store is unavailable; try again");
        return -1;
    }
    if (found == 1) {
        snprintf(detail, sizeof detail, "no task %s", task_id);
        problem_reply(resp, 404, detail);
        return -1;
    }
    return 0;
}

void api_result(api *a, const char *task_id, httpd_response *resp)
{
    vf_error err;
    vf_error_init(&err);
    store_task task = {0};
    if (api_find_task(a, task_id, &task, "GET /result", resp) != 0)
        return;
    if (task.kind && strcmp(task.kind, "spare") == 0) {
        json_t *answer = api_spare_result_json(a->store, &task, &err);
        if (answer) {
            api_reply_json(resp, 200, answer);
        } else {
            log_error("task %s: GET /result: store: %s", task_id, err.text);
            problem_reply(resp, err.code == VF_EUNAVAILABLE ? 503 : 500,
                          "the store is unavailable; try again");
        }
    } else {
        reply_result(a->results, &task, resp);
    }
    store_task_clear(&task);
}

void api_route_result(api *a, const api_call *call, httpd_response *resp)
{
    api_result(a, call->param, resp);
}
