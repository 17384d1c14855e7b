/* amqp_link: the programs' one connection to RabbitMQ (rabbitmq-c 0.11).
 *
 * A link owns one AMQP connection with one channel in confirm mode, and
 * enforces docs/contracts.md's delivery rules: manual acks within a prefetch window;
 * every publish persistent (delivery_mode 2), mandatory and confirmed;
 * heartbeats; the topology of amqp_topology.h declared at every connect.
 *
 * Failure model. Any broker or network failure (socket error, missed
 * heartbeats, the broker closing the channel or connection, a consumer
 * cancelled by the broker) makes the failing call return -1 and leaves the
 * link DISCONNECTED:
 *   - every publish not yet confirmed is reported to the confirm callback with
 *     ok=false ("connection lost": the broker may or may not have it, so the
 *     caller publishes again and consumers deduplicate);
 *   - deliveries received but not yet handed out are dropped (the broker
 *     redelivers them, flagged redelivered);
 *   - tags handed out before the failure become stale: acking or rejecting them
 *     later is ignored with a warning (the broker redelivers those messages).
 * The caller then waits (common/base/backoff.h) and calls amqp_link_connect again,
 * which rebuilds connection, channel, confirm mode, qos, topology and every
 * consumer started with amqp_link_consume. Calls other than connect/close/free
 * on a disconnected link fail with VF_EUNAVAILABLE.
 *
 * Tags. Delivery tags and publish tags handed to the caller carry the
 * connection's generation in their top 16 bits, so a tag from an earlier
 * connection can never ack a message of the current one.
 *
 * Threads: a link is used by one thread at a time. Heartbeats are only sent
 * while the link is inside one of its calls (amqp_link_keepalive included); a
 * caller that spends longer than amqp.heartbeat_s outside them will be
 * disconnected by the broker.
 *
 * Callbacks run inside amqp_link calls and must not call amqp_link functions. */
#ifndef VF_AMQP_LINK_H
#define VF_AMQP_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "amqp_topology.h"
#include "config.h"
#include "vf_error.h"

typedef struct amqp_link amqp_link;

/* What to publish. Every pointer is borrowed for the duration of the call;
 * NULL (or attempt 0) leaves the property or header out. There is no user_id
 * field: every publish carries the user the link logged in as (see
 * amqp_link_publish), so a message cannot claim another publisher. */
typedef struct amqp_link_message {
    const void *body;
    size_t body_len;          /* bytes */
    const char *content_type; /* NULL: "application/json" */
    const char *message_id;   /* task id or event id */
    const char *correlation_id;
    const char *reply_to;
    int64_t attempt;          /* x-virtflow-attempt; 0 = absent */
    bool recheck;             /* x-virtflow-recheck: 1 */
    const char *error;        /* x-virtflow-error */
    const char *original_key; /* x-virtflow-routing-key */
} amqp_link_message;

/* A delivery copied out of rabbitmq-c's memory: everything here is owned by
 * the struct and released by amqp_link_delivery_close. Absent properties and
 * headers are NULL (attempt 0). */
typedef struct amqp_link_delivery {
    uint64_t delivery_tag; /* for amqp_link_ack / amqp_link_reject */
    bool redelivered;
    bool too_large; /* body_size > amqp.max_message_bytes: body is NULL; reject it */
    char *exchange;
    char *routing_key;
    char *content_type;
    char *message_id;
    char *correlation_id;
    char *reply_to;
    /* The AMQP user_id property: who published it. RabbitMQ refuses a
     * publish whose user_id differs from the publisher's login (unless that
     * user has the impersonator tag), so it can be trusted; NULL when the
     * publisher left it out. */
    char *user_id;
    /* x-virtflow-attempt as sent when a positive integer (any 64-bit
     * value), else 0; whoever published it: the worker decides whether to
     * believe it (task_attempt_number). */
    int64_t attempt;
    /* x-virtflow-recheck present and 1, whoever published it (believed
     * only from a trusted publisher, as the attempt). */
    bool recheck;
    /* The AMQP timestamp property as the publisher set it (Unix seconds), 0
     * when absent: the start of the publish-to-commit latency metric. */
    int64_t timestamp;
    char *error;        /* x-virtflow-error */
    char *original_key; /* x-virtflow-routing-key */
    /* From the newest x-death entry, set when the broker dead-lettered the
     * message (rejected, expired, ...): why, from which queue, and the routing
     * key it had there. NULL otherwise. */
    char *death_reason;
    char *death_queue;
    char *death_key;
    unsigned char *body; /* body_len bytes plus a NUL for convenience; NULL when too_large */
    size_t body_len;     /* bytes kept */
    uint64_t body_size;  /* bytes announced by the broker */
} amqp_link_delivery;

/* Outcome of one publish: ok is true when the broker confirmed it (basic.ack)
 * and did not return it. ok=false comes with a reason: returned as unroutable
 * (mandatory), nacked, or the connection was lost before the confirm arrived.
 * `reason` is valid during the call only. */
typedef void (*amqp_link_confirm_fn)(uint64_t publish_tag, bool ok, const char *reason, void *user);

/* A disconnected link. `config` is borrowed and must outlive the link;
 * client_name (copied) shows in the broker's connection list. The password file
 * (amqp.password_file), if any, is read here. Returns NULL with err
 * (VF_ECONFIG, VF_ENOMEM). */
amqp_link *amqp_link_new(const vf_config *config, const char *client_name, vf_error *err)
    __attribute__((warn_unused_result));

/* A link that only reads (virtflowctl stats, health --broker, dead list):
 * amqp_link_connect then declares nothing, so looking leaves no queue behind
 * on a broker no program uses yet, and a queue nobody declared reads as
 * missing. Call before amqp_link_connect; publishing or consuming through
 * such a link relies on a topology someone else declared. */
void amqp_link_set_read_only(amqp_link *link);

/* Closes the connection politely if it is up, then frees. NULL is a no-op. */
void amqp_link_free(amqp_link *link);

/* Where confirm outcomes go. Without a callback they are only logged. */
void amqp_link_set_confirm_callback(amqp_link *link, amqp_link_confirm_fn fn, void *user);

/* The outcome of a publish awaited alone, for callers that publish one
 * message, then amqp_link_wait_confirms: amqp_link_confirm_record is the
 * confirm callback that fills it (user = the amqp_link_confirm), and
 * amqp_link_confirm_reset forgets it before the next publish. */
typedef struct amqp_link_confirm {
    bool done, ok;
    char reason[256]; /* why not ok; "" when ok */
} amqp_link_confirm;
void amqp_link_confirm_record(uint64_t publish_tag, bool ok, const char *reason, void *user);
void amqp_link_confirm_reset(amqp_link_confirm *confirm);

/* (Re)connect: drop any current connection (see the failure model), then try
 * amqp.urls in order until one works: TCP or TLS (amqps://: peer certificate
 * and host name verified against amqp.ca_file or the system store, unless
 * amqp.tls_verify is false, which is logged as a warning at every connect),
 * login with heartbeats, channel, confirm.select, basic.qos(amqp.prefetch),
 * topology, consumers. Each attempt is logged with the URL minus its password.
 * Returns 0, or -1 with err: VF_EUNAVAILABLE (no broker reachable: the last
 * URL's failure), or VF_ECONFIG, which no retry mends: a URL that cannot be
 * parsed, or a broker whose queues exist with other arguments than this
 * configuration declares (the text names the queue, both values, the fix). */
int amqp_link_connect(amqp_link *link, vf_error *err) __attribute__((warn_unused_result));

bool amqp_link_is_connected(const amqp_link *link);

/* The reply code of the last channel.close or connection.close the broker
 * sent since the last connect (e.g. 403, AMQP_ACCESS_REFUSED, for a publish
 * the user may not make), 0 for none; `text` (may be NULL) gets its reply
 * text, valid until the next connect. */
uint16_t amqp_link_broker_close(const amqp_link *link, const char **text);

/* For a publisher that may sit idle: connect when disconnected, and also
 * when the link has been idle (no connect, no confirmed round trip since
 * *used_us, monotonic µs) for longer than amqp.heartbeat_s, because
 * heartbeats go out only inside link calls and the broker has then closed
 * (or is about to close) the connection: start afresh rather than find out
 * with a failed publish. Sets *used_us on a connect; the caller sets it after
 * each confirmed round trip. 0, or -1 with err. */
int amqp_link_ready(amqp_link *link, int64_t *used_us, vf_error *err)
    __attribute__((warn_unused_result));

/* Send a heartbeat frame when one is due (every amqp.heartbeat_s / 2), and
 * nothing else: no read, no callback. For a caller busy elsewhere between
 * link calls, a slow or frozen store say, so the broker does not take the
 * silence for a dead peer; what the broker sends meanwhile waits in the
 * socket for the next call that reads. A failed send is left for that call
 * to meet (it then fails as described above). A no-op while disconnected or
 * with heartbeats off. Not for use inside a link callback. */
void amqp_link_keepalive(amqp_link *link);

/* Close the connection politely (in-flight publishes are reported failed);
 * amqp_link_connect may be called again later. */
void amqp_link_close(amqp_link *link);

/* Publish persistent + mandatory, with the AMQP user_id property set to the
 * user this connection logged in as (the broker checks it, so receivers can
 * tell who published: the relay trusts only the worker's events). The publish
 * is not confirmed yet when this returns: *publish_tag_out (optional)
 * identifies it in the confirm callback. Returns 0, or -1 with err (link
 * disconnected). */
int amqp_link_publish(amqp_link *link, const char *exchange, const char *routing_key,
                      const amqp_link_message *message, uint64_t *publish_tag_out, vf_error *err)
    __attribute__((warn_unused_result));

/* Park a delivery in virtflow.dead the way the programs do it themselves:
 * republish it to virtflow.dlx as it came (body, content type, message id,
 * correlation id, reply_to) with x-virtflow-error `why` and
 * x-virtflow-routing-key its routing key. As amqp_link_publish: ack the
 * delivery only once this publish is confirmed. Returns 0, or -1 with err. */
int amqp_link_dead_letter(amqp_link *link, const amqp_link_delivery *delivery, const char *why,
                          uint64_t *publish_tag_out, vf_error *err)
    __attribute__((warn_unused_result));

/* The user name of the current connection (the last one tried while
 * disconnected; "" before any connect). Valid until the next connect. */
const char *amqp_link_user(const amqp_link *link);

/* Publishes not yet confirmed, nacked or returned. */
size_t amqp_link_unconfirmed(const amqp_link *link);

/* Read from the broker until every publish has its outcome (each reported to
 * the callback once), for at most timeout_ms (-1: no limit). Deliveries that
 * arrive meanwhile are kept for amqp_link_next. Returns 0 when nothing is
 * outstanding; -1 with err on timeout (outstanding publishes stay pending) or
 * on a failure (they are then reported failed). */
int amqp_link_wait_confirms(amqp_link *link, int timeout_ms, vf_error *err)
    __attribute__((warn_unused_result));

/* Start consuming `queue` (manual acks); remembered and restarted by every
 * later connect until amqp_link_cancel. Returns 0 or -1 with err. */
int amqp_link_consume(amqp_link *link, const char *queue, vf_error *err)
    __attribute__((warn_unused_result));

/* Next delivery from any consumed queue, waiting at most timeout_ms (-1: no
 * limit, 0: only what is already read). Confirms and returns arriving
 * meanwhile go to the callback. Returns 1 with *out filled (the caller owns it:
 * amqp_link_delivery_close), 0 on timeout, -1 with err on failure. */
int amqp_link_next(amqp_link *link, amqp_link_delivery *out, int timeout_ms, vf_error *err)
    __attribute__((warn_unused_result));

void amqp_link_delivery_close(amqp_link_delivery *delivery);

/* Ack one delivery, or every delivery up to it when multiple. A stale tag
 * (earlier connection) is ignored with a warning and returns 0.
 * Returns -1 with err when the link is down or the write fails. */
int amqp_link_ack(amqp_link *link, uint64_t delivery_tag, bool multiple, vf_error *err)
    __attribute__((warn_unused_result));

/* Reject one delivery: requeue=false dead-letters it to virtflow.dead (work
 * queues) or drops it (queues without a dead-letter exchange). */
int amqp_link_reject(amqp_link *link, uint64_t delivery_tag, bool requeue, vf_error *err)
    __attribute__((warn_unused_result));

/* Stop every consumer (graceful shutdown): no new deliveries after this;
 * deliveries already received are still handed out by amqp_link_next and may
 * be acked. Returns 0 or -1 with err. */
int amqp_link_cancel(amqp_link *link, vf_error *err) __attribute__((warn_unused_result));

/* The URL with its password removed, as logged: amqp://user@host:port/vhost.
 * Writes a NUL-terminated string into buf; returns 0, or -1 for a URL that
 * cannot be parsed (buf then says "(unparsable URL)"). */
int amqp_link_redact_url(const char *url, char *buf, size_t size);

#endif
