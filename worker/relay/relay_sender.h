/* relay_sender: concurrent signed POSTs over one libcurl multi handle.
 *
 * Each request is independent: a receiver that hangs holds only its own
 * requests (bounded by its timeout_s), never the others'. The caller limits
 * how many run per receiver; connections are reused across requests.
 *
 * Safety: TLS peer and host names verified (system trust store), redirects
 * not followed (a 3xx is a failed attempt), only http/https, response bodies
 * kept up to RELAY_SENDER_BODY_MAX bytes (the rest is read and dropped). */
#ifndef VF_RELAY_SENDER_H
#define VF_RELAY_SENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relay_receivers.h"
#include "vf_error.h"

#define RELAY_SENDER_BODY_MAX 4096 /* bytes of response body kept */

typedef struct relay_sender relay_sender;

/* A request to make. The sender takes ownership of event_id and body
 * (malloc'd) and gives them back in the result. */
typedef struct relay_request {
    char *event_id;
    char *body;
    size_t body_len;     /* bytes, sent exactly as they are */
    size_t receiver;     /* index into the receivers array */
    int attempts_before; /* attempts recorded before this one */
    int64_t started_us;  /* monotonic, when the POST started (the caller's, for metrics) */
    int64_t epoch;       /* the caller's: the lease epoch it was claimed under */
    bool probe;          /* the caller's: the one attempt a disabled receiver gets */
    void *user;          /* caller's, returned as it is */
} relay_request;

typedef struct relay_result {
    relay_request request;                /* owned by the caller now: free event_id and body */
    bool transport_ok;                    /* an HTTP response was received */
    long status;                          /* HTTP status when transport_ok */
    char error[256];                      /* libcurl's reason when !transport_ok */
    char retry_after[64];                 /* Retry-After header value, "" when absent */
    char body[RELAY_SENDER_BODY_MAX + 1]; /* start of the response body, NUL-terminated */
    size_t body_len;
} relay_result;

/* receivers is borrowed and must outlive the sender. NULL with err on failure. */
relay_sender *relay_sender_new(relay_receiver *receivers, size_t n_receivers, vf_error *err)
    __attribute__((warn_unused_result));

/* Send to these receivers from now on (a reload); borrowed as in
 * relay_sender_new. Only while no request runs (request indexes name the
 * old array): returns -1, changing nothing, otherwise. */
int relay_sender_set_receivers(relay_sender *sender, relay_receiver *receivers, size_t n_receivers)
    __attribute__((warn_unused_result));

/* Aborts requests still running (their results are dropped) and frees. NULL ok. */
void relay_sender_free(relay_sender *sender);

/* Sign (webhook-id = event id, webhook-timestamp = now) and start the POST.
 * On success the sender owns the request's strings and the receiver's
 * in_flight count is raised; on failure (-1, err) the caller keeps them. */
int relay_sender_start(relay_sender *sender, relay_request *request, int64_t now_s, vf_error *err)
    __attribute__((warn_unused_result));

/* Requests running now. */
size_t relay_sender_running(const relay_sender *sender);

/* Drive the transfers, waiting at most timeout_ms for socket activity.
 * Returns 0 or -1 with err on a libcurl failure. */
int relay_sender_poll(relay_sender *sender, int timeout_ms, vf_error *err)
    __attribute__((warn_unused_result));

/* Next finished request, if any: returns 1 with *out filled (and the
 * receiver's in_flight lowered), 0 when none. *out is large; keep it off
 * small stacks or reuse one. */
int relay_sender_next_result(relay_sender *sender, relay_result *out);

/* Give back, without an outcome, every request still running: for each,
 * fn gets the request (its strings now the caller's). Used at shutdown
 * after the bounded wait. */
void relay_sender_abandon(relay_sender *sender, void (*fn)(relay_request *request, void *ctx),
                          void *ctx);

#endif
