/* preemption: see preemption.h. */
#include "preemption.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
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

/* The victim's reservation ended, and what it leaves: its vmid held alone
 * until it would have expired, in the store and in the engine. */
static int end_reservation(const task_attempt *a, const sched_victim *v, const char *node,
                           int32_t priority, const char *placed_before, vf_error *err)
{
    task_handler *h = a->h;
    int ended =
        store_reservation_preempt(h->store, v->task_id, node, priority, placed_before, a->now, err);
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
    if (v->vmid && v->expires) {
        char expires[STORE_TIME_SIZE];
        if (store_format_time(v->expires * 1000, expires) < 0 ||
            store_reservation_keep_vmid(h->store, v->task_id, node, v->vmid, a->now, expires, err) <
                0)
            return -1;
    }
    return sched_preempt_end_victim(h->engine, v, node, err);
}

/* The victim's client, on the channel it asked on: told that the placement
 * it was answered is withdrawn, and that its task is decided again (the
 * answer of that decision comes to the same reply_to). */
static int tell_client(const task_attempt *a, const store_task *task, const sched_victim *v,
                       const char *node, int32_t priority, vf_error *err)
{
    if (!task->reply_to)
        return 0;
    task_outcome *out = a->out;
    json_t *body =
        json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:s}", "task_id", task->id, "status", "preempted",
                  "preempted_by", out->task_id, "node", node, "priority", (json_int_t)v->priority,
                  "preempted_by_priority", (json_int_t)priority, "next", "retrying");
    if (body && v->vmid)
        json_object_set_new(body, "vmid", json_integer(v->vmid));
    char *text = body ? json_util_dump(body) : NULL;
    json_decref(body);
    if (!text || grow_array((void **)&out->replies, &out->cap_replies, out->n_replies + 1,
                            sizeof *out->replies) < 0) {
        free(text);
        vf_error_set(err, VF_ENOMEM, "out of memory telling task %s's client", task->id);
        return -1;
    }
    outcome_reply *r = &out->replies[out->n_replies];
    r->to = strdup(task->reply_to);
    r->correlation_id = task->correlation_id ? strdup(task->correlation_id) : NULL;
    r->body = text;
    if (!r->to || (task->correlation_id && !r->correlation_id)) {
        free(r->to);
        free(r->correlation_id);
        free(text);
        vf_error_set(err, VF_ENOMEM, "out of memory telling task %s's client", task->id);
        return -1;
    }
    out->n_replies++;
    return 0;
}

static int take_one(const task_attempt *a, const sched_victim *v, const store_task *task,
                    const char *node, int32_t priority, const char *placed_before, json_t *taken,
                    vf_error *err)
{
    task_handler *h = a->h;
    const char *by = a->out->task_id;
    if (end_reservation(a, v, node, priority, placed_before, err) < 0)
        return -1;
    char *request = request_again(task, err);
    if (!request)
        return -1;
    char error[REQUEST_TASK_ID_LEN + 64];
    snprintf(error, sizeof error, "preempted by %s", by);
    store_task_fields fields = {.id = task->id,
                                .status = "retrying",
                                .attempts = task->attempts > 0 ? task->attempts - 1 : 0,
                                .error = error,
                                .vmid = -1,
                                .at = a->now,
                                .check_attempts = true,
                                .expected_attempts = task->attempts};
    int updated = store_task_update(h->store, &fields, err);
    if (updated != 0) {
        free(request);
        if (updated == 1)
            vf_error_set(err, VF_ECONFLICT, "task %s was recorded by another worker meanwhile",
                         task->id);
        return -1;
    }
    json_t *history = json_pack("{s:s, s:s, s:i, s:i, s:i, s:s?}", "preempted_by", by, "node", node,
                                "vmid", (json_int_t)v->vmid, "priority", (json_int_t)v->priority,
                                "preempted_by_priority", (json_int_t)priority, "worker", h->worker);
    char *history_text = history ? json_util_dump(history) : NULL;
    json_decref(history);
    int rc = store_task_event_add(h->store, task->id, a->now, "preempted", history_text, err);
    free(history_text);
    json_t *data =
        json_pack("{s:s, s:s, s:s, s:s, s:i, s:i}", "task_id", task->id, "status", "retrying",
                  "preempted_by", by, "node", node, "priority", (json_int_t)v->priority,
                  "preempted_by_priority", (json_int_t)priority);
    if (data && v->vmid)
        json_object_set_new(data, "vmid", json_integer(v->vmid));
    if (rc == 0)
        rc = task_attempt_event_more(a, EVENT_TASK_PREEMPTED, data, err);
    else
        json_decref(data);
    if (rc == 0)
        rc = tell_client(a, task, v, node, priority, err);
    const char *key = queue_order_routing_key(v->priority, h->config);
    if (rc == 0) {
        rc = task_attempt_outbox(a, NULL, key, request, err);
        request = NULL;
    }
    free(request);
    if (rc == 0)
        json_array_append_new(taken,
                              json_pack("{s:s, s:i, s:i}", "task_id", task->id, "priority",
                                        (json_int_t)v->priority, "vmid", (json_int_t)v->vmid));
    return rc;
}

int preemption_take(const task_attempt *a, const sched_preemption *p, int32_t priority,
                    const char *placed_before, json_t *taken, vf_error *err)
{
    task_handler *h = a->h;
    store_task *tasks = calloc(p->n_victims ? p->n_victims : 1, sizeof *tasks);
    if (!tasks) {
        vf_error_set(err, VF_ENOMEM, "out of memory preempting for task %s", a->out->task_id);
        return -1;
    }
    /* Every victim read first: one that was never answered (its task is
     * not a completed placement: a claim whose batch never committed) is
     * not taken; nothing is written and the caller chooses again. */
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < p->n_victims; i++) {
        int found = store_task_get(h->store, p->victims[i].task_id, &tasks[i], err);
        if (found < 0) {
            rc = -1;
        } else if (found == 1 || strcmp(tasks[i].kind, "schedule") != 0 ||
                   strcmp(tasks[i].status, "completed") != 0) {
            sched_engine_unpreemptible(h->engine, p->victims[i].task_id);
            rc = PREEMPTION_UNANSWERED;
        }
    }
    if (rc == 0) {
        /* From the first change on, the engine lacks holds the store keeps
         * until the commit: a rollback reloads the whole picture. */
        a->out->released = true;
        for (size_t i = 0; rc == 0 && i < p->n_victims; i++)
            rc = take_one(a, &p->victims[i], &tasks[i], p->node->name, priority, placed_before,
                          taken, err);
    }
    for (size_t i = 0; i < p->n_victims; i++)
        store_task_clear(&tasks[i]);
    free(tasks);
    return rc;
}
