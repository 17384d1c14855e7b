/* httpd: libmicrohttpd behind the small interface of httpd.h.
 * libmicrohttpd parses requests, decodes paths and query strings and keeps
 * connections within limits (in all, per address, idle); this file adapts
 * its callbacks (the body arriving in pieces, the completed-request hook) to
 * one handler call, checks the Host header, and keeps what libmicrohttpd has
 * no option for: a deadline on reading a whole request (its timeout is an
 * idle timeout, which a client sending a byte every few seconds never
 * meets) and the eviction of the slowest sender when the pool is full. */
#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <openssl/crypto.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "cidr.h"
#include "clock.h"
#include "log.h"
#include "stopper.h"
#include "strbuf.h"

/* libmicrohttpd's idle timeout: still what ends a client that stops reading
 * its answer (the read deadline covers the request only). */
#define HTTPD_IDLE_TIMEOUT_S 10
/* A deadline missed is noticed within a quarter of it. */
#define DEADLINE_CHECKS_PER_DEADLINE 4
/* Closings for missed deadlines or eviction are logged at most this often. */
#define CLOSINGS_LOG_INTERVAL_MS 60000
/* A connection beyond its address's limit has this long to send its whole
 * request: a probe comes in one packet and is answered; anything else is
 * answered 503 (or cut off, still sending, when this runs out). */
#define OVER_LIMIT_GRACE_MS 1000
#define ADDRESS_TEXT 64
#define PORT_TEXT 8 /* "65535" and a NUL, with room to see a longer one */

/* One connection, from libmicrohttpd's connection-started notice to its
 * closed notice (which comes before it closes the socket, so `fd` is ours to
 * shut down while the entry is listed under the lock). */
typedef struct tracked {
    struct tracked *prev, *next;
    int fd;
    int64_t reading_since_ms;  /* monotonic; the request (or the wait for the next) began */
    bool reading;              /* the request is not all in yet */
    char peer[ADDRESS_TEXT];   /* the connection's address ("" unknown) */
    bool trusted_peer;         /* in httpd_options.trusted_proxies */
    bool over_limit;           /* opened while its address held its limit (probes only) */
    bool waiting;              /* its request waits (a long poll): counted in no limit */
    bool active;               /* a request is being answered: counted for its client */
    char client[ADDRESS_TEXT]; /* the request's client (behind a trusted proxy: forwarded) */
} tracked;

/* Per request: the POST body as it arrives, and its wait (httpd.h). */
typedef struct pending {
    strbuf body; /* as it came; its length is body.len */
    bool too_big;
    int64_t started_ms;        /* monotonic; 0 until the handler first runs */
    int calls;                 /* handler calls so far */
    bool holds_place;          /* counted in srv->waiting */
    bool listed;               /* suspended, in srv->waiters */
    int64_t wake_ms;           /* monotonic: when to call the handler again */
    uint64_t ticket;           /* httpd_request.ticket; 0 until the handler first runs */
    char client[ADDRESS_TEXT]; /* httpd_request.client_address */
    struct MHD_Connection *conn;
    struct pending *prev_waiter, *next_waiter;
} pending;

struct httpd {
    struct MHD_Daemon *daemon;
    httpd_handler handler;
    void *ctx;
    int port;
    bool check_host;
    const char *const *allowed_hosts;
    size_t n_allowed_hosts;
    const char *const *any_host_paths;
    int64_t read_deadline_ms;
    cidr *proxies; /* httpd_options.trusted_proxies, parsed */
    int n_proxies;

    pthread_mutex_t lock; /* guards everything below */
    stopper stop;         /* the watchdog's wait; stop.stop: httpd_stop has begun */
    pthread_t watchdog;
    bool watchdog_running;
    tracked *connections; /* newest first */
    int reading;          /* entries with reading set */
    int64_t closed_late;  /* closed for missing the deadline, not yet logged */
    int64_t evicted;      /* closed to make room, not yet logged */
    int64_t refused;      /* refused at a connection limit, not yet logged */
    int64_t broken;       /* ended half-way through a request, not yet logged */
    int64_t logged_ms;
    bool answer_oversized;
    int max_waiting;
    char *tls_cert;   /* PEM copies for libmicrohttpd, which keeps the pointers; NULL: plain */
    char *tls_key;    /* wiped before it is freed */
    int waiting;      /* requests holding a waiting place */
    pending *waiters; /* suspended, each until its wake_ms */
    struct MHD_Connection **due; /* max_waiting slots: the watchdog's resumptions */
    uint64_t tickets;            /* handed out so far */
    uint64_t *early;             /* 2 * max_waiting slots: httpd_wake before the wait */
    size_t n_early;              /* next slot to write, round the ring */
};

/* Under srv->lock. */
static void unlist_waiter(httpd *srv, pending *p)
{
    if (!p->listed)
        return;
    if (p->prev_waiter)
        p->prev_waiter->next_waiter = p->next_waiter;
    else
        srv->waiters = p->next_waiter;
    if (p->next_waiter)
        p->next_waiter->prev_waiter = p->prev_waiter;
    p->prev_waiter = p->next_waiter = NULL;
    p->listed = false;
}

/* Under srv->lock. */
static void release_place(httpd *srv, pending *p)
{
    unlist_waiter(srv, p);
    if (p->holds_place) {
        p->holds_place = false;
        srv->waiting--;
        stopper_wake(&srv->stop);
    }
}

/* libmicrohttpd passes its own format strings; the attribute tells clang so.
 * A refusal at a connection limit and a connection ended half-way through
 * its request (by its client, or by us) are counted, not logged: a client
 * opening connections in a loop must not write a log line for each. */
__attribute__((format(printf, 2, 0))) static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    httpd *srv = cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    bool refused = strstr(line, "connection limit") != NULL;
    bool broken = strstr(line, "closed when reading request") != NULL;
    if (srv && (refused || broken)) {
        pthread_mutex_lock(&srv->lock);
        if (refused)
            srv->refused++;
        else
            srv->broken++;
        pthread_mutex_unlock(&srv->lock);
        return;
    }
    log_warn("http: %s", line);
}

static tracked *tracked_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* Under srv->lock. Shutting the socket down makes libmicrohttpd see the end
 * of it and close the connection on its own thread, in its own time. */
static void cut(httpd *srv, tracked *t)
{
    if (t->reading) {
        t->reading = false;
        srv->reading--;
    }
    shutdown(t->fd, SHUT_RDWR);
}

static void set_reading(httpd *srv, struct MHD_Connection *conn, bool reading)
{
    tracked *t = tracked_of(conn);
    if (!t)
        return;
    pthread_mutex_lock(&srv->lock);
    if (reading && !t->reading)
        srv->reading++;
    else if (!reading && t->reading)
        srv->reading--;
    t->reading = reading;
    t->reading_since_ms = clock_mono_ms();
    pthread_mutex_unlock(&srv->lock);
}

/* The connection's address as text into out (an IPv4-mapped IPv6 address
 * as IPv4); "" when libmicrohttpd does not say. */
static void peer_text(struct MHD_Connection *conn, char out[ADDRESS_TEXT])
{
    out[0] = '\0';
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = info ? info->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
                  ADDRESS_TEXT);
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a))
            inet_ntop(AF_INET, &a->s6_addr[12], out, ADDRESS_TEXT);
        else
            inet_ntop(AF_INET6, a, out, ADDRESS_TEXT);
    }
}

/* Under srv->lock: connections from `peer` that count against its limit:
 * all but those whose request waits (long polls, held by max_waiting). */
static int held_by(const httpd *srv, const tracked *self, const char *peer)
{
    int n = 0;
    for (const tracked *t = srv->connections; t; t = t->next)
        n += t != self && !t->waiting && strcmp(t->peer, peer) == 0;
    return n;
}

/* Under srv->lock: requests being answered for `client` (behind a trusted
 * proxy, whose connections are shared by many clients). */
static int answering_for(const httpd *srv, const tracked *self, const char *client)
{
    int n = 0;
    for (const tracked *t = srv->connections; t; t = t->next)
        n += t != self && t->active && strcmp(t->client, client) == 0;
    return n;
}

/* A new connection: its address, and whether that address already holds
 * its limit. Such a connection is not refused yet (its request may be a
 * probe): the watchdog cuts it if it sends no whole request soon, and
 * admit answers anything but a probe 503. Under srv->lock. */
static void note_peer(httpd *srv, tracked *t, struct MHD_Connection *conn)
{
    peer_text(conn, t->peer);
    snprintf(t->client, sizeof t->client, "%s", t->peer);
    t->trusted_peer = cidr_any_contains(srv->proxies, srv->n_proxies, t->peer);
    t->over_limit = !t->trusted_peer && held_by(srv, t, t->peer) >= HTTPD_PER_ADDRESS_LIMIT;
}

static void connection_notice(void *cls, struct MHD_Connection *conn, void **socket_context,
                              enum MHD_ConnectionNotificationCode code)
{
    httpd *srv = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        tracked *t = calloc(1, sizeof *t);
        if (!t || !info) {
            free(t); /* untracked: only the idle timeout applies to it */
            return;
        }
        t->fd = info->connect_fd;
        t->reading = true;
        t->reading_since_ms = clock_mono_ms();
        pthread_mutex_lock(&srv->lock);
        if (srv->reading >= HTTPD_READING_LIMIT) {
            /* The pool is full of clients still sending: the one that has
             * been at it longest makes room for this one. */
            tracked *oldest = NULL;
            for (tracked *o = srv->connections; o; o = o->next)
                if (o->reading && (!oldest || o->reading_since_ms <= oldest->reading_since_ms))
                    oldest = o;
            if (oldest) {
                cut(srv, oldest);
                srv->evicted++;
            }
        }
        note_peer(srv, t, conn);
        t->next = srv->connections;
        if (t->next)
            t->next->prev = t;
        srv->connections = t;
        srv->reading++;
        pthread_mutex_unlock(&srv->lock);
        *socket_context = t;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        tracked *t = *socket_context;
        if (!t)
            return;
        pthread_mutex_lock(&srv->lock);
        if (t->reading)
            srv->reading--;
        if (t->prev)
            t->prev->next = t->next;
        else
            srv->connections = t->next;
        if (t->next)
            t->next->prev = t->prev;
        pthread_mutex_unlock(&srv->lock);
        free(t);
        *socket_context = NULL;
    }
}

/* Under srv->lock: whether httpd_wake came for `ticket` before it waited
 * (forgotten once taken). */
static bool take_early_wake(httpd *srv, uint64_t ticket)
{
    size_t slots = 2 * (size_t)srv->max_waiting;
    for (size_t i = 0; i < slots; i++) {
        if (srv->early[i] == ticket) {
            srv->early[i] = 0;
            return true;
        }
    }
    return false;
}

void httpd_wake(httpd *srv, uint64_t ticket)
{
    if (!srv || ticket == 0 || srv->max_waiting <= 0)
        return;
    pthread_mutex_lock(&srv->lock);
    pending *p = srv->waiters;
    while (p && p->ticket != ticket)
        p = p->next_waiter;
    if (p) {
        p->wake_ms = 0;
        stopper_wake(&srv->stop);
    } else {
        srv->early[srv->n_early] = ticket;
        srv->n_early = (srv->n_early + 1) % (2 * (size_t)srv->max_waiting);
    }
    pthread_mutex_unlock(&srv->lock);
}

/* Closes the connections that have not sent a whole request within the
 * deadline, however busily they trickle. */
static void *watchdog_loop(void *arg)
{
    httpd *srv = arg;
    int64_t tick = srv->read_deadline_ms / DEADLINE_CHECKS_PER_DEADLINE;
    if (tick > OVER_LIMIT_GRACE_MS / 2)
        tick = OVER_LIMIT_GRACE_MS / 2;
    if (tick < 10)
        tick = 10;
    pthread_mutex_lock(&srv->lock);
    for (;;) {
        int64_t wait = tick, now = clock_mono_ms();
        for (pending *p = srv->waiters; p; p = p->next_waiter)
            if (p->wake_ms - now < wait)
                wait = p->wake_ms - now > 1 ? p->wake_ms - now : 1;
        if (stopper_wait_once(&srv->stop, wait))
            break;
        now = clock_mono_ms();
        /* Waiters due: resumed outside the lock (libmicrohttpd takes its
         * own), each then calls the handler again on the server's thread. */
        int n_due = 0;
        for (pending *p = srv->waiters, *next; p; p = next) {
            next = p->next_waiter;
            if (p->wake_ms <= now && n_due < srv->max_waiting) {
                unlist_waiter(srv, p);
                srv->due[n_due++] = p->conn;
            }
        }
        if (n_due > 0) {
            /* Only this thread writes srv->due; a suspended connection
             * cannot end meanwhile. */
            pthread_mutex_unlock(&srv->lock);
            for (int i = 0; i < n_due; i++)
                MHD_resume_connection(srv->due[i]);
            pthread_mutex_lock(&srv->lock);
            if (srv->stop.stop)
                break;
        }
        for (tracked *t = srv->connections; t; t = t->next) {
            if (t->reading && t->over_limit && now - t->reading_since_ms > OVER_LIMIT_GRACE_MS) {
                cut(srv, t); /* no probe: refused at its address's limit */
                srv->refused++;
            } else if (t->reading && now - t->reading_since_ms > srv->read_deadline_ms) {
                cut(srv, t);
                srv->closed_late++;
            }
        }
        if ((srv->closed_late || srv->evicted || srv->refused || srv->broken) &&
            now - srv->logged_ms >= CLOSINGS_LOG_INTERVAL_MS) {
            log_warn("http: port %d: slow or hostile clients (since the last such line): %" PRId64
                     " connections closed for sending no whole request within %" PRId64
                     " ms, %" PRId64 " closed to make room for new ones, %" PRId64
                     " refused at the limits (%d per address, %d in all), %" PRId64
                     " requests broken off half-way",
                     srv->port, srv->closed_late, srv->read_deadline_ms, srv->evicted, srv->refused,
                     HTTPD_PER_ADDRESS_LIMIT, HTTPD_CONNECTION_LIMIT, srv->broken);
            srv->closed_late = srv->evicted = srv->refused = srv->broken = 0;
            srv->logged_ms = now;
        }
    }
    pthread_mutex_unlock(&srv->lock);
    return NULL;
}

/* The request of `conn` is being answered (active), waits (waiting), or
 * neither (done). */
static void set_answering(httpd *srv, struct MHD_Connection *conn, bool active, bool waiting)
{
    tracked *t = tracked_of(conn);
    if (!t)
        return;
    pthread_mutex_lock(&srv->lock);
    t->active = active;
    t->waiting = waiting;
    pthread_mutex_unlock(&srv->lock);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    /* A kept-alive connection now waits for its next request, which has
     * the same deadline from here. */
    set_reading(cls, conn, true);
    set_answering(cls, conn, false, false);
    pending *p = *con_cls;
    if (p) {
        httpd *srv = cls;
        pthread_mutex_lock(&srv->lock);
        release_place(srv, p);
        pthread_mutex_unlock(&srv->lock);
        strbuf_close(&p->body);
        free(p);
        *con_cls = NULL;
    }
}

/* The headers every answer carries, and those `resp` sets. */
static void add_headers(struct MHD_Response *r, const httpd_response *resp)
{
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, resp->content_type);
    /* Bodies are ours, typed on purpose: never let a browser guess. */
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (resp->location[0])
        MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, resp->location);
    if (resp->security_policy[0])
        MHD_add_response_header(r, "Content-Security-Policy", resp->security_policy);
    if (resp->authenticate[0])
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, resp->authenticate);
    if (resp->retry_after[0])
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, resp->retry_after);
    if (resp->allow[0])
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, resp->allow);
    if (resp->close)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (resp->set_cookie[0])
        MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, resp->set_cookie);
}

static enum MHD_Result queue(struct MHD_Connection *conn, httpd_response *resp)
{
    struct MHD_Response *r;
    if (resp->body && resp->body_len > 0) {
        r = MHD_create_response_from_buffer(resp->body_len, resp->body, MHD_RESPMEM_MUST_FREE);
        if (r)
            resp->body = NULL; /* libmicrohttpd frees it with the response */
    } else {
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    free(resp->body);
    if (!r)
        return MHD_NO;
    add_headers(r, resp);
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)resp->status, r);
    MHD_destroy_response(r);
    return rc;
}

/* A streamed answer (httpd.h): the handler's source and its request. */
typedef struct stream {
    httpd *srv;
    pending *p; /* the request's: lives until completed(), after the last read */
    httpd_stream_fn fn;
    void *ctx;
    void (*free_ctx)(void *ctx);
} stream;

/* Under srv->lock: list p as waiting until now + wait_ms (at once when
 * httpd_wake came for it meanwhile). */
static void list_waiter(httpd *srv, pending *p, int wait_ms)
{
    p->wake_ms = clock_mono_ms() + wait_ms;
    if (take_early_wake(srv, p->ticket))
        p->wake_ms = 0; /* its answer came while the handler was returning */
    p->listed = true;
    p->prev_waiter = NULL;
    p->next_waiter = srv->waiters;
    if (srv->waiters)
        srv->waiters->prev_waiter = p;
    srv->waiters = p;
    stopper_wake(&srv->stop);
}

/* libmicrohttpd asks for more of the stream: what it has, or the
 * connection suspended until it may have more (never a busy loop). */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream *st = cls;
    httpd *srv = st->srv;
    pthread_mutex_lock(&srv->lock);
    bool stopping = srv->stop.stop;
    pthread_mutex_unlock(&srv->lock);
    int wait_ms = 0;
    long n = st->fn(st->ctx, buf, max, stopping, &wait_ms);
    if (n > 0)
        return (ssize_t)n;
    if (n < 0 || stopping)
        return MHD_CONTENT_READER_END_OF_STREAM;
    /* Suspended before it is listed, as a waiting request is (answer). */
    MHD_suspend_connection(st->p->conn);
    pthread_mutex_lock(&srv->lock);
    stopping = srv->stop.stop;
    if (!stopping)
        list_waiter(srv, st->p, wait_ms > 0 ? wait_ms : 1);
    pthread_mutex_unlock(&srv->lock);
    if (stopping) /* httpd_stop has swept the list: read again, and end */
        MHD_resume_connection(st->p->conn);
    return 0;
}

static void stream_free(void *cls)
{
    stream *st = cls;
    if (st->free_ctx)
        st->free_ctx(st->ctx);
    free(st);
}

/* The handler answered with a stream: it holds the request's waiting place
 * (taken already) until the request completes. */
static enum MHD_Result queue_stream(httpd *srv, pending *p, struct MHD_Connection *conn,
                                    httpd_response *resp)
{
    free(resp->body);
    resp->body = NULL;
    stream *st = calloc(1, sizeof *st);
    struct MHD_Response *r =
        st ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, st, stream_free)
           : NULL;
    if (!r) {
        free(st);
        if (resp->stream_free)
            resp->stream_free(resp->stream_ctx);
        return MHD_NO;
    }
    *st = (stream){srv, p, resp->stream, resp->stream_ctx, resp->stream_free};
    p->conn = conn;
    add_headers(r, resp);
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)resp->status, r);
    MHD_destroy_response(r);
    return rc;
}

/* Always answered, whatever the limits: what probes and scrapers ask for
 * (a liveness probe that cannot get through restarts a healthy program). */
static bool is_probe(const char *url)
{
    static const char *const probes[] = {"/healthz", "/readyz", "/metrics"};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
        if (strcmp(url, probes[i]) == 0)
            return true;
    return false;
}

/* Whether `path` is one of `paths` (NULL-terminated; NULL: none). */
static bool path_listed(const char *path, const char *const *paths)
{
    for (size_t i = 0; paths && paths[i]; i++)
        if (strcmp(path, paths[i]) == 0)
            return true;
    return false;
}

typedef struct joined {
    char text[1024];
    size_t len;
} joined;

/* Every X-Forwarded-For header, joined with "," in the order sent. */
static enum MHD_Result join_forwarded(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    (void)kind;
    joined *j = cls;
    if (key && value && strcasecmp(key, "X-Forwarded-For") == 0) {
        int n =
            snprintf(j->text + j->len, sizeof j->text - j->len, "%s%s", j->len ? "," : "", value);
        if (n > 0)
            j->len = j->len + (size_t)n < sizeof j->text ? j->len + (size_t)n : sizeof j->text - 1;
    }
    return MHD_YES;
}

/* The headers are in: who the client is (p->client), and whether its
 * request may be answered now. NULL: yes (it counts as being answered);
 * else why not (answered 503). Probes always may. */
static const char *admit(httpd *srv, struct MHD_Connection *conn, const char *url, pending *p)
{
    tracked *t = tracked_of(conn);
    if (!t)
        return NULL; /* untracked: only the idle timeout and the total limit apply */
    joined forwarded = {.len = 0};
    if (t->trusted_peer)
        MHD_get_connection_values(conn, MHD_HEADER_KIND, join_forwarded, &forwarded);
    bool probe = is_probe(url);
    const char *refusal = NULL;
    pthread_mutex_lock(&srv->lock);
    cidr_client_address(srv->proxies, srv->n_proxies, t->peer,
                        forwarded.len ? forwarded.text : NULL, t->client, sizeof t->client);
    snprintf(p->client, sizeof p->client, "%s", t->client);
    if (!probe && t->over_limit)
        refusal = "too many connections from this address at once (long polls aside); try "
                  "again\n";
    else if (!probe && t->trusted_peer &&
             answering_for(srv, t, t->client) >= HTTPD_PER_ADDRESS_LIMIT)
        refusal = "too many requests from this client at once (long polls aside); try again\n";
    if (refusal)
        srv->refused++;
    else
        t->active = true;
    pthread_mutex_unlock(&srv->lock);
    return refusal;
}

/* Queues a plain-text answer httpd gives itself (421, 503, 413), never the
 * handler. */
static enum MHD_Result queue_text(struct MHD_Connection *conn, httpd_response *resp, int status,
                                  const char *text)
{
    httpd_reply_text(resp, status, "text/plain; charset=utf-8", text);
    return queue(conn, resp);
}

/* The first call for a request: only the headers are in. The Host check
 * (421) and the limits (503) answer here, before the body is read and
 * before the handler. */
static enum MHD_Result headers_in(httpd *srv, struct MHD_Connection *conn, const char *url,
                                  void **con_cls)
{
    pending *p = calloc(1, sizeof *p);
    if (!p)
        return MHD_NO;
    *con_cls = p;
    if (srv->check_host && !path_listed(url, srv->any_host_paths) &&
        !httpd_host_allowed(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host"),
                            srv->allowed_hosts, srv->n_allowed_hosts)) {
        /* A name this server was not told it has: a page that rebound its
         * own name to this address (DNS rebinding) must not read the
         * answer. */
        set_reading(srv, conn, false);
        httpd_response resp = {.status = 421};
        return queue_text(conn, &resp, 421,
                          "misdirected request: this server does not answer to that Host "
                          "name (allowed: loopback names and the configured ones)\n");
    }
    const char *refusal = admit(srv, conn, url, p);
    if (refusal) {
        set_reading(srv, conn, false);
        httpd_response resp = {.status = 503, .close = true};
        snprintf(resp.retry_after, sizeof resp.retry_after, "1");
        return queue_text(conn, &resp, 503, refusal);
    }
    return MHD_YES;
}

/* A piece of the body: kept while the whole stays within HTTPD_MAX_BODY,
 * then dropped (too_big: answered 413, or body_too_large). */
static enum MHD_Result body_piece(pending *p, const char *data, size_t *size)
{
    size_t n = *size;
    *size = 0;
    if (p->too_big || p->body.len + n > HTTPD_MAX_BODY) {
        p->too_big = true;
        return MHD_YES;
    }
    strbuf_append(&p->body, data, n);
    return p->body.failed ? MHD_NO : MHD_YES;
}

/* Calls the handler with the request as it stands (again, for a waiting
 * one); returns whether it was allowed to wait (httpd_request.can_wait). */
static bool call_handler(httpd *srv, struct MHD_Connection *conn, const char *url,
                         const char *method, pending *p, httpd_response *resp)
{
    pthread_mutex_lock(&srv->lock);
    if (!p->started_ms) {
        p->started_ms = clock_mono_ms();
        p->ticket = ++srv->tickets;
    }
    bool can_wait = srv->max_waiting > 0 && !srv->stop.stop &&
                    (p->holds_place || srv->waiting < srv->max_waiting);
    pthread_mutex_unlock(&srv->lock);
    httpd_request req = {
        .method = method,
        .path = url,
        .body = p->body.data && !p->too_big ? p->body.data : "",
        .body_len = p->too_big ? 0 : p->body.len,
        .body_too_large = p->too_big,
        .started_ms = p->started_ms,
        .can_wait = can_wait,
        .calls = p->calls++,
        .ticket = p->ticket,
        .client_address = p->client,
        .conn_ = conn,
    };
    if (req.calls > 0)
        set_answering(srv, conn, true, false); /* back from its wait */
    srv->handler(srv->ctx, &req, resp);
    return can_wait;
}

/* Under srv->lock: p counts among the waiting places (httpd_options.
 * max_waiting) until completed() gives its place back. */
static void hold_place(httpd *srv, pending *p)
{
    if (!p->holds_place) {
        p->holds_place = true;
        srv->waiting++;
    }
}

/* The handler answered with a stream. It waits on its source as a long
 * poll does: it counts among the waiting places, in no address's limit. */
static enum MHD_Result begin_stream(httpd *srv, struct MHD_Connection *conn, pending *p,
                                    httpd_response *resp)
{
    set_answering(srv, conn, false, true);
    pthread_mutex_lock(&srv->lock);
    hold_place(srv, p);
    pthread_mutex_unlock(&srv->lock);
    return queue_stream(srv, p, conn, resp);
}

/* The handler has no answer yet: the connection is suspended (no thread,
 * no polling) until the watchdog or httpd_wake resumes it. */
static enum MHD_Result begin_wait(httpd *srv, struct MHD_Connection *conn, pending *p,
                                  httpd_response *resp)
{
    free(resp->body);
    set_answering(srv, conn, false, true);
    /* Suspended before it is listed, so the watchdog's resumption always
     * comes after the suspension. */
    MHD_suspend_connection(conn);
    pthread_mutex_lock(&srv->lock);
    bool stopping = srv->stop.stop;
    if (!stopping) {
        hold_place(srv, p);
        p->conn = conn;
        list_waiter(srv, p, resp->wait_ms);
    }
    pthread_mutex_unlock(&srv->lock);
    if (stopping) /* httpd_stop has swept the list: call the handler again now */
        MHD_resume_connection(conn);
    return MHD_YES;
}

/* libmicrohttpd's request callback: called once with the headers, once per
 * piece of the body, then once more (and again after each wait) to answer. */
static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    (void)version;
    httpd *srv = cls;
    pending *p = *con_cls;
    if (!p)
        return headers_in(srv, conn, url, con_cls);
    if (*upload_data_size > 0)
        return body_piece(p, upload_data, upload_data_size);

    set_reading(srv, conn, false);
    httpd_response resp = {.status = 200};
    snprintf(resp.content_type, sizeof resp.content_type, "text/plain; charset=utf-8");
    if (p->too_big && !srv->answer_oversized)
        return queue_text(conn, &resp, 413, "request body too large\n");
    bool can_wait = call_handler(srv, conn, url, method, p, &resp);
    if (resp.stream && !can_wait) {
        /* Only a request that may wait may stream: a handler that streams
         * anyway gets no connection for it. */
        if (resp.stream_free)
            resp.stream_free(resp.stream_ctx);
        resp.stream = NULL;
        httpd_reply_text(&resp, 503, "text/plain; charset=utf-8", "too many waiting clients\n");
    }
    if (resp.stream)
        return begin_stream(srv, conn, p, &resp);
    if (resp.wait_ms > 0 && can_wait)
        return begin_wait(srv, conn, p, &resp);
    /* A place held is given back once the answer is sent (completed), so
     * that httpd_stop knows when the waiters have their answers. A probe let
     * in beyond its address's limit does not stay. */
    tracked *t = tracked_of(conn);
    if (t && t->over_limit)
        resp.close = true;
    return queue(conn, &resp);
}

/* Splits "HOST:PORT" / "[V6]:PORT" into its parts. */
static int split_listen(const char *listen, char *host, size_t host_size, char *port,
                        size_t port_size)
{
    const char *colon = strrchr(listen, ':');
    if (!colon || colon[1] == '\0')
        return -1;
    const char *h = listen;
    size_t hlen = (size_t)(colon - listen);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= host_size || strlen(colon + 1) >= port_size)
        return -1;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    snprintf(port, port_size, "%s", colon + 1);
    for (const char *c = port; *c; c++)
        if (*c < '0' || *c > '9')
            return -1;
    return atoi(port) <= 65535 ? 0 : -1;
}

httpd *httpd_start(const char *listen, httpd_handler handler, void *ctx, vf_error *err)
{
    return httpd_start_with(listen, NULL, handler, ctx, err);
}

static void free_tls(httpd *srv)
{
    if (srv->tls_key) {
        OPENSSL_cleanse(srv->tls_key, strlen(srv->tls_key));
        free(srv->tls_key);
    }
    free(srv->tls_cert);
}

static int parse_proxies(httpd *srv, const char *const *texts, size_t n, vf_error *err)
{
    if (!(srv->proxies = calloc(n, sizeof *srv->proxies))) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (cidr_parse(texts[i], &srv->proxies[i]) < 0) {
            vf_error_set(err, VF_ECONFIG,
                         "trusted proxy '%s' is not an address or an address range (10.0.0.0/8)",
                         texts[i]);
            free(srv->proxies);
            srv->proxies = NULL;
            return -1;
        }
    }
    srv->n_proxies = (int)n;
    return 0;
}

/* `listen` split and resolved: its port into port, its address into *ai
 * (freeaddrinfo). */
static int resolve_listen(const char *listen, char port[PORT_TEXT], struct addrinfo **ai,
                          vf_error *err)
{
    char host[256];
    if (!listen || split_listen(listen, host, sizeof host, port, PORT_TEXT) != 0) {
        vf_error_set(err, VF_ECONFIG, "listen address '%s' is not HOST:PORT",
                     listen ? listen : "(null)");
        return -1;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    int gai = getaddrinfo(host, port, &hints, ai);
    if (gai != 0 || !*ai) {
        vf_error_set(err, VF_ECONFIG, "listen address '%s': %s", listen, gai_strerror(gai));
        return -1;
    }
    return 0;
}

/* Copies of the certificate and key, when options ask for HTTPS. */
static int copy_tls(httpd *srv, const httpd_options *options, vf_error *err)
{
    if (!options->tls_cert_pem && !options->tls_key_pem)
        return 0;
    const char *problem = NULL;
    if (!options->tls_cert_pem || !options->tls_key_pem)
        problem = "HTTPS needs both a certificate and a key";
    else if (!httpd_tls_supported())
        problem = "this libmicrohttpd was built without TLS (GnuTLS)";
    else if (!(srv->tls_cert = strdup(options->tls_cert_pem)) ||
             !(srv->tls_key = strdup(options->tls_key_pem)))
        problem = "out of memory";
    if (problem) {
        vf_error_set(err, VF_ECONFIG, "%s", problem);
        return -1;
    }
    return 0;
}

/* srv's settings from `options` (NULL: the defaults, any Host). */
static int apply_options(httpd *srv, const httpd_options *options, vf_error *err)
{
    srv->read_deadline_ms = HTTPD_READ_DEADLINE_MS;
    if (!options)
        return 0;
    srv->check_host = options->check_host;
    srv->allowed_hosts = options->allowed_hosts;
    srv->n_allowed_hosts = options->n_allowed_hosts;
    srv->any_host_paths = options->any_host_paths;
    srv->answer_oversized = options->answer_oversized;
    if (options->read_deadline_ms > 0)
        srv->read_deadline_ms = options->read_deadline_ms;
    if (options->max_waiting > 0)
        srv->max_waiting = options->max_waiting;
    if (options->n_trusted_proxies > 0 &&
        parse_proxies(srv, options->trusted_proxies, options->n_trusted_proxies, err) < 0)
        return -1;
    return copy_tls(srv, options, err);
}

/* The watchdog's resumption slots and the early wakes' ring, with waiting
 * requests allowed. */
static int allocate_waiting(httpd *srv, vf_error *err)
{
    if (srv->max_waiting == 0)
        return 0;
    if (!(srv->due = calloc((size_t)srv->max_waiting, sizeof *srv->due)) ||
        !(srv->early = calloc(2 * (size_t)srv->max_waiting, sizeof *srv->early))) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    return 0;
}

/* Frees a server that has no lock, stopper or daemon yet. */
static void free_unstarted(httpd *srv)
{
    free(srv->due);
    free(srv->early);
    free(srv->proxies);
    free_tls(srv);
    free(srv);
}

/* libmicrohttpd's daemon on `ai`, its own thread polling every connection. */
static int start_daemon(httpd *srv, const struct addrinfo *ai, const char *port, const char *listen,
                        vf_error *err)
{
    /* epoll where there is one: select() would fail past descriptor 1023. */
    unsigned flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (srv->max_waiting > 0)
        flags |= MHD_ALLOW_SUSPEND_RESUME;
    struct MHD_OptionItem tls_options[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, srv->tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    if (srv->tls_cert)
        flags |= MHD_USE_TLS;
    srv->daemon =
        /* The logger goes first so that libmicrohttpd's own messages use it. */
        MHD_start_daemon(
            flags, (uint16_t)atoi(port), NULL, NULL, answer, srv, MHD_OPTION_EXTERNAL_LOGGER,
            log_mhd, srv, MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_NOTIFY_COMPLETED, completed,
            srv, MHD_OPTION_NOTIFY_CONNECTION, connection_notice, srv, MHD_OPTION_CONNECTION_LIMIT,
            (unsigned)HTTPD_CONNECTION_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT,
            (unsigned)HTTPD_IDLE_TIMEOUT_S, MHD_OPTION_ARRAY,
            srv->tls_cert ? tls_options : tls_options + 2, MHD_OPTION_END);
    if (!srv->daemon) {
        vf_error_set(err, VF_EIO,
                     srv->tls_cert ? "cannot listen on %s (in use, not an address of this "
                                     "machine, or a certificate and key that do not load or "
                                     "match: see the line before)"
                                   : "cannot listen on %s (in use, or not an address of this "
                                     "machine)",
                     listen);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : atoi(port);
    return 0;
}

httpd *httpd_start_with(const char *listen, const httpd_options *options, httpd_handler handler,
                        void *ctx, vf_error *err)
{
    char port[PORT_TEXT];
    struct addrinfo *ai = NULL;
    if (resolve_listen(listen, port, &ai, err) < 0)
        return NULL;
    httpd *srv = calloc(1, sizeof *srv);
    if (!srv) {
        freeaddrinfo(ai);
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    srv->handler = handler;
    srv->ctx = ctx;
    if (apply_options(srv, options, err) < 0 || allocate_waiting(srv, err) < 0) {
        freeaddrinfo(ai);
        free_unstarted(srv);
        return NULL;
    }
    pthread_mutex_init(&srv->lock, NULL);
    if (stopper_init(&srv->stop, &srv->lock) < 0) {
        freeaddrinfo(ai);
        pthread_mutex_destroy(&srv->lock);
        free_unstarted(srv);
        vf_error_set(err, VF_EINTERNAL, "cannot make the HTTP deadline thread's stopper");
        return NULL;
    }
    srv->logged_ms = clock_mono_ms() - CLOSINGS_LOG_INTERVAL_MS;
    int started = start_daemon(srv, ai, port, listen, err);
    freeaddrinfo(ai);
    if (started < 0) {
        httpd_stop(srv);
        return NULL;
    }
    if (pthread_create(&srv->watchdog, NULL, watchdog_loop, srv) != 0) {
        vf_error_set(err, VF_EINTERNAL, "cannot start the HTTP deadline thread");
        httpd_stop(srv);
        return NULL;
    }
    srv->watchdog_running = true;
    return srv;
}

void httpd_stop(httpd *srv)
{
    if (!srv)
        return;
    if (srv->watchdog_running) {
        stopper_stop(&srv->stop);
        pthread_join(srv->watchdog, NULL);
    }
    /* libmicrohttpd must not stop with suspended connections: each waiter is
     * called once more (can_wait is false now) and answers; a little time
     * for the answers to be sent (completed gives the places back), bounded. */
    if (srv->daemon && srv->max_waiting > 0) {
        pthread_mutex_lock(&srv->lock);
        srv->stop.stop = 1; /* when the watchdog never ran */
        while (srv->waiters) {
            pending *p = srv->waiters;
            unlist_waiter(srv, p);
            struct MHD_Connection *conn = p->conn;
            pthread_mutex_unlock(&srv->lock);
            MHD_resume_connection(conn);
            pthread_mutex_lock(&srv->lock);
        }
        int64_t until = clock_mono_ms() + 2000;
        while (srv->waiting > 0 && clock_mono_ms() < until) {
            pthread_mutex_unlock(&srv->lock);
            struct timespec pause = {.tv_nsec = 10 * 1000000L};
            nanosleep(&pause, NULL);
            pthread_mutex_lock(&srv->lock);
        }
        pthread_mutex_unlock(&srv->lock);
    }
    /* Its closed notices empty the list. */
    if (srv->daemon)
        MHD_stop_daemon(srv->daemon);
    stopper_close(&srv->stop);
    pthread_mutex_destroy(&srv->lock);
    free(srv->due);
    free(srv->early);
    free(srv->proxies);
    free_tls(srv);
    free(srv);
}

bool httpd_tls_supported(void)
{
    return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

int httpd_port(const httpd *srv)
{
    return srv->port;
}

static bool host_is_loopback(const char *host)
{
    if (strcasecmp(host, "localhost") == 0)
        return true;
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton(AF_INET, host, &v4) == 1)
        return (ntohl(v4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

bool httpd_listen_is_loopback(const char *listen)
{
    char host[256], port[8];
    if (!listen || split_listen(listen, host, sizeof host, port, sizeof port) != 0)
        return false;
    return host_is_loopback(host);
}

bool httpd_listen_is_wildcard(const char *listen)
{
    char host[256], port[8];
    if (!listen || split_listen(listen, host, sizeof host, port, sizeof port) != 0)
        return false;
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton(AF_INET, host, &v4) == 1)
        return v4.s_addr == htonl(INADDR_ANY);
    return inet_pton(AF_INET6, host, &v6) == 1 && IN6_IS_ADDR_UNSPECIFIED(&v6);
}

/* The name in "NAME", "NAME:PORT", "[V6]", "[V6]:PORT" or a bare "V6" (a
 * configured name) into out[size], without brackets or port. -1 when it is
 * not of that shape. */
static int host_name_of(const char *value, bool bare_v6, char *out, size_t size)
{
    const char *name = value, *end;
    if (value[0] == '[') {
        name = value + 1;
        end = strchr(name, ']');
        if (!end || (end[1] != '\0' && end[1] != ':'))
            return -1;
    } else {
        end = strchr(value, ':');
        if (end && strchr(end + 1, ':')) {
            if (!bare_v6)
                return -1; /* an IPv6 literal in a Host header carries brackets */
            end = NULL;
        }
        if (!end)
            end = value + strlen(value);
    }
    if (*end == ':' || (end[0] == ']' && end[1] == ':')) {
        const char *port = strchr(end, ':') + 1;
        for (const char *c = port; *c; c++)
            if (*c < '0' || *c > '9')
                return -1;
    }
    size_t len = (size_t)(end - name);
    if (len == 0 || len >= size)
        return -1;
    memcpy(out, name, len);
    out[len] = '\0';
    /* "localhost." is the same name as "localhost". */
    if (len > 1 && out[len - 1] == '.')
        out[len - 1] = '\0';
    return 0;
}

bool httpd_host_allowed(const char *host_header, const char *const *names, size_t n_names)
{
    char host[256];
    if (!host_header || host_name_of(host_header, false, host, sizeof host) != 0)
        return false;
    if (host_is_loopback(host))
        return true;
    for (size_t i = 0; i < n_names; i++) {
        char allowed[256];
        if (names[i] && host_name_of(names[i], true, allowed, sizeof allowed) == 0 &&
            strcasecmp(host, allowed) == 0)
            return true;
    }
    return false;
}

const char *httpd_query(const httpd_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn_, MHD_GET_ARGUMENT_KIND, name);
}

typedef struct unknown_search {
    const char *const *known;
    const char *found;
} unknown_search;

static enum MHD_Result find_unknown(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    (void)value;
    unknown_search *search = cls;
    for (const char *const *k = search->known; *k; k++)
        if (strcmp(*k, key) == 0)
            return MHD_YES;
    search->found = key;
    return MHD_NO;
}

const char *httpd_query_unknown(const httpd_request *req, const char *const *known)
{
    unknown_search search = {.known = known};
    MHD_get_connection_values(req->conn_, MHD_GET_ARGUMENT_KIND, find_unknown, &search);
    return search.found;
}

int httpd_query_count(const httpd_request *req)
{
    return MHD_get_connection_values(req->conn_, MHD_GET_ARGUMENT_KIND, NULL, NULL);
}

const char *httpd_header(const httpd_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn_, MHD_HEADER_KIND, name);
}

bool httpd_form(const httpd_request *req, const char *name, char *out, size_t out_size)
{
    size_t name_len = strlen(name);
    const char *p = req->body;
    while (p && *p) {
        const char *end = strchr(p, '&');
        size_t field_len = end ? (size_t)(end - p) : strlen(p);
        if (field_len > name_len && strncmp(p, name, name_len) == 0 && p[name_len] == '=') {
            size_t value_len = field_len - name_len - 1;
            if (value_len >= out_size)
                return false;
            memcpy(out, p + name_len + 1, value_len);
            out[value_len] = '\0';
            /* Form encoding writes spaces as '+'; percent escapes are
             * libmicrohttpd's to decode. */
            for (char *c = out; *c; c++)
                if (*c == '+')
                    *c = ' ';
            MHD_http_unescape(out);
            return true;
        }
        p = end ? end + 1 : NULL;
    }
    return false;
}

void httpd_reply_text(httpd_response *resp, int status, const char *content_type, const char *text)
{
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    if (copy)
        memcpy(copy, text, len + 1);
    httpd_reply_take(resp, copy ? status : 500, content_type, copy, copy ? len : 0);
}

void httpd_reply_take(httpd_response *resp, int status, const char *content_type, char *body,
                      size_t len)
{
    free(resp->body);
    resp->status = status;
    snprintf(resp->content_type, sizeof resp->content_type, "%s", content_type);
    resp->body = body;
    resp->body_len = len;
}
