/* preemption: see preemption.h. */
#include "preemption.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "queue_order.h"
#include "reservations.h"
#include "store_reservations.h"
#include "store_tasks.h"

/* The victim's request as it will be published again: the body it was
 * recorded with, naming its task (the first message may have named it by
 * message_id only). Owned text, or NULL with err. */
static char *request_again(const store_task *task, vf_error *err)
{
    json_error_t jerr;
    json_t *body = task->request ? json_loads(task->request, 0, &jerr) : NULL;
    if (!json_is_object(body)) {
        json_decref(body);
        vf_error_set(err, VF_ECONFLICT, "task %s has no readable request to decide again",
                     task->id);
        return NULL;
    }
    json_object_set_new(body, "task_id", json_string(task->id));
    char *text = json_util_dump(body);
    json_decref(body);
    if (!text)
        vf_error_set(err, VF_ENOMEM, "out of memory preempting task %s", task->id);
    return text;
}

static int take_one(const task_attempt *a, const sched_victim *v, const char *node,
                    int32_t priority, json_t *taken, vf_error *err)
{
    task_handler *h = a->h;
    const char *by = a->out->task_id;
    int ended = store_reservation_preempt(h->store, v->task_id, node, priority, a->now, err);
    if (ended < 0)
        return -1;
    if (ended == 0) {
        /* The engine held it and the store has it no more (bound, released,
         * expired): the picture is stale. */
        vf_error_set(err, VF_ECONFLICT,
                     "the reservation of task %s on %s changed meanwhile: not preempted",
                     v->task_id, node);
        return -1;
    }
    sched_engine_release(h->engine, v->task_id);
    store_task task;
    memset(&task, 0, sizeof task);
    int rc = -1;
    int found = store_task_get(h->store, v->task_id, &task, err);
    if (found < 0)
        goto out;
    if (found == 1 || strcmp(task.kind, "schedule") != 0 || strcmp(task.status, "completed") != 0) {
        vf_error_set(err, VF_ECONFLICT, "task %s is %s, not a completed placement: not preempted",
                     v->task_id, found == 1 ? "unknown" : task.status);
        goto out;
    }
    char *request = request_again(&task, err);
    if (!request)
        goto out;
    char error[REQUEST_TASK_ID_LEN + 64];
    snprintf(error, sizeof error, "preempted by %s", by);
    store_task_fields fields = {.id = task.id,
                                .status = "retrying",
                                .attempts = task.attempts > 0 ? task.attempts - 1 : 0,
                                .error = error,
                                .vmid = -1,
                                .at = a->now,
                                .check_attempts = true,
                                .expected_attempts = task.attempts};
    int updated = store_task_update(h->store, &fields, err);
    if (updated != 0) {
        free(request);
        if (updated == 1)
            vf_error_set(err, VF_ECONFLICT, "task %s was recorded by another worker meanwhile",
                         task.id);
        goto out;
    }
    json_t *history = json_pack("{s:s, s:s, s:i, s:i, s:i, s:s?}", "preempted_by", by, "node", node,
                                "vmid", (json_int_t)v->vmid, "priority", (json_int_t)v->priority,
                                "preempted_by_priority", (json_int_t)priority, "worker", h->worker);
    char *history_text = history ? json_util_dump(history) : NULL;
    json_decref(history);
    if (store_task_event_add(h->store, task.id, a->now, "preempted", history_text, err) < 0) {
        free(history_text);
        free(request);
        goto out;
    }
    free(history_text);
    json_t *data =
        json_pack("{s:s, s:s, s:s, s:s, s:i, s:i}", "task_id", task.id, "status", "retrying",
                  "preempted_by", by, "node", node, "priority", (json_int_t)v->priority,
                  "preempted_by_priority", (json_int_t)priority);
    if (data && v->vmid)
        json_object_set_new(data, "vmid", json_integer(v->vmid));
    if (task_attempt_event_more(a, EVENT_TASK_PREEMPTED, data, err) < 0) {
        free(request);
        goto out;
    }
    const char *key = queue_order_routing_key(v->priority, h->config);
    if (task_attempt_outbox(a, NULL, key, request, err) < 0)
        goto out;
    json_array_append_new(taken, json_pack("{s:s, s:i, s:i}", "task_id", task.id, "priority",
                                           (json_int_t)v->priority, "vmid", (json_int_t)v->vmid));
    rc = 0;
out:
    store_task_clear(&task);
    return rc;
}

int preemption_take(const task_attempt *a, const sched_preemption *p, int32_t priority,
                    json_t *taken, vf_error *err)
{
    /* From the first change on, the engine lacks holds the store keeps
     * until the commit: a rollback reloads the whole picture. */
    a->out->released = true;
    for (size_t i = 0; i < p->n_victims; i++)
        if (take_one(a, &p->victims[i], p->node->name, priority, taken, err) < 0)
            return -1;
    return 0;
}
