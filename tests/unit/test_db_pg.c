/* db's PostgreSQL bounds (db_set_timeout, db_set_wait_hook) against
 * VF_PG_URL's server, seen through a relay in this process that can stop
 * passing bytes on: a frozen server as the client sees it, since the kernel
 * still accepts connections and acknowledges whatever is sent, and nothing
 * ever answers. */
#include "db.h"
#include "testlib.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_PAIRS 8

/* Relays 127.0.0.1:port to the server; while frozen it neither accepts nor
 * passes anything on. */
typedef struct relay {
    int listener;
    int port;
    struct sockaddr_in server;
    atomic_bool frozen;
    atomic_bool stop;
    int pairs[MAX_PAIRS][2]; /* client, server; -1: free */
    pthread_t thread;
} relay;

static void close_pair(int *pair)
{
    close(pair[0]);
    close(pair[1]);
    pair[0] = pair[1] = -1;
}

static void accept_one(relay *r)
{
    int client = accept(r->listener, NULL, NULL);
    if (client < 0)
        return;
    int server = socket(AF_INET, SOCK_STREAM, 0);
    if (server < 0 || connect(server, (struct sockaddr *)&r->server, sizeof r->server) != 0) {
        close(client);
        if (server >= 0)
            close(server);
        return;
    }
    for (int i = 0; i < MAX_PAIRS; i++) {
        if (r->pairs[i][0] < 0) {
            r->pairs[i][0] = client;
            r->pairs[i][1] = server;
            return;
        }
    }
    close(client);
    close(server);
}

static void *relay_loop(void *arg)
{
    relay *r = arg;
    while (!atomic_load(&r->stop)) {
        struct pollfd fds[1 + 2 * MAX_PAIRS];
        int n = 0;
        bool frozen = atomic_load(&r->frozen);
        fds[n++] = (struct pollfd){.fd = frozen ? -1 : r->listener, .events = POLLIN};
        for (int i = 0; i < MAX_PAIRS; i++)
            for (int side = 0; side < 2; side++)
                fds[n++] = (struct pollfd){.fd = frozen ? -1 : r->pairs[i][side], .events = POLLIN};
        if (poll(fds, (nfds_t)n, 50) <= 0)
            continue;
        if (fds[0].revents)
            accept_one(r);
        for (int i = 0; i < MAX_PAIRS; i++) {
            for (int side = 0; side < 2 && r->pairs[i][0] >= 0; side++) {
                if (!fds[1 + 2 * i + side].revents)
                    continue;
                char buf[16384];
                ssize_t got = read(r->pairs[i][side], buf, sizeof buf);
                if (got <= 0 || send(r->pairs[i][1 - side], buf, (size_t)got, MSG_NOSIGNAL) != got)
                    close_pair(r->pairs[i]);
            }
        }
    }
    return NULL;
}

/* A relay to host:port, or -1. */
static int relay_start(relay *r, const char *host, int port)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < MAX_PAIRS; i++)
        r->pairs[i][0] = r->pairs[i][1] = -1;
    r->server.sin_family = AF_INET;
    r->server.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &r->server.sin_addr) != 1)
        return -1;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    r->listener = socket(AF_INET, SOCK_STREAM, 0);
    if (r->listener < 0 || bind(r->listener, (struct sockaddr *)&addr, len) != 0 ||
        listen(r->listener, 16) != 0 || getsockname(r->listener, (struct sockaddr *)&addr, &len))
        return -1;
    r->port = ntohs(addr.sin_port);
    return pthread_create(&r->thread, NULL, relay_loop, r) == 0 ? 0 : -1;
}

static void relay_stop(relay *r)
{
    atomic_store(&r->stop, true);
    pthread_join(r->thread, NULL);
    for (int i = 0; i < MAX_PAIRS; i++)
        if (r->pairs[i][0] >= 0)
            close_pair(r->pairs[i]);
    close(r->listener);
}

static void count_wait(void *user)
{
    (*(int *)user)++;
}

static int64_t backend_pid(db *d)
{
    db_stmt *slot = NULL;
    vf_error err;
    vf_error_init(&err);
    db_stmt *st = db_prepare(d, &slot, "SELECT pg_backend_pid()", &err);
    int64_t pid = st && db_step(st, "pid", &err) == DB_ROW ? db_column_int64(st, 0) : -1;
    db_stmt_free(st);
    return pid;
}

/* The server answers slowly: its own statement_timeout ends the statement,
 * and the session is kept. */
static void test_slow_statement(const char *url)
{
    vf_error err;
    vf_error_init(&err);
    db *d = db_open_pg(&(db_pg_options){.url = url}, "store test", &err);
    CHECKF(d != NULL, "%s", err.text);
    if (!d)
        return;
    int waits = 0;
    db_set_wait_hook(d, count_wait, &waits);
    CHECK(db_set_timeout(d, 300, &err) == 0);
    int64_t pid = backend_pid(d);
    CHECK(db_exec(d, "SELECT pg_sleep(3)", "sleeping", &err) == -1);
    CHECK(err.code == VF_EUNAVAILABLE);
    CHECK_CONTAINS(err.text, "statement timeout");
    CHECK(waits >= 1);
    CHECK(backend_pid(d) == pid); /* the same session */
    db_close(d);
}

/* The server stops answering: the command gives up after the timeout plus
 * DB_PG_ANSWER_GRACE_MS, the wait hook runs meanwhile, and the connection is
 * dropped; connecting again is bounded too; once the server answers again
 * the next command reconnects. Inside a transaction, nothing runs until the
 * caller rolls back. */
static void test_frozen_server(const char *base)
{
    char host[64];
    int port = 0;
    const char *at = strchr(base, '@');
    if (!at || sscanf(at + 1, "%63[^:]:%d", host, &port) != 2) {
        printf("VF_PG_URL has no host:port: frozen-server part skipped\n");
        return;
    }
    relay r;
    CHECK(relay_start(&r, host, port) == 0);
    char url[512];
    const char *path = strchr(at + 1, '/');
    snprintf(url, sizeof url, "%.*s@127.0.0.1:%d%s%sconnect_timeout=2", (int)(at - base), base,
             r.port, path ? path : "/", path && strchr(path, '?') ? "&" : "?");
    vf_error err;
    vf_error_init(&err);
    db *d = db_open_pg(&(db_pg_options){.url = url}, "store test", &err);
    CHECKF(d != NULL, "%s", err.text);
    if (!d) {
        relay_stop(&r);
        return;
    }
    int waits = 0;
    db_set_wait_hook(d, count_wait, &waits);
    CHECK(db_set_timeout(d, 500, &err) == 0);
    CHECK(db_exec(d, "SELECT 1", "one", &err) == 0);

    atomic_store(&r.frozen, true);
    waits = 0;
    vf_error_init(&err);
    CHECK(db_exec(d, "SELECT 1", "one", &err) == -1);
    CHECK(err.code == VF_EUNAVAILABLE);
    CHECK_CONTAINS(err.text, "no answer from the server within 2500 ms");
    CHECK(waits >= 2);
    vf_error_init(&err);
    CHECK(db_exec(d, "SELECT 1", "one", &err) == -1);
    CHECK_CONTAINS(err.text, "reconnecting: no answer within 2000 ms");

    atomic_store(&r.frozen, false);
    vf_error_init(&err);
    CHECKF(db_exec(d, "SELECT 1", "one", &err) == 0, "%s", err.text);

    CHECK(db_exec(d, "BEGIN", "begin", &err) == 0);
    atomic_store(&r.frozen, true);
    CHECK(db_exec(d, "SELECT 1", "one", &err) == -1);
    atomic_store(&r.frozen, false);
    CHECK(db_in_transaction(d));
    vf_error_init(&err);
    CHECK(db_exec(d, "SELECT 1", "one", &err) == -1);
    CHECK_CONTAINS(err.text, "roll back");
    CHECK(db_exec(d, "ROLLBACK", "rollback", &err) == 0);
    vf_error_init(&err);
    CHECKF(db_exec(d, "SELECT 1", "one", &err) == 0, "%s", err.text);
    CHECK(!db_in_transaction(d));
    db_close(d);
    relay_stop(&r);
}

int main(void)
{
    const char *base = getenv("VF_PG_URL");
    if (!base || !*base) {
        printf("VF_PG_URL unset: skipped\n");
        return 77;
    }
    test_slow_statement(base);
    test_frozen_server(base);
    return test_summary();
}
