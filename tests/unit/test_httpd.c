/* httpd: a real server on loopback, asked by libcurl (common/web/http.c) as any
 * client would: routes, query arguments, form fields, limits, addresses; and
 * over raw sockets where libcurl would not misbehave: a client trickling its
 * request, a foreign Host header. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "httpd.h"
#include "testlib.h"

/* The /woken route's: the server, and the ticket of the request waiting. */
static httpd *woken_server;
static uint64_t woken_ticket;

/* /stream's source: "part N\n" for N = 1..3, each after a wait of 30 ms
 * (or ?forever: waits for ever once they are out); freed once. */
typedef struct parts {
    int sent, waits;
    bool forever;
} parts;
static int parts_freed;

static long next_part(void *ctx, char *buf, size_t max, bool stopping, int *wait_ms)
{
    parts *p = ctx;
    if (stopping)
        return -1;
    if (p->sent == p->waits) { /* a wait between parts: nothing to send yet */
        if (p->sent == 3 && !p->forever)
            return -1;
        p->waits++;
        *wait_ms = p->sent == 3 ? 600000 : 30;
        return 0;
    }
    int n = snprintf(buf, max, "part %d\n", ++p->sent);
    return n;
}

static void free_parts(void *ctx)
{
    free(ctx);
    __atomic_add_fetch(&parts_freed, 1, __ATOMIC_SEQ_CST);
}

static void handle(void *ctx, const httpd_request *req, httpd_response *resp)
{
    int *calls = ctx;
    (*calls)++;
    char text[512];
    if (strcmp(req->path, "/hello") == 0) {
        const char *who = httpd_query(req, "who");
        snprintf(text, sizeof text, "%s hello %s", req->method, who ? who : "(none)");
        httpd_reply_text(resp, 200, "text/plain; charset=utf-8", text);
    } else if (strcmp(req->path, "/form") == 0) {
        char token[64] = "", note[64] = "", missing[8] = "";
        bool has_token = httpd_form(req, "token", token, sizeof token);
        bool has_note = httpd_form(req, "note", note, sizeof note);
        bool has_missing = httpd_form(req, "missing", missing, sizeof missing);
        snprintf(text, sizeof text, "%d[%s] %d[%s] %d", has_token, token, has_note, note,
                 has_missing);
        httpd_reply_text(resp, 200, "text/plain", text);
    } else if (strcmp(req->path, "/wait") == 0) {
        /* Waits until its n-th call while it may, then says how it ended. */
        const char *n = httpd_query(req, "n");
        if (req->can_wait && req->calls + 1 < atoi(n ? n : "0")) {
            resp->wait_ms = 20;
            return;
        }
        snprintf(text, sizeof text, "calls %d can_wait %d", req->calls + 1, req->can_wait);
        httpd_reply_text(resp, 200, "text/plain", text);
    } else if (strcmp(req->path, "/woken") == 0) {
        /* Waits ten minutes unless woken (httpd_wake): by the test, or by
         * itself before it has begun to wait (?early=1). */
        if (req->calls == 0 && req->can_wait) {
            resp->wait_ms = 600000;
            __atomic_store_n(&woken_ticket, req->ticket, __ATOMIC_SEQ_CST);
            if (httpd_query(req, "early"))
                httpd_wake(woken_server, req->ticket);
            return;
        }
        snprintf(text, sizeof text, "woken at call %d", req->calls + 1);
        httpd_reply_text(resp, 200, "text/plain", text);
    } else if (strcmp(req->path, "/whoami") == 0 || strcmp(req->path, "/healthz") == 0) {
        snprintf(text, sizeof text, "client %s", req->client_address ? req->client_address : "?");
        httpd_reply_text(resp, 200, "text/plain", text);
    } else if (strcmp(req->path, "/stream") == 0 && req->can_wait) {
        parts *p = calloc(1, sizeof *p);
        p->forever = httpd_query(req, "forever") != NULL;
        snprintf(resp->content_type, sizeof resp->content_type, "text/event-stream");
        resp->stream = next_part;
        resp->stream_ctx = p;
        resp->stream_free = free_parts;
    } else if (strcmp(req->path, "/go") == 0) {
        httpd_reply_text(resp, 303, "text/plain", "");
        snprintf(resp->location, sizeof resp->location, "/hello");
    } else {
        httpd_reply_text(resp, 404, "text/plain", "not found\n");
    }
}

static char *url_of(const httpd *srv, const char *path)
{
    static char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", httpd_port(srv), path);
    return url;
}

static void test_routes_and_arguments(void)
{
    int calls = 0;
    vf_error err;
    vf_error_init(&err);
    httpd *srv = httpd_start("127.0.0.1:0", handle, &calls, &err);
    CHECKF(srv != NULL, "%s", err.text);
    if (!srv)
        return;
    CHECK(httpd_port(srv) > 0);

    http_request get = {.url = url_of(srv, "/hello?who=a%20b%3Cc")};
    http_response resp = {0};
    CHECK(http_get(&get, &resp, &err) == 0);
    CHECK(resp.status == 200);
    CHECK_STR(resp.body, "GET hello a b<c");
    http_response_close(&resp);

    get.url = url_of(srv, "/nowhere");
    CHECK(http_get(&get, &resp, &err) == 0);
    CHECK(resp.status == 404);
    http_response_close(&resp);

    get.url = url_of(srv, "/go");
    CHECK(http_get(&get, &resp, &err) == 0);
    CHECK(resp.status == 303); /* redirects are the client's to follow (it does not) */
    http_response_close(&resp);

    http_request post = {.url = url_of(srv, "/form")};
    http_form_field fields[] = {{"note", "x y&z=1+2%"}, {"token", "s3cret"}};
    CHECK(http_post_form(&post, fields, 2, &resp, &err) == 0);
    CHECK_STR(resp.body, "1[s3cret] 1[x y&z=1+2%] 0");
    http_response_close(&resp);

    /* A body over the limit is refused before the handler sees it. */
    size_t big_len = HTTPD_MAX_BODY + 100;
    char *big = malloc(big_len + 1);
    memset(big, 'a', big_len);
    big[big_len] = '\0';
    http_form_field huge[] = {{"note", big}};
    int before = calls;
    CHECK(http_post_form(&post, huge, 1, &resp, &err) == 0);
    CHECK(resp.status == 413);
    CHECK(calls == before);
    http_response_close(&resp);
    free(big);

    httpd_stop(srv);
}

static void test_addresses(void)
{
    vf_error err;
    int calls = 0;
    const char *bad[] = {
        "", "9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:http", "1.2.3.4.5:80", "127.0.0.1:70000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vf_error_init(&err);
        httpd *srv = httpd_start(bad[i], handle, &calls, &err);
        CHECKF(srv == NULL && err.code == VF_ECONFIG, "'%s' accepted", bad[i]);
        httpd_stop(srv);
    }
    /* A port in use is an error, not a silent second listener. */
    vf_error_init(&err);
    httpd *first = httpd_start("127.0.0.1:0", handle, &calls, &err);
    CHECK(first != NULL);
    if (first) {
        char again[64];
        snprintf(again, sizeof again, "127.0.0.1:%d", httpd_port(first));
        vf_error_init(&err);
        httpd *second = httpd_start(again, handle, &calls, &err);
        CHECK(second == NULL && err.code == VF_EIO);
        httpd_stop(second);
        httpd_stop(first);
    }
    /* IPv6 loopback, when the machine has it. */
    vf_error_init(&err);
    httpd *v6 = httpd_start("[::1]:0", handle, &calls, &err);
    if (v6) {
        char url[128];
        snprintf(url, sizeof url, "http://[::1]:%d/hello", httpd_port(v6));
        http_request get = {.url = url};
        http_response resp = {0};
        CHECK(http_get(&get, &resp, &err) == 0 && resp.status == 200);
        http_response_close(&resp);
        httpd_stop(v6);
    } else {
        printf("note: no IPv6 loopback here (%s)\n", err.text);
    }

    CHECK(httpd_listen_is_loopback("127.0.0.1:8080"));
    CHECK(httpd_listen_is_loopback("127.1.2.3:8080"));
    CHECK(httpd_listen_is_loopback("[::1]:8080"));
    CHECK(httpd_listen_is_loopback("localhost:8080"));
    CHECK(!httpd_listen_is_loopback("0.0.0.0:8080"));
    CHECK(!httpd_listen_is_loopback("[::]:8080"));
    CHECK(!httpd_listen_is_loopback("10.0.0.1:8080"));
    CHECK(!httpd_listen_is_loopback("127.example.com:8080"));
    CHECK(!httpd_listen_is_loopback("8080"));
}

static int connect_to(const httpd *srv)
{
    return test_connect_loopback(httpd_port(srv));
}

/* Sends `request` whole and reads the answer to the end into out[size]. */
static void exchange(const httpd *srv, const char *request, char *out, size_t size)
{
    test_http_exchange(httpd_port(srv), request, out, size);
}

/* A client that sends its request a byte at a time, each within the idle
 * timeout, is cut off at the read deadline, unanswered. */
static void test_read_deadline(void)
{
    int calls = 0;
    vf_error err;
    vf_error_init(&err);
    httpd_options options = {.read_deadline_ms = 300};
    httpd *srv = httpd_start_with("127.0.0.1:0", &options, handle, &calls, &err);
    CHECKF(srv != NULL, "%s", err.text);
    if (!srv)
        return;
    int fd = connect_to(srv);
    CHECK(fd >= 0);
    static const char request[] = "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: "
                                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                  "\r\n\r\n";
    /* 50 ms a byte: about ten seconds for the whole request, the deadline
     * 300 ms. */
    bool cut = false, answered = false;
    for (size_t i = 0; fd >= 0 && i < sizeof request - 1 && !cut; i++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) > 0) {
            char buf[256];
            ssize_t n = recv(fd, buf, sizeof buf, 0);
            answered = n > 0;
            cut = true;
            break;
        }
        if (send(fd, request + i, 1, MSG_NOSIGNAL) != 1)
            cut = true;
    }
    CHECKF(cut, "a request trickled over ten seconds was read to the end");
    CHECK(!answered);
    CHECK(calls == 0);
    if (fd >= 0)
        close(fd);

    /* A whole request within the deadline is answered, and a kept-alive
     * connection's second request gets a deadline of its own. */
    char answer[4096];
    exchange(srv,
             "GET /hello?who=x HTTP/1.1\r\nHost: localhost:1\r\n\r\n"
             "GET /hello?who=y HTTP/1.1\r\nHost: localhost:1\r\nConnection: close\r\n\r\n",
             answer, sizeof answer);
    CHECK_CONTAINS(answer, "GET hello x");
    CHECK_CONTAINS(answer, "GET hello y");
    httpd_stop(srv);
}

/* Reads what has come on fd within `ms` into out[size] (to the end or the
 * time limit). */
static void read_some(int fd, int ms, char *out, size_t size)
{
    size_t used = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (used + 1 < size && poll(&p, 1, ms) > 0) {
        ssize_t n = recv(fd, out + used, size - used - 1, 0);
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    out[used] = '\0';
}

/* Waiting requests: called again until they answer, while other clients are
 * served; beyond max_waiting a request cannot wait; httpd_stop has every
 * waiter answer once more, with can_wait false. */
static void test_waiting(void)
{
    int calls = 0;
    vf_error err;
    vf_error_init(&err);
    httpd_options options = {.max_waiting = 1};
    httpd *srv = httpd_start_with("127.0.0.1:0", &options, handle, &calls, &err);
    CHECKF(srv != NULL, "%s", err.text);
    if (!srv)
        return;
    char answer[4096];
    exchange(srv, "GET /wait?n=4 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", answer,
             sizeof answer);
    CHECK_CONTAINS(answer, "calls 4 can_wait 1");

    /* A waiter that would wait for ever holds the only place. */
    int forever = connect_to(srv);
    static const char wait_request[] =
        "GET /wait?n=1000000 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    CHECK(forever >= 0 && send(forever, wait_request, strlen(wait_request), MSG_NOSIGNAL) > 0);
    read_some(forever, 200, answer, sizeof answer);
    CHECKF(answer[0] == '\0', "the waiter answered early: %s", answer);
    exchange(srv, "GET /hello?who=z HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
             answer, sizeof answer);
    CHECK_CONTAINS(answer, "GET hello z");
    exchange(srv, "GET /wait?n=3 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", answer,
             sizeof answer);
    CHECK_CONTAINS(answer, "calls 1 can_wait 0");
    int before = calls;
    httpd_stop(srv);
    read_some(forever, 2000, answer, sizeof answer);
    CHECK_CONTAINS(answer, "can_wait 0");
    CHECKF(calls > before, "the waiter was called again at the stop (%d, %d)", before, calls);
    if (forever >= 0)
        close(forever);
}

/* httpd_wake ends a wait at once: from another thread while the request
 * waits, and from its own handler before it has begun to wait. Each wait is
 * ten minutes, so only the wake can bring the answer within the reads. */
static void test_wake(void)
{
    int calls = 0;
    vf_error err;
    vf_error_init(&err);
    httpd_options options = {.max_waiting = 4};
    httpd *srv = httpd_start_with("127.0.0.1:0", &options, handle, &calls, &err);
    CHECKF(srv != NULL, "%s", err.text);
    if (!srv)
        return;
    woken_server = srv;
    char answer[4096];
    int fd = connect_to(srv);
    static const char request[] =
        "GET /woken HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    CHECK(fd >= 0 && send(fd, request, strlen(request), MSG_NOSIGNAL) > 0);
    uint64_t ticket = 0;
    for (int i = 0; i < 5000 && !(ticket = __atomic_load_n(&woken_ticket, __ATOMIC_SEQ_CST)); i++)
        usleep(1000);
    CHECK(ticket != 0);
    read_some(fd, 100, answer, sizeof answer);
    CHECKF(answer[0] == '\0', "answered before the wake: %s", answer);
    httpd_wake(srv, ticket + 1000); /* no such request: nothing happens */
    httpd_wake(srv, ticket);
    read_some(fd, 10000, answer, sizeof answer);
    CHECK_CONTAINS(answer, "woken at call 2");
    if (fd >= 0)
        close(fd);

    fd = connect_to(srv);
    static const char early[] =
        "GET /woken?early=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    CHECK(fd >= 0 && send(fd, early, strlen(early), MSG_NOSIGNAL) > 0);
    read_some(fd, 10000, answer, sizeof answer);
    CHECK_CONTAINS(answer, "woken at call 2");
    if (fd >= 0)
        close(fd);
    httpd_stop(srv);
    woken_server = NULL;
}

/* Streams: the parts as they are produced, chunked, with waits between them
 * (no answer until the first); the source freed once; one that waits for
 * ever is ended by httpd_stop; without a waiting place, no stream. */
static void test_stream(void)
{
    int calls = 0;
    vf_error err;
    vf_error_init(&err);
    httpd_options options = {.max_waiting = 1};
    httpd *srv = httpd_start_with("127.0.0.1:0", &options, handle, &calls, &err);
    CHECKF(srv != NULL, "%s", err.text);
    if (!srv)
        return;
    char answer[4096];
    exchange(srv, "GET /stream HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", answer,
             sizeof answer);
    CHECK_CONTAINS(answer, "200 OK");
    CHECK_CONTAINS(answer, "Transfer-Encoding: chunked");
    CHECK_CONTAINS(answer, "text/event-stream");
    CHECK_CONTAINS(answer, "part 1\n");
    CHECK_CONTAINS(answer, "part 3\n");
    CHECK(__atomic_load_n(&parts_freed, __ATOMIC_SEQ_CST) == 1);

    int forever = connect_to(srv);
    static const char request[] =
        "GET /stream?forever=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    CHECK(forever >= 0 && send(forever, request, strlen(request), MSG_NOSIGNAL) > 0);
    read_some(forever, 1000, answer, sizeof answer);
    CHECK_CONTAINS(answer, "part 3\n");
    /* It holds the only waiting place: another stream cannot start. */
    char other[4096];
    exchange(srv, "GET /stream HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", other,
             sizeof other);
    CHECK_CONTAINS(other, "404");
    httpd_stop(srv);
    read_some(forever, 2000, answer, sizeof answer);
    CHECKF(strstr(answer, "0\r\n\r\n") != NULL, "the stream ended at the stop: %s", answer);
    CHECK(__atomic_load_n(&parts_freed, __ATOMIC_SEQ_CST) == 2);
    if (forever >= 0)
        close(forever);
}

/* With check_host, a foreign Host gets 421 and the handler never runs. */
static void test_host_check(void)
{
    int calls = 0;
    vf_error err;
    vf_error_init(&err);
    const char *names[] = {"console.example.org", "fd00::7", "[fd00::8]"};
    httpd_options options = {.check_host = true, .allowed_hosts = names, .n_allowed_hosts = 3};
    httpd *srv = httpd_start_with("127.0.0.1:0", &options, handle, &calls, &err);
    CHECKF(srv != NULL, "%s", err.text);
    if (!srv)
        return;
    char answer[4096];
    exchange(srv, "GET /hello HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n", answer,
             sizeof answer);
    CHECKF(strncmp(answer, "HTTP/1.1 421 ", 13) == 0, "%.40s", answer);
    CHECK(calls == 0);
    exchange(srv,
             "POST /form HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 7\r\n"
             "Content-Type: application/x-www-form-urlencoded\r\nConnection: close\r\n\r\n"
             "token=x",
             answer, sizeof answer);
    CHECKF(strncmp(answer, "HTTP/1.1 421 ", 13) == 0, "%.40s", answer);
    CHECK(calls == 0);
    exchange(srv, "GET /hello HTTP/1.0\r\n\r\n", answer, sizeof answer);
    CHECKF(strncmp(answer, "HTTP/1.0 421 ", 13) == 0 || strncmp(answer, "HTTP/1.1 421 ", 13) == 0,
           "no Host: %.40s", answer);
    exchange(srv,
             "GET /hello HTTP/1.1\r\nHost: console.example.org:8443\r\nConnection: close\r\n\r\n",
             answer, sizeof answer);
    CHECKF(strncmp(answer, "HTTP/1.1 200 ", 13) == 0, "%.40s", answer);
    CHECK(calls == 1);
    httpd_stop(srv);

    const char *allowed[] = {"localhost",
                             "LOCALHOST:8080",
                             "localhost.",
                             "127.0.0.1",
                             "127.0.0.1:80",
                             "127.9.9.9:1",
                             "[::1]",
                             "[::1]:8080",
                             "console.example.org",
                             "Console.Example.ORG:443",
                             "[fd00::7]:1",
                             "[FD00::8]"};
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        CHECKF(httpd_host_allowed(allowed[i], names, 3), "'%s' refused", allowed[i]);
    const char *refused[] = {NULL,
                             "",
                             "evil.example",
                             "localhost.evil.example",
                             "127.0.0.1.evil.example",
                             "console.example.org.evil.example",
                             "::1",
                             "[::1",
                             "[::1]x",
                             "localhost:abc",
                             "127.0.0.1:80:80",
                             "0.0.0.0",
                             "[::]",
                             "10.0.0.1:80"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        CHECKF(!httpd_host_allowed(refused[i], names, 3), "'%s' allowed",
               refused[i] ? refused[i] : "(null)");

    CHECK(httpd_listen_is_wildcard("0.0.0.0:8080"));
    CHECK(httpd_listen_is_wildcard("[::]:8080"));
    CHECK(!httpd_listen_is_wildcard("127.0.0.1:8080"));
    CHECK(!httpd_listen_is_wildcard("10.1.2.3:8080"));
    CHECK(!httpd_listen_is_wildcard("console.example.org:8080"));
}

/* HTTPS needs both halves, and they must load: a half, or text that is no
 * PEM, is refused at start, never served as plain HTTP. (A real
 * certificate: integration.test_api_tls, made by openssl.) */
static void test_tls_refusals(void)
{
    int calls = 0;
    vf_error err;
    vf_error_init(&err);
    CHECK(httpd_tls_supported()); /* Debian's libmicrohttpd has GnuTLS */
    httpd_options half = {.tls_cert_pem = "-----BEGIN CERTIFICATE-----\n"};
    httpd *srv = httpd_start_with("127.0.0.1:0", &half, handle, &calls, &err);
    CHECK(srv == NULL && err.code == VF_ECONFIG && strstr(err.text, "both"));
    httpd_stop(srv);
    vf_error_init(&err);
    httpd_options garbage = {.tls_cert_pem = "not a certificate", .tls_key_pem = "not a key"};
    srv = httpd_start_with("127.0.0.1:0", &garbage, handle, &calls, &err);
    CHECK(srv == NULL && strstr(err.text, "certificate and key"));
    httpd_stop(srv);
}

/* Opens `n` connections and sends each `request`; their fds into fds. */
static void open_with(const httpd *srv, int n, const char *request, int *fds)
{
    for (int i = 0; i < n; i++) {
        fds[i] = connect_to(srv);
        CHECK(fds[i] >= 0 && send(fds[i], request, strlen(request), MSG_NOSIGNAL) > 0);
    }
}

static void close_all(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* Issue 34, item 8: long polls from one address do not lock it out; the
 * probes are answered even while an address holds its limit; behind a
 * trusted proxy the client is the forwarded one, and the limit counts each
 * client rather than the proxy. */
static void test_address_limits(void)
{
    int calls = 0;
    vf_error err;
    vf_error_init(&err);
    httpd_options options = {.max_waiting = 64};
    httpd *srv = httpd_start_with("127.0.0.1:0", &options, handle, &calls, &err);
    CHECKF(srv != NULL, "%s", err.text);
    if (!srv)
        return;
    int polls[HTTPD_PER_ADDRESS_LIMIT + 4], slow[HTTPD_PER_ADDRESS_LIMIT];
    open_with(srv, HTTPD_PER_ADDRESS_LIMIT + 4,
              "GET /wait?n=1000000 HTTP/1.1\r\nHost: localhost\r\n\r\n", polls);
    char answer[4096];
    read_some(polls[0], 300, answer, sizeof answer);
    CHECKF(answer[0] == '\0', "a long poll answered early: %s", answer);
    exchange(srv, "GET /hello?who=me HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
             answer, sizeof answer);
    CHECKF(strstr(answer, "GET hello me") != NULL,
           "%d long polls from one address, and another request of it is answered: %s",
           HTTPD_PER_ADDRESS_LIMIT + 4, answer);
    close_all(polls, HTTPD_PER_ADDRESS_LIMIT + 4);

    /* The limit is still there for what does not wait: connections that are
     * all still sending their requests. One more is answered only as a probe. */
    open_with(srv, HTTPD_PER_ADDRESS_LIMIT, "GET /hello HTTP/1.1\r\nHost: localhost\r\n", slow);
    usleep(100 * 1000);
    exchange(srv, "GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", answer,
             sizeof answer);
    CHECKF(strstr(answer, "503") && strstr(answer, "Retry-After: 1") &&
               strstr(answer, "too many connections"),
           "beyond the limit, a request is 503: %s", answer);
    exchange(srv, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n", answer, sizeof answer);
    CHECKF(strstr(answer, "200 OK") && strstr(answer, "client 127.0.0.1"),
           "beyond the limit, a probe is answered: %s", answer);
    close_all(slow, HTTPD_PER_ADDRESS_LIMIT);
    httpd_stop(srv);

    /* Behind a trusted proxy (127.0.0.1 here). */
    const char *proxies[] = {"127.0.0.0/8", "10.1.0.0/16"};
    options =
        (httpd_options){.max_waiting = 64, .trusted_proxies = proxies, .n_trusted_proxies = 2};
    srv = httpd_start_with("127.0.0.1:0", &options, handle, &calls, &err);
    CHECKF(srv != NULL, "%s", err.text);
    if (!srv)
        return;
    exchange(srv,
             "GET /whoami HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: 6.6.6.6, 203.0.113.7, "
             "10.1.2.3\r\nConnection: close\r\n\r\n",
             answer, sizeof answer);
    CHECKF(strstr(answer, "client 203.0.113.7"), "the rightmost untrusted hop: %s", answer);
    exchange(srv,
             "GET /whoami HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: 6.6.6.6\r\n"
             "X-Forwarded-For: 198.51.100.9\r\nConnection: close\r\n\r\n",
             answer, sizeof answer);
    CHECKF(strstr(answer, "client 198.51.100.9"), "two headers read as one list: %s", answer);
    /* The proxy's address has no connection limit: 20 slow requests through
     * it, then another client's request and one more of the same client. */
    int through[HTTPD_PER_ADDRESS_LIMIT + 4];
    open_with(srv, HTTPD_PER_ADDRESS_LIMIT + 4,
              "GET /hello HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: 203.0.113.7\r\n",
              through);
    usleep(100 * 1000);
    exchange(srv,
             "GET /hello?who=other HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: 203.0.113.8"
             "\r\nConnection: close\r\n\r\n",
             answer, sizeof answer);
    CHECKF(strstr(answer, "GET hello other"), "a proxy carries more than 16 connections: %s",
           answer);
    close_all(through, HTTPD_PER_ADDRESS_LIMIT + 4);
    httpd_stop(srv);

    /* Without trusting anyone the header is ignored; a bad range is refused. */
    srv = httpd_start_with("127.0.0.1:0", NULL, handle, &calls, &err);
    exchange(srv,
             "GET /whoami HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: 203.0.113.7\r\n"
             "Connection: close\r\n\r\n",
             answer, sizeof answer);
    CHECKF(strstr(answer, "client 127.0.0.1"), "X-Forwarded-For from anyone: ignored: %s", answer);
    httpd_stop(srv);
    const char *bad[] = {"proxy.example"};
    options = (httpd_options){.trusted_proxies = bad, .n_trusted_proxies = 1};
    vf_error_init(&err);
    CHECK(httpd_start_with("127.0.0.1:0", &options, handle, &calls, &err) == NULL &&
          err.code == VF_ECONFIG);
}

int main(void)
{
    test_address_limits();
    test_tls_refusals();
    test_routes_and_arguments();
    test_addresses();
    test_read_deadline();
    test_host_check();
    test_waiting();
    test_wake();
    test_stream();
    return test_summary();
}
