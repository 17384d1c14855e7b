/* relay_sender against HTTP servers on loopback (a thread of this test): what
 * a receiver gets (method, signed headers that verify, the extra headers, the
 * body byte for byte), what the relay gets back (status, Retry-After, the
 * start of a long body, a redirect left unfollowed, a refused connection),
 * the in-flight counts, and requests given back or dropped at shutdown. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay_sender.h"
#include "signature.h"
#include "testlib.h"

#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define NOW_S 1700000000

/* Answers one request per connection, each with the next reply. */
typedef struct server {
    int listener;
    int port;
    const char *const *replies; /* whole HTTP responses, NULL-terminated */
    char request[16384];        /* the last request, headers and body */
    size_t request_len;
    int served;
} server;

static void read_request(server *srv, int conn)
{
    size_t used = 0;
    for (;;) {
        ssize_t got = read(conn, srv->request + used, sizeof srv->request - 1 - used);
        if (got <= 0)
            break;
        used += (size_t)got;
        srv->request[used] = '\0';
        char *end = strstr(srv->request, "\r\n\r\n");
        const char *length = strstr(srv->request, "Content-Length: ");
        if (end && length && used >= (size_t)(end + 4 - srv->request) + (size_t)atol(length + 16))
            break;
    }
    srv->request_len = used;
}

static void *serve(void *arg)
{
    server *srv = arg;
    for (const char *const *reply = srv->replies; *reply; reply++) {
        int conn = accept(srv->listener, NULL, NULL);
        if (conn < 0)
            return NULL;
        read_request(srv, conn);
        if (write(conn, *reply, strlen(*reply)) < 0)
            perror("write");
        close(conn);
        srv->served++;
    }
    return NULL;
}

/* A listener on 127.0.0.1, port chosen by the kernel. 0 or -1. */
static int listen_loopback(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, 8) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    socklen_t len = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &len);
    *port = ntohs(addr.sin_port);
    return fd;
}

static int server_start(server *srv, const char *const *replies, pthread_t *thread)
{
    memset(srv, 0, sizeof *srv);
    srv->replies = replies;
    srv->listener = listen_loopback(&srv->port);
    if (srv->listener < 0)
        return -1;
    return pthread_create(thread, NULL, serve, srv);
}

static void server_stop(server *srv, pthread_t thread)
{
    /* Wakes an accept still waiting (a failed test), so the join returns. */
    shutdown(srv->listener, SHUT_RDWR);
    pthread_join(thread, NULL);
    close(srv->listener);
}

/* The value of header `name` in the request (case as sent), into out. */
static void header_value(const char *request, const char *name, char *out, size_t size)
{
    out[0] = '\0';
    char prefix[128];
    snprintf(prefix, sizeof prefix, "\r\n%s: ", name);
    const char *at = strstr(request, prefix);
    if (!at)
        return;
    at += strlen(prefix);
    const char *end = strstr(at, "\r\n");
    size_t len = end ? (size_t)(end - at) : strlen(at);
    snprintf(out, size, "%.*s", (int)len, at);
}

/* One receiver at `port`, with one key and one extra header. */
typedef struct receiver_fixture {
    config_receiver config;
    signature_key key;
    char url[128];
    char name[8];
    char header_text[32];
    char *header_line;
    relay_receiver receiver;
} receiver_fixture;

static void receiver_init(receiver_fixture *f, int port, const char *path)
{
    memset(f, 0, sizeof *f);
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d%s", port, path);
    snprintf(f->name, sizeof f->name, "test");
    f->config.name = f->name;
    f->config.url = f->url;
    f->config.timeout_s = 10;
    f->config.enabled = true;
    f->config.max_in_flight = 8;
    vf_error err;
    vf_error_init(&err);
    CHECKF(signature_key_parse(SECRET, &f->key, &err) == 0, "%s", err.text);
    snprintf(f->header_text, sizeof f->header_text, "X-Tenant: blue");
    f->header_line = f->header_text;
    f->receiver.config = &f->config;
    f->receiver.keys = &f->key;
    f->receiver.n_keys = 1;
    f->receiver.header_lines = &f->header_line;
    f->receiver.n_header_lines = 1;
}

static relay_request make_request(const char *event_id, const char *body, void *user)
{
    relay_request r = {0};
    r.event_id = strdup(event_id);
    r.body = strdup(body);
    r.body_len = strlen(body);
    r.user = user;
    return r;
}

/* Poll until one result arrives; bounded by receiver timeouts, not by a
 * clock of the test's own. 1 with *out filled, 0 when none came. */
static int wait_result(relay_sender *sender, relay_result *out)
{
    for (int round = 0; round < 2000; round++) {
        if (relay_sender_next_result(sender, out) == 1)
            return 1;
        vf_error err;
        vf_error_init(&err);
        if (relay_sender_poll(sender, 50, &err) < 0) {
            CHECKF(false, "poll: %s", err.text);
            return 0;
        }
    }
    return 0;
}

static void free_result(relay_result *result)
{
    free(result->request.event_id);
    free(result->request.body);
}

static void test_signed_post(void)
{
    static const char *const replies[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", NULL};
    server srv;
    pthread_t thread;
    if (server_start(&srv, replies, &thread) != 0) {
        CHECK(!"server started");
        return;
    }
    receiver_fixture f;
    receiver_init(&f, srv.port, "/hook");
    vf_error err;
    vf_error_init(&err);
    relay_sender *sender = relay_sender_new(&f.receiver, 1, &err);
    CHECK(sender != NULL);
    int tag = 7;
    const char *body = "{\"type\":\"task.placed\",\"data\":{\"vmid\":101}}";
    relay_request req = make_request("evt-1", body, &tag);
    req.attempts_before = 2;
    req.epoch = 5;
    CHECKF(relay_sender_start(sender, &req, NOW_S, &err) == 0, "%s", err.text);
    CHECK(relay_sender_running(sender) == 1);
    CHECK(f.receiver.in_flight == 1);

    static relay_result result;
    CHECK(wait_result(sender, &result) == 1);
    server_stop(&srv, thread);
    CHECK(result.transport_ok);
    CHECK(result.status == 200);
    CHECK_STR(result.body, "ok");
    CHECK(result.body_len == 2);
    CHECK_STR(result.retry_after, "");
    CHECK_STR(result.request.event_id, "evt-1");
    CHECK(result.request.user == &tag);
    CHECK(result.request.attempts_before == 2 && result.request.epoch == 5);
    CHECK(relay_sender_running(sender) == 0);
    CHECK(f.receiver.in_flight == 0);

    /* What the receiver saw. */
    CHECK(strncmp(srv.request, "POST /hook HTTP/1.1\r\n", 21) == 0);
    char value[256], id[64], timestamp[64];
    header_value(srv.request, "Content-Type", value, sizeof value);
    CHECK_STR(value, "application/json");
    header_value(srv.request, "X-Tenant", value, sizeof value);
    CHECK_STR(value, "blue");
    header_value(srv.request, "User-Agent", value, sizeof value);
    CHECK_CONTAINS(value, "virtflow-relay");
    CHECK(strstr(srv.request, "Expect:") == NULL);
    header_value(srv.request, "webhook-id", id, sizeof id);
    CHECK_STR(id, "evt-1");
    header_value(srv.request, "webhook-timestamp", timestamp, sizeof timestamp);
    CHECK_STR(timestamp, "1700000000");
    header_value(srv.request, "webhook-signature", value, sizeof value);
    const char *sent_body = strstr(srv.request, "\r\n\r\n");
    CHECK(sent_body && strcmp(sent_body + 4, body) == 0);
    CHECK(signature_verify(&f.key, 1, id, timestamp, value, body, strlen(body), NOW_S,
                           SIGNATURE_TOLERANCE_S) == SIGNATURE_VALID);
    /* Signed over these bytes: another body does not verify. */
    CHECK(signature_verify(&f.key, 1, id, timestamp, value, "{}", 2, NOW_S,
                           SIGNATURE_TOLERANCE_S) == SIGNATURE_BAD_SIGNATURE);
    free_result(&result);
    relay_sender_free(sender);
}

static void test_replies_as_received(void)
{
    /* A refusal with Retry-After, a redirect (a failed attempt, not
     * followed), and a body longer than the sender keeps. */
    static char long_reply[RELAY_SENDER_BODY_MAX * 2 + 128];
    int head = snprintf(long_reply, sizeof long_reply,
                        "HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\n"
                        "Connection: close\r\n\r\n",
                        RELAY_SENDER_BODY_MAX * 2);
    memset(long_reply + head, 'x', RELAY_SENDER_BODY_MAX * 2);
    long_reply[head + RELAY_SENDER_BODY_MAX * 2] = '\0';
    static const char *replies[] = {
        "HTTP/1.1 503 Service Unavailable\r\nretry-after:   120  \r\nContent-Length: 4\r\n"
        "Connection: close\r\n\r\nbusy",
        "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n"
        "Connection: close\r\n\r\n",
        NULL, NULL};
    replies[2] = long_reply;
    server srv;
    pthread_t thread;
    if (server_start(&srv, replies, &thread) != 0) {
        CHECK(!"server started");
        return;
    }
    receiver_fixture f;
    receiver_init(&f, srv.port, "/");
    vf_error err;
    vf_error_init(&err);
    relay_sender *sender = relay_sender_new(&f.receiver, 1, &err);
    static relay_result result;

    relay_request req = make_request("evt-busy", "{}", NULL);
    CHECK(relay_sender_start(sender, &req, NOW_S, &err) == 0);
    CHECK(wait_result(sender, &result) == 1);
    CHECK(result.transport_ok && result.status == 503);
    CHECK_STR(result.retry_after, "120");
    CHECK_STR(result.body, "busy");
    free_result(&result);

    req = make_request("evt-moved", "{}", NULL);
    CHECK(relay_sender_start(sender, &req, NOW_S, &err) == 0);
    CHECK(wait_result(sender, &result) == 1);
    CHECK(result.transport_ok && result.status == 302);
    free_result(&result);

    req = make_request("evt-long", "{}", NULL);
    CHECK(relay_sender_start(sender, &req, NOW_S, &err) == 0);
    CHECK(wait_result(sender, &result) == 1);
    CHECK(result.transport_ok && result.status == 500);
    CHECK(result.body_len == RELAY_SENDER_BODY_MAX);
    CHECK(strlen(result.body) == RELAY_SENDER_BODY_MAX);
    free_result(&result);

    server_stop(&srv, thread);
    CHECK(srv.served == 3); /* the redirect was not followed to port 1 */
    CHECK(f.receiver.in_flight == 0);
    relay_sender_free(sender);
}

static void test_refused_connection(void)
{
    /* A port that was just listening and is closed now. */
    int port = 0;
    int fd = listen_loopback(&port);
    CHECK(fd >= 0);
    close(fd);
    receiver_fixture f;
    receiver_init(&f, port, "/");
    vf_error err;
    vf_error_init(&err);
    relay_sender *sender = relay_sender_new(&f.receiver, 1, &err);
    relay_request req = make_request("evt-refused", "{}", NULL);
    CHECK(relay_sender_start(sender, &req, NOW_S, &err) == 0);
    static relay_result result;
    CHECK(wait_result(sender, &result) == 1);
    CHECK(!result.transport_ok);
    CHECK(result.status == 0);
    CHECKF(result.error[0] != '\0', "libcurl's reason is kept");
    CHECK_STR(result.request.event_id, "evt-refused");
    free_result(&result);
    relay_sender_free(sender);
}

static void give_back(relay_request *request, void *ctx)
{
    int *count = ctx;
    (*count)++;
    CHECK_STR(request->event_id, "evt-hung");
    free(request->event_id);
    free(request->body);
}

static void test_start_refused_and_abandon(void)
{
    /* A receiver that accepts the connection (the kernel does) and never
     * answers: the request runs until given back. */
    int port = 0;
    int fd = listen_loopback(&port);
    CHECK(fd >= 0);
    receiver_fixture f;
    receiver_init(&f, port, "/");
    vf_error err;
    vf_error_init(&err);
    relay_sender *sender = relay_sender_new(&f.receiver, 1, &err);

    /* No such receiver: refused, the caller keeps its strings. */
    relay_request bad = make_request("evt-nowhere", "{}", NULL);
    bad.receiver = 1;
    CHECK(relay_sender_start(sender, &bad, NOW_S, &err) == -1);
    CHECK(err.code == VF_EINTERNAL);
    CHECK(relay_sender_running(sender) == 0);
    CHECK_STR(bad.event_id, "evt-nowhere");
    free(bad.event_id);
    free(bad.body);

    relay_request req = make_request("evt-hung", "{}", NULL);
    CHECK(relay_sender_start(sender, &req, NOW_S, &err) == 0);
    for (int i = 0; i < 5; i++)
        CHECK(relay_sender_poll(sender, 10, &err) == 0);
    static relay_result result;
    CHECK(relay_sender_next_result(sender, &result) == 0);
    CHECK(relay_sender_running(sender) == 1);
    /* A reload while a request runs would re-point its index: refused. */
    receiver_fixture other;
    receiver_init(&other, port, "/other");
    CHECK(relay_sender_set_receivers(sender, &other.receiver, 1) == -1);

    int given = 0;
    relay_sender_abandon(sender, give_back, &given);
    CHECK(given == 1);
    CHECK(relay_sender_running(sender) == 0);
    CHECK(f.receiver.in_flight == 0);
    CHECK(relay_sender_set_receivers(sender, &other.receiver, 1) == 0);

    /* Freed with a request still running: its strings go with it (valgrind
     * tells a leak). */
    req = make_request("evt-dropped", "{}", NULL);
    CHECK(relay_sender_start(sender, &req, NOW_S, &err) == 0);
    CHECK(other.receiver.in_flight == 1);
    relay_sender_free(sender);
    CHECK(other.receiver.in_flight == 0);
    relay_sender_free(NULL);
    close(fd);
}

int main(void)
{
    test_signed_post();
    test_replies_as_received();
    test_refused_connection();
    test_start_refused_and_abandon();
    return test_summary();
}
