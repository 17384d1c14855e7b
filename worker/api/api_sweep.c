/* api_sweep: republish the `queued` tasks their client never published. */
#include "api_sweep.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp_link.h"
#include "broker_names.h"
#include "clock.h"
#include "events.h"
#include "json_util.h"
#include "leases.h"
#include "log.h"
#include "job.h"
#include "store.h"
#include "store_config.h"
#include "store_hosts.h"
#include "store_outbox.h"
#include "store_tasks.h"
#include "queue_order.h"

#define SWEEP_LEASE "api-requeue"
#define SWEEP_BATCH 100
#define SWEEP_CONFIRM_TIMEOUT_MS 5000
#define LOST_ERROR "lost before reaching a worker"

struct api_sweep {
    const vf_config *config;
    store *store;
    amqp_link *link;
    api_broker *broker; /* borrowed: the schedule `link` connects by */
    char owner[STORE_OWNER_SIZE];
    job job;
    amqp_link_confirm confirm; /* of the last publish */
    int64_t link_used_us;      /* monotonic: the link's last connect or confirmed round trip */
};

/* A stale row as read, copied out of the listing. */
typedef struct stale_task {
    char *id, *request, *updated_at;
    bool spare; /* kind spare: spare.prepare or spare.release (spare_routing_key) */
} stale_task;

typedef struct stale_list {
    stale_task items[SWEEP_BATCH];
    int n;
} stale_list;

static int collect(const store_task *task, void *ctx)
{
    stale_list *list = ctx;
    if (list->n >= SWEEP_BATCH || !task->request)
        return 0;
    stale_task *t = &list->items[list->n];
    t->id = strdup(task->id);
    t->request = strdup(task->request);
    t->updated_at = strdup(task->updated_at);
    t->spare = task->kind && strcmp(task->kind, "spare") == 0;
    list->n++;
    if (!t->id || !t->request || !t->updated_at)
        return -1;
    return 0;
}

static void stale_list_clear(stale_list *list)
{
    for (int i = 0; i < list->n; i++) {
        free(list->items[i].id);
        free(list->items[i].request);
        free(list->items[i].updated_at);
    }
    list->n = 0;
}

/* Republishes made: `requeued` lines less the `requeue_failed` ones that
 * followed a publish the broker did not confirm. */
static int count_requeued(const store_task_event *event, void *ctx)
{
    if (strcmp(event->status, "requeued") == 0)
        (*(int *)ctx)++;
    else if (strcmp(event->status, "requeue_failed") == 0)
        (*(int *)ctx)--;
    return 0;
}

/* Publish `body` on `routing_key` with a confirm. 0 confirmed, -1 with err. */
static int publish(api_sweep *w, const char *routing_key, const char *message_id, const char *body,
                   vf_error *err)
{
    /* A sweep may publish nothing for a long time (amqp_link_ready). */
    if (api_broker_ready(w->broker, w->link, &w->link_used_us, err) < 0)
        return -1;
    amqp_link_message msg = {.body = body, .body_len = strlen(body), .message_id = message_id};
    amqp_link_confirm_reset(&w->confirm);
    if (amqp_link_publish(w->link, BROKER_EXCHANGE, routing_key, &msg, NULL, err) < 0 ||
        amqp_link_wait_confirms(w->link, SWEEP_CONFIRM_TIMEOUT_MS, err) < 0) {
        amqp_link_close(w->link); /* the next round starts afresh */
        return -1;
    }
    w->link_used_us = clock_mono_us();
    if (!w->confirm.done || !w->confirm.ok) {
        vf_error_set(err, VF_EUNAVAILABLE, "the broker did not accept the message");
        return -1;
    }
    return 0;
}

/* The task.failed event of a task given up, as a worker's: written to the
 * outbox with the row's change; published after the commit, and from the
 * outbox by a worker (its outbox sweep) if that publish fails. */
typedef struct lost_event {
    char id[IDS_LEN];
    char key[64];
    char *body;
} lost_event;

/* Where a stored spare request goes: a spare.release body has only
 * upgrade_id, a spare.prepare one always has count. */
static const char *spare_routing_key(const char *request)
{
    json_t *body = json_loads(request, 0, NULL);
    bool prepare = json_object_get(body, "count") != NULL;
    json_decref(body);
    return prepare ? BROKER_KEY_SPARE_PREPARE : BROKER_KEY_SPARE_RELEASE;
}

/* A spare task's upgrade_id, as spare.failed names it; NULL when its
 * request has none (then task.failed is published, as the worker does). */
static json_t *spare_upgrade_id(const stale_task *t)
{
    if (!t->spare)
        return NULL;
    json_t *body = json_loads(t->request, 0, NULL);
    json_t *id = json_object_get(body, "upgrade_id");
    json_t *copy = json_is_string(id) ? json_copy(id) : NULL;
    json_decref(body);
    return copy;
}

static int lost_event_add(api_sweep *w, const stale_task *t, const char *now, lost_event *ev,
                          vf_error *err)
{
    json_t *data = json_pack("{s:s, s:s, s:s, s:s, s:i}", "task_id", t->id, "status", "failed",
                             "reason", "lost", "error", LOST_ERROR, "attempts", 0);
    json_t *upgrade_id = spare_upgrade_id(t);
    if (data && upgrade_id)
        json_object_set(data, "upgrade_id", upgrade_id);
    event_type type = upgrade_id ? EVENT_SPARE_FAILED : EVENT_TASK_FAILED;
    json_decref(upgrade_id);
    ev->body = data ? events_build(type, data, clock_wall_ms() / 1000, ev->id, ev->key) : NULL;
    if (!ev->body) {
        vf_error_set(err, VF_ENOMEM, "out of memory building %s", event_types_name(type));
        return -1;
    }
    return store_outbox_add(w->store, ev->id, ev->key, ev->body, now, err);
}

/* In one transaction: the row's change (requeue: updated_at; give up:
 * failed) and its history line, only while the row is as read. Returns 0
 * recorded, 1 the row moved on (a worker took it: nothing recorded), -1. */
static int record(api_sweep *w, const stale_task *t, int requeues, bool give_up, lost_event *ev,
                  vf_error *err)
{
    char now[STORE_TIME_SIZE];
    store_now(now);
    json_t *detail = give_up ? json_pack("{s:s, s:s, s:i}", "reason", "lost", "error", LOST_ERROR,
                                         "requeues", requeues)
                             : json_pack("{s:s, s:i}", "via", "virtflow-api", "requeue", requeues);
    char *detail_text = detail ? json_util_dump(detail) : NULL;
    json_decref(detail);
    if (!detail_text) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    int rc = store_begin(w->store, err);
    if (rc == 0)
        rc = give_up
                 ? store_task_give_up(w->store, t->id, t->updated_at, now, "lost", LOST_ERROR, err)
                 : store_task_requeue_touch(w->store, t->id, t->updated_at, now, err);
    if (rc == 0)
        rc = store_task_event_add(w->store, t->id, now, give_up ? "failed" : "requeued",
                                  detail_text, err);
    if (rc == 0 && give_up)
        rc = lost_event_add(w, t, now, ev, err);
    free(detail_text);
    if (rc == 0 && store_commit(w->store, err) < 0)
        rc = -1;
    if (rc != 0)
        (void)store_rollback(w->store, NULL); /* also a transaction that found the row moved on */
    return rc;
}

/* Publish a committed task.failed and mark it confirmed; a failure is left
 * to the workers' outbox sweep. */
static void publish_lost_event(api_sweep *w, const lost_event *ev)
{
    vf_error err;
    vf_error_init(&err);
    char now[STORE_TIME_SIZE];
    if (publish(w, ev->key, ev->id, ev->body, &err) < 0) {
        log_info("event %s: %s (a worker's outbox sweep publishes it)", ev->id, err.text);
        return;
    }
    store_now(now);
    if (store_outbox_mark_confirmed(w->store, ev->id, now, &err) < 0)
        log_warn("event %s: published, but not marked so: %s (it may go out twice)", ev->id,
                 err.text);
}

/* A `requeue_failed` line after a publish the broker did not confirm. */
static int record_publish_failure(api_sweep *w, const stale_task *t, const char *why)
{
    char now[STORE_TIME_SIZE];
    store_now(now);
    json_t *detail = json_pack("{s:s}", "error", why);
    char *detail_text = detail ? json_util_dump(detail) : NULL;
    json_decref(detail);
    vf_error err;
    vf_error_init(&err);
    int rc = detail_text ? store_begin(w->store, &err) : -1;
    if (rc == 0)
        rc = store_task_event_add(w->store, t->id, now, "requeue_failed", detail_text, &err);
    if (rc == 0)
        rc = store_commit(w->store, &err);
    if (rc < 0 && detail_text)
        (void)store_rollback(w->store, NULL);
    free(detail_text);
    if (rc < 0)
        log_warn("task %s: cannot record the failed republish: %s", t->id, err.text);
    return rc;
}

int api_sweep_round(api_sweep *w, vf_error *err)
{
    int64_t epoch = 0;
    int held = lease_hold(w->store, SWEEP_LEASE, w->owner, &epoch, err);
    if (held <= 0)
        return held;
    char before[STORE_TIME_SIZE];
    if (store_format_time(clock_wall_ms() - (int64_t)w->config->api.requeue_after_s * 1000,
                          before) < 0)
        return 0;
    stale_list list = {.n = 0};
    if (store_tasks_stale_queued(w->store, before, SWEEP_BATCH, collect, &list, err) < 0) {
        stale_list_clear(&list);
        return -1;
    }
    int done = 0, rc = 0;
    for (int i = 0; i < list.n && rc >= 0; i++) {
        const stale_task *t = &list.items[i];
        int requeues = 0;
        if ((rc = store_task_events(w->store, t->id, count_requeued, &requeues, err)) < 0)
            break;
        if ((rc = lease_still_held(w->store, SWEEP_LEASE, w->owner, epoch, err)) <= 0)
            break;
        bool give_up = requeues >= w->config->api.requeue_max;
        /* The line first, then the publish: a worker may take the copy at
         * once, and the history then reads queued, requeued, processing. */
        lost_event ev = {.body = NULL};
        rc = record(w, t, give_up ? requeues : requeues + 1, give_up, &ev, err);
        if (rc == 0 && give_up) {
            log_warn("task %s: still queued after %d republishes: failed (lost before reaching "
                     "a worker)",
                     t->id, requeues);
            publish_lost_event(w, &ev);
            done++;
        }
        free(ev.body);
        if (rc < 0)
            break;
        if (rc == 1 || give_up) {
            rc = 0; /* rc 1: a worker took it meanwhile */
            continue;
        }
        vf_error publish_err;
        vf_error_init(&publish_err);
        const char *key =
            t->spare ? spare_routing_key(t->request)
                     : queue_order_text_routing_key(t->request, t->request ? strlen(t->request) : 0,
                                                    w->config);
        if (publish(w, key, t->id, t->request, &publish_err) < 0) {
            /* Not counted: the broker never had it. The next round (after
             * api.requeue_after_s) tries again. */
            (void)record_publish_failure(w, t, publish_err.text);
            vf_error_set(err, VF_EUNAVAILABLE, "task %s: %s", t->id, publish_err.text);
            rc = -1;
            break;
        }
        log_info("task %s: queued since %s and never taken: published again (%d of %d)", t->id,
                 t->updated_at, requeues + 1, w->config->api.requeue_max);
        done++;
    }
    stale_list_clear(&list);
    return rc < 0 ? -1 : done;
}

static void sweep_loop(job *j, void *ctx)
{
    api_sweep *w = ctx;
    /* Half the requeue age, within [0.25 s, 5 s]: the lease (LEASE_TTL_S)
     * stays renewed and a row is looked at soon after it is due. */
    int64_t interval_ms = (int64_t)w->config->api.requeue_after_s * 500;
    interval_ms = interval_ms < 250 ? 250 : interval_ms > 5000 ? 5000 : interval_ms;
    while (!job_sleep(j, interval_ms)) {
        vf_error err;
        vf_error_init(&err);
        if (api_sweep_round(w, &err) < 0)
            log_warn("requeue sweep: %s (tried again in the next round)", err.text);
    }
}

static void sweep_free(api_sweep *w)
{
    job_stop(&w->job);
    amqp_link_free(w->link);
    store_close(w->store);
    free(w);
}

api_sweep *api_sweep_start(const vf_config *config, api_broker *broker, vf_error *err)
{
    if (config->api.requeue_after_s <= 0)
        return NULL;
    api_sweep *w = calloc(1, sizeof *w);
    if (!w) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    w->config = config;
    w->broker = broker;
    store_owner_name(w->owner);
    if (!(w->store = store_config_open(config, STORE_READ_WRITE, err)) ||
        !(w->link = amqp_link_new(config, "virtflow-api-requeue", err))) {
        sweep_free(w);
        return NULL;
    }
    amqp_link_set_confirm_callback(w->link, amqp_link_confirm_record, &w->confirm);
    if (job_run(&w->job, "requeue sweep", sweep_loop, w, err) < 0) {
        sweep_free(w);
        return NULL;
    }
    return w;
}

void api_sweep_stop(api_sweep *w)
{
    if (!w)
        return;
    sweep_free(w); /* the thread stopped first; the lease lapses within LEASE_TTL_S */
}
