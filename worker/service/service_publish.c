/* service_publish: publishing with confirms and the outbox sweep
 * (service_publish.h). */
#include "service_publish.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp_refusals.h"
#include "broker_names.h"
#include "clock.h"
#include "grow.h"
#include "leases.h"
#include "log.h"
#include "store_hosts.h"
#include "refused_request.h"
#include "store_outbox.h"

#define OUTBOX_SWEEP_INTERVAL_S 5 /* republish unconfirmed events this often */
#define OUTBOX_SWEEP_LIMIT 1000
/* An unconfirmed event younger than this may be on its way from another
 * worker sharing the store: the sweep leaves it to that worker. */
#define OUTBOX_GRACE_MS 2000

/* A publish whose confirm has not been settled yet. Kept in publish order,
 * which is tag order within one connection. */
typedef struct pending_publish {
    uint64_t tag;
    publish_kind kind;
    uint64_t delivery_tag; /* PUB_RETRY, PUB_DEAD: the message to ack once confirmed */
    char *event_id;        /* owned: PUB_EVENT the event to mark in the outbox;
                            * PUB_REPLY the task answered, for the log */
    int state;             /* 0 waiting, 1 confirmed, -1 failed */
} pending_publish;

/* Event ids, owned. */
typedef struct id_list {
    char **ids;
    size_t n, cap;
} id_list;

struct service_publisher {
    amqp_link *link;         /* borrowed */
    amqp_refusals *refusals; /* borrowed: paths the broker refused; never published */
    store *store;            /* borrowed */
    wal_sync *sync;          /* borrowed: an outbox event goes out only once durable */
    char owner[STORE_OWNER_SIZE];
    pending_publish *pubs;
    size_t n_pubs, cap_pubs;
    id_list confirmed;     /* events confirmed, to mark in the next transaction */
    int64_t last_sweep_ms; /* monotonic, of the last outbox sweep; 0: none yet */
};

static void id_list_clear(id_list *list);

service_publisher *service_publish_new(amqp_link *link, store *store, wal_sync *sync,
                                       const char *owner, amqp_refusals *refusals, vf_error *err)
{
    service_publisher *pub = calloc(1, sizeof *pub);
    if (!pub) {
        vf_error_set(err, VF_ENOMEM, "out of memory making the publisher");
        return NULL;
    }
    pub->link = link;
    pub->refusals = refusals;
    pub->store = store;
    pub->sync = sync;
    snprintf(pub->owner, sizeof pub->owner, "%s", owner);
    amqp_link_set_confirm_callback(link, service_publish_on_confirm, pub);
    return pub;
}

void service_publish_free(service_publisher *pub)
{
    if (!pub)
        return;
    for (size_t i = 0; i < pub->n_pubs; i++)
        free(pub->pubs[i].event_id);
    free(pub->pubs);
    id_list_clear(&pub->confirmed);
    free(pub->confirmed.ids);
    free(pub);
}

/* ---- publishing ---- */

/* The index of the publish kept under tag, or n_pubs. */
static size_t find(const service_publisher *pub, uint64_t tag)
{
    size_t lo = 0, hi = pub->n_pubs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pub->pubs[mid].tag < tag)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < pub->n_pubs && pub->pubs[lo].tag == tag ? lo : pub->n_pubs;
}

int service_publish_state(const service_publisher *pub, uint64_t tag)
{
    size_t i = find(pub, tag);
    return i == pub->n_pubs ? -2 : pub->pubs[i].state;
}

size_t service_publish_in_flight(const service_publisher *pub)
{
    return pub->n_pubs;
}

void service_publish_link_lost(service_publisher *pub)
{
    for (size_t i = 0; i < pub->n_pubs; i++)
        if (pub->pubs[i].state == 0)
            pub->pubs[i].state = -1;
}

void service_publish_on_confirm(uint64_t tag, bool ok, const char *reason, void *user)
{
    service_publisher *publisher = user;
    size_t i = find(publisher, tag);
    if (i == publisher->n_pubs)
        return;
    pending_publish *pub = &publisher->pubs[i];
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

/* Room for one more publish, and the copy of its id. */
static int reserve(service_publisher *pub, const char *event_id, char **id_copy, vf_error *err)
{
    *id_copy = NULL;
    if (grow_array((void **)&pub->pubs, &pub->cap_pubs, pub->n_pubs + 1, sizeof *pub->pubs) < 0 ||
        (event_id && !(*id_copy = strdup(event_id)))) {
        vf_error_set(err, VF_ENOMEM, "out of memory tracking a publish");
        return -1;
    }
    return 0;
}

int service_publish_track(service_publisher *pub, uint64_t tag, publish_kind kind,
                          uint64_t delivery_tag, const char *event_id, vf_error *err)
{
    char *id_copy;
    if (reserve(pub, event_id, &id_copy, err) < 0)
        return -1;
    pub->pubs[pub->n_pubs++] = (pending_publish){tag, kind, delivery_tag, id_copy, 0};
    return 0;
}

int service_publish_tracked(service_publisher *pub, const char *exchange, const char *key,
                            const amqp_link_message *msg, publish_kind kind, uint64_t delivery_tag,
                            const char *event_id, vf_error *err)
{
    if (amqp_refusals_blocks(pub->refusals, exchange, key))
        return 1; /* the broker would close the channel again */
    char *id_copy;
    if (reserve(pub, event_id, &id_copy, err) < 0)
        return -1;
    uint64_t tag = 0;
    if (amqp_link_publish(pub->link, exchange, key, msg, &tag, err) < 0) {
        free(id_copy);
        return -1;
    }
    pub->pubs[pub->n_pubs++] = (pending_publish){tag, kind, delivery_tag, id_copy, 0};
    return 0;
}

static int id_list_add(id_list *list, char *id)
{
    if (grow_array((void **)&list->ids, &list->cap, list->n + 1, sizeof *list->ids) < 0)
        return -1;
    list->ids[list->n++] = id; /* takes ownership */
    return 0;
}

static void id_list_clear(id_list *list)
{
    for (size_t i = 0; i < list->n; i++)
        free(list->ids[i]);
    list->n = 0;
}

/* Forget the first n ids (marked by a transaction that committed); ids added
 * meanwhile stay. */
static void id_list_drop_first(id_list *list, size_t n)
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
bool service_publish_republish_waiting(const service_publisher *publisher)
{
    for (size_t i = 0; i < publisher->n_pubs; i++)
        if (publisher->pubs[i].kind == PUB_RETRY || publisher->pubs[i].kind == PUB_DEAD)
            return true;
    return false;
}

/* Act on the confirms that have arrived: a confirmed event is marked in the
 * next transaction; a confirmed retry or dead letter lets its message be
 * acked; a failed one hands the message back to the broker to be processed
 * again (its task is "retrying", so nothing is scheduled twice). */
int service_publish_settle(service_publisher *publisher, vf_error *err)
{
    size_t kept = 0;
    int rc = 0;
    bool connected = amqp_link_is_connected(publisher->link);
    for (size_t i = 0; i < publisher->n_pubs; i++) {
        pending_publish *pub = &publisher->pubs[i];
        if (pub->state == 0 && connected) {
            publisher->pubs[kept++] = *pub;
            continue;
        }
        if (pub->kind == PUB_EVENT && pub->state == 1) {
            if (id_list_add(&publisher->confirmed, pub->event_id) == 0)
                pub->event_id = NULL;
        } else if ((pub->kind == PUB_RETRY || pub->kind == PUB_DEAD) && connected && rc == 0) {
            rc = pub->state == 1 ? amqp_link_ack(publisher->link, pub->delivery_tag, false, err)
                                 : amqp_link_reject(publisher->link, pub->delivery_tag, true, err);
        }
        free(pub->event_id);
    }
    publisher->n_pubs = kept;
    return rc;
}

/* They stay listed until the marking transaction commits: a batch rolled
 * back (a store error, or another worker's conflicting reservation) keeps
 * them for the next one, instead of leaving them to the sweep to publish
 * again. */
int service_publish_mark_confirmed(service_publisher *publisher, const char *at, size_t *marked,
                                   vf_error *err)
{
    const id_list *list = &publisher->confirmed;
    *marked = list->n; /* confirms arriving meanwhile are appended after these */
    return store_outbox_mark_confirmed_many(publisher->store, (const char *const *)list->ids,
                                            *marked, at, err);
}

void service_publish_marks_committed(service_publisher *publisher, size_t marked)
{
    id_list_drop_first(&publisher->confirmed, marked);
}

size_t service_publish_confirmed_count(const service_publisher *publisher)
{
    return publisher->confirmed.n;
}

const char *service_publish_confirmed_id(const service_publisher *publisher, size_t i)
{
    return i < publisher->confirmed.n ? publisher->confirmed.ids[i] : NULL;
}

int service_publish_flush_confirmed_now(service_publisher *publisher, vf_error *err)
{
    if (publisher->confirmed.n == 0)
        return 0;
    char now[STORE_TIME_SIZE];
    store_now(now);
    if (store_begin(publisher->store, err) < 0)
        return -1;
    size_t marked = 0;
    if (service_publish_mark_confirmed(publisher, now, &marked, err) < 0 ||
        store_commit(publisher->store, err) < 0) {
        vf_error ignored;
        (void)store_rollback(publisher->store, &ignored);
        return -1;
    }
    id_list_drop_first(&publisher->confirmed, marked);
    return 0;
}

/* An outbox row whose path the broker refuses: a task's request (events
 * just stay in the outbox until a restart with the permission). */
typedef struct refused_row {
    char *id, *key, *body;
} refused_row;

typedef struct sweep_ctx {
    service_publisher *publisher;
    vf_error *err;
    int failed;
    size_t count;
    refused_row *refused;
    size_t n_refused, cap_refused;
} sweep_ctx;

/* Already on its way: published and awaiting its confirm, or confirmed and
 * awaiting its mark. */
static bool in_flight(const service_publisher *publisher, const char *event_id)
{
    for (size_t i = 0; i < publisher->n_pubs; i++)
        if (publisher->pubs[i].kind == PUB_EVENT && publisher->pubs[i].event_id &&
            strcmp(publisher->pubs[i].event_id, event_id) == 0)
            return true;
    return id_list_has(&publisher->confirmed, event_id);
}

static int sweep_one(const store_outbox_event *event, void *arg)
{
    sweep_ctx *ctx = arg;
    if (in_flight(ctx->publisher, event->id))
        return 0;
    amqp_link_message msg = {
        .body = event->body, .body_len = strlen(event->body), .message_id = event->id};
    int rc = service_publish_tracked(ctx->publisher, BROKER_EXCHANGE, event->routing_key, &msg,
                                     PUB_EVENT, 0, event->id, ctx->err);
    if (rc < 0) {
        ctx->failed = 1;
        return 1;
    }
    if (rc == 1 && strncmp(event->routing_key, "event.", 6) != 0) {
        if (grow_array((void **)&ctx->refused, &ctx->cap_refused, ctx->n_refused + 1,
                       sizeof *ctx->refused) == 0) {
            refused_row *row = &ctx->refused[ctx->n_refused];
            row->id = strdup(event->id);
            row->key = strdup(event->routing_key);
            row->body = strdup(event->body);
            ctx->n_refused += row->id && row->key && row->body;
        }
        return 0;
    }
    ctx->count += rc == 0;
    return 0;
}

/* The requests the broker refuses: their tasks end failed with the reason
 * and the rows are settled (refused_request.h), in one transaction. */
static int settle_refused(service_publisher *publisher, sweep_ctx *ctx, vf_error *err)
{
    if (ctx->n_refused == 0)
        return 0;
    int64_t now_ms = clock_wall_ms();
    if (store_begin(publisher->store, err) < 0)
        return -1;
    int failed = 0;
    for (size_t i = 0; i < ctx->n_refused; i++) {
        char why[512];
        snprintf(why, sizeof why,
                 "preempted, and its request could not be published again: the broker refuses "
                 "this worker's user routing key %s on exchange %s (403 ACCESS_REFUSED; a broker "
                 "set up from older definitions: grant it, docs/upgrading.md)",
                 ctx->refused[i].key, BROKER_EXCHANGE);
        int rc = refused_request_settle(publisher->store, ctx->refused[i].id, ctx->refused[i].body,
                                        why, now_ms, err);
        if (rc < 0) {
            (void)store_rollback(publisher->store, NULL);
            return -1;
        }
        failed += rc;
    }
    if (store_commit(publisher->store, err) < 0) {
        (void)store_rollback(publisher->store, NULL);
        return -1;
    }
    log_warn("outbox: %zu requests the broker refuses settled: %d waiting task(s) failed "
             "(exhausted) rather than publishing them again at every sweep",
             ctx->n_refused, failed);
    return 0;
}

static void sweep_ctx_close(sweep_ctx *ctx)
{
    for (size_t i = 0; i < ctx->n_refused; i++) {
        free(ctx->refused[i].id);
        free(ctx->refused[i].key);
        free(ctx->refused[i].body);
    }
    free(ctx->refused);
}

/* Wait until everything committed so far is durable. */
static int sync_all(service_publisher *publisher, vf_error *err)
{
    return wal_sync_wait(publisher->sync, wal_sync_request(publisher->sync), err) < 0 ? -1 : 0;
}

/* Publish every event the outbox holds unconfirmed that is not already on
 * its way: left by a crash, a lost connection or a nack, or written outside
 * a batch (the spare lifecycle). Oldest first; those the broker confirms are
 * marked. Runs at connect and every OUTBOX_SWEEP_INTERVAL_S, under load too.
 * `stopping`: the last sweep of a stopping worker takes the young events too
 * (a worker killed just after a commit leaves its last batch unpublished, and
 * nobody may sweep again for a while); another live worker's event in flight
 * then goes out twice, which consumers deduplicate. */
bool service_publish_sweep_due(const service_publisher *publisher)
{
    return publisher->last_sweep_ms == 0 ||
           clock_mono_ms() - publisher->last_sweep_ms >= (int64_t)OUTBOX_SWEEP_INTERVAL_S * 1000;
}

int service_publish_sweep_outbox(service_publisher *publisher, bool stopping, vf_error *err)
{
    publisher->last_sweep_ms = clock_mono_ms();
    /* An outbox event goes out only once its commit is durable. */
    if (sync_all(publisher, err) < 0)
        return SWEEP_SYNC;
    if (service_publish_settle(publisher, err) < 0)
        return SWEEP_BROKER;
    if (service_publish_flush_confirmed_now(publisher, err) < 0)
        return SWEEP_STORE;
    /* With several workers on one store, one of them (the lease holder)
     * sweeps; the others' own events go out as usual after their batches. */
    char grace[STORE_TIME_SIZE];
    store_format_time(clock_wall_ms() - OUTBOX_GRACE_MS, grace);
    int held = lease_hold(publisher->store, "housekeeping", publisher->owner, NULL, err);
    if (held < 0)
        return SWEEP_STORE;
    if (held == 0)
        return 0;
    /* Alone on the store, every unconfirmed event is ours or a dead worker's. */
    int others = 0;
    if (lease_others_alive(publisher->store, publisher->owner, &others, err) < 0)
        return SWEEP_STORE;
    sweep_ctx ctx = {publisher, err, 0, 0, NULL, 0, 0};
    int listed = store_outbox_pending(publisher->store, others && !stopping ? grace : NULL,
                                      OUTBOX_SWEEP_LIMIT, sweep_one, &ctx, err);
    int settled = listed == 0 && !ctx.failed ? settle_refused(publisher, &ctx, err) : 0;
    sweep_ctx_close(&ctx);
    if (listed < 0 || settled < 0)
        return SWEEP_STORE;
    if (ctx.failed)
        return SWEEP_BROKER;
    if (ctx.count == 0)
        return 0;
    if (amqp_link_wait_confirms(publisher->link, CONFIRM_TIMEOUT_MS, err) < 0 ||
        service_publish_settle(publisher, err) < 0)
        return SWEEP_BROKER;
    log_info("outbox: %zu events published from the outbox (unconfirmed earlier, or written "
             "outside a batch)",
             ctx.count);
    return service_publish_flush_confirmed_now(publisher, err) < 0 ? SWEEP_STORE : 0;
}
