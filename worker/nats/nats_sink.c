/* nats_sink: broker to JetStream, a window at a time (see nats_sink.h). */
#include "nats_sink.h"

#include <nats/nats.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amqp_link.h"
#include "backoff.h"
#include "broker_names.h"
#include "clock.h"
#include "grow.h"
#include "log.h"
#include "notify.h"

#define IDLE_WAIT_MS 100 /* the broker wait while nothing is in flight */
#define ACK_POLL_US 500  /* the wait for JetStream's acks while the window is full */
#define SUBJECT_MAX 256
#define EVENT_ID_MAX 128

/* A delivery published, its JetStream ack awaited (a ring, in delivery
 * order: the broker is acked up to the first one not yet acknowledged). */
typedef struct inflight {
    uint64_t tag;
    char id[EVENT_ID_MAX];
    bool acked;
} inflight;

struct nats_sink {
    const vf_config *config;
    amqp_link *link;
    natsConnection *nc;
    jsCtx *js;
    bool stream_ready;
    backoff retry;
    int64_t next_try_ms; /* monotonic: no connecting before */
    /* The window, under lock (the ack handler runs on the library's thread). */
    pthread_mutex_t lock;
    inflight *ring;
    size_t cap, head, count;
    int64_t oldest_ms; /* monotonic: when the head was published */
    int failed;        /* acks refused since the window was last emptied */
    char failure[256];
    /* Settled (acknowledged by JetStream) but not yet acked on the broker:
     * acked together, a quarter of the window at a time (or when the
     * window empties), not one broker frame per turn. The loop's alone. */
    uint64_t settled_tag;
    size_t settled;
    int64_t published, acked_total;
    bool ready_said;
};

/* JetStream's answer for one publish (the library's thread). */
static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    (void)js, (void)pa;
    nats_sink *s = closure;
    const char *id = NULL;
    if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &id) != NATS_OK)
        id = NULL;
    pthread_mutex_lock(&s->lock);
    if (pae) {
        if (s->failed++ == 0)
            snprintf(s->failure, sizeof s->failure, "%s (%d: %s)", natsStatus_GetText(pae->Err),
                     (int)pae->ErrCode, pae->ErrText ? pae->ErrText : "");
    } else {
        /* Acks come nearly in order: the first unacked slots first. */
        for (size_t i = 0; id && i < s->count; i++) {
            inflight *f = &s->ring[(s->head + i) % s->cap];
            if (!f->acked && strcmp(f->id, id) == 0) {
                f->acked = true;
                break;
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    natsMsg_Destroy(msg); /* with an AckHandler, ours to destroy (nats.h) */
}

nats_sink *nats_sink_new(const vf_config *config, vf_error *err)
{
    if (!config->nats.url) {
        vf_error_set(err, VF_ECONFIG,
                     "nats.url: not set; virtflow-nats has no server to publish to");
        return NULL;
    }
    nats_sink *s = calloc(1, sizeof *s);
    if (!s) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    s->config = config;
    pthread_mutex_init(&s->lock, NULL);
    backoff_init(&s->retry, 0.5, 30);
    s->cap = config->amqp.prefetch > 0 ? (size_t)config->amqp.prefetch : 256;
    if (!(s->ring = calloc(s->cap, sizeof *s->ring))) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        nats_sink_free(s);
        return NULL;
    }
    if (!(s->link = amqp_link_new(config, "virtflow-nats", err))) {
        nats_sink_free(s);
        return NULL;
    }
    return s;
}

static void nats_close(nats_sink *s)
{
    jsCtx_Destroy(s->js);
    s->js = NULL;
    if (s->nc)
        natsConnection_Destroy(s->nc);
    s->nc = NULL;
    s->stream_ready = false;
}

void nats_sink_free(nats_sink *s)
{
    if (!s)
        return;
    nats_close(s);
    amqp_link_free(s->link);
    pthread_mutex_destroy(&s->lock);
    free(s->ring);
    free(s);
}

/* The stream, created when missing: subjects PREFIX.>, file storage, the
 * duplicate window. One that exists is left as its operator made it. */
static int ensure_stream(nats_sink *s, vf_error *err)
{
    jsStreamInfo *info = NULL;
    jsErrCode code = 0;
    natsStatus st = js_GetStreamInfo(&info, s->js, s->config->nats.stream, NULL, &code);
    if (st == NATS_OK) {
        jsStreamInfo_Destroy(info);
        return 0;
    }
    if (st != NATS_NOT_FOUND) {
        vf_error_set(err, VF_EUNAVAILABLE, "JetStream stream %s: %s (%d)", s->config->nats.stream,
                     natsStatus_GetText(st), (int)code);
        return -1;
    }
    char subjects[SUBJECT_MAX];
    snprintf(subjects, sizeof subjects, "%s.>", s->config->nats.subject_prefix);
    const char *list[] = {subjects};
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    cfg.Name = s->config->nats.stream;
    cfg.Subjects = list;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Duplicates = (int64_t)s->config->nats.duplicate_window_s * 1000000000LL;
    st = js_AddStream(&info, s->js, &cfg, NULL, &code);
    if (st != NATS_OK && code != JSStreamNameExistErr) {
        vf_error_set(err, VF_EUNAVAILABLE, "creating JetStream stream %s: %s (%d)",
                     s->config->nats.stream, natsStatus_GetText(st), (int)code);
        return -1;
    }
    jsStreamInfo_Destroy(info);
    log_info("JetStream stream %s created on %s (file storage, duplicate window %d s)",
             s->config->nats.stream, subjects, s->config->nats.duplicate_window_s);
    return 0;
}

/* Connected to NATS with JetStream, the stream there. 0, or -1 with err. */
static int nats_ready(nats_sink *s, vf_error *err)
{
    if (s->nc && natsConnection_Status(s->nc) == NATS_CONN_STATUS_CONNECTED && s->stream_ready)
        return 0;
    nats_close(s);
    natsOptions *opts = NULL;
    natsStatus st = natsOptions_Create(&opts);
    if (st == NATS_OK)
        st = natsOptions_SetURL(opts, s->config->nats.url);
    if (st == NATS_OK)
        st = natsOptions_SetName(opts, "virtflow-nats");
    /* The library reconnects on its own while this process runs; a window
     * caught in between fails and is published again. */
    if (st == NATS_OK)
        st = natsOptions_SetMaxReconnect(opts, -1);
    if (st == NATS_OK)
        st = natsConnection_Connect(&s->nc, opts);
    natsOptions_Destroy(opts);
    if (st != NATS_OK) {
        vf_error_set(err, VF_EUNAVAILABLE, "NATS: %s", natsStatus_GetText(st));
        nats_close(s);
        return -1;
    }
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = (int64_t)s->cap;
    jo.PublishAsync.AckHandler = on_ack;
    jo.PublishAsync.AckHandlerClosure = s;
    if ((st = natsConnection_JetStream(&s->js, s->nc, &jo)) != NATS_OK) {
        vf_error_set(err, VF_EUNAVAILABLE, "JetStream: %s", natsStatus_GetText(st));
        nats_close(s);
        return -1;
    }
    if (ensure_stream(s, err) < 0) {
        nats_close(s);
        return -1;
    }
    s->stream_ready = true;
    log_info("publishing to JetStream stream %s (NATS connected)", s->config->nats.stream);
    return 0;
}

static int broker_ready(nats_sink *s, vf_error *err)
{
    if (amqp_link_is_connected(s->link))
        return 0;
    if (amqp_link_connect(s->link, err) < 0 ||
        amqp_link_consume(s->link, BROKER_NATS_QUEUE, err) < 0) {
        amqp_link_close(s->link);
        return -1;
    }
    log_info("consuming %s", BROKER_NATS_QUEUE);
    return 0;
}

/* One delivery into the window: published (or, not an event of a trusted
 * publisher, rejected). 0, or -1 when the publish could not even start. */
static int take(nats_sink *s, const amqp_link_delivery *d, vf_error *err)
{
    const char *key = d->routing_key ? d->routing_key : "";
    const char *why = d->too_large ? "message too large"
                      : !config_trusts_publisher(s->config, d->user_id)
                          ? "not from a trusted publisher (relay.trusted_publishers)"
                      : !d->message_id || !d->message_id[0] ? "no message_id (the event id)"
                      : strncmp(key, "event.", 6) != 0      ? "not an event's routing key"
                                                            : NULL;
    if (why) {
        log_warn("%s: %s; not published, parked in %s", d->message_id ? d->message_id : "(no id)",
                 why, BROKER_DEAD_QUEUE);
        return amqp_link_reject(s->link, d->delivery_tag, false, err);
    }
    char subject[SUBJECT_MAX];
    snprintf(subject, sizeof subject, "%s.%s", s->config->nats.subject_prefix, key + 6);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = d->message_id;
    if (strlen(d->message_id) >= EVENT_ID_MAX) {
        log_warn("%.64s...: an event id over %d bytes; not published, parked in %s", d->message_id,
                 EVENT_ID_MAX - 1, BROKER_DEAD_QUEUE);
        return amqp_link_reject(s->link, d->delivery_tag, false, err);
    }
    /* In the ring before the publish: its ack may come at once. */
    pthread_mutex_lock(&s->lock);
    inflight *f = &s->ring[(s->head + s->count) % s->cap];
    f->tag = d->delivery_tag;
    snprintf(f->id, sizeof f->id, "%s", d->message_id);
    f->acked = false;
    if (s->count++ == 0)
        s->oldest_ms = clock_mono_ms();
    pthread_mutex_unlock(&s->lock);
    natsStatus st = js_PublishAsync(s->js, subject, d->body, (int)d->body_len, &po);
    if (st != NATS_OK) {
        vf_error_set(err, VF_EUNAVAILABLE, "JetStream publish of %s: %s", d->message_id,
                     natsStatus_GetText(st));
        return -1;
    }
    s->published++;
    return 0;
}

/* Give up the window: the broker hands its deliveries out again (they go
 * to JetStream again, which drops those it has by their Nats-Msg-Id). */
static void abandon(nats_sink *s, const char *why)
{
    pthread_mutex_lock(&s->lock);
    size_t lost = s->count + s->settled;
    s->count = 0;
    s->failed = 0;
    pthread_mutex_unlock(&s->lock);
    s->settled = 0;
    log_warn("%s; the %zu events in flight come again from %s (JetStream drops the copies it "
             "has)",
             why, lost, BROKER_NATS_QUEUE);
    natsMsgList pending = {0};
    if (s->js && js_PublishAsyncGetPendingList(&pending, s->js) == NATS_OK)
        natsMsgList_Destroy(&pending);
    amqp_link_close(s->link);
    nats_close(s); /* afresh, the stream checked again */
    s->next_try_ms = clock_mono_ms() + (int64_t)(backoff_next(&s->retry) * 1000);
}

/* The acknowledged head of the ring off, the broker acked up to it at once.
 * Returns 0, or -1 after abandoning (a refused ack, or one too late). */
static int settle(nats_sink *s)
{
    uint64_t upto = 0;
    size_t done = 0;
    pthread_mutex_lock(&s->lock);
    while (s->count > 0 && s->ring[s->head].acked) {
        upto = s->ring[s->head].tag;
        s->head = (s->head + 1) % s->cap;
        s->count--;
        done++;
    }
    if (done && s->count)
        s->oldest_ms = clock_mono_ms();
    int failed = s->failed;
    bool late = s->count > 0 && clock_mono_ms() - s->oldest_ms > NATS_SINK_ACK_WAIT_MS;
    char failure[sizeof s->failure];
    memcpy(failure, s->failure, sizeof failure);
    pthread_mutex_unlock(&s->lock);
    vf_error err;
    vf_error_init(&err);
    if (done) {
        s->settled_tag = upto;
        s->settled += done;
    }
    bool empty = s->count == 0; /* the loop's own read: only it takes */
    if (s->settled && (s->settled >= s->cap / 4 || empty)) {
        if (amqp_link_ack(s->link, s->settled_tag, true, &err) < 0) {
            abandon(s, err.text); /* stored in JetStream: the copies are dropped there */
            return -1;
        }
        s->acked_total += (int64_t)s->settled;
        s->settled = 0;
    }
    if (failed || late) {
        char why[400];
        snprintf(why, sizeof why, "JetStream did not acknowledge the window: %s",
                 failed ? failure : "no answer within 5 s");
        abandon(s, why);
        return -1;
    }
    if (done)
        backoff_reset(&s->retry);
    return 0;
}

/* One turn: take what the broker has (up to the window), publish it, and
 * settle what JetStream acknowledged; the two overlap, so the broker and
 * JetStream both stay busy. */
static void one_turn(nats_sink *s)
{
    vf_error err;
    vf_error_init(&err);
    pthread_mutex_lock(&s->lock);
    size_t room = s->cap - s->count;
    bool idle = s->count == 0;
    pthread_mutex_unlock(&s->lock);
    int wait_ms = idle ? IDLE_WAIT_MS : 0;
    size_t taken = 0;
    for (; taken < room; taken++) {
        amqp_link_delivery d;
        int rc = amqp_link_next(s->link, &d, wait_ms, &err);
        wait_ms = 0;
        if (rc < 0) {
            abandon(s, err.text);
            return;
        }
        if (rc == 0)
            break;
        rc = take(s, &d, &err);
        amqp_link_delivery_close(&d);
        if (rc < 0) {
            abandon(s, err.text);
            return;
        }
    }
    if (settle(s) < 0)
        return;
    if (taken == 0 && !idle)
        usleep(ACK_POLL_US); /* the window waits for JetStream */
}

int nats_sink_run(nats_sink *s, volatile sig_atomic_t *stop, vf_error *err)
{
    (void)err;
    while (!*stop) {
        if (clock_mono_ms() < s->next_try_ms) {
            usleep(50 * 1000);
            continue;
        }
        vf_error e;
        vf_error_init(&e);
        if (nats_ready(s, &e) < 0 || broker_ready(s, &e) < 0) {
            double delay = backoff_next(&s->retry);
            log_warn("%s; next try in %.1f s", e.text, delay);
            s->next_try_ms = clock_mono_ms() + (int64_t)(delay * 1000);
            continue;
        }
        if (!s->ready_said) {
            notify_ready("consuming");
            s->ready_said = true;
        }
        one_turn(s);
    }
    /* What is in flight: its acks awaited (bounded), then acked. */
    int64_t until = clock_mono_ms() + NATS_SINK_ACK_WAIT_MS;
    while (s->js && amqp_link_is_connected(s->link) && clock_mono_ms() < until) {
        if (settle(s) < 0 || (s->count == 0 && s->settled == 0))
            break; /* all acked (settle acks what is left once the window is empty) */
        usleep(ACK_POLL_US);
    }
    log_info("stopped: %lld events published, %lld acknowledged by JetStream and acked",
             (long long)s->published, (long long)s->acked_total);
    return 0;
}
