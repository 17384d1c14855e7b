/* amqp_link_internal: what the three files of the link share, and no one
 * else: amqp_link.c (the link: connecting, failing, consuming, acking),
 * amqp_link_frames.c (publishing, confirms and the frame reader that settles
 * them and assembles deliveries), amqp_link_admin.c (queue depth, reply
 * queue, basic.get: calls only virtflowctl makes). */
#ifndef VF_AMQP_LINK_INTERNAL_H
#define VF_AMQP_LINK_INTERNAL_H

#include <amqp.h>
#include <stdbool.h>
#include <stdint.h>

#include "amqp_link.h"

#define WORK_CHANNEL 1
#define PROBE_CHANNEL 2 /* passive declares: a 404 there closes only that channel */
#define FRAME_MAX 131072
#define CONNECT_TIMEOUT_S 10
#define RPC_TIMEOUT_S 30
#define GENERATION_SHIFT 48
#define SEQ_MASK ((UINT64_C(1) << GENERATION_SHIFT) - 1)

typedef struct pending_publish {
    uint64_t seq;   /* broker sequence number on the current channel */
    uint64_t route; /* amqp_link_route_hash of its exchange and routing key */
    bool returned;  /* a basic.return was matched to it */
} pending_publish;

/* A hash of an exchange and a routing key, what a basic.return names its
 * message by (FNV-1a over exchange, a NUL, key). */
uint64_t amqp_link_route_hash(const void *exchange, size_t exchange_len, const void *key,
                              size_t key_len);

typedef struct ready_delivery {
    amqp_link_delivery delivery;
    struct ready_delivery *next;
} ready_delivery;

typedef enum { CONTENT_NONE, CONTENT_DELIVERY, CONTENT_RETURN } content_kind;

struct amqp_link {
    const vf_config *config;
    char client_name[128];
    char *password; /* from amqp.password_file, or NULL */

    amqp_connection_state_t conn; /* NULL while disconnected */
    bool connected;
    bool read_only; /* connect declares nothing (amqp_link_set_read_only) */
    bool probe_open;
    uint16_t generation;  /* bumped at each successful connect; never 0 once connected */
    uint64_t next_seq;    /* sequence number the broker gives the next publish */
    char peer[256];       /* redacted URL of the current broker */
    char user[256];       /* login user of the current broker: every publish's user_id */
    int64_t keepalive_ms; /* amqp_link_now_ms of amqp_link_keepalive's last heartbeat */

    pending_publish *pending; /* ascending seq */
    size_t n_pending, cap_pending;
    bool return_seen; /* a basic.return waits for its ack */
    char return_reason[256];
    amqp_link_confirm_fn on_confirm;
    void *confirm_user;

    char **queues; /* consumed queues, restarted at each connect */
    size_t n_queues, cap_queues;

    /* The content (header + body frames) being read after a deliver or return. */
    content_kind content;
    bool content_from_get; /* the content answers our basic.get, not a consumer */
    amqp_link_delivery partial;
    amqp_link_delivery got; /* the finished basic.get message, while got_ready */
    bool got_ready;
    uint64_t body_received; /* bytes */

    ready_delivery *ready_head, *ready_tail;

    /* The last channel.close or connection.close the broker sent; cleared at
     * each connect (amqp_link_broker_close). */
    uint16_t close_code;
    char close_text[256];
};

/* amqp_link.c */
/* An owned NUL-terminated copy of `bytes`, or NULL. */
char *amqp_link_dup_bytes(amqp_bytes_t bytes);
/* The publish tag callers see for broker sequence number `seq`. */
uint64_t amqp_link_encode_tag(const amqp_link *link, uint64_t seq);
/* Monotonic milliseconds. */
int64_t amqp_link_now_ms(void);
/* Tell the confirm callback the outcome of publish `seq`. */
void amqp_link_report(amqp_link *link, uint64_t seq, bool ok, const char *reason);
/* Drop the connection after a failure: every in-flight publish is reported
 * failed; the next call must reconnect. */
void amqp_link_fail(amqp_link *link, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 0 when connected, else -1 with err VF_EUNAVAILABLE. */
int amqp_link_require_connected(const amqp_link *link, vf_error *err);
int amqp_link_start_consumer(amqp_link *link, const char *queue, vf_error *err);

/* amqp_link_frames.c */
/* Read and handle one frame, waiting until deadline_ms (amqp_link_now_ms
 * clock, -1: forever). Returns 1 when a frame was handled, 0 on timeout, -1
 * when the link failed. */
int amqp_link_pump(amqp_link *link, int64_t deadline_ms, vf_error *err);
/* The amqp_link_now_ms deadline timeout_ms from now (-1: none). */
int64_t amqp_link_deadline_after(int timeout_ms);

#endif
