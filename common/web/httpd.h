/* httpd: a small HTTP/1.1 server for the programs' endpoints
 * (/metrics, /healthz, /readyz) and the operators' console, on top of
 * libmicrohttpd. We write routes and pages, never HTTP parsing.
 *
 * One internal thread serves every connection (event-driven: a slow client
 * costs a socket, never the thread), so a handler runs on that thread only:
 * it may keep thread-bound state (a store connection) in its context without
 * locks, but whatever it shares with the program's other threads (counters,
 * flags) must be atomic or locked. A handler should answer in milliseconds;
 * a slow one delays every client.
 *
 * Slow and hostile clients (docs/security.md): a client has
 * HTTPD_READ_DEADLINE_MS from connecting (or from its previous answer, on a
 * kept-alive connection) to deliver a whole request, headers and body, or
 * the connection is closed, however steadily it trickles bytes; one address
 * holds at most HTTPD_PER_ADDRESS_LIMIT connections besides those whose
 * request waits (long polls, bounded by max_waiting): one more is answered
 * only if it is a probe (/healthz, /readyz, /metrics, sent within a second),
 * anything else 503 with Retry-After; and when HTTPD_READING_LIMIT
 * connections are all still sending their requests, a new one closes the one
 * that has been sending the longest, so a probe (one packet, answered at
 * once) is served while the pool is full of trickling clients from any
 * number of addresses.
 *
 * Reverse proxies (httpd_options.trusted_proxies): a proxy's connections
 * carry many clients, so its address has no connection limit; its requests'
 * client is taken from X-Forwarded-For, the rightmost hop that is not a
 * trusted proxy (cidr_client_address), and each such client may have
 * HTTPD_PER_ADDRESS_LIMIT requests answered at once (long polls aside, probes
 * always). X-Forwarded-For from any other address is ignored.
 *
 * Host names (DNS rebinding): with httpd_options.check_host, a request whose
 * Host header names neither a loopback address (localhost, 127.0.0.0/8,
 * [::1], any port) nor one of httpd_options.allowed_hosts is answered 421
 * before the handler sees it, unless its path is one of
 * httpd_options.any_host_paths.
 *
 * Waiting requests (long polls): a handler that has no answer yet may set
 * resp->wait_ms when req->can_wait says so; httpd then suspends the
 * connection (it costs a socket, no thread and no polling) and calls the
 * handler again with the same request after that many milliseconds (or
 * sooner, when another thread calls httpd_wake with the request's ticket),
 * as often as the handler asks, until it answers. At most
 * httpd_options.max_waiting requests wait at once; httpd_stop calls every
 * waiting one once more with can_wait false.
 *
 * Streams (Server-Sent Events): a handler allowed to wait (req->can_wait)
 * may answer with resp->stream instead of a body. The answer is then sent
 * chunked as the stream produces it: httpd calls the stream on its thread
 * whenever the connection can take more; while it has nothing, the
 * connection is suspended as a waiting request's is (no thread, no polling)
 * until the wait the stream asked for passes or httpd_wake names the
 * request's ticket. A stream holds a waiting place for its life; it ends
 * when it says so, when the client goes (seen at the next write), or at
 * httpd_stop (called once more with `stopping`).
 *
 * Usage (a program with more than one path routes through a table,
 * httpd_route.h):
 *   static void handle(void *ctx, const httpd_request *req, httpd_response *resp)
 *   {
 *       httpd_reply_text(resp, 200, "text/plain", "ok\n");
 *   }
 *   httpd *srv = httpd_start("127.0.0.1:9464", handle, ctx, &err);
 *   ...
 *   httpd_stop(srv);
 */
#ifndef VF_HTTPD_H
#define VF_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vf_error.h"

/* Bodies of POST requests beyond this are refused with 413: the console's
 * forms are a few fields, and a placement request for virtflow-api a few
 * hundred bytes (annotation values are at most 256 bytes each). */
#define HTTPD_MAX_BODY (64 * 1024)

typedef struct httpd httpd;
typedef struct httpd_request httpd_request;

struct httpd_request {
    const char *method; /* "GET", "HEAD", "POST", ... */
    const char *path;   /* decoded, without the query string */
    const char *body;   /* POST body, NUL-terminated (empty for GET) */
    size_t body_len;
    /* The body went over HTTPD_MAX_BODY and was dropped (body is ""). Only
     * handlers that asked with httpd_options.answer_oversized see such a request;
     * for the others httpd answers 413 itself. */
    bool body_too_large;
    /* Monotonic ms: when this request was first handed to the handler; the
     * same on every call of a waiting request. */
    int64_t started_ms;
    /* The handler may answer later with resp->wait_ms: waiting is allowed
     * (httpd_options.max_waiting), a place is free (or held already by this
     * request), and the server is not stopping. */
    bool can_wait;
    int calls; /* earlier calls of the handler for this request (a waiting one) */
    /* This request's number, unique for the server's life: what another
     * thread gives httpd_wake to end its wait early. */
    uint64_t ticket;
    /* Who asked: the connection's address, or behind a trusted proxy the
     * forwarded client (httpd_options.trusted_proxies); valid during the
     * call. */
    const char *client_address;
    void *conn_; /* private: the libmicrohttpd connection */
};

/* A stream's source (httpd_response.stream), called on the server's thread:
 * writes at most `max` bytes into `buf` and returns how many (> 0); or 0 with
 * *wait_ms set: nothing now, call again in that many ms (sooner after
 * httpd_wake); or -1: the stream ends. `stopping`: httpd_stop has begun,
 * the stream should end now (what it returns is sent, then it ends). */
typedef long (*httpd_stream_fn)(void *ctx, char *buf, size_t max, bool stopping, int *wait_ms);

typedef struct httpd_response {
    int status;                /* 200 unless set */
    char content_type[96];     /* "text/plain; charset=utf-8" unless set */
    char location[512];        /* Location header for redirects, "" for none */
    char security_policy[256]; /* Content-Security-Policy header, "" for none */
    char authenticate[128];    /* WWW-Authenticate header (with a 401), "" for none */
    char retry_after[16];      /* Retry-After header (seconds, with a 503), "" for none */
    char allow[32];            /* Allow header (with a 405), "" for none */
    char set_cookie[192];      /* Set-Cookie header, "" for none */
    char *body;                /* malloc'd; the server frees it */
    size_t body_len;
    /* > 0, with req->can_wait: no answer yet; call the handler again with
     * the same request in this many ms (everything else is ignored). */
    int wait_ms;
    bool close; /* close the connection after this answer */
    /* With req->can_wait: the body is this stream (see the top of this
     * file), with status and headers as set. stream_free(stream_ctx) when
     * it is over, also when it could not start (NULL: nothing to free). */
    httpd_stream_fn stream;
    void *stream_ctx;
    void (*stream_free)(void *ctx);
} httpd_response;

typedef void (*httpd_handler)(void *ctx, const httpd_request *req, httpd_response *resp);

/* Limits against slow and hostile clients (see the top of this file). */
#define HTTPD_READ_DEADLINE_MS 10000 /* a whole request, headers and body */
#define HTTPD_PER_ADDRESS_LIMIT 16   /* connections from one address, long polls aside */
#define HTTPD_READING_LIMIT 128      /* connections still sending a request */
#define HTTPD_CONNECTION_LIMIT 256   /* all connections (and file descriptors) */

typedef struct httpd_options {
    /* Answer 421 unless the Host header names a loopback address or one of
     * allowed_hosts (names or address literals, compared without the port
     * and case-insensitively; IPv6 with or without brackets). */
    bool check_host;
    const char *const *allowed_hosts; /* borrowed for the server's life */
    size_t n_allowed_hosts;
    /* Paths answered whatever the Host (NULL-terminated, borrowed; NULL:
     * none): the probes and /metrics, which the kubelet and Prometheus ask
     * for under the pod's address, and which show no more than
     * metrics_http.h's endpoints do on any Host. */
    const char *const *any_host_paths;
    int read_deadline_ms; /* 0: HTTPD_READ_DEADLINE_MS (tests use less) */
    /* A request whose body is over HTTPD_MAX_BODY reaches the handler (with
     * body_too_large set) instead of httpd's plain-text 413, so that the
     * program can answer in its own format. */
    bool answer_oversized;
    /* Requests that may wait for their answer at once (resp->wait_ms); 0:
     * none. Each holds a connection, within HTTPD_CONNECTION_LIMIT. */
    int max_waiting;
    /* HTTPS: the server's certificate (then its chain) and its private key,
     * PEM text, both or neither (NULL: plain HTTP). Copied: the caller may
     * wipe and free them once httpd_start_with returns. TLS is libmicrohttpd's
     * (GnuTLS); the limits above count a handshake as part of the request. */
    const char *tls_cert_pem;
    const char *tls_key_pem;
    /* Reverse proxies whose X-Forwarded-For is believed: addresses or
     * ranges ("10.0.0.0/8", "::1"), parsed at start (one that is neither
     * is VF_ECONFIG); NULL/0: none. */
    const char *const *trusted_proxies;
    size_t n_trusted_proxies;
} httpd_options;

/* Listens on `listen` ("HOST:PORT", "[V6]:PORT"; port 0 picks a free one)
 * and answers every request through `handler`. NULL with `err` set when the
 * address is malformed or cannot be bound. */
httpd *httpd_start(const char *listen, httpd_handler handler, void *ctx, vf_error *err);

/* httpd_start with `options` (NULL: the defaults, any Host). */
httpd *httpd_start_with(const char *listen, const httpd_options *options, httpd_handler handler,
                        void *ctx, vf_error *err);

/* Call the waiting request `ticket` (httpd_request.ticket) again now rather
 * than when its wait_ms ends: another thread has its answer ready. From any
 * thread. A wake that comes before the request has begun to wait (its
 * handler has not returned yet) is kept for it: the handler is then called
 * again at once. A ticket that never waits is forgotten among the last
 * 2 * max_waiting such wakes. */
void httpd_wake(httpd *srv, uint64_t ticket);

/* Whether this libmicrohttpd serves HTTPS (built with GnuTLS, as Debian's). */
bool httpd_tls_supported(void);

/* Stops accepting, finishes the request in progress, frees. NULL is fine. */
void httpd_stop(httpd *srv);

/* The port actually bound (the chosen one when `listen` said 0). */
int httpd_port(const httpd *srv);

/* True when `listen` names only a loopback address (127.0.0.0/8, ::1,
 * localhost): what a program listening without authentication must keep to. */
bool httpd_listen_is_loopback(const char *listen);

/* True when `host_header` (a Host header's value: NAME[:PORT], [V6][:PORT])
 * names a loopback address or one of `names`; false for NULL or a value that
 * is not a host name. */
bool httpd_host_allowed(const char *host_header, const char *const *names, size_t n_names);

/* True when the host part of `listen` is a wildcard (0.0.0.0, ::, empty):
 * clients then reach it under names the program cannot know. */
bool httpd_listen_is_wildcard(const char *listen);

/* A query-string argument (?name=value, decoded), NULL when absent. */
const char *httpd_query(const httpd_request *req, const char *name);

/* The first query-string argument whose name is not in `known` (NULL-ended),
 * valid during the request; NULL when every argument is known. */
const char *httpd_query_unknown(const httpd_request *req, const char *const *known);

/* How many query-string arguments the request has. */
int httpd_query_count(const httpd_request *req);

/* A request header (case-insensitive name), NULL when absent. */
const char *httpd_header(const httpd_request *req, const char *name);

/* A field of an application/x-www-form-urlencoded POST body, decoded into
 * `out` (at most out_size - 1 bytes). false when absent or too long. */
bool httpd_form(const httpd_request *req, const char *name, char *out, size_t out_size);

/* Sets status, type and a copy of `text` as the body. */
void httpd_reply_text(httpd_response *resp, int status, const char *content_type, const char *text);

/* Takes ownership of a malloc'd body of `len` bytes. */
void httpd_reply_take(httpd_response *resp, int status, const char *content_type, char *body,
                      size_t len);

#endif
