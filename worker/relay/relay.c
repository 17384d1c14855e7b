/* relay: the consume -> record -> deliver loop (see relay.h). */
#include "relay.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "amqp_link.h"
#include "broker_names.h"
#include "backoff.h"
#include "events.h"
#include "ids.h"
#include "grow.h"
#include "hangup.h"
#include "log.h"
#include "notify.h"
#include "presence.h"
#include "reload.h"
#include "clock.h"
#include "relay_events.h"
#include "relay_metrics.h"
#include "relay_policy.h"
#include "relay_receivers.h"
#include "leases.h"
#include "relay_sender.h"
#include "retention.h"
#include "store.h"
#include "store_config.h"
#include "store_dead_letters.h"
#include "store_deliveries.h"
#include "store_hosts.h"
#include "store_outbox.h"
#include "store_receivers.h"

#define BATCH_MAX 256        /* events recorded per transaction at most */
#define IDLE_WAIT_MS 50      /* broker wait when no request is running */
#define POLL_WAIT_MS 20      /* libcurl wait when requests are running */
#define SCAN_INTERVAL_MS 100 /* due scan at least this often */
#define STOP_WAIT_MAX_MS 30000
#define ERROR_TEXT_MAX 4096       /* bytes of last_error kept */
#define LEASE_RETRY_MS 1000       /* a standby relay asks for the lease this often */
#define PARK_CONFIRM_WAIT_MS 5000 /* at stop: how long parked messages may wait for confirms */
#define SHOWN_TEXT_MAX 160        /* a publisher's string as logged, escaped */
#define OPS_ERROR_MAX 512         /* bytes of an error quoted in an operational event */

/* An event from an untrusted publisher, republished to virtflow.dlx and not
 * yet confirmed: its delivery is acked once the broker confirms the copy. */
typedef struct park {
    uint64_t publish_tag;
    uint64_t delivery_tag;
    bool settled, ok;
} park;

typedef struct incoming {
    uint64_t tag;
    char *event_id;
    char *body;
    size_t body_len;
    char *type;
} incoming;

typedef struct outcome {
    char *event_id;
    size_t receiver;
    const char *status; /* static string */
    int attempts;
    char next_at[STORE_TIME_SIZE]; /* "" = NULL */
    int code;
    char *error;
    char delivered_at[STORE_TIME_SIZE];
    double seconds;   /* the attempt's POST, for metrics; < 0 unknown */
    bool interrupted; /* given back at stop: not an attempt */
    int64_t epoch;    /* of the "deliveries" lease when the delivery was claimed */
} outcome;

struct relay {
    const vf_config *config;
    relay_receiver *receivers;
    size_t n_receivers;
    store *store;
    amqp_link *link;
    relay_sender *sender;
    backoff reconnect;
    int64_t next_connect_ms;
    bool consuming;
    incoming batch[BATCH_MAX];
    size_t n_batch;
    outcome *outcomes;
    size_t n_outcomes, cap_outcomes;
    relay_request *claimed;
    size_t n_claimed, cap_claimed;
    bool changed;                 /* something happened that may make more deliveries due */
    char owner[STORE_OWNER_SIZE]; /* this relay, in the store's "deliveries" lease */
    bool lease_held;              /* this relay sends; the others only record events */
    int64_t epoch;                /* of the lease while held: what claims and outcomes carry */
    bool standby_said;
    int64_t lease_checked_ms;
    int64_t last_scan_ms;
    uint64_t rng;
    park *parks; /* untrusted events on their way to virtflow.dead */
    size_t n_parks, cap_parks;
    relay_events *events;   /* its own: receiver.disabled, ... (relay_events.h) */
    relay_result result;    /* scratch, large */
    relay_metrics *metrics; /* relay.http_listen; NULL when off */
    retention *retention;   /* store.retention on the relay's store */
    /* SIGHUP: receivers and schedule_s come from reload_current(&reload). A
     * config read but not applied yet waits in reload_next while requests
     * run: no new one starts until they end, then the receivers are swapped. */
    reloader reload;
    vf_config *reload_next;
    presence self; /* this relay's heartbeat row (presence.h) */
};

static void format_ms(int64_t ms, char buf[STORE_TIME_SIZE])
{
    if (store_format_time(ms, buf) < 0)
        store_now(buf);
}

static double random01(relay *r)
{
    /* xorshift64*: jitter needs spread, not secrecy. */
    r->rng ^= r->rng >> 12;
    r->rng ^= r->rng << 25;
    r->rng ^= r->rng >> 27;
    return (double)((r->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* Runs inside amqp_link calls: only note the outcome (settle_parks and
 * settle_sent act): a parked event's copy, or an operational event. */
static void park_confirmed(uint64_t publish_tag, bool ok, const char *reason, void *user)
{
    relay *r = user;
    (void)reason; /* amqp_link logs failures */
    for (size_t i = 0; i < r->n_parks; i++) {
        if (r->parks[i].publish_tag == publish_tag && !r->parks[i].settled) {
            r->parks[i].settled = true;
            r->parks[i].ok = ok;
            return;
        }
    }
    (void)relay_events_confirmed(r->events, publish_tag, ok);
}

static void log_trusted_publishers(const vf_config *config)
{
    char list[512] = "";
    size_t used = 0;
    bool from_urls = config->relay.n_trusted_publishers == 0;
    char *const *names = from_urls ? config->amqp.urls : config->relay.trusted_publishers;
    size_t n = from_urls ? config->amqp.n_urls : config->relay.n_trusted_publishers;
    for (size_t i = 0; i < n && used < sizeof list; i++) {
        char shown[SHOWN_TEXT_MAX], url[256];
        const char *name = names[i];
        if (from_urls) {
            /* "amqp://user@host:port/vhost": the user is between // and @. */
            if (amqp_link_redact_url(names[i], url, sizeof url) < 0)
                continue;
            char *start = strstr(url, "://"), *at = strrchr(url, '@');
            if (!start || !at)
                continue;
            *at = '\0';
            name = start + 3;
        }
        relay_policy_escape(name, shown, sizeof shown);
        int w = snprintf(list + used, sizeof list - used, "%s\"%s\"", used ? ", " : "", shown);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    log_info("delivering only events published (AMQP user_id) by %s%s; others are parked in %s",
             list, from_urls ? " (relay.trusted_publishers not set: the users of amqp.urls)" : "",
             BROKER_DEAD_QUEUE);
}

/* The store's wait hook: heartbeats go on while a store call waits on a slow
 * or frozen PostgreSQL server (the worker's keep_link_alive, service.c). */
static void keep_link_alive(void *user)
{
    relay *r = user;
    amqp_link_keepalive(r->link);
}

static void log_receivers(const relay *r)
{
    size_t enabled = 0;
    for (size_t i = 0; i < r->n_receivers; i++) {
        if (!r->receivers[i].config->enabled)
            continue;
        enabled++;
        const config_receiver *rc = r->receivers[i].config;
        char pace[48] = "no pace", breaker[64] = "never disabled";
        if (rc->rate_per_s > 0)
            snprintf(pace, sizeof pace, "%g deliveries/s", rc->rate_per_s);
        if (rc->disable_after_s > 0)
            snprintf(breaker, sizeof breaker, "disabled after %d s failing, probed every %d s",
                     rc->disable_after_s, rc->probe_s);
        log_info("receiver %s: %s, %zu secret%s, timeout %.1f s, max_in_flight %d, %s, %s%s",
                 rc->name, r->receivers[i].safe_url, r->receivers[i].n_keys,
                 r->receivers[i].n_keys == 1 ? "" : "s", rc->timeout_s, rc->max_in_flight, pace,
                 breaker, rc->n_schedule ? ", its own schedule_s" : "");
    }
    if (enabled == 0)
        log_warn("no enabled receiver: events are acked and recorded nowhere");
}

relay *relay_new(const vf_config *config, vf_error *err)
{
    relay *r = calloc(1, sizeof *r);
    if (!r) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    r->config = config;
    reload_init(&r->reload, config, CONFIG_RELOADS_RELAY);
    r->reload.always = true; /* secret files rotate under the same names */
    r->rng = (uint64_t)clock_wall_ms() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)r;
    if (!r->rng)
        r->rng = 88172645463325252ULL;
    backoff_init(&r->reconnect, 0.5, 30);
    if (relay_receivers_load(config, &r->receivers, &r->n_receivers, err) < 0)
        goto fail;
    r->sender = relay_sender_new(r->receivers, r->n_receivers, err);
    if (!r->sender)
        goto fail;
    if (!(r->events = relay_events_new())) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        goto fail;
    }
    r->store = store_config_open(config, STORE_READ_WRITE, err);
    if (!r->store)
        goto fail;
    store_owner_name(r->owner);
    presence_init(&r->self, r->owner, "virtflow-relay");
    /* Finished deliveries would otherwise pile up in the relay's store for
     * ever: the worker's retention job never sees a store of the relay's own. */
    r->retention = retention_start(config, r->owner, err);
    if (!r->retention)
        goto fail;
    r->link = amqp_link_new(config, "virtflow-relay", err);
    if (!r->link)
        goto fail;
    amqp_link_set_confirm_callback(r->link, park_confirmed, r);
    store_set_wait_hook(r->store, keep_link_alive, r);
    log_trusted_publishers(config);
    r->metrics = relay_metrics_start(config, err);
    if (!r->metrics && vf_error_is_set(err))
        goto fail;
    log_receivers(r);
    return r;
fail:
    relay_free(r);
    return NULL;
}

static void incoming_clear(incoming *in)
{
    free(in->event_id);
    free(in->body);
    free(in->type);
    memset(in, 0, sizeof *in);
}

static void outcome_clear(outcome *o)
{
    free(o->event_id);
    free(o->error);
    memset(o, 0, sizeof *o);
}

static void request_clear(relay_request *q)
{
    free(q->event_id);
    free(q->body);
    memset(q, 0, sizeof *q);
}

/* A claim that will not be sent (the turn failed, the lease moved, the
 * request could not start): a probe's place is free again. */
static void drop_claim(relay *r, relay_request *q)
{
    if (q->probe && q->receiver < r->n_receivers)
        r->receivers[q->receiver].flow.probing = false;
    request_clear(q);
}

void relay_free(relay *r)
{
    if (!r)
        return;
    relay_metrics_stop(r->metrics);
    retention_stop(r->retention);
    for (size_t i = 0; i < r->n_batch; i++)
        incoming_clear(&r->batch[i]);
    for (size_t i = 0; i < r->n_outcomes; i++)
        outcome_clear(&r->outcomes[i]);
    free(r->outcomes);
    for (size_t i = 0; i < r->n_claimed; i++)
        request_clear(&r->claimed[i]);
    free(r->claimed);
    free(r->parks);
    relay_events_free(r->events);
    relay_sender_free(r->sender);
    if (r->store)
        store_set_wait_hook(r->store, NULL, NULL); /* it uses the link */
    amqp_link_free(r->link);
    store_close(r->store);
    relay_receivers_free(r->receivers, r->n_receivers);
    config_free(r->reload_next);
    reload_close(&r->reload);
    free(r);
}

/* ---- broker side ---- */

/* The store's record of a message on its way to virtflow.dead (GET
 * /v1/dead-letters reads it there, never the queue). A record that fails
 * is logged: the message is parked all the same. */
static void record_park(relay *r, const amqp_link_delivery *d, const char *why)
{
    char now[STORE_TIME_SIZE];
    store_now(now);
    store_dead_letter_park parked = {.routing_key = d->routing_key,
                                     .message_id = d->message_id,
                                     .reason = why,
                                     .parked_by = "relay",
                                     .parked_at = now,
                                     .body = d->body,
                                     .body_len = d->body ? d->body_len : 0,
                                     .body_bytes = d->body_size};
    vf_error err;
    vf_error_init(&err);
    if (store_dead_letter_record(r->store, &parked, &err) < 0)
        log_warn("recording a dead letter in the store: %s", err.text);
}

static void reject(relay *r, const amqp_link_delivery *d, const char *why)
{
    log_warn("event %s: %s; dead-lettered", d->message_id ? d->message_id : "(no id)", why);
    record_park(r, d, why);
    vf_error err;
    vf_error_init(&err);
    if (amqp_link_reject(r->link, d->delivery_tag, false, &err) < 0)
        log_warn("rejecting a message: %s", err.text);
}

/* An event from a publisher not in relay.trusted_publishers is evidence of
 * a forgery or a misconfiguration, never a webhook: park it with the reason
 * for an operator to see (virtflowctl dead list), ack it once parked. */
static void park_untrusted(relay *r, const amqp_link_delivery *d)
{
    char id[SHOWN_TEXT_MAX], user[SHOWN_TEXT_MAX], why[2 * SHOWN_TEXT_MAX + 128];
    relay_policy_escape(d->message_id, id, sizeof id);
    relay_policy_escape(d->user_id, user, sizeof user);
    if (d->user_id)
        snprintf(why, sizeof why,
                 "not delivered: published by AMQP user \"%s\", not in relay.trusted_publishers",
                 user);
    else
        snprintf(why, sizeof why,
                 "not delivered: published without an AMQP user_id, so not by a trusted "
                 "publisher (relay.trusted_publishers)");
    log_warn("event %s (routing key %s): %s; parked in %s", id,
             d->routing_key ? d->routing_key : "(none)", why, BROKER_DEAD_QUEUE);
    if (grow_array((void **)&r->parks, &r->cap_parks, r->n_parks + 1, sizeof *r->parks) < 0) {
        log_error("out of memory parking event %s; the broker will redeliver it", id);
        return;
    }
    uint64_t tag = 0;
    vf_error err;
    vf_error_init(&err);
    if (amqp_link_dead_letter(r->link, d, why, &tag, &err) < 0) {
        log_warn("parking event %s: %s; the broker will redeliver it", id, err.text);
        return;
    }
    record_park(r, d, why);
    r->parks[r->n_parks++] = (park){.publish_tag = tag, .delivery_tag = d->delivery_tag};
    relay_metrics_parked(r->metrics);
}

/* Ack what is safely parked. A copy the broker did not confirm is rejected
 * instead: the queue's dead-letter exchange still parks it (x-death reason
 * "rejected", without our header), and it is never delivered. */
static void settle_parks(relay *r)
{
    size_t kept = 0;
    for (size_t i = 0; i < r->n_parks; i++) {
        park *p = &r->parks[i];
        if (!p->settled) {
            r->parks[kept++] = *p;
            continue;
        }
        vf_error err;
        vf_error_init(&err);
        int rc = p->ok ? amqp_link_ack(r->link, p->delivery_tag, false, &err)
                       : amqp_link_reject(r->link, p->delivery_tag, false, &err);
        if (rc < 0)
            log_warn("settling a parked event: %s (the broker redelivers it)", err.text);
    }
    r->n_parks = kept;
}

/* Keep a delivery for recording, or reject it when it is not an event. */
static void take_delivery(relay *r, amqp_link_delivery *d)
{
    if (d->too_large || !d->body) {
        /* Never read, so it cannot be republished: the broker parks it whole. */
        reject(r, d, "message larger than amqp.max_message_bytes");
        return;
    }
    if (!config_trusts_publisher(r->config, d->user_id)) {
        park_untrusted(r, d);
        return;
    }
    char *id = NULL, *type = NULL;
    vf_error perr;
    vf_error_init(&perr);
    if (relay_policy_event(d->body, d->body_len, d->message_id, &id, &type, &perr) < 0) {
        if (perr.code == VF_ENOMEM) {
            log_error("out of memory keeping an event; the broker will redeliver it");
            return;
        }
        reject(r, d, perr.text);
        return;
    }
    incoming *in = &r->batch[r->n_batch];
    in->tag = d->delivery_tag;
    in->event_id = id;
    in->type = type;
    /* The body is sent byte for byte as it came off the queue. */
    in->body = (char *)d->body;
    in->body_len = d->body_len;
    d->body = NULL;
    r->n_batch++;
}

static void broker_step(relay *r, int wait_ms)
{
    int64_t now = clock_wall_ms();
    if (!amqp_link_is_connected(r->link)) {
        if (now < r->next_connect_ms)
            return;
        vf_error err;
        vf_error_init(&err);
        if (amqp_link_connect(r->link, &err) < 0 ||
            (!r->consuming && amqp_link_consume(r->link, BROKER_RELAY_QUEUE, &err) < 0)) {
            double delay = backoff_next(&r->reconnect);
            relay_metrics_link(r->metrics, false, false);
            log_warn("broker: %s; next try in %.1f s (deliveries go on)", err.text, delay);
            r->next_connect_ms = clock_wall_ms() + (int64_t)(delay * 1000);
            return;
        }
        r->consuming = true;
        /* Confirms owed on the old connection never come: those events are
         * the outbox sweep's again. */
        relay_events_link_reset(r->events);
        relay_metrics_link(r->metrics, true, true);
        backoff_reset(&r->reconnect);
        log_info("consuming %s", BROKER_RELAY_QUEUE);
        if (!r->reload_next)
            notify_ready("consuming");
    }
    while (r->n_batch < BATCH_MAX) {
        amqp_link_delivery d;
        vf_error err;
        vf_error_init(&err);
        int rc = amqp_link_next(r->link, &d, wait_ms, &err);
        wait_ms = 0;
        if (rc < 0) {
            relay_metrics_link(r->metrics, false, false);
            log_warn("broker: %s; reconnecting", err.text);
            r->next_connect_ms = clock_wall_ms() + (int64_t)(backoff_next(&r->reconnect) * 1000);
            return;
        }
        if (rc == 0)
            break;
        take_delivery(r, &d);
        amqp_link_delivery_close(&d);
    }
    settle_parks(r);
    relay_events_settle(r->events, r->store);
    if (r->lease_held)
        relay_events_sweep(r->events, r->store, r->link);
}

/* ---- delivery side ---- */

static outcome *new_outcome(relay *r)
{
    if (grow_array((void **)&r->outcomes, &r->cap_outcomes, r->n_outcomes + 1,
                   sizeof *r->outcomes) < 0)
        return NULL;
    outcome *o = &r->outcomes[r->n_outcomes++];
    memset(o, 0, sizeof *o);
    return o;
}

/* "HTTP 500: <body>" with control characters replaced, bounded. */
static char *describe_failure(const relay_result *res)
{
    char *text = malloc(ERROR_TEXT_MAX + 64);
    if (!text)
        return NULL;
    if (!res->transport_ok) {
        snprintf(text, ERROR_TEXT_MAX, "%s", res->error);
        return text;
    }
    int n = snprintf(text, 64, "HTTP %ld", res->status);
    if (res->body_len > 0) {
        size_t at = (size_t)n;
        text[at++] = ':';
        text[at++] = ' ';
        for (size_t i = 0; i < res->body_len && at < ERROR_TEXT_MAX; i++) {
            unsigned char c = (unsigned char)res->body[i];
            text[at++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
        }
        text[at] = '\0';
    }
    return text;
}

/* An error text quoted in an operational event: its first OPS_ERROR_MAX
 * bytes, cut on a character boundary; a text that is not UTF-8 (a
 * receiver's answer may be anything) says so instead. */
static json_t *error_json(const char *text)
{
    size_t len = text ? strnlen(text, OPS_ERROR_MAX + 1) : 0;
    if (len > OPS_ERROR_MAX)
        for (len = OPS_ERROR_MAX; len > 0 && ((unsigned char)text[len] & 0xC0) == 0x80; len--)
            ;
    json_t *value = json_stringn(text ? text : "", len);
    return value ? value : json_string("(an answer that is not UTF-8)");
}

/* A store time of `ms` as a JSON string. */
static json_t *time_json(int64_t ms)
{
    char at[STORE_TIME_SIZE];
    format_ms(ms, at);
    return json_string(at);
}

/* delivery.exhausted for a delivery that used its last attempt, unless it
 * carried an operational event itself: a receiver failing those would
 * otherwise feed itself events about its own failures. */
static void exhausted(relay *r, const relay_request *q, const outcome *o)
{
    json_t *event = json_loadb(q->body, q->body_len, 0, NULL);
    const char *type = json_string_value(json_object_get(event, "type"));
    int known = event_types_find(type);
    if (!type || (known >= 0 && event_types_is_operational((event_type)known))) {
        json_decref(event);
        return;
    }
    json_t *data = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:o}", "event_id", o->event_id,
                             "event_type", type, "receiver", r->receivers[o->receiver].config->name,
                             "status", "failed", "attempts", o->attempts, "last_code", o->code,
                             "last_error", error_json(o->error));
    json_t *task_id = json_object_get(json_object_get(event, "data"), "task_id");
    if (data && json_is_string(task_id))
        json_object_set(data, "task_id", task_id);
    json_decref(event);
    if (data)
        relay_events_add(r->events, EVENT_DELIVERY_EXHAUSTED, data);
}

/* receiver.disabled or receiver.recovered, and the log line. */
static void breaker_moved(relay *r, relay_receiver *rcv, relay_flow_change change,
                          int64_t disabled_at_ms, int64_t now)
{
    const config_receiver *rc = rcv->config;
    if (change == RELAY_FLOW_DISABLED) {
        log_warn("receiver %s: every attempt failed for %d s (since %lld); disabled: one delivery "
                 "is tried every %d s until one succeeds, the others wait",
                 rc->name, rc->disable_after_s, (long long)(rcv->flow.failing_since_ms / 1000),
                 rc->probe_s);
        json_t *data =
            json_pack("{s:s, s:s, s:o, s:o, s:i, s:i, s:o}", "receiver", rc->name, "status",
                      "disabled", "failing_since", time_json(rcv->flow.failing_since_ms),
                      "disabled_at", time_json(now), "probe_s", rc->probe_s, "last_code",
                      rcv->last_code, "last_error", error_json(rcv->last_error));
        if (data)
            relay_events_add(r->events, EVENT_RECEIVER_DISABLED, data);
    } else if (change == RELAY_FLOW_ENABLED) {
        log_info("receiver %s: a probe succeeded; enabled again (disabled for %lld s)", rc->name,
                 (long long)((now - disabled_at_ms) / 1000));
        json_t *data =
            json_pack("{s:s, s:s, s:o, s:o}", "receiver", rc->name, "status", "enabled",
                      "disabled_at", time_json(disabled_at_ms), "recovered_at", time_json(now));
        if (data)
            relay_events_add(r->events, EVENT_RECEIVER_RECOVERED, data);
    }
    relay_metrics_receiver_disabled(r->metrics, rc->name, rcv->flow.disabled);
}

static void record_result(relay *r, relay_result *res)
{
    relay_request *q = &res->request;
    relay_receiver *rcv = &r->receivers[q->receiver];
    int64_t now = clock_wall_ms();
    outcome *o = new_outcome(r);
    if (!o) {
        /* The row stays 'delivering' and is retried after the next restart. */
        log_error("out of memory recording a delivery of event %s", q->event_id);
        request_clear(q);
        return;
    }
    o->event_id = q->event_id;
    q->event_id = NULL;
    o->receiver = q->receiver;
    o->epoch = q->epoch;
    o->attempts = q->attempts_before + 1;
    o->code = res->transport_ok ? (int)res->status : 0;
    o->seconds = q->started_us ? (double)(clock_mono_us() - q->started_us) / 1e6 : -1;
    vf_log_set_ids(&(vf_log_ids){.event = o->event_id, .receiver = rcv->config->name});
    bool success = res->transport_ok && res->status >= 200 && res->status < 300;
    const config_receiver *rc = rcv->config;
    int64_t disabled_at_ms = rcv->flow.disabled_at_ms;
    relay_flow_change change = relay_flow_outcome(&rcv->flow, rc, success, q->probe, now);
    if (success) {
        o->status = "delivered";
        format_ms(now, o->delivered_at);
        log_debug("event %s delivered to %s (HTTP %ld, attempt %d)", o->event_id, rc->name,
                  res->status, o->attempts);
    } else {
        o->error = describe_failure(res);
        rcv->last_code = o->code;
        snprintf(rcv->last_error, sizeof rcv->last_error, "%s", o->error ? o->error : "");
        double retry_after = -1;
        if (res->transport_ok && res->retry_after[0] &&
            relay_policy_retry_after(res->retry_after, now / 1000, &retry_after) < 0)
            retry_after = -1;
        /* The receiver's own schedule, else relay.schedule_s. */
        const vf_config *current = reload_current(&r->reload);
        double delay =
            relay_policy_next_delay(rc->n_schedule ? rc->schedule_s : current->relay.schedule_s,
                                    rc->n_schedule ? rc->n_schedule : current->relay.n_schedule,
                                    o->attempts, retry_after, random01(r));
        char reason[96];
        if (res->transport_ok)
            snprintf(reason, sizeof reason, "HTTP %ld", res->status);
        else
            snprintf(reason, sizeof reason, "%.90s", res->error);
        if (q->probe && rcv->flow.disabled) {
            /* A failed probe is the receiver's, not the delivery's: no
             * attempt used up, it waits for the next probe or the recovery. */
            o->status = "pending";
            o->attempts = q->attempts_before;
            format_ms(now + (int64_t)rc->probe_s * 1000, o->next_at);
            log_info("event %s to %s: probe failed (%s); receiver stays disabled, next probe in "
                     "%d s",
                     o->event_id, rc->name, reason, rc->probe_s);
        } else if (delay < 0) {
            o->status = "failed";
            log_warn("event %s to %s: attempt %d failed (%s); no attempts left, delivery failed",
                     o->event_id, rc->name, o->attempts, reason);
            exhausted(r, q, o);
        } else {
            o->status = "pending";
            format_ms(now + (int64_t)(delay * 1000), o->next_at);
            log_warn("event %s to %s: attempt %d failed (%s); next attempt in %.1f s", o->event_id,
                     rc->name, o->attempts, reason, delay);
        }
    }
    if (change != RELAY_FLOW_SAME)
        breaker_moved(r, rcv, change, disabled_at_ms, now);
    vf_log_set_ids(NULL);
    free(q->body);
    q->body = NULL;
    r->changed = true;
}

typedef struct claim_ctx {
    relay *r;
    size_t receiver;
    bool probe; /* the one claimed is a disabled receiver's probe */
    int claimed;
} claim_ctx;

static int claim_one(const store_delivery *d, void *user)
{
    claim_ctx *c = user;
    relay *r = c->r;
    if (grow_array((void **)&r->claimed, &r->cap_claimed, r->n_claimed + 1, sizeof *r->claimed) < 0)
        return 1;
    relay_request *q = &r->claimed[r->n_claimed];
    memset(q, 0, sizeof *q);
    q->event_id = strdup(d->event_id);
    q->body = strdup(d->body);
    if (!q->event_id || !q->body) {
        request_clear(q);
        return 1;
    }
    q->body_len = strlen(d->body);
    q->receiver = c->receiver;
    q->attempts_before = d->attempts;
    q->epoch = r->epoch;
    q->probe = c->probe;
    r->n_claimed++;
    c->claimed++;
    return 0;
}

/* Several relays may share one store: every one records the events it
 * consumes, and the holder of the "deliveries" lease (leases.h) sends them,
 * so no delivery is sent by two relays at once. Taking the lease at a new
 * epoch, a relay makes due again what the previous holder left 'delivering':
 * that holder is gone (or paused: its late outcomes are fenced), and the
 * outcome unknown. Renewing its own lease (the same epoch) it requeues
 * nothing: those rows are its own requests in flight. A renewal that fails
 * (a busy or unreachable store) changes nothing: it does not show another
 * holder, and nothing is claimed or recorded without a fenced commit. */
static relay_receiver *receiver_named(relay_receiver *receivers, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(receivers[i].config->name, name) == 0)
            return &receivers[i];
    return NULL;
}

/* A store time ("2026-11-22T01:02:03.456Z") in ms; 0 for none. */
static int64_t stored_ms(const char *text)
{
    int64_t unix_s = 0;
    if (!text || ids_parse_time(text, &unix_s) != 0)
        return 0;
    const char *digit = strchr(text, '.');
    int64_t ms = 0;
    for (int i = 0; i < 3; i++) {
        bool more = digit && isdigit((unsigned char)digit[1]);
        ms = ms * 10 + (more ? digit[1] - '0' : 0);
        digit = more ? digit + 1 : NULL;
    }
    return unix_s * 1000 + ms;
}

static int restore_breaker(const store_receiver_state *state, void *user)
{
    relay *r = user;
    relay_receiver *rcv = receiver_named(r->receivers, r->n_receivers, state->receiver);
    if (!rcv)
        return 0; /* a receiver no longer configured */
    bool disabled = strcmp(state->state, "disabled") == 0;
    relay_flow_restore(&rcv->flow, disabled, stored_ms(state->failing_since),
                       stored_ms(state->disabled_at), clock_wall_ms());
    snprintf(rcv->last_error, sizeof rcv->last_error, "%s",
             state->last_error ? state->last_error : "");
    relay_metrics_receiver_disabled(r->metrics, rcv->config->name, disabled);
    if (disabled)
        log_warn("receiver %s: disabled since %s (receiver_states); probed now, then every %d s",
                 rcv->config->name, state->disabled_at ? state->disabled_at : "?",
                 rcv->config->probe_s);
    return 0;
}

/* The breakers as the last relay sending left them: a relay that takes the
 * lease goes on probing a receiver disabled before, rather than trying it at
 * full pace for another disable_after_s. */
static void restore_breakers(relay *r)
{
    vf_error err;
    vf_error_init(&err);
    if (store_receiver_states(r->store, restore_breaker, r, &err) < 0)
        log_warn("receivers: %s; their breakers start enabled", err.text);
}

static bool hold_deliveries(relay *r)
{
    int64_t now = clock_wall_ms();
    if (now - r->lease_checked_ms < (r->lease_held ? LEASE_RENEW_S * 1000 : LEASE_RETRY_MS))
        return r->lease_held;
    r->lease_checked_ms = now;
    vf_error err;
    vf_error_init(&err);
    int64_t epoch = 0;
    int held = lease_hold(r->store, "deliveries", r->owner, &epoch, &err);
    if (held < 0) {
        log_warn("deliveries: %s; the lease is checked again (nothing is claimed or recorded "
                 "until the store answers)",
                 err.text);
        return r->lease_held;
    }
    if (held > 0 && (!r->lease_held || epoch != r->epoch)) {
        char at[STORE_TIME_SIZE];
        format_ms(now, at);
        int requeued = store_deliveries_requeue(r->store, at, &err);
        if (requeued < 0) {
            log_warn("deliveries: %s; trying again", err.text);
            r->lease_held = false;
            return false;
        }
        if (requeued > 0)
            log_warn("%d deliveries were interrupted by the last stop of the relay sending them; "
                     "they are due again",
                     requeued);
        r->epoch = epoch;
        restore_breakers(r);
        log_info("deliveries: this relay sends them (it holds the store's lease, epoch %lld)",
                 (long long)epoch);
    } else if (held == 0 && r->lease_held) {
        log_warn("deliveries: another relay holds the lease now; this one only records events");
    } else if (held == 0 && !r->standby_said) {
        log_info("deliveries: another relay sends them; this one records events and stands by");
        r->standby_said = true;
    }
    r->lease_held = held > 0;
    return r->lease_held;
}

/* Inside the turn's transaction: outcomes and claims are recorded only while
 * this relay holds the lease at the epoch they were made under. Those of an
 * older epoch are dropped: the holder of a later one made those deliveries
 * due again. Returns 0, or -1 with err. */
static int fence_turn(relay *r, vf_error *err)
{
    if (r->n_outcomes == 0 && r->n_claimed == 0 && relay_events_waiting(r->events) == 0)
        return 0;
    int current = 0;
    if (r->lease_held) {
        current = store_lease_fence(r->store, "deliveries", r->owner, r->epoch, err);
        if (current < 0)
            return -1;
    }
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < r->n_outcomes; i++) {
        if (current && r->outcomes[i].epoch == r->epoch) {
            r->outcomes[kept++] = r->outcomes[i];
            continue;
        }
        outcome_clear(&r->outcomes[i]);
        dropped++;
    }
    r->n_outcomes = kept;
    if (!current) {
        for (size_t i = 0; i < r->n_claimed; i++)
            drop_claim(r, &r->claimed[i]);
        dropped += r->n_claimed;
        r->n_claimed = 0;
    }
    if (dropped > 0)
        log_warn("deliveries: fenced: %zu outcomes or claims made under an older epoch of the "
                 "lease are not recorded (another relay took it over and sends them again)",
                 dropped);
    if (!current) {
        /* Made from outcomes this relay no longer records: the new holder
         * decides about its receivers. */
        relay_events_drop(r->events);
    }
    if (!current && r->lease_held) {
        log_warn("deliveries: another relay took the lease over (this one held epoch %lld); "
                 "this one only records events",
                 (long long)r->epoch);
        r->lease_held = false;
        r->lease_checked_ms = clock_wall_ms();
    }
    return 0;
}

/* Read the due deliveries of every receiver into r->claimed, as many as
 * its free slots, its pace and its breaker allow (relay_flow.h). */
static int scan_due(relay *r, const char *now, vf_error *err)
{
    int64_t mono_ms = clock_mono_us() / 1000, wall_ms = clock_wall_ms();
    for (size_t i = 0; i < r->n_receivers; i++) {
        relay_receiver *rcv = &r->receivers[i];
        if (!rcv->config->enabled)
            continue;
        claim_ctx c = {r, i, false, 0};
        int allowed = relay_flow_allowance(&rcv->flow, rcv->config,
                                           rcv->config->max_in_flight - rcv->in_flight, mono_ms,
                                           wall_ms, &c.probe);
        if (allowed <= 0)
            continue;
        if (store_deliveries_due_receiver(r->store, rcv->config->name, now, allowed, claim_one, &c,
                                          err) < 0)
            return -1;
        relay_flow_claimed(&rcv->flow, c.claimed, c.probe);
    }
    return 0;
}

/* A receiver's breaker as receiver_states keeps it. */
static int write_receiver_state(relay *r, const relay_receiver *rcv, const char *now, vf_error *err)
{
    char failing_since[STORE_TIME_SIZE] = "", disabled_at[STORE_TIME_SIZE] = "";
    if (rcv->flow.failing_since_ms)
        format_ms(rcv->flow.failing_since_ms, failing_since);
    if (rcv->flow.disabled)
        format_ms(rcv->flow.disabled_at_ms, disabled_at);
    store_receiver_state state = {.receiver = rcv->config->name,
                                  .state = rcv->flow.disabled ? "disabled" : "enabled",
                                  .failing_since = failing_since[0] ? failing_since : NULL,
                                  .disabled_at = disabled_at[0] ? disabled_at : NULL,
                                  .last_error = rcv->flow.failing_since_ms ? rcv->last_error : NULL,
                                  .updated_at = now};
    return store_receiver_state_put(r->store, &state, err);
}

/* The breakers that moved and the operational events of this turn, in its
 * transaction: recorded with the outcomes that caused them. */
static int write_operations(relay *r, const char *now, vf_error *err)
{
    for (size_t i = 0; i < r->n_receivers; i++)
        if (r->receivers[i].flow.changed && write_receiver_state(r, &r->receivers[i], now, err) < 0)
            return -1;
    return relay_events_write(r->events, r->store, now, err);
}

static int write_turn(relay *r, const char *now, vf_error *err)
{
    for (size_t i = 0; i < r->n_batch; i++) {
        incoming *in = &r->batch[i];
        for (size_t k = 0; k < r->n_receivers; k++) {
            const config_receiver *rc = r->receivers[k].config;
            if (!rc->enabled || !relay_policy_match_any(rc->events, rc->n_events, in->type))
                continue;
            if (store_delivery_add(r->store, in->event_id, rc->name, in->body, now, err) < 0)
                return -1;
        }
    }
    for (size_t i = 0; i < r->n_outcomes; i++) {
        outcome *o = &r->outcomes[i];
        store_delivery_change c = {
            .event_id = o->event_id,
            .receiver = r->receivers[o->receiver].config->name,
            .status = o->status,
            .attempts = o->attempts,
            .next_attempt_at = o->next_at[0] ? o->next_at : NULL,
            .last_code = o->code,
            .last_error = o->error,
            .delivered_at = o->delivered_at[0] ? o->delivered_at : NULL,
        };
        if (store_delivery_update(r->store, &c, err) < 0)
            return -1;
    }
    for (size_t i = 0; i < r->n_claimed; i++) {
        relay_request *q = &r->claimed[i];
        store_delivery_change c = {
            .event_id = q->event_id,
            .receiver = r->receivers[q->receiver].config->name,
            .status = "delivering",
            .attempts = q->attempts_before,
        };
        if (store_delivery_update(r->store, &c, err) < 0)
            return -1;
    }
    return r->lease_held ? write_operations(r, now, err) : 0;
}

/* One transaction: record received events, outcomes and claims; then ack and
 * start. On failure nothing is acked or started and the same work is tried
 * again next turn (claims are simply read again). */
static void commit_turn(relay *r, bool scan)
{
    char now[STORE_TIME_SIZE];
    format_ms(clock_wall_ms(), now);
    vf_error err;
    vf_error_init(&err);
    /* The lease is renewed while a reload waits, but nothing is claimed: no
     * new request starts, so the running ones end (apply_reload). */
    if (scan && hold_deliveries(r) && !r->reload_next) {
        if (scan_due(r, now, &err) < 0)
            goto failed;
        r->last_scan_ms = clock_wall_ms();
        r->changed = false;
    }
    bool breakers_moved = false;
    for (size_t i = 0; i < r->n_receivers; i++)
        breakers_moved = breakers_moved || r->receivers[i].flow.changed;
    if (r->n_batch == 0 && r->n_outcomes == 0 && r->n_claimed == 0 &&
        relay_events_waiting(r->events) == 0 && !breakers_moved)
        return;
    if (store_begin(r->store, &err) < 0)
        goto failed;
    if (fence_turn(r, &err) < 0 || write_turn(r, now, &err) < 0 ||
        store_commit(r->store, &err) < 0) {
        store_rollback(r->store, NULL);
        relay_metrics_store_writable(r->metrics, false);
        goto failed;
    }
    relay_metrics_store_writable(r->metrics, true);
    relay_metrics_events(r->metrics, r->n_batch);
    for (size_t i = 0; i < r->n_outcomes && r->metrics; i++) {
        const outcome *o = &r->outcomes[i];
        if (!o->interrupted)
            relay_metrics_delivery(r->metrics, r->receivers[o->receiver].config->name,
                                   strcmp(o->status, "pending") == 0 ? "retrying" : o->status,
                                   o->seconds);
    }
    for (size_t i = 0; i < r->n_batch; i++) {
        vf_error ack_err;
        vf_error_init(&ack_err);
        if (amqp_link_ack(r->link, r->batch[i].tag, false, &ack_err) < 0)
            log_warn("ack of event %s: %s (recorded; a redelivery is ignored)",
                     r->batch[i].event_id, ack_err.text);
        incoming_clear(&r->batch[i]);
    }
    if (r->n_batch > 0)
        r->changed = true;
    r->n_batch = 0;
    for (size_t i = 0; i < r->n_outcomes; i++)
        outcome_clear(&r->outcomes[i]);
    r->n_outcomes = 0;
    if (r->lease_held) {
        for (size_t i = 0; i < r->n_receivers; i++)
            r->receivers[i].flow.changed = false;
        relay_events_publish(r->events, r->link);
    }
    int64_t now_s = clock_wall_ms() / 1000;
    for (size_t i = 0; i < r->n_claimed; i++) {
        relay_request *q = &r->claimed[i];
        vf_error start_err;
        vf_error_init(&start_err);
        q->started_us = clock_mono_us();
        if (relay_sender_start(r->sender, q, now_s, &start_err) < 0) {
            /* Stays 'delivering' until the next start requeues it. */
            log_error("event %s to %s: cannot start the request: %s", q->event_id,
                      r->receivers[q->receiver].config->name, start_err.text);
            drop_claim(r, q);
        }
    }
    r->n_claimed = 0;
    return;
failed:
    log_warn("store: %s; retrying", err.text);
    for (size_t i = 0; i < r->n_claimed; i++)
        drop_claim(r, &r->claimed[i]);
    r->n_claimed = 0;
}

static void collect_results(relay *r)
{
    while (relay_sender_next_result(r->sender, &r->result) == 1)
        record_result(r, &r->result);
}

static void give_back(relay_request *q, void *ctx)
{
    relay *r = ctx;
    outcome *o = new_outcome(r);
    if (o) {
        o->event_id = q->event_id;
        q->event_id = NULL;
        o->receiver = q->receiver;
        o->epoch = q->epoch;
        o->status = "pending";
        o->attempts = q->attempts_before;
        format_ms(clock_wall_ms(), o->next_at);
        o->error = strdup("interrupted by shutdown");
        o->interrupted = true;
    }
    request_clear(q);
}

/* SIGHUP: read the file now, so an error shows at once; apply once nothing
 * refers to the receivers by index (apply_reload). */
static void start_reload(relay *r)
{
    notify_reloading();
    vf_config *next = reload_read(&r->reload);
    if (!next) {
        notify_reloaded();
        return;
    }
    config_free(r->reload_next); /* a newer file replaces one still waiting */
    r->reload_next = next;
    if (relay_sender_running(r->sender) > 0)
        log_info("reload: waiting for %zu requests in flight before switching receivers",
                 relay_sender_running(r->sender));
}

/* With no request running, no outcome or claim unrecorded: build the new
 * receivers (secrets read again, so a rotated secret file counts even when
 * the config did not change) and switch to them, or keep the old ones whole. */
static void apply_reload(relay *r)
{
    if (!r->reload_next || relay_sender_running(r->sender) > 0 || r->n_outcomes > 0 ||
        r->n_claimed > 0)
        return;
    vf_config *next = r->reload_next;
    r->reload_next = NULL;
    relay_receiver *receivers = NULL;
    size_t n = 0;
    vf_error err;
    vf_error_init(&err);
    if (relay_receivers_load(next, &receivers, &n, &err) < 0) {
        reload_abandon(&r->reload, next, err.text);
    } else if (relay_sender_set_receivers(r->sender, receivers, n) < 0) {
        relay_receivers_free(receivers, n);
        reload_abandon(&r->reload, next, "requests still running");
    } else {
        vf_log_set_level(next->log.level);
        /* Each receiver keeps its pace and breaker across the reload (no
         * request runs now, so no probe is in flight). */
        for (size_t i = 0; i < n; i++) {
            relay_receiver *old =
                receiver_named(r->receivers, r->n_receivers, receivers[i].config->name);
            if (old) {
                receivers[i].flow = old->flow;
                receivers[i].last_code = old->last_code;
                memcpy(receivers[i].last_error, old->last_error, sizeof old->last_error);
            }
        }
        relay_receivers_free(r->receivers, r->n_receivers);
        r->receivers = receivers;
        r->n_receivers = n;
        reload_commit(&r->reload, next);
        log_info("reload: receivers rebuilt, their secrets read again");
        log_receivers(r);
        r->changed = true; /* scan the new receivers' due deliveries at once */
    }
    notify_reloaded();
}

int relay_run(relay *r, volatile sig_atomic_t *stop, vf_error *err)
{
    (void)err;
    bool stopping = false;
    int64_t stop_deadline = 0;
    for (;;) {
        if (*stop && !stopping) {
            stopping = true;
            notify_stopping();
            double longest = 0;
            for (size_t i = 0; i < r->n_receivers; i++)
                if (r->receivers[i].config->timeout_s > longest)
                    longest = r->receivers[i].config->timeout_s;
            int64_t wait = (int64_t)(longest * 1000) + 1000;
            stop_deadline = clock_wall_ms() + (wait < STOP_WAIT_MAX_MS ? wait : STOP_WAIT_MAX_MS);
            log_info("stopping: no more events; waiting for %zu requests in flight",
                     relay_sender_running(r->sender));
            if (amqp_link_is_connected(r->link)) {
                vf_error cancel_err;
                vf_error_init(&cancel_err);
                if (amqp_link_cancel(r->link, &cancel_err) < 0)
                    log_warn("cancelling the consumer: %s", cancel_err.text);
            }
            if (r->n_parks > 0 && amqp_link_is_connected(r->link)) {
                vf_error park_err;
                vf_error_init(&park_err);
                if (amqp_link_wait_confirms(r->link, PARK_CONFIRM_WAIT_MS, &park_err) < 0)
                    log_warn("parked events: %s (the broker redelivers them)", park_err.text);
                settle_parks(r);
            }
        }
        bool busy = relay_sender_running(r->sender) > 0;
        if (!stopping)
            broker_step(r, busy ? 0 : IDLE_WAIT_MS);
        vf_error poll_err;
        vf_error_init(&poll_err);
        if (relay_sender_poll(r->sender, busy ? POLL_WAIT_MS : 0, &poll_err) < 0) {
            log_error("%s", poll_err.text);
            return -1;
        }
        collect_results(r);
        if (!stopping && hangup_take())
            start_reload(r);
        bool scan =
            !stopping && (r->changed || clock_wall_ms() - r->last_scan_ms >= SCAN_INTERVAL_MS);
        commit_turn(r, scan);
        presence_beat(&r->self, r->store, (int64_t)relay_sender_running(r->sender));
        if (!stopping)
            apply_reload(r);
        if (stopping) {
            if (relay_sender_running(r->sender) == 0 && r->n_outcomes == 0)
                break;
            if (clock_wall_ms() >= stop_deadline) {
                log_warn("%zu requests still running at the stop deadline; they are due again",
                         relay_sender_running(r->sender));
                relay_sender_abandon(r->sender, give_back, r);
                commit_turn(r, false);
                break;
            }
        } else if (!busy && !amqp_link_is_connected(r->link)) {
            /* Nothing to wait on but the clock: do not spin. */
            usleep(IDLE_WAIT_MS * 1000);
        }
    }
    if (r->n_outcomes > 0)
        log_warn("%zu outcomes could not be recorded; those deliveries are due again at start",
                 r->n_outcomes);
    else if (r->lease_held) {
        /* Nothing left in flight: a standby relay may take over at once. */
        vf_error ignored;
        vf_error_init(&ignored);
        (void)store_lease_release(r->store, "deliveries", r->owner, &ignored);
    }
    presence_end(&r->self, r->store);
    log_info("stopped");
    return 0;
}
