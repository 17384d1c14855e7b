#include "service.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amqp_link.h"
#include "backoff.h"
#include "engine.h"
#include "ids.h"
#include "inventory.h"
#include "log.h"
#include "store.h"
#include "task_handler.h"

#define OUTBOX_SWEEP_INTERVAL_S 10 /* republish unconfirmed events this often */
#define CONFIRM_TIMEOUT_MS 30000
#define OUTBOX_SWEEP_LIMIT 1000

typedef enum { PUB_EVENT, PUB_REPLY, PUB_RETRY, PUB_DEAD } publish_kind;

typedef struct pending_publish {
    uint64_t tag;
    publish_kind kind;
    size_t item; /* index in the batch, or in the sweep's id list */
    int state;   /* 0 waiting, 1 confirmed, -1 failed */
} pending_publish;

typedef struct batch_item {
    amqp_link_delivery delivery;
    task_outcome outcome;
    bool handled;
} batch_item;

typedef struct service {
    const vf_config *config;
    volatile sig_atomic_t *stop;
    amqp_link *link;
    store *store;
    sched_engine *engine;
    inventory *inventory;
    inventory_view view; /* the snapshot the engine decides over */
    pthread_t refresher;
    bool refresher_running;
    pthread_mutex_t refresh_lock;
    pthread_cond_t refresh_wake;
    bool refresher_stop;

    batch_item *items;
    size_t n_items, cap_items;
    pending_publish *pubs;
    size_t n_pubs, cap_pubs;
    char **confirmed; /* event ids confirmed, to mark in the next transaction */
    size_t n_confirmed, cap_confirmed;
    char **sweep_ids; /* event ids being republished by a sweep */
    size_t n_sweep_ids;
    time_t last_sweep;
    char note[VF_ERROR_TEXT + 64];
} service;

static int64_t wall_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static int64_t mono_us(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

static int grow(void **items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t next = *cap ? *cap * 2 : 64;
    while (next < need)
        next *= 2;
    void *grown = realloc(*items, next * size);
    if (!grown)
        return -1;
    *items = grown;
    *cap = next;
    return 0;
}

/* ---- inventory ---- */

static void *refresh_loop(void *arg)
{
    service *svc = arg;
    pthread_mutex_lock(&svc->refresh_lock);
    while (!svc->refresher_stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += svc->config->inventory.refresh_s;
        while (!svc->refresher_stop &&
               pthread_cond_timedwait(&svc->refresh_wake, &svc->refresh_lock, &until) != ETIMEDOUT)
            ;
        if (svc->refresher_stop)
            break;
        pthread_mutex_unlock(&svc->refresh_lock);
        vf_error err;
        vf_error_init(&err);
        (void)inventory_refresh(svc->inventory, &err); /* logs its own failures */
        pthread_mutex_lock(&svc->refresh_lock);
    }
    pthread_mutex_unlock(&svc->refresh_lock);
    return NULL;
}

typedef struct materialised {
    int64_t *vmids;
    size_t n, cap;
} materialised;

static void note_materialised(const sched_reservation *res, void *user)
{
    materialised *m = user;
    if (grow((void **)&m->vmids, &m->cap, m->n + 1, sizeof *m->vmids) == 0)
        m->vmids[m->n++] = res->vmid;
}

/* Switch the engine to the newest snapshot if there is one; collect the
 * reservations whose VMs the inventory now shows. */
static int follow_inventory(service *svc, materialised *gone, vf_error *err)
{
    inventory_view next;
    inventory_acquire(svc->inventory, &next);
    inventory_view_describe(&next, svc->note, sizeof svc->note);
    if (!next.hosts || next.hosts == svc->view.hosts) {
        inventory_release(&next);
        return 0;
    }
    if (sched_engine_set_hosts(svc->engine, next.hosts, note_materialised, gone, err) < 0) {
        inventory_release(&next);
        return -1;
    }
    /* Refreshes happen every few seconds: say so only when the picture changes. */
    if (!svc->view.hosts || svc->view.hosts->n_hosts != next.hosts->n_hosts)
        log_info("inventory: deciding over %zu hosts%s%s", next.hosts->n_hosts,
                 svc->note[0] ? "; " : "", svc->note);
    else
        log_debug("inventory: new snapshot of %zu hosts", next.hosts->n_hosts);
    inventory_release(&svc->view);
    svc->view = next;
    return 0;
}

/* ---- publishing ---- */

static void on_confirm(uint64_t tag, bool ok, const char *reason, void *user)
{
    service *svc = user;
    for (size_t i = 0; i < svc->n_pubs; i++) {
        if (svc->pubs[i].tag != tag)
            continue;
        svc->pubs[i].state = ok ? 1 : -1;
        if (!ok && svc->pubs[i].kind != PUB_REPLY)
            log_warn("publish not confirmed: %s", reason ? reason : "unknown reason");
        return;
    }
}

static int track(service *svc, uint64_t tag, publish_kind kind, size_t item)
{
    if (grow((void **)&svc->pubs, &svc->cap_pubs, svc->n_pubs + 1, sizeof *svc->pubs) < 0)
        return -1;
    svc->pubs[svc->n_pubs++] = (pending_publish){tag, kind, item, 0};
    return 0;
}

static int publish_tracked(service *svc, const char *exchange, const char *key,
                           const amqp_link_message *msg, publish_kind kind, size_t item,
                           vf_error *err)
{
    uint64_t tag = 0;
    if (amqp_link_publish(svc->link, exchange, key, msg, &tag, err) < 0)
        return -1;
    if (track(svc, tag, kind, item) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory tracking a publish");
        return -1;
    }
    return 0;
}

static int remember_confirmed(service *svc, const char *event_id)
{
    if (grow((void **)&svc->confirmed, &svc->cap_confirmed, svc->n_confirmed + 1,
             sizeof *svc->confirmed) < 0)
        return -1;
    char *copy = strdup(event_id);
    if (!copy)
        return -1;
    svc->confirmed[svc->n_confirmed++] = copy;
    return 0;
}

/* Mark confirmed events in the open transaction. A lost mark only means the
 * event is published again, which consumers deduplicate on its id. */
static int flush_confirmed(service *svc, const char *at, vf_error *err)
{
    for (size_t i = 0; i < svc->n_confirmed; i++)
        if (store_outbox_mark_confirmed(svc->store, svc->confirmed[i], at, err) < 0)
            return -1;
    for (size_t i = 0; i < svc->n_confirmed; i++)
        free(svc->confirmed[i]);
    svc->n_confirmed = 0;
    return 0;
}

typedef struct sweep_ctx {
    service *svc;
    vf_error *err;
    int failed;
} sweep_ctx;

static int sweep_one(const store_outbox_event *event, void *arg)
{
    sweep_ctx *ctx = arg;
    service *svc = ctx->svc;
    for (size_t i = 0; i < svc->n_confirmed; i++)
        if (strcmp(svc->confirmed[i], event->id) == 0)
            return 0;
    amqp_link_message msg = {
        .body = event->body, .body_len = strlen(event->body), .message_id = event->id};
    size_t index = svc->n_sweep_ids;
    svc->sweep_ids[index] = strdup(event->id);
    if (!svc->sweep_ids[index])
        return 1;
    svc->n_sweep_ids++;
    if (publish_tracked(svc, AMQP_TOPOLOGY_EXCHANGE, event->routing_key, &msg, PUB_EVENT, index,
                        ctx->err) < 0) {
        ctx->failed = 1;
        return 1;
    }
    return 0;
}

/* Publish every event the outbox still holds unconfirmed (after a crash, a
 * lost connection or a nack) and mark those the broker confirms. */
static int sweep_outbox(service *svc, vf_error *err)
{
    char now[STORE_TIME_SIZE];
    store_now(now);
    svc->last_sweep = time(NULL);
    if (store_begin(svc->store, err) < 0)
        return -1;
    if (flush_confirmed(svc, now, err) < 0 || store_commit(svc->store, err) < 0) {
        vf_error ignored;
        (void)store_rollback(svc->store, &ignored);
        return -1;
    }
    svc->sweep_ids = calloc(OUTBOX_SWEEP_LIMIT, sizeof *svc->sweep_ids);
    if (!svc->sweep_ids) {
        vf_error_set(err, VF_ENOMEM, "out of memory sweeping the outbox");
        return -1;
    }
    svc->n_sweep_ids = 0;
    svc->n_pubs = 0;
    sweep_ctx ctx = {svc, err, 0};
    int rc = store_outbox_pending(svc->store, OUTBOX_SWEEP_LIMIT, sweep_one, &ctx, err);
    if (rc == 0 && !ctx.failed && svc->n_pubs > 0)
        rc = amqp_link_wait_confirms(svc->link, CONFIRM_TIMEOUT_MS, err);
    size_t republished = 0;
    for (size_t i = 0; i < svc->n_pubs; i++)
        if (svc->pubs[i].state == 1 &&
            remember_confirmed(svc, svc->sweep_ids[svc->pubs[i].item]) == 0)
            republished++;
    if (republished)
        log_info("outbox: %zu unconfirmed events published again and confirmed", republished);
    for (size_t i = 0; i < svc->n_sweep_ids; i++)
        free(svc->sweep_ids[i]);
    free(svc->sweep_ids);
    svc->sweep_ids = NULL;
    svc->n_pubs = 0;
    return rc < 0 || ctx.failed ? -1 : 0;
}

/* ---- batches ---- */

static void clear_batch(service *svc)
{
    for (size_t i = 0; i < svc->n_items; i++) {
        amqp_link_delivery_close(&svc->items[i].delivery);
        task_outcome_close(&svc->items[i].outcome);
    }
    svc->n_items = 0;
    svc->n_pubs = 0;
}

/* Take what the broker has sent: wait up to wait_ms for the first message,
 * then only what is already read, up to the prefetch window. */
static int collect(service *svc, int wait_ms, vf_error *err)
{
    size_t limit = (size_t)svc->config->amqp.prefetch;
    while (svc->n_items < limit) {
        if (grow((void **)&svc->items, &svc->cap_items, svc->n_items + 1, sizeof *svc->items) < 0) {
            vf_error_set(err, VF_ENOMEM, "out of memory collecting messages");
            return -1;
        }
        batch_item *item = &svc->items[svc->n_items];
        memset(item, 0, sizeof *item);
        int rc = amqp_link_next(svc->link, &item->delivery, svc->n_items ? 0 : wait_ms, err);
        if (rc < 0)
            return -1;
        if (rc == 0)
            break;
        svc->n_items++;
    }
    return 0;
}

/* Undo the engine's side of a rolled-back batch. */
static void forget_reservations(service *svc)
{
    for (size_t i = 0; i < svc->n_items; i++)
        if (svc->items[i].outcome.reserved)
            sched_engine_release(svc->engine, svc->items[i].outcome.task_id);
}

/* Record the whole batch in one transaction. */
static int record_batch(service *svc, vf_error *err)
{
    materialised gone = {0};
    int rc = follow_inventory(svc, &gone, err);
    if (rc < 0)
        goto out;
    sched_engine_expire(svc->engine, wall_ms() / 1000);

    char now[STORE_TIME_SIZE];
    store_now(now);
    rc = store_begin(svc->store, err);
    if (rc < 0)
        goto out;
    rc = flush_confirmed(svc, now, err);
    for (size_t i = 0; rc == 0 && i < gone.n; i++)
        rc = store_reservation_release_vmid(svc->store, gone.vmids[i], now, err) < 0 ? -1 : 0;
    task_handler handler = {svc->store,      svc->engine, svc->config,
                            svc->view.hosts, svc->note,   wall_ms};
    for (size_t i = 0; rc == 0 && i < svc->n_items; i++) {
        batch_item *item = &svc->items[i];
        const amqp_link_delivery *d = &item->delivery;
        task_message msg = {d->body,      d->body_len,    d->too_large,
                            d->body_size, d->routing_key, d->message_id,
                            d->reply_to,  d->redelivered, d->attempt};
        rc = task_handler_handle(&handler, &msg, &item->outcome, err);
        item->handled = rc == 0;
    }
    if (rc == 0)
        rc = store_commit(svc->store, err);
    if (rc < 0) {
        vf_error ignored;
        vf_error_init(&ignored);
        (void)store_rollback(svc->store, &ignored);
        forget_reservations(svc);
    }
out:
    free(gone.vmids);
    return rc;
}

static int publish_outcomes(service *svc, vf_error *err)
{
    svc->n_pubs = 0;
    for (size_t i = 0; i < svc->n_items; i++) {
        const amqp_link_delivery *d = &svc->items[i].delivery;
        const task_outcome *o = &svc->items[i].outcome;
        if (o->event_body) {
            amqp_link_message msg = {.body = o->event_body,
                                     .body_len = strlen(o->event_body),
                                     .message_id = o->event_id};
            if (publish_tracked(svc, AMQP_TOPOLOGY_EXCHANGE, o->event_key, &msg, PUB_EVENT, i,
                                err) < 0)
                return -1;
        }
        if (o->reply_body && d->reply_to) {
            amqp_link_message msg = {.body = o->reply_body,
                                     .body_len = strlen(o->reply_body),
                                     .message_id = o->task_id,
                                     .correlation_id = d->correlation_id};
            if (publish_tracked(svc, "", d->reply_to, &msg, PUB_REPLY, i, err) < 0)
                return -1;
        }
        if (o->action == TASK_RETRY) {
            char tier[AMQP_TOPOLOGY_NAME_MAX];
            if (amqp_topology_retry_name(o->delay_s, tier, sizeof tier) < 0) {
                vf_error_set(err, VF_EINTERNAL, "no retry tier for %d s", o->delay_s);
                return -1;
            }
            amqp_link_message msg = {.body = d->body,
                                     .body_len = d->body_len,
                                     .content_type = d->content_type,
                                     .message_id = o->task_id,
                                     .correlation_id = d->correlation_id,
                                     .reply_to = d->reply_to,
                                     .attempt = o->next_attempt};
            if (publish_tracked(svc, tier, d->routing_key, &msg, PUB_RETRY, i, err) < 0)
                return -1;
        }
        if (o->action == TASK_DEAD && !d->too_large) {
            amqp_link_message msg = {.body = d->body,
                                     .body_len = d->body_len,
                                     .content_type = d->content_type,
                                     .message_id = d->message_id,
                                     .correlation_id = d->correlation_id,
                                     .reply_to = d->reply_to,
                                     .attempt = d->attempt,
                                     .error = o->error,
                                     .original_key = d->routing_key};
            if (publish_tracked(svc, AMQP_TOPOLOGY_DLX, d->routing_key, &msg, PUB_DEAD, i, err) < 0)
                return -1;
        }
    }
    if (svc->n_pubs == 0)
        return 0;
    return amqp_link_wait_confirms(svc->link, CONFIRM_TIMEOUT_MS, err);
}

/* Ack what is done; hand back what still needs its retry or dead letter. */
static int settle(service *svc, vf_error *err)
{
    uint64_t last_tag = 0;
    bool all_acked = true;
    for (size_t i = 0; i < svc->n_items; i++) {
        batch_item *item = &svc->items[i];
        bool republish_failed = false;
        for (size_t p = 0; p < svc->n_pubs; p++) {
            pending_publish *pub = &svc->pubs[p];
            if (pub->item != i)
                continue;
            if (pub->kind == PUB_EVENT && pub->state == 1 &&
                remember_confirmed(svc, item->outcome.event_id) < 0) {
                vf_error_set(err, VF_ENOMEM, "out of memory");
                return -1;
            }
            if ((pub->kind == PUB_RETRY || pub->kind == PUB_DEAD) && pub->state != 1)
                republish_failed = true;
        }
        const task_outcome *o = &item->outcome;
        if (o->action == TASK_DEAD && item->delivery.too_large) {
            /* The body was never read into memory: let the broker dead-letter it. */
            if (amqp_link_reject(svc->link, item->delivery.delivery_tag, false, err) < 0)
                return -1;
            all_acked = false;
        } else if (republish_failed) {
            if (amqp_link_reject(svc->link, item->delivery.delivery_tag, true, err) < 0)
                return -1;
            all_acked = false;
        } else if (item->delivery.delivery_tag > last_tag) {
            last_tag = item->delivery.delivery_tag;
        }
        if (o->task_id[0])
            log_info("task %s: %s", o->task_id, o->summary);
        else
            log_warn("message %s on %s: %s",
                     item->delivery.message_id ? item->delivery.message_id : "(no id)",
                     item->delivery.routing_key ? item->delivery.routing_key : "?", o->summary);
    }
    if (all_acked && last_tag)
        return amqp_link_ack(svc->link, last_tag, true, err);
    for (size_t i = 0; i < svc->n_items; i++) {
        batch_item *item = &svc->items[i];
        bool handed_back = item->outcome.action == TASK_DEAD && item->delivery.too_large;
        for (size_t p = 0; p < svc->n_pubs && !handed_back; p++)
            if (svc->pubs[p].item == i &&
                (svc->pubs[p].kind == PUB_RETRY || svc->pubs[p].kind == PUB_DEAD) &&
                svc->pubs[p].state != 1)
                handed_back = true;
        if (!handed_back && amqp_link_ack(svc->link, item->delivery.delivery_tag, false, err) < 0)
            return -1;
    }
    return 0;
}

/* ---- lifecycle ---- */

static int load_reservations_cb(const store_reservation *row, void *user)
{
    service *svc = user;
    sched_reservation res;
    memset(&res, 0, sizeof res);
    snprintf(res.task_id, sizeof res.task_id, "%s", row->task_id);
    snprintf(res.node, sizeof res.node, "%s", row->node);
    res.cpu = row->cpu;
    res.memory = row->memory;
    res.disk = row->disk;
    res.vmid = row->vmid > 0 ? (uint32_t)row->vmid : 0;
    if (ids_parse_time(row->expires_at, &res.expires) < 0)
        res.expires = 0;
    vf_error err;
    vf_error_init(&err);
    return sched_engine_reserve(svc->engine, &res, &err) < 0 ? 1 : 0;
}

static int open_parts(service *svc, vf_error *err)
{
    svc->store = store_open(svc->config->store.path, STORE_READ_WRITE, err);
    if (!svc->store)
        return -1;
    sched_params params;
    sched_params_from_config(&params, svc->config);
    svc->engine = sched_engine_new(&params, err);
    if (!svc->engine)
        return -1;
    char now[STORE_TIME_SIZE];
    store_now(now);
    if (store_reservations_live(svc->store, now, load_reservations_cb, svc, err) < 0)
        return -1;
    log_info("store %s: %zu live reservations held", svc->config->store.path,
             sched_engine_reservation_count(svc->engine));
    svc->inventory = inventory_new(svc->config, err);
    if (!svc->inventory)
        return -1;
    vf_error fetch;
    vf_error_init(&fetch);
    if (inventory_refresh(svc->inventory, &fetch) < 0)
        log_warn("inventory: first fetch failed: %s (tasks are retried until it answers)",
                 fetch.text);
    materialised gone = {0};
    int rc = follow_inventory(svc, &gone, err);
    free(gone.vmids);
    if (rc < 0)
        return -1;
    svc->link = amqp_link_new(svc->config, "virtflow-worker", err);
    if (!svc->link)
        return -1;
    amqp_link_set_confirm_callback(svc->link, on_confirm, svc);
    pthread_mutex_init(&svc->refresh_lock, NULL);
    pthread_cond_init(&svc->refresh_wake, NULL);
    if (pthread_create(&svc->refresher, NULL, refresh_loop, svc) != 0) {
        vf_error_set(err, VF_EINTERNAL, "cannot start the inventory refresh thread");
        return -1;
    }
    svc->refresher_running = true;
    return 0;
}

static void close_parts(service *svc)
{
    if (svc->refresher_running) {
        pthread_mutex_lock(&svc->refresh_lock);
        svc->refresher_stop = true;
        pthread_cond_signal(&svc->refresh_wake);
        pthread_mutex_unlock(&svc->refresh_lock);
        pthread_join(svc->refresher, NULL);
        pthread_mutex_destroy(&svc->refresh_lock);
        pthread_cond_destroy(&svc->refresh_wake);
    }
    clear_batch(svc);
    free(svc->items);
    free(svc->pubs);
    for (size_t i = 0; i < svc->n_confirmed; i++)
        free(svc->confirmed[i]);
    free(svc->confirmed);
    amqp_link_free(svc->link);
    inventory_release(&svc->view);
    inventory_free(svc->inventory);
    sched_engine_free(svc->engine);
    store_close(svc->store);
}

/* Sleep for `seconds`, waking early when asked to stop. */
static void pause_for(service *svc, double seconds)
{
    struct timespec step = {0, 100 * 1000 * 1000};
    for (double slept = 0; slept < seconds && !*svc->stop; slept += 0.1)
        nanosleep(&step, NULL);
}

static int connect_link(service *svc, vf_error *err)
{
    if (amqp_link_connect(svc->link, err) < 0)
        return -1;
    if (amqp_link_consume(svc->link, AMQP_TOPOLOGY_SCHEDULE_QUEUE, err) < 0)
        return -1;
    log_info("consuming %s (prefetch %d)", AMQP_TOPOLOGY_SCHEDULE_QUEUE,
             svc->config->amqp.prefetch);
    return sweep_outbox(svc, err);
}

/* One round: collect, record, publish, settle. Returns 0, or -1 with err
 * and `store_failed` telling which side broke. */
static int round_trip(service *svc, int wait_ms, bool *store_failed, vf_error *err)
{
    *store_failed = false;
    if (collect(svc, wait_ms, err) < 0)
        return -1;
    if (svc->n_items == 0) {
        if (time(NULL) - svc->last_sweep >= OUTBOX_SWEEP_INTERVAL_S)
            return sweep_outbox(svc, err);
        return 0;
    }
    int64_t t0 = mono_us();
    if (record_batch(svc, err) < 0) {
        *store_failed = true;
        return -1;
    }
    int64_t t1 = mono_us();
    if (publish_outcomes(svc, err) < 0)
        return -1;
    int64_t t2 = mono_us();
    int rc = settle(svc, err);
    log_debug("batch of %zu: recorded in %.2f ms, published and confirmed in %.2f ms, settled in "
              "%.2f ms",
              svc->n_items, (t1 - t0) / 1e3, (t2 - t1) / 1e3, (mono_us() - t2) / 1e3);
    return rc;
}

int service_run(const vf_config *config, volatile sig_atomic_t *stop)
{
    service svc;
    memset(&svc, 0, sizeof svc);
    svc.config = config;
    svc.stop = stop;
    vf_error err;
    vf_error_init(&err);
    if (open_parts(&svc, &err) < 0) {
        log_error("cannot start: %s", err.text);
        close_parts(&svc);
        return -1;
    }
    backoff retry;
    backoff_init(&retry, 0.5, 30.0);
    while (!*stop) {
        vf_error_init(&err);
        if (!amqp_link_is_connected(svc.link)) {
            if (connect_link(&svc, &err) < 0) {
                double wait = backoff_next(&retry);
                log_warn("broker: %s; trying again in %.1f s", err.text, wait);
                amqp_link_close(svc.link);
                pause_for(&svc, wait);
                continue;
            }
            backoff_reset(&retry);
        }
        bool store_failed = false;
        int rc = round_trip(&svc, 500, &store_failed, &err);
        clear_batch(&svc);
        if (rc == 0)
            continue;
        double wait = backoff_next(&retry);
        if (store_failed)
            log_error("store: %s; nothing in this batch was acked: closing the broker connection "
                      "so the broker keeps the messages, trying again in %.1f s",
                      err.text, wait);
        else
            log_warn("broker: %s; reconnecting in %.1f s", err.text, wait);
        amqp_link_close(svc.link);
        pause_for(&svc, wait);
    }

    /* Graceful stop: no new deliveries; finish what is in hand; flush the outbox. */
    log_info("stopping: finishing the messages in hand");
    if (amqp_link_is_connected(svc.link) && amqp_link_cancel(svc.link, &err) == 0) {
        bool store_failed = false;
        while (amqp_link_is_connected(svc.link)) {
            if (round_trip(&svc, 0, &store_failed, &err) < 0 || svc.n_items == 0) {
                clear_batch(&svc);
                break;
            }
            clear_batch(&svc);
        }
        if (amqp_link_is_connected(svc.link) && sweep_outbox(&svc, &err) == 0) {
            char now[STORE_TIME_SIZE];
            store_now(now);
            vf_error_init(&err);
            if (store_begin(svc.store, &err) == 0 &&
                (flush_confirmed(&svc, now, &err) < 0 || store_commit(svc.store, &err) < 0))
                log_warn("outbox: could not mark confirmed events: %s (they will be published "
                         "again at the next start; consumers deduplicate on id)",
                         err.text);
        }
    }
    close_parts(&svc);
    log_info("stopped");
    return 0;
}
