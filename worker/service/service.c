/* service: virtflow-worker's round (take a batch, record it in one
 * transaction, sync, ack and publish) and the service's life: opening its
 * parts, store outages, shutdown. The publisher, the inventory follower and
 * the checkpointer are beside it (service_internal.h). */
#include "service.h"
#include "service_internal.h"

#include "queue_order.h"
#include "store_dead_letters.h"

/* ---- batches ---- */

static void clear_batch(batch *b)
{
    for (size_t i = 0; i < b->n_items; i++) {
        amqp_link_delivery_close(&b->items[i].delivery);
        task_outcome_close(&b->items[i].outcome);
        json_decref(b->items[i].parsed);
        b->items[i].parsed = NULL;
        b->items[i].read = false;
    }
    b->n_items = 0;
}

/* After a failed round: nothing in hand is acked; the broker delivers it
 * again once the connection is rebuilt (a committed task is then recognised
 * and not scheduled twice). */
static void drop_batches(service *svc)
{
    clear_batch(&svc->batches[0]);
    clear_batch(&svc->batches[1]);
    svc->syncing = NULL;
}

/* Take what the broker has sent: wait up to wait_ms for the first message,
 * then only what is already read, up to two prefetch windows: the normal
 * queue's and the priority lane's (each consumer has its own), so a lane
 * message already read is never left behind a full window of the normal
 * queue's, and order_batch then puts it first. Taken in delivery order, so
 * acking the highest tag with multiple still covers only what is held. */
static int collect(service *svc, batch *b, int wait_ms, vf_error *err)
{
    size_t limit = 2 * (size_t)svc->config->amqp.prefetch;
    while (b->n_items < limit) {
        if (grow_array((void **)&b->items, &b->cap_items, b->n_items + 1, sizeof *b->items) < 0) {
            vf_error_set(err, VF_ENOMEM, "out of memory collecting messages");
            return -1;
        }
        batch_item *item = &b->items[b->n_items];
        memset(item, 0, sizeof *item);
        int rc = amqp_link_next(svc->link, &item->delivery, b->n_items ? 0 : wait_ms, err);
        if (rc < 0)
            return -1;
        if (rc == 0)
            break;
        b->n_items++;
    }
    return 0;
}

/* Undo the engine's side of a rolled-back batch (the book then takes the
 * store's whole picture again: a release undone left the engine without
 * holds the store still has). */
static void forget_reservations(service *svc, const batch *b)
{
    for (size_t i = 0; i < b->n_items; i++)
        if (b->items[i].outcome.reserved)
            sched_engine_release(svc->engine, b->items[i].outcome.task_id);
}

/* Follow the inventory (service_follower.h): every round, busy or idle, so
 * a hold ends within a refresh of the VM appearing. */
static int sync_inventory(service *svc, vf_error *err)
{
    bool room_changed = false;
    int record_every_s = reload_current(&svc->reload)->inventory.record_every_s;
    service_follower_record_decided(svc->follower,
                                    reload_current(&svc->reload)->inventory.record_decided);
    int rc = service_follower_sync(svc->follower, record_every_s, &room_changed, err);
    if (room_changed)
        service_recheck_room_changed(svc->rechecks); /* a new snapshot, or holds ended */
    return rc;
}

/* How often a worker counts the others on its store (their presence leases):
 * alone it takes the lowest free vmid, beside others its own class first
 * (scheduler.vmid_stride). */
#define PEERS_CHECK_INTERVAL_S 1

/* Hold the lease of a vmid class no other live worker holds, and decide in
 * it: renewed every LEASE_RENEW_S; taken again when the stride changed or
 * another worker took it (this one was paused past the lease). Without one
 * (a store error, every class held) the class stays as it was: both are
 * safe, only more claims would miss. */
static void keep_vmid_slot(service *svc, int64_t now)
{
    uint32_t stride = sched_engine_vmid_stride(svc->engine);
    if (svc->slot_held && svc->slot_stride == stride &&
        now - svc->slot_checked_at_ms < (int64_t)LEASE_RENEW_S * 1000)
        return;
    svc->slot_checked_at_ms = now;
    vf_error err;
    vf_error_init(&err);
    if (svc->slot_held && svc->slot_stride == stride) {
        int held = lease_keep_slot(svc->store, svc->owner, stride, svc->slot, &err);
        if (held != 0) {
            if (held < 0)
                log_debug("store: renewing the vmid class: %s", err.text);
            return;
        }
        log_warn("vmid class %u of %u: another worker holds it now; taking another", svc->slot,
                 stride);
    } else if (svc->slot_held) {
        lease_give_slot(svc->store, svc->owner, svc->slot_stride, svc->slot);
    }
    svc->slot_held = false;
    uint32_t slot = 0;
    int took = lease_take_slot(svc->store, svc->owner, stride, sched_engine_vmid_slot(svc->engine),
                               &slot, &err);
    if (took < 0) {
        log_debug("store: taking a vmid class: %s", err.text);
        return;
    }
    if (took == 0) {
        log_warn("vmid classes: all %u are held by live workers; this one shares one", stride);
        return;
    }
    svc->slot_held = true;
    svc->slot_stride = stride;
    svc->slot = slot;
    sched_engine_set_vmid_slot(svc->engine, slot);
    log_info("vmid class %u of %u (while other workers are alive, vmids %% %u == %u first)", slot,
             stride, stride, slot);
}

/* Count the other live workers and tell the engine. A store error here is
 * no reason to stop: the setting stays as it was (both are safe; the store's
 * unique index keeps every vmid to one reservation), and the next check, or
 * the batch, meets the outage. */
static void follow_peers(service *svc)
{
    if (!sched_engine_vmid_spreads(svc->engine))
        return;
    int64_t now = clock_mono_ms();
    keep_vmid_slot(svc, now);
    if (svc->peers_checked_at_ms &&
        now - svc->peers_checked_at_ms < (int64_t)PEERS_CHECK_INTERVAL_S * 1000)
        return;
    svc->peers_checked_at_ms = now;
    int others = 0;
    vf_error err;
    vf_error_init(&err);
    if (lease_others_alive(svc->store, svc->owner, &others, &err) < 0) {
        log_debug("store: counting the other workers: %s", err.text);
        return;
    }
    sched_engine_set_vmid_spread(svc->engine, others > 0);
}

static void release_in_engine(const char *task_id, void *user)
{
    sched_engine_release(user, task_id);
}

static round_status finish_syncing(service *svc, vf_error *err);

/* The batch before is acked as soon as its sync is done, even while this
 * one is being decided: the broker then refills the prefetch window while
 * we work instead of after. Checked every this many messages. */
#define EARLY_FINISH_EVERY 8

static void finish_syncing_early(service *svc)
{
    if (!svc->syncing || svc->early_status != ROUND_OK ||
        !wal_sync_done(svc->sync, svc->syncing->sync_ticket))
        return;
    vf_error_init(&svc->early_err);
    svc->early_status = finish_syncing(svc, &svc->early_err);
}

/* A batch whose commit failed for a conflict (another worker recorded one
 * of its tasks first; a placement claimed with the commit, all or none, no
 * longer fitted) is decided again this many times at most; then it fails
 * like a store error (nothing acked, the broker delivers it again). A
 * placement whose claim misses is not such a conflict: it alone is decided
 * again, in the same transaction (settle_claims). */
#define MAX_DECISION_PASSES 3

/* How many rounds of claims one batch makes at most: each round decides
 * again only the placements whose claims missed in the one before, over
 * the store's picture of their hosts. Past this the batch fails as a
 * conflict. */
#define MAX_CLAIM_ROUNDS 8

static task_message message_of(const batch_item *item)
{
    const amqp_link_delivery *d = &item->delivery;
    return (task_message){d->body,          d->body_len,   d->too_large, d->body_size,
                          d->routing_key,   d->message_id, d->reply_to,  d->redelivered,
                          d->attempt,       d->user_id,    d->recheck,   item->parsed,
                          d->correlation_id};
}

/* Read the batch's tasks in one statement (PostgreSQL: one round trip for
 * the batch instead of one per message); each body is read once, here, and
 * handed to its handler. */
static int prefetch_tasks(service *svc, batch *b, vf_error *err)
{
    const char **ids = malloc((b->n_items ? b->n_items : 1) * sizeof *ids);
    if (!ids) {
        vf_error_set(err, VF_ENOMEM, "out of memory reading a batch's tasks");
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < b->n_items; i++) {
        batch_item *item = &b->items[i];
        if (!item->read) {
            task_message msg = message_of(item);
            item->parsed = task_attempt_read(&msg, item->task_id);
            item->read = true;
        }
        if (item->parsed)
            ids[n++] = item->task_id;
    }
    int rc = store_tasks_prefetch(svc->store, ids, n, err);
    free(ids);
    return rc;
}

/* A held message's priority (queue_order.h); 0 for what is not a readable
 * task.schedule body, or whose priority is invalid (its handler says so). */
static int32_t item_priority(const service *svc, const batch_item *item)
{
    if (!item->parsed || !handler_for(item->delivery.routing_key)->ordered_by_priority)
        return 0;
    return queue_order_body_priority(item->parsed, svc->config);
}

/* QueueSort: decide what the worker holds (up to amqp.prefetch messages)
 * higher priority first, in delivery order among equals. Acks name the
 * highest tag, so the order the items are decided in does not matter to
 * them. Only reorders; leaves the batch as it was when out of memory. */
static void order_batch(service *svc, batch *b)
{
    size_t n = b->n_items;
    if (n < 2)
        return;
    int32_t *priority = malloc(n * sizeof *priority);
    size_t *order = malloc(n * sizeof *order);
    batch_item *moved = NULL;
    if (!priority || !order)
        goto out;
    bool same = true;
    for (size_t i = 0; i < n; i++) {
        priority[i] = item_priority(svc, &b->items[i]);
        same = same && priority[i] == priority[0];
    }
    if (same)
        goto out;
    queue_order_sort(priority, n, order);
    if (!(moved = malloc(n * sizeof *moved)))
        goto out;
    for (size_t i = 0; i < n; i++)
        moved[i] = b->items[order[i]];
    memcpy(b->items, moved, n * sizeof *moved);
out:
    free(moved);
    free(order);
    free(priority);
}

/* Every message of the batch this pass parks, recorded in the pass's own
 * transaction (GET /v1/dead-letters reads them there, never the queue). A
 * park whose publish is not confirmed comes back and is recorded again: the
 * same row. */
static int record_dead_letters(service *svc, const batch *b, const char *now, vf_error *err)
{
    for (size_t i = 0; i < b->n_items; i++) {
        const amqp_link_delivery *d = &b->items[i].delivery;
        const task_outcome *o = &b->items[i].outcome;
        if (o->action != TASK_DEAD)
            continue;
        store_dead_letter_park park = {
            .routing_key = d->routing_key,
            .message_id = d->message_id,
            .task_id = o->task_id,
            .reason = o->error ? o->error : "larger than amqp.max_message_bytes",
            .parked_by = "worker",
            .parked_at = now,
            .body = d->body,
            .body_len = d->body_len,
            .body_bytes = d->body_size,
        };
        if (store_dead_letter_record(svc->store, &park, err) < 0)
            return -1;
    }
    return 0;
}

/* Decide and record item `i` of the batch in the open transaction. */
static int handle_item(service *svc, task_handler *handler, batch_item *item, vf_error *err)
{
    const amqp_link_delivery *d = &item->delivery;
    task_message msg = message_of(item);
    /* Its rows kept for the commit are its own, should its claim miss. */
    store_tag_writes(svc->store, item->read && item->parsed ? item->task_id : NULL);
    int rc = handler_for(d->routing_key)->handle(handler, &msg, &item->outcome, err);
    store_tag_writes(svc->store, NULL);
    return rc;
}

/* The placements whose claims missed (reservations.h): undo what the
 * transaction wrote for each such task and decide its messages again (its
 * host's picture is the store's now). Returns 0, or -1 with err. */
static int redo_missed(service *svc, task_handler *handler, batch *b,
                       const reservation_misses *misses, vf_error *err)
{
    for (size_t k = 0; k < misses->n; k++) {
        const char *task_id = misses->task_ids[k];
        if (store_task_undo(svc->store, task_id, err) < 0 ||
            store_forget_tagged(svc->store, task_id, err) < 0) {
            /* Nothing to undo it with: the batch goes as a whole. */
            err->code = VF_ECONFLICT;
            return -1;
        }
        /* Every message of the task, in order: a later copy was decided
         * over what the first wrote. */
        for (size_t i = 0; i < b->n_items; i++) {
            batch_item *item = &b->items[i];
            if (strcmp(item->outcome.task_id, task_id) != 0)
                continue;
            task_outcome_close(&item->outcome);
            if (handle_item(svc, handler, item, err) < 0)
                return -1;
        }
    }
    return 0;
}

/* End of the batch's decisions: claim what waits for it (PostgreSQL) and
 * decide again what missed, until nothing misses. */
static int settle_claims(service *svc, task_handler *handler, batch *b, vf_error *err)
{
    for (int round = 1;; round++) {
        reservation_misses misses = {0};
        int rc = reservation_book_settle(svc->book, svc->store, &misses, err);
        if (rc == 0 && misses.n > 0) {
            svc->missed_since_summary += misses.n;
            log_debug("batch of %zu: %zu placements no longer fitted at their claims (round %d); "
                      "deciding them again",
                      b->n_items, misses.n, round);
            if (round == MAX_CLAIM_ROUNDS) {
                vf_error_set(err, VF_ECONFLICT, "%zu placements still missed after %d rounds",
                             misses.n, round);
                rc = -1;
            } else {
                rc = redo_missed(svc, handler, b, &misses, err);
            }
        }
        bool done = rc < 0 || misses.n == 0;
        reservation_misses_close(&misses);
        if (done)
            return rc;
    }
}

/* The handler's question (handler.h): does the broker refuse `key` on the
 * virtflow exchange? */
static bool refuses_on_exchange(void *context, const char *key)
{
    return amqp_refusals_blocks(context, BROKER_EXCHANGE, key);
}

/* One pass: catch up with the other writers, then decide and record every
 * message of the batch, in one transaction. */
static int record_pass(service *svc, batch *b, vf_error *err)
{
    char now[STORE_TIME_SIZE];
    store_now(now);
    int64_t begin_us = clock_mono_us();
    int rc = store_begin(svc->store, err);
    svc->begin_wait_s += (double)(clock_mono_us() - begin_us) / 1e6;
    if (rc < 0)
        return -1;
    size_t marked = 0;
    /* The tasks first: the time from the catch-up to the claims is the
     * time another worker has to make this batch's picture stale. */
    rc = prefetch_tasks(svc, b, err);
    if (rc == 0)
        order_batch(svc, b);
    if (rc == 0)
        rc = service_publish_mark_confirmed(svc->publisher, now, &marked, err);
    long reloaded = rc == 0
                        ? reservation_book_catch_up(svc->book, svc->store,
                                                    service_follower_clock_ms(svc->follower), err)
                        : 0;
    if (reloaded < 0)
        rc = -1;
    else if (reloaded > 0)
        log_debug("reservations: reloaded %ld hosts changed by other writers", reloaded);
    task_handler handler = {svc->store,
                            svc->engine,
                            svc->config,
                            service_follower_placeable(svc->follower),
                            service_follower_note(svc->follower),
                            clock_wall_ms,
                            svc->book,
                            svc->owner,
                            refuses_on_exchange,
                            svc->refusals,
                            &svc->view};
    svc->view.snapshot_id = service_follower_snapshot_id(svc->follower);
    svc->view.clock_ms = service_follower_clock_ms(svc->follower);
    int64_t started_at = clock_mono_us(), first_at = started_at;
    for (size_t i = 0; rc == 0 && i < b->n_items; i++) {
        rc = handle_item(svc, &handler, &b->items[i], err);
        if (svc->metrics) {
            int64_t decided_at = clock_mono_us();
            worker_metrics_decided(svc->metrics, (double)(decided_at - started_at) / 1e6);
            started_at = decided_at;
        }
        if (i % EARLY_FINISH_EVERY == EARLY_FINISH_EVERY - 1) {
            finish_syncing_early(svc);
            if (svc->metrics)
                started_at = clock_mono_us(); /* acking the batch before is not deciding */
        }
    }
    if (rc == 0)
        rc = settle_claims(svc, &handler, b, err);
    if (rc == 0)
        rc = record_dead_letters(svc, b, now, err);
    int64_t handled_at = clock_mono_us();
    if (rc == 0)
        rc = reservation_book_send_with_commit(svc->book, svc->store, err);
    bool committing = rc == 0;
    if (rc == 0)
        rc = store_commit(svc->store, err);
    log_debug("batch of %zu: handled in %.2f ms, committed in %.2f ms", b->n_items,
              (double)(handled_at - first_at) / 1e3, (double)(clock_mono_us() - handled_at) / 1e3);
    if (rc < 0) {
        vf_error ignored;
        vf_error_init(&ignored);
        (void)store_rollback(svc->store, &ignored);
        forget_reservations(svc, b);
        /* A lost connection may have cut the COMMIT itself: its fate is
         * unknown, so what the claims recorded stays (to expire, or to be
         * given back by the task's next attempt). */
        char at[STORE_TIME_SIZE];
        store_now(at);
        reservation_book_rolled_back(svc->book, !committing || err->code != VF_EUNAVAILABLE, at);
        return -1;
    }
    reservation_book_committed(svc->book);
    for (size_t i = 0; i < b->n_items; i++)
        if (b->items[i].outcome.released)
            service_recheck_room_returned(svc->rechecks); /* task.release gave room back */
    service_publish_marks_committed(svc->publisher, marked);
    if (svc->metrics) {
        worker_metrics_batch(svc->metrics, b->n_items,
                             (double)(clock_mono_us() - handled_at) / 1e6);
        worker_metrics_round_trips(svc->metrics,
                                   store_round_trips(svc->store) + store_round_trips(svc->claims));
        reservation_claim_stats claims = reservation_book_stats(svc->book);
        worker_metrics_claims(svc->metrics, claims.claims, claims.missed,
                              svc->begin_wait_s + claims.lock_wait_ms / 1e3);
        int64_t committed_ms = clock_wall_ms();
        for (size_t i = 0; i < b->n_items; i++)
            worker_metrics_outcome(svc->metrics, &b->items[i].delivery, &b->items[i].outcome,
                                   committed_ms);
    }
    return 0;
}

/* Record the whole batch in one transaction, deciding it again while
 * another worker's reservations made its picture stale. */
static int record_batch(service *svc, batch *b, vf_error *err)
{
    spare_driver_take_released(svc->spares, release_in_engine, svc->engine);
    for (int pass = 1;; pass++) {
        if (record_pass(svc, b, err) == 0)
            return 0;
        if (err->code != VF_ECONFLICT || pass == MAX_DECISION_PASSES)
            return -1;
        svc->conflicts_since_summary++;
        log_debug("batch of %zu: %s; deciding it again over the store's reservations", b->n_items,
                  err->text);
        for (size_t i = 0; i < b->n_items; i++)
            task_outcome_close(&b->items[i].outcome);
        vf_error_init(err);
    }
}

/* An item's replies: its answer, to the message's client or the one its
 * task recorded (a request republished after a preemption names none), and
 * those to other tasks' clients (a preempted victim's). */
static int publish_replies(service *svc, const amqp_link_delivery *d, const task_outcome *o,
                           vf_error *err)
{
    const char *to = o->reply_to ? o->reply_to : d->reply_to;
    if (o->reply_body && to) {
        amqp_link_message msg = {.body = o->reply_body,
                                 .body_len = strlen(o->reply_body),
                                 .message_id = o->task_id,
                                 .correlation_id =
                                     o->reply_to ? o->correlation_id : d->correlation_id};
        if (service_publish_tracked(svc->publisher, "", to, &msg, PUB_REPLY, 0, o->task_id, err) <
            0)
            return -1;
    }
    for (size_t k = 0; k < o->n_replies; k++) {
        const outcome_reply *r = &o->replies[k];
        amqp_link_message msg = {
            .body = r->body, .body_len = strlen(r->body), .correlation_id = r->correlation_id};
        if (service_publish_tracked(svc->publisher, "", r->to, &msg, PUB_REPLY, 0, NULL, err) < 0)
            return -1;
    }
    return 0;
}

/* A retry or dead letter whose exchange the broker refuses: rejected
 * without requeue, so that the queue's own dead-letter exchange parks it in
 * virtflow.dead (the broker's dead-lettering needs no permission of ours)
 * rather than handing it back for ever. */
static int park_refused(service *svc, const amqp_link_delivery *d, vf_error *err)
{
    return amqp_link_reject(svc->link, d->delivery_tag, false, err);
}

/* After the commit: ack what is settled by it, and publish. Events need no
 * wait (the outbox keeps them); a retry or dead letter is not in the store,
 * so its message is acked only when the republish is confirmed. */
static int ack_and_publish(service *svc, const batch *b, vf_error *err)
{
    bool may_ack_multiple = !service_publish_republish_waiting(svc->publisher);
    uint64_t last_tag = 0;
    for (size_t i = 0; i < b->n_items; i++) {
        const amqp_link_delivery *d = &b->items[i].delivery;
        const task_outcome *o = &b->items[i].outcome;
        if (o->action == TASK_ACK) {
            if (d->delivery_tag > last_tag)
                last_tag = d->delivery_tag;
        } else {
            may_ack_multiple = false;
        }
    }
    for (size_t i = 0; i < b->n_items; i++) {
        const amqp_link_delivery *d = &b->items[i].delivery;
        const task_outcome *o = &b->items[i].outcome;
        if (o->action == TASK_ACK && !may_ack_multiple &&
            amqp_link_ack(svc->link, d->delivery_tag, false, err) < 0)
            return -1;
        if (o->action == TASK_DEAD && d->too_large &&
            amqp_link_reject(svc->link, d->delivery_tag, false, err) < 0)
            return -1; /* never read into memory: the broker dead-letters it */
    }
    if (may_ack_multiple && last_tag && amqp_link_ack(svc->link, last_tag, true, err) < 0)
        return -1;

    for (size_t i = 0; i < b->n_items; i++) {
        const amqp_link_delivery *d = &b->items[i].delivery;
        const task_outcome *o = &b->items[i].outcome;
        if (o->event_body) {
            amqp_link_message msg = {.body = o->event_body,
                                     .body_len = strlen(o->event_body),
                                     .message_id = o->event_id};
            /* Refused (1): it stays in the outbox. */
            if (service_publish_tracked(svc->publisher, BROKER_EXCHANGE, o->event_key, &msg,
                                        PUB_EVENT, 0, o->event_id, err) < 0)
                return -1;
        }
        for (size_t k = 0; k < o->n_more; k++) {
            const outcome_message *m = &o->more[k];
            amqp_link_message msg = {
                .body = m->body, .body_len = strlen(m->body), .message_id = m->id};
            /* Refused (1): it stays in the outbox, where the sweep settles it. */
            if (service_publish_tracked(svc->publisher, BROKER_EXCHANGE, m->key, &msg, PUB_EVENT, 0,
                                        m->id, err) < 0)
                return -1;
        }
        if (publish_replies(svc, d, o, err) < 0)
            return -1;
        if (o->action == TASK_RETRY) {
            char tier[BROKER_NAME_MAX];
            if (broker_names_retry(o->delay_s, tier, sizeof tier) < 0) {
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
            int pub = service_publish_tracked(svc->publisher, tier, d->routing_key, &msg, PUB_RETRY,
                                              d->delivery_tag, NULL, err);
            if (pub < 0 || (pub == 1 && park_refused(svc, d, err) < 0))
                return -1;
        }
        if (o->action == TASK_DEAD && !d->too_large) {
            /* The copy carries our user_id: stamp it with the attempt we
             * believed, never a client's header, which would otherwise look
             * vouched for if the message were ever moved back to work. */
            task_message believed = {.attempt = d->attempt, .user_id = d->user_id};
            int64_t attempt = d->attempt > 0 ? task_attempt_number(svc->config, &believed) : 0;
            amqp_link_message msg = {.body = d->body,
                                     .body_len = d->body_len,
                                     .content_type = d->content_type,
                                     .message_id = d->message_id,
                                     .correlation_id = d->correlation_id,
                                     .reply_to = d->reply_to,
                                     .attempt = attempt,
                                     .error = o->error,
                                     .original_key = d->routing_key};
            int pub = service_publish_tracked(svc->publisher, BROKER_DLX, d->routing_key, &msg,
                                              PUB_DEAD, d->delivery_tag, NULL, err);
            if (pub < 0 || (pub == 1 && park_refused(svc, d, err) < 0))
                return -1;
        }
    }
    return 0;
}

/* Anything out of the ordinary gets a line of its own; ordinary placements
 * are counted and summed up every SUMMARY_INTERVAL_S (one line per task at
 * thousands a second would flood the journal, and it rate-limits). */
#define SUMMARY_INTERVAL_S 10

static void log_outcomes(service *svc, const batch *b)
{
    for (size_t i = 0; i < b->n_items; i++) {
        const amqp_link_delivery *d = &b->items[i].delivery;
        const task_outcome *o = &b->items[i].outcome;
        vf_log_set_ids(&(vf_log_ids){.task = o->task_id[0] ? o->task_id : NULL,
                                     .event = o->event_id,
                                     .message_id = d->message_id,
                                     .status = o->status,
                                     .reason = o->reason,
                                     .node = o->node,
                                     .error = o->error_text[0] ? o->error_text : o->error,
                                     .attempt = o->attempt});
        if (o->placed) {
            svc->placed_since_summary++;
            log_debug("task %s: %s", o->task_id, o->summary);
        } else if (o->task_id[0])
            log_info("task %s: %s", o->task_id, o->summary);
        else
            log_warn("message %s on %s: %s", d->message_id ? d->message_id : "(no id)",
                     d->routing_key ? d->routing_key : "?", o->summary);
    }
    vf_log_set_ids(NULL);
}

/* The periodic line for ordinary placements; `final` at stop. */
static void log_summary(service *svc, bool final)
{
    int64_t now = clock_mono_us();
    if (svc->last_summary_us == 0)
        svc->last_summary_us = now;
    double span_s = (double)(now - svc->last_summary_us) / 1e6;
    if (!final && span_s < SUMMARY_INTERVAL_S)
        return;
    if (svc->placed_since_summary)
        log_info("placed %llu tasks in the last %.0f s (%.0f a second); their history is in the "
                 "store (virtflowctl tasks)",
                 (unsigned long long)svc->placed_since_summary, span_s,
                 span_s > 0 ? (double)svc->placed_since_summary / span_s : 0.0);
    if (svc->missed_since_summary)
        log_info("decided %llu placements again in the last %.0f s: their hosts had no room left "
                 "when claimed (other workers had taken it), or their vmids were held",
                 (unsigned long long)svc->missed_since_summary, span_s);
    if (svc->conflicts_since_summary)
        log_info("decided %llu batches again in the last %.0f s: another worker had recorded "
                 "one of their tasks, or placements claimed with the commit no longer fitted",
                 (unsigned long long)svc->conflicts_since_summary, span_s);
    svc->placed_since_summary = 0;
    svc->missed_since_summary = 0;
    svc->conflicts_since_summary = 0;
    svc->last_summary_us = now;
}

/* ---- lifecycle ---- */

/* The store's wait hook: a store call that waits on a slow or frozen
 * PostgreSQL server (up to store.statement_timeout_ms and a little more,
 * then the store-outage path takes over) must not cost the broker
 * connection, so the link's heartbeats go on meanwhile. Only heartbeats: a
 * read could run confirm callbacks, or take deliveries, in the middle of a
 * transaction. */
static void keep_link_alive(void *user)
{
    service *svc = user;
    amqp_link_keepalive(svc->link);
}

static int open_parts(service *svc, vf_error *err)
{
    svc->store = store_config_open(svc->config, STORE_READ_WRITE, err);
    if (!svc->store)
        return -1;
    /* Batches are synced on a thread of their own (wal_sync.h). */
    if (store_defer_sync(svc->store, err) < 0 || !(svc->sync = wal_sync_start(svc->store, err)))
        return -1;
    /* PostgreSQL: a batch's writes cost one round trip, not one each. */
    store_defer_writes(svc->store);
    /* scheduler.profiles: each built once, here; they follow the default
     * engine's snapshot and reservations (engine.h). */
    svc->engine = sched_engine_from_config(svc->config, svc->owner, err);
    if (!svc->engine)
        return -1;
    for (size_t i = 0; i < svc->config->scheduler.n_profiles; i++) {
        const config_profile *profile = &svc->config->scheduler.profiles[i];
        log_info("scheduler profile %s: strategy %s, %zu plugin entries", profile->name,
                 profile->strategy == CONFIG_STRATEGY_PACK ? "pack" : "spread", profile->n_plugins);
    }
    /* What decisions are made under, for their records (provenance.h). */
    svc->view = (decision_view){.snapshot_id = -1, .config_id = -1};
    if (provenance_config_record(svc->store, svc->config, &svc->view.config_id, err) < 0)
        return -1;
    if (lease_announce(svc->store, svc->owner, err) < 0)
        return -1;
    follow_peers(svc);
    /* PostgreSQL: a batch's claims run on a connection of their own, each
     * in a transaction of its own, while the batch's transaction is open
     * (reservations.h). SQLite checks them in the batch's transaction. */
    if (!store_writers_serialized(svc->store)) {
        svc->claims = store_config_open(svc->config, STORE_READ_WRITE, err);
        if (!svc->claims)
            return -1;
    }
    svc->book = reservation_book_new(svc->engine, svc->claims, err);
    if (!svc->book)
        return -1;
    long held = reservation_book_load(svc->book, svc->store, 0, err);
    if (held < 0)
        return -1;
    char where[512];
    log_info("store %s: %ld live reservations held",
             store_config_name(svc->config, where, sizeof where), held);
    svc->inventory = inventory_new(svc->config, err);
    if (!svc->inventory)
        return -1;
    svc->metrics = worker_metrics_start(svc->config, svc->inventory, err);
    if (!svc->metrics && vf_error_is_set(err))
        return -1;
    wal_sync_observe(svc->sync, worker_metrics_fsync_series(svc->metrics));
    vf_error fetch;
    vf_error_init(&fetch);
    if (inventory_refresh(svc->inventory, &fetch) < 0)
        log_warn("inventory: first fetch failed: %s (tasks are retried until it answers)",
                 fetch.text);
    svc->follower = service_follower_new(svc->inventory, svc->engine, svc->store, svc->config, err);
    if (!svc->follower || service_follower_start(svc->follower, err) < 0)
        return -1;
    svc->link = amqp_link_new(svc->config, "virtflow-worker", err);
    if (!svc->link)
        return -1;
    svc->refusals = amqp_refusals_new();
    if (!svc->refusals) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    svc->publisher =
        service_publish_new(svc->link, svc->store, svc->sync, svc->owner, svc->refusals, err);
    if (!svc->publisher)
        return -1;
    svc->rechecks =
        service_recheck_new(svc->config, svc->engine, svc->store, svc->link, svc->publisher, err);
    if (!svc->rechecks)
        return -1;
    store_set_wait_hook(svc->store, keep_link_alive, svc);
    if (svc->claims)
        store_set_wait_hook(svc->claims, keep_link_alive, svc);
    svc->refresher =
        inventory_refresher_start(svc->inventory, svc->config->inventory.refresh_s, false, err);
    if (!svc->refresher)
        return -1;
    if (store_set_autocheckpoint(svc->store, 0, err) < 0)
        return -1;
    svc->checkpoints = service_checkpoint_start(svc->config, svc->owner, err);
    if (!svc->checkpoints)
        return -1;
    svc->spares = spare_driver_start(svc->config, svc->owner, err);
    if (!svc->spares)
        return -1;
    svc->retention = retention_start(svc->config, svc->owner, err);
    return svc->retention ? 0 : -1;
}

static void close_parts(service *svc)
{
    worker_metrics_stop(svc->metrics); /* first: its scrapes read the inventory */
    retention_stop(svc->retention);
    spare_driver_stop(svc->spares);
    if (svc->store) {
        /* Another worker need not wait for the lease to expire. */
        vf_error ignored;
        vf_error_init(&ignored);
        (void)store_lease_release(svc->store, "housekeeping", svc->owner, &ignored);
        lease_withdraw(svc->store, svc->owner);
        if (svc->slot_held)
            lease_give_slot(svc->store, svc->owner, svc->slot_stride, svc->slot);
    }
    service_checkpoint_stop(svc->checkpoints);
    inventory_refresher_stop(svc->refresher);
    for (size_t i = 0; i < 2; i++) {
        clear_batch(&svc->batches[i]);
        free(svc->batches[i].items);
    }

    if (svc->store)
        store_set_wait_hook(svc->store, NULL, NULL); /* it uses the link */
    service_recheck_free(svc->rechecks);
    amqp_link_free(svc->link);
    service_publish_free(svc->publisher); /* after the link, which calls it back */
    amqp_refusals_free(svc->refusals);
    service_follower_free(svc->follower);
    inventory_free(svc->inventory);
    reservation_book_free(svc->book);
    sched_engine_free(svc->engine);
    wal_sync_stop(svc->sync);
    if (svc->claims)
        store_set_wait_hook(svc->claims, NULL, NULL);
    store_close(svc->claims);
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
    /* Whatever was in flight on an earlier connection has no confirm coming:
     * its events stay in the outbox, its messages come back from the broker. */
    service_publish_link_lost(svc->publisher);
    if (amqp_link_connect(svc->link, err) < 0)
        return -1;
    if (amqp_link_consume(svc->link, BROKER_PRIORITY_QUEUE, err) < 0 ||
        amqp_link_consume(svc->link, BROKER_SCHEDULE_QUEUE, err) < 0 ||
        amqp_link_consume(svc->link, BROKER_SPARE_QUEUE, err) < 0)
        return -1;
    log_info("consuming %s, %s and %s (prefetch %d each)", BROKER_PRIORITY_QUEUE,
             BROKER_SCHEDULE_QUEUE, BROKER_SPARE_QUEUE, svc->config->amqp.prefetch);
    notify_ready("consuming");
    int swept = service_publish_sweep_outbox(svc->publisher, false, err);
    if (swept == SWEEP_SYNC)
        svc->sync_failed = true;
    if (swept == SWEEP_STORE && !svc->sync_failed) {
        /* The link is fine: the first round meets the store outage and
         * waits it out with the link kept (pause_for_store). */
        log_warn("outbox: not swept at connect: %s", err->text);
        vf_error_init(err);
        return 0;
    }
    return swept < 0 ? -1 : 0;
}

/* ---- store outages ---- */

/* Give every message in hand back to the broker without recording it, the
 * unrecorded batch and whatever has already arrived: with the consumers
 * cancelled first, nothing more comes until consuming resumes. Each costs
 * one delivery on a quorum queue (a requeue counts against delivery-limit in
 * RabbitMQ 3.x), once per outage rather than once per reconnect. Counts the
 * messages in *handed. Returns 0 or -1 with err (the link failed: the broker
 * then takes them back itself). */
static int hand_back(service *svc, size_t *handed, vf_error *err)
{
    int rc = 0;
    for (size_t k = 0; k < 2; k++) {
        batch *b = &svc->batches[k];
        for (size_t i = 0; rc == 0 && i < b->n_items; i++) {
            rc = amqp_link_reject(svc->link, b->items[i].delivery.delivery_tag, true, err);
            (*handed)++;
        }
    }
    drop_batches(svc);
    while (rc == 0) {
        amqp_link_delivery d;
        memset(&d, 0, sizeof d);
        int got = amqp_link_next(svc->link, &d, 0, err);
        if (got <= 0) {
            rc = got;
            break;
        }
        rc = amqp_link_reject(svc->link, d.delivery_tag, true, err);
        (*handed)++;
        amqp_link_delivery_close(&d);
    }
    return rc;
}

/* Wait `seconds` while keeping the broker connection alive: reading from it
 * answers heartbeats, settles confirms of earlier publishes, and hands back
 * a delivery that was already on its way when the consumers were cancelled. */
static void wait_on_link(service *svc, double seconds)
{
    int64_t until = clock_mono_us() + (int64_t)(seconds * 1e6);
    while (!*svc->stop) {
        int64_t left_ms = (until - clock_mono_us()) / 1000;
        if (left_ms <= 0)
            return;
        if (!amqp_link_is_connected(svc->link)) {
            pause_for(svc, (double)left_ms / 1e3);
            return;
        }
        vf_error ignored;
        vf_error_init(&ignored);
        amqp_link_delivery d;
        memset(&d, 0, sizeof d);
        int got = amqp_link_next(svc->link, &d, left_ms < 500 ? (int)left_ms : 500, &ignored);
        /* A failed reject leaves the link down: the broker takes it back. */
        if (got == 1 && amqp_link_reject(svc->link, d.delivery_tag, true, &ignored) < 0)
            log_debug("store pause: %s", ignored.text);
        if (got == 1)
            amqp_link_delivery_close(&d);
        (void)service_publish_settle(svc->publisher, &ignored);
    }
}

/* A store that cannot commit (locked by another process, disk full,
 * read-only). Closing the connection and taking a fresh prefetch window
 * every few seconds would count a delivery against every message each time,
 * and quorum queues dead-letter a message past their delivery-limit, with no
 * task row, no event and no reply. So: cancel the consumers, finish the
 * batch already committed, hand back the rest once, and probe the store with
 * a small write, with backoff, until one commits; then consume again. The
 * broker connection stays up meanwhile. `err` holds the store's error.
 * Returns ROUND_OK (consuming again, or stopping), ROUND_BROKER (the link
 * failed: reconnecting resumes consuming) or ROUND_FATAL (a sync failed). */
static round_status pause_for_store(service *svc, vf_error *err)
{
    char why[VF_ERROR_TEXT];
    snprintf(why, sizeof why, "%s", err->text);
    vf_error_init(err);
    worker_metrics_store_writable(svc->metrics, false);
    worker_metrics_link(svc->metrics, amqp_link_is_connected(svc->link), false);
    round_status st = ROUND_OK;
    if (amqp_link_is_connected(svc->link) && amqp_link_cancel(svc->link, err) < 0)
        st = ROUND_BROKER;
    if (st == ROUND_OK) {
        st = finish_syncing(svc, err); /* committed: ack it, publish its events */
        if (st == ROUND_FATAL)
            return st;
    }
    size_t handed = 0;
    if (st == ROUND_OK && hand_back(svc, &handed, err) < 0)
        st = ROUND_BROKER;
    drop_batches(svc);
    log_error("store: %s; nothing in this batch was acked: %zu message%s handed back to the "
              "broker, consumers cancelled; consuming again once a write to the store succeeds",
              why, handed, handed == 1 ? "" : "s");
    int64_t started = clock_mono_us();
    for (int probe = 1; !*svc->stop; probe++) {
        wait_on_link(svc, backoff_next(&svc->store_retry));
        if (*svc->stop)
            break;
        vf_error failed;
        vf_error_init(&failed);
        if (store_probe_write(svc->store, &failed) == 0)
            break;
        /* One line per outage and then one a minute or so, not one per probe. */
        if (probe % 8 == 0)
            log_warn("store: still not writable after %.0f s: %s",
                     (double)(clock_mono_us() - started) / 1e6, failed.text);
    }
    if (*svc->stop)
        return ROUND_OK;
    log_info("store: writable again after %.0f s; consuming again",
             (double)(clock_mono_us() - started) / 1e6);
    worker_metrics_store_writable(svc->metrics, true);
    vf_error_init(err);
    if (!amqp_link_is_connected(svc->link)) {
        vf_error_set(err, VF_EUNAVAILABLE, "the connection was lost while the store was down");
        return ROUND_BROKER; /* connect_link consumes again */
    }
    if (amqp_link_consume(svc->link, BROKER_PRIORITY_QUEUE, err) < 0 ||
        amqp_link_consume(svc->link, BROKER_SCHEDULE_QUEUE, err) < 0 ||
        amqp_link_consume(svc->link, BROKER_SPARE_QUEUE, err) < 0)
        return ROUND_BROKER;
    return ROUND_OK;
}

/* The committed batch whose sync was requested last round: once the sync is
 * done, ack its messages and publish its events and retries. */
static round_status finish_syncing(service *svc, vf_error *err)
{
    batch *b = svc->syncing;
    if (!b)
        return ROUND_OK;
    svc->syncing = NULL;
    int64_t t0 = clock_mono_us();
    if (wal_sync_wait(svc->sync, b->sync_ticket, err) < 0) {
        svc->sync_failed = true;
        clear_batch(b);
        return ROUND_FATAL;
    }
    int64_t t1 = clock_mono_us();
    int rc = ack_and_publish(svc, b, err);
    if (rc == 0)
        log_outcomes(svc, b);
    log_debug("batch of %zu: waited %.2f ms for its sync, acked and published in %.2f ms, %zu "
              "publishes in flight",
              b->n_items, (double)(t1 - t0) / 1e3, (double)(clock_mono_us() - t1) / 1e3,
              service_publish_in_flight(svc->publisher));
    clear_batch(b);
    if (rc < 0)
        return ROUND_BROKER;
    if (service_publish_in_flight(svc->publisher) > MAX_UNCONFIRMED) {
        /* Flow control: let the broker catch up before taking more. */
        if (amqp_link_wait_confirms(svc->link, CONFIRM_TIMEOUT_MS, err) < 0 ||
            service_publish_settle(svc->publisher, err) < 0)
            return ROUND_BROKER;
    }
    return ROUND_OK;
}

/* One round: collect a batch and record it (one commit, its sync
 * requested), then finish the batch of the round before, whose sync ran
 * while this one was decided, and settle confirms. `handled` tells how many
 * messages were collected. */
static round_status round_trip(service *svc, int wait_ms, size_t *handled, vf_error *err)
{
    *handled = 0;
    log_summary(svc, false);
    if (sync_inventory(svc, err) < 0)
        return ROUND_STORE;
    follow_peers(svc);
    if (service_recheck_waiting(svc->rechecks, err) < 0)
        return ROUND_BROKER;
    batch *b = svc->collecting;
    /* With a batch awaiting its sync, take only what has already arrived:
     * that batch must not wait for the next message to be acked. */
    if (collect(svc, b, svc->syncing ? 0 : wait_ms, err) < 0 ||
        service_publish_settle(svc->publisher, err) < 0)
        return ROUND_BROKER;
    *handled = b->n_items;
    service_checkpoint_in_hand(svc->checkpoints,
                               b->n_items + (svc->syncing ? svc->syncing->n_items : 0));
    if (service_publish_sweep_due(svc->publisher)) {
        round_status st = finish_syncing(svc, err);
        if (st != ROUND_OK)
            return st;
        int swept = service_publish_sweep_outbox(svc->publisher, false, err);
        if (swept == SWEEP_SYNC)
            svc->sync_failed = true;
        if (swept < 0)
            return svc->sync_failed       ? ROUND_FATAL
                   : swept == SWEEP_STORE ? ROUND_STORE
                                          : ROUND_BROKER;
    }
    if (b->n_items) {
        svc->early_status = ROUND_OK;
        int recorded = record_batch(svc, b, err);
        if (svc->early_status != ROUND_OK) {
            vf_error_set(err, svc->early_err.code, "%s", svc->early_err.text);
            return svc->early_status;
        }
        if (recorded < 0)
            return ROUND_STORE;
        b->sync_ticket = wal_sync_request(svc->sync);
    }
    round_status st = finish_syncing(svc, err);
    if (st != ROUND_OK)
        return st;
    if (b->n_items) {
        svc->syncing = b;
        svc->collecting = b == &svc->batches[0] ? &svc->batches[1] : &svc->batches[0];
    } else if (service_publish_flush_confirmed_now(svc->publisher, err) < 0) {
        return ROUND_STORE;
    }
    return ROUND_OK;
}

/* SIGHUP, between two rounds: no batch is being decided, so the engine can
 * take other parameters at once (the batch awaiting its sync was decided
 * already and keeps its decisions). What the worker reloads (the key table's
 * `reloads`): scheduler.* but reservation_ttl_s; inventory.* but max_age_s
 * (the source's settings, taken at the next fetch, which starts at once;
 * refresh_s); log.level. */
/* The running profiles (scheduler.profiles needs a restart, so they are the
 * start-up config's) with the shared keys of a reloaded scheduler section
 * `base`: checked all first (apply false), then applied (apply true). */
static int reload_profiles(service *svc, const sched_params *base, bool apply, vf_error *err)
{
    for (size_t i = 0; i < svc->config->scheduler.n_profiles; i++) {
        const config_profile *profile = &svc->config->scheduler.profiles[i];
        sched_params params;
        sched_params_for_profile(&params, base, profile);
        if (apply) {
            if (sched_engine_set_params(sched_engine_profile(svc->engine, profile->name), &params,
                                        err) < 0)
                return -1;
            continue;
        }
        sched_engine *probe = sched_engine_new(&params, err);
        if (!probe)
            return -1;
        sched_engine_free(probe);
    }
    return 0;
}

/* Decisions from now on are made under the reloaded scheduler section: say
 * so in their records. A store that refuses keeps the previous row, which
 * a replay then reports as a configuration difference. */
static void record_config(service *svc)
{
    vf_error err;
    vf_error_init(&err);
    if (provenance_config_record(svc->store, reload_current(&svc->reload), &svc->view.config_id,
                                 &err) < 0)
        log_warn("reload: recording the scheduler configuration for replays: %s", err.text);
}

static void reload(service *svc)
{
    notify_reloading();
    vf_config *next = reload_read(&svc->reload);
    if (next) {
        sched_params params;
        sched_params_from_config(&params, next);
        snprintf(params.near_best_worker, sizeof params.near_best_worker, "%s", svc->owner);
        vf_error err;
        vf_error_init(&err);
        /* Everything that can refuse first, so that a refusal changes nothing. */
        inventory *source = inventory_new(next, &err);
        if (!source || reload_profiles(svc, &params, false, &err) < 0 ||
            sched_engine_set_params(svc->engine, &params, &err) < 0 ||
            reload_profiles(svc, &params, true, &err) < 0) {
            inventory_free(source);
            reload_abandon(&svc->reload, next, err.text);
        } else {
            inventory_adopt_settings(svc->inventory, source);
            int refresh_s = next->inventory.refresh_s; /* next belongs to the reloader */
            vf_log_set_level(next->log.level);
            reload_commit(&svc->reload, next);
            /* More overcommit, fewer reserves: room grew. */
            service_recheck_room_changed(svc->rechecks);
            worker_metrics_scheduler(svc->metrics, sched_engine_params(svc->engine));
            record_config(svc);
            /* Fetch now: the inventory settings may have changed. */
            inventory_refresher_fetch_now(svc->refresher, refresh_s);
        }
    }
    notify_reloaded();
}

/* The last sweep of a stopping worker (service_publish_sweep_outbox). */
static int stop_sweep(service *svc, vf_error *err)
{
    int swept = service_publish_sweep_outbox(svc->publisher, true, err);
    if (swept == SWEEP_SYNC)
        svc->sync_failed = true;
    return swept;
}

/* After the link failed: when the broker closed it refusing a publish path
 * (403 ACCESS_REFUSED: a broker set up from older definitions), note it so
 * that it is never tried again (amqp_refusals.h), and say once what stops
 * and what to grant. Whether it was such a refusal, noted now. */
static bool note_refusal(service *svc)
{
    char exchange[AMQP_REFUSALS_NAME], key[AMQP_REFUSALS_NAME];
    if (!amqp_refusals_note(svc->refusals, svc->link, exchange, key))
        return false;
    const char *text = NULL;
    amqp_link_broker_close(svc->link, &text);
    bool requests =
        strcmp(exchange, BROKER_EXCHANGE) == 0 &&
        (strcmp(key, BROKER_KEY_SCHEDULE) == 0 || strcmp(key, BROKER_KEY_SCHEDULE_PRIORITY) == 0);
    const char *what =
        requests ? "rechecks are off (retry.recheck_on_room: waiting tasks wait out their tier), "
                   "no request preempts (preemption would need it), and a preempted task whose "
                   "request was refused ends failed (exhausted)"
        : !strncmp(key, "event.", 6) ? "those events stay in the outbox, published again by a "
                                       "worker that may publish them"
        : key[0]                     ? "what the worker published that way is not published again"
                 : "retries and dead letters to it are parked in virtflow.dead by the queues' "
                   "own dead-letter exchange, replies to it are not sent";
    char path[2 * AMQP_REFUSALS_NAME + 32];
    snprintf(path, sizeof path, "%s%s on exchange %s", key[0] ? "routing key " : "anything", key,
             exchange[0] ? exchange : "(default)");
    log_warn("broker: the broker refuses this worker's publish of %s (403 %s): %s, until the "
             "worker restarts; reconnecting at once. Grant the worker's user the permission "
             "(on exchange %s the write pattern ^(event\\..+|task\\.schedule(\\.priority)?)$: "
             "docs/upgrading.md)",
             path, text ? text : "", what, BROKER_EXCHANGE);
    return true;
}

/* The rounds until asked to stop: (re)connect, take a batch, decide,
 * commit, ack and publish; after the broker's failures, reconnect at a
 * backoff. Returns ROUND_FATAL with err when what was synced can no longer
 * be told from what was lost, else the last round's status. */
static round_status run_rounds(service *svc, vf_error *err)
{
    backoff retry;
    backoff_init(&retry, 0.5, 30.0);
    backoff_init(&svc->store_retry, 0.5, 10.0);
    round_status st = ROUND_OK;
    while (!*svc->stop) {
        vf_error_init(err);
        if (hangup_take())
            reload(svc);
        if (!amqp_link_is_connected(svc->link)) {
            if (connect_link(svc, err) < 0) {
                if (svc->sync_failed) {
                    st = ROUND_FATAL;
                    break;
                }
                worker_metrics_link(svc->metrics, false, false);
                double wait = backoff_next(&retry);
                log_warn("broker: %s; trying again in %.1f s", err->text, wait);
                amqp_link_close(svc->link);
                pause_for(svc, wait);
                continue;
            }
        }
        worker_metrics_link(svc->metrics, true, true);
        size_t handled;
        st = round_trip(svc, 500, &handled, err);
        if (st == ROUND_OK) {
            /* Reset only once a round succeeds: a broker that keeps failing
             * after each reconnect must not make the worker reconnect in a
             * tight loop. */
            backoff_reset(&retry);
            if (handled)
                backoff_reset(&svc->store_retry);
            continue;
        }
        if (st == ROUND_STORE) {
            st = pause_for_store(svc, err);
            if (st == ROUND_OK)
                continue;
        }
        drop_batches(svc);
        if (st == ROUND_FATAL)
            break;
        worker_metrics_link(svc->metrics, false, false);
        if (note_refusal(svc)) {
            /* Not the broker's failure: reconnect at once, never that path again. */
            amqp_link_close(svc->link);
            continue;
        }
        double wait = backoff_next(&retry);
        log_warn("broker: %s; reconnecting in %.1f s", err->text, wait);
        amqp_link_close(svc->link);
        pause_for(svc, wait);
    }
    return st;
}

/* Graceful stop: no new deliveries; finish what is in hand; flush the
 * outbox. What cannot be finished is logged: the broker delivers it again,
 * the outbox publishes it again at the next start. */
static void finish_in_hand(service *svc, vf_error *err)
{
    round_status st = ROUND_OK;
    notify_stopping();
    log_info("stopping: finishing the messages in hand");
    worker_metrics_link(svc->metrics, amqp_link_is_connected(svc->link), false);
    if (amqp_link_is_connected(svc->link) && amqp_link_cancel(svc->link, err) == 0) {
        for (;;) {
            size_t handled;
            st = round_trip(svc, 0, &handled, err);
            if (st != ROUND_OK || (handled == 0 && !svc->syncing))
                break;
        }
        drop_batches(svc);
        if (st == ROUND_OK && amqp_link_is_connected(svc->link) &&
            (amqp_link_wait_confirms(svc->link, CONFIRM_TIMEOUT_MS, err) < 0 ||
             service_publish_settle(svc->publisher, err) < 0 || stop_sweep(svc, err) < 0))
            log_warn("outbox: %s (unconfirmed events are published again at the next start; "
                     "consumers deduplicate on id)",
                     err->text);
        else if (st != ROUND_OK)
            log_warn("stopping: %s (what was not acked is delivered again)", err->text);
    }
}

int service_run(const vf_config *config, volatile sig_atomic_t *stop)
{
    service svc;
    memset(&svc, 0, sizeof svc);
    svc.config = config;
    reload_init(&svc.reload, config, CONFIG_RELOADS_WORKER);
    svc.stop = stop;
    svc.collecting = &svc.batches[0];
    store_owner_name(svc.owner);
    vf_error err;
    vf_error_init(&err);
    if (open_parts(&svc, &err) < 0) {
        log_error("cannot start: %s", err.text);
        close_parts(&svc);
        return -1;
    }
    if (run_rounds(&svc, &err) == ROUND_FATAL) {
        /* Nothing synced can be told from nothing lost any more: ack nothing,
         * let the broker keep every message in hand, and restart clean. */
        log_error("store: %s; stopping without acknowledging anything more (the broker "
                  "delivers the unacknowledged messages again after a restart)",
                  err.text);
        notify_stopping();
        close_parts(&svc);
        reload_close(&svc.reload);
        return -1;
    }
    finish_in_hand(&svc, &err);
    log_summary(&svc, true);
    close_parts(&svc);
    reload_close(&svc.reload);
    log_info("stopped");
    return 0;
}
