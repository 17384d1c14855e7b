/* service_publish: publishing with confirms and the outbox sweep
 * (service_internal.h). */
#include "service_internal.h"

/* ---- publishing ---- */

void service_on_confirm(uint64_t tag, bool ok, const char *reason, void *user)
{
    service *svc = user;
    size_t lo = 0, hi = svc->n_pubs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (svc->pubs[mid].tag < tag)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == svc->n_pubs || svc->pubs[lo].tag != tag)
        return;
    pending_publish *pub = &svc->pubs[lo];
    pub->state = ok ? 1 : -1;
    if (!ok && pub->kind == PUB_REPLY)
        /* The direct reply's queue is routed by name: the broker returns it
         * when the queue is gone, i.e. the client stopped waiting. */
        log_warn("reply for task %s not delivered: the client's reply queue no longer exists "
                 "(it stopped waiting); the result stays in the store (%s)",
                 pub->event_id ? pub->event_id : "?", reason ? reason : "no reason given");
    else if (!ok && pub->kind != PUB_RECHECK)
        log_warn("publish not confirmed: %s%s%s", reason ? reason : "unknown reason",
                 pub->event_id ? "; event stays in the outbox: " : "",
                 pub->event_id ? pub->event_id : "");
}

int service_publish_tracked(service *svc, const char *exchange, const char *key,
                            const amqp_link_message *msg, publish_kind kind, uint64_t delivery_tag,
                            const char *event_id, vf_error *err)
{
    if (grow_array((void **)&svc->pubs, &svc->cap_pubs, svc->n_pubs + 1, sizeof *svc->pubs) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory tracking a publish");
        return -1;
    }
    char *id_copy = NULL;
    if (event_id && !(id_copy = strdup(event_id))) {
        vf_error_set(err, VF_ENOMEM, "out of memory tracking a publish");
        return -1;
    }
    uint64_t tag = 0;
    if (amqp_link_publish(svc->link, exchange, key, msg, &tag, err) < 0) {
        free(id_copy);
        return -1;
    }
    svc->pubs[svc->n_pubs++] = (pending_publish){tag, kind, delivery_tag, id_copy, 0};
    return 0;
}

static int id_list_add(id_list *list, char *id)
{
    if (grow_array((void **)&list->ids, &list->cap, list->n + 1, sizeof *list->ids) < 0)
        return -1;
    list->ids[list->n++] = id; /* takes ownership */
    return 0;
}

void service_id_list_clear(id_list *list)
{
    for (size_t i = 0; i < list->n; i++)
        free(list->ids[i]);
    list->n = 0;
}

/* Forget the first n ids (marked by a transaction that committed); ids added
 * meanwhile stay. */
void service_id_list_drop_first(id_list *list, size_t n)
{
    if (n > list->n)
        n = list->n;
    if (n == 0)
        return; /* no marks: ids may still be NULL, which memmove must not get */
    for (size_t i = 0; i < n; i++)
        free(list->ids[i]);
    memmove(list->ids, list->ids + n, (list->n - n) * sizeof *list->ids);
    list->n -= n;
}

static bool id_list_has(const id_list *list, const char *id)
{
    for (size_t i = 0; i < list->n; i++)
        if (strcmp(list->ids[i], id) == 0)
            return true;
    return false;
}

/* A retry or dead letter not yet settled, whatever its confirm said so far:
 * its message must be acked (or handed back) alone, so an ack-multiple of a
 * later batch must not cover it. Settled entries have left the list. */
bool service_republish_waiting(const service *svc)
{
    for (size_t i = 0; i < svc->n_pubs; i++)
        if (svc->pubs[i].kind == PUB_RETRY || svc->pubs[i].kind == PUB_DEAD)
            return true;
    return false;
}

/* Act on the confirms that have arrived: a confirmed event is marked in the
 * next transaction; a confirmed retry or dead letter lets its message be
 * acked; a failed one hands the message back to the broker to be processed
 * again (its task is "retrying", so nothing is scheduled twice). */
int service_settle_confirms(service *svc, vf_error *err)
{
    size_t kept = 0;
    int rc = 0;
    bool connected = amqp_link_is_connected(svc->link);
    for (size_t i = 0; i < svc->n_pubs; i++) {
        pending_publish *pub = &svc->pubs[i];
        if (pub->state == 0 && connected) {
            svc->pubs[kept++] = *pub;
            continue;
        }
        if (pub->kind == PUB_EVENT && pub->state == 1) {
            if (id_list_add(&svc->confirmed, pub->event_id) == 0)
                pub->event_id = NULL;
        } else if ((pub->kind == PUB_RETRY || pub->kind == PUB_DEAD) && connected && rc == 0) {
            rc = pub->state == 1 ? amqp_link_ack(svc->link, pub->delivery_tag, false, err)
                                 : amqp_link_reject(svc->link, pub->delivery_tag, true, err);
        }
        free(pub->event_id);
    }
    svc->n_pubs = kept;
    return rc;
}

/* Mark the confirmed events in the open transaction; *marked tells how many
 * (the first ones of the list). They stay listed until that transaction
 * commits (service_id_list_drop_first): a batch rolled back (a store error, or another
 * worker's conflicting reservation) keeps them for the next one, instead of
 * leaving them to the sweep to publish again. */
int service_flush_confirmed(service *svc, const id_list *list, const char *at, size_t *marked,
                            vf_error *err)
{
    *marked = list->n; /* confirms arriving meanwhile are appended after these */
    for (size_t i = 0; i < *marked; i++)
        if (store_outbox_mark_confirmed(svc->store, list->ids[i], at, err) < 0)
            return -1;
    return 0;
}

/* Marks in a transaction of their own, when no batch is coming to carry them. */
int service_flush_confirmed_now(service *svc, vf_error *err)
{
    if (svc->confirmed.n == 0)
        return 0;
    char now[STORE_TIME_SIZE];
    store_now(now);
    if (store_begin(svc->store, err) < 0)
        return -1;
    size_t marked = 0;
    if (service_flush_confirmed(svc, &svc->confirmed, now, &marked, err) < 0 ||
        store_commit(svc->store, err) < 0) {
        vf_error ignored;
        (void)store_rollback(svc->store, &ignored);
        return -1;
    }
    service_id_list_drop_first(&svc->confirmed, marked);
    return 0;
}

typedef struct sweep_ctx {
    service *svc;
    vf_error *err;
    int failed;
    size_t count;
} sweep_ctx;

/* Already on its way: published and awaiting its confirm, or confirmed and
 * awaiting its mark. */
static bool in_flight(const service *svc, const char *event_id)
{
    for (size_t i = 0; i < svc->n_pubs; i++)
        if (svc->pubs[i].kind == PUB_EVENT && svc->pubs[i].event_id &&
            strcmp(svc->pubs[i].event_id, event_id) == 0)
            return true;
    return id_list_has(&svc->confirmed, event_id);
}

static int sweep_one(const store_outbox_event *event, void *arg)
{
    sweep_ctx *ctx = arg;
    if (in_flight(ctx->svc, event->id))
        return 0;
    amqp_link_message msg = {
        .body = event->body, .body_len = strlen(event->body), .message_id = event->id};
    if (service_publish_tracked(ctx->svc, AMQP_TOPOLOGY_EXCHANGE, event->routing_key, &msg,
                                PUB_EVENT, 0, event->id, ctx->err) < 0) {
        ctx->failed = 1;
        return 1;
    }
    ctx->count++;
    return 0;
}

/* Wait until everything committed so far is durable. */
static int sync_all(service *svc, vf_error *err)
{
    if (wal_sync_wait(svc->sync, wal_sync_request(svc->sync), err) < 0) {
        svc->sync_failed = true;
        return -1;
    }
    return 0;
}

/* Publish every event the outbox holds unconfirmed that is not already on
 * its way: left by a crash, a lost connection or a nack, or written outside
 * a batch (the spare lifecycle). Oldest first; those the broker confirms are
 * marked. Runs at connect and every OUTBOX_SWEEP_INTERVAL_S, under load too.
 * `stopping`: the last sweep of a stopping worker takes the young events too
 * (a worker killed just after a commit leaves its last batch unpublished, and
 * nobody may sweep again for a while); another live worker's event in flight
 * then goes out twice, which consumers deduplicate. */
int service_sweep_outbox(service *svc, bool stopping, vf_error *err)
{
    svc->last_sweep = time(NULL);
    /* An outbox event goes out only once its commit is durable. */
    if (sync_all(svc, err) < 0)
        return SWEEP_STORE;
    if (service_settle_confirms(svc, err) < 0)
        return SWEEP_BROKER;
    if (service_flush_confirmed_now(svc, err) < 0)
        return SWEEP_STORE;
    /* With several workers on one store, one of them (the lease holder)
     * sweeps; the others' own events go out as usual after their batches. */
    char grace[STORE_TIME_SIZE];
    store_format_time(clock_wall_ms() - OUTBOX_GRACE_MS, grace);
    int held = lease_hold(svc->store, "housekeeping", svc->owner, NULL, err);
    if (held < 0)
        return SWEEP_STORE;
    if (held == 0)
        return 0;
    /* Alone on the store, every unconfirmed event is ours or a dead worker's. */
    int others = 0;
    if (lease_others_alive(svc->store, svc->owner, &others, err) < 0)
        return SWEEP_STORE;
    sweep_ctx ctx = {svc, err, 0, 0};
    if (store_outbox_pending(svc->store, others && !stopping ? grace : NULL, OUTBOX_SWEEP_LIMIT,
                             sweep_one, &ctx, err) < 0)
        return SWEEP_STORE;
    if (ctx.failed)
        return SWEEP_BROKER;
    if (ctx.count == 0)
        return 0;
    if (amqp_link_wait_confirms(svc->link, CONFIRM_TIMEOUT_MS, err) < 0 ||
        service_settle_confirms(svc, err) < 0)
        return SWEEP_BROKER;
    log_info("outbox: %zu events published from the outbox (unconfirmed earlier, or written "
             "outside a batch)",
             ctx.count);
    return service_flush_confirmed_now(svc, err) < 0 ? SWEEP_STORE : 0;
}
