/* bench_http_get: how many GET requests per second an HTTP server answers,
 * from a client that costs little itself. bench_api.py's Python threads
 * manage about 3,600 requests/s whatever they ask for: a server that answers
 * faster cannot be measured with them on the same two cores.
 *
 * One thread, `connections` kept-alive connections (as real clients keep
 * them), each sending its next request when the previous answer is in (no
 * pipelining), all driven by one epoll loop. Answers are read by their
 * Content-Length; any status but 200 is counted as an error. Prints one
 * line: requests, seconds, requests/s, p50 and p99 latency, errors.
 *
 * Usage: bench_http_get PORT PATH [connections (1)] [requests (20000)]
 *        [header line, e.g. "Authorization: Bearer KEY"]
 * Loopback (127.0.0.1) only. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "benchlib.h"

#define MAX_CONNECTIONS 256
#define ANSWER_BUFFER 65536

typedef struct connection {
    int fd;
    char in[ANSWER_BUFFER];
    size_t in_len;
    double sent_at; /* seconds, monotonic */
    int busy;       /* a request is out */
} connection;

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The length of a whole answer at the start of `buf`, 0 while incomplete,
 * -1 when it is not an answer with a Content-Length; its status in *status. */
static long answer_length(const char *buf, size_t len, int *status)
{
    const char *end = memmem(buf, len, "\r\n\r\n", 4);
    if (!end)
        return 0;
    size_t head = (size_t)(end - buf) + 4;
    if (sscanf(buf, "HTTP/1.%*d %d", status) != 1)
        return -1;
    const char *p = buf;
    long body = -1;
    while (p < end) {
        const char *eol = memmem(p, (size_t)(end - p) + 2, "\r\n", 2);
        if (!eol)
            break;
        if ((size_t)(eol - p) > 15 && strncasecmp(p, "Content-Length:", 15) == 0)
            body = strtol(p + 15, NULL, 10);
        p = eol + 2;
    }
    if (body < 0)
        return -1;
    return head + (size_t)body <= len ? (long)(head + (size_t)body) : 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_http_get PORT PATH [connections] [requests] [header]\n");
        return 2;
    }
    int port = atoi(argv[1]);
    const char *path = argv[2];
    int n_conn = argc > 3 ? atoi(argv[3]) : 1;
    long total = argc > 4 ? atol(argv[4]) : 20000;
    const char *header = argc > 5 ? argv[5] : NULL;
    if (n_conn < 1 || n_conn > MAX_CONNECTIONS || total < n_conn) {
        fprintf(stderr, "bench_http_get: 1 to %d connections, at least one request each\n",
                MAX_CONNECTIONS);
        return 2;
    }
    char request[2048];
    int request_len =
        snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s\r\n", path,
                 header ? header : "", header ? "\r\n" : "");
    if (request_len < 0 || (size_t)request_len >= sizeof request) {
        fprintf(stderr, "bench_http_get: path or header too long\n");
        return 2;
    }
    connection *conns = calloc((size_t)n_conn, sizeof *conns);
    double *latencies = calloc((size_t)total, sizeof *latencies);
    int ep = epoll_create1(0);
    if (!conns || !latencies || ep < 0) {
        fprintf(stderr, "bench_http_get: out of memory\n");
        return 1;
    }
    for (int i = 0; i < n_conn; i++) {
        if ((conns[i].fd = connect_to(port)) < 0) {
            fprintf(stderr, "bench_http_get: connect to 127.0.0.1:%d: %s\n", port, strerror(errno));
            return 1;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conns[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
    }
    long sent = 0, done = 0, errors = 0;
    double start = bench_now_s();
    for (int i = 0; i < n_conn && sent < total; i++) {
        conns[i].sent_at = bench_now_s();
        if (send_all(conns[i].fd, request, (size_t)request_len) < 0) {
            fprintf(stderr, "bench_http_get: send: %s\n", strerror(errno));
            return 1;
        }
        conns[i].busy = 1;
        sent++;
    }
    struct epoll_event events[MAX_CONNECTIONS];
    while (done < total) {
        int n = epoll_wait(ep, events, MAX_CONNECTIONS, 10000);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "bench_http_get: no answer for 10 s (%ld of %ld in)\n", done, total);
            return 1;
        }
        for (int e = 0; e < n; e++) {
            connection *c = events[e].data.ptr;
            ssize_t got = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
            if (got <= 0) {
                fprintf(stderr, "bench_http_get: connection closed by the server (%ld of %ld in)\n",
                        done, total);
                return 1;
            }
            c->in_len += (size_t)got;
            int status = 0;
            long len = answer_length(c->in, c->in_len, &status);
            if (len < 0 || (len == 0 && c->in_len == sizeof c->in)) {
                fprintf(stderr, "bench_http_get: an answer without Content-Length or too big\n");
                return 1;
            }
            if (len == 0)
                continue;
            double at = bench_now_s();
            latencies[done++] = at - c->sent_at;
            if (status != 200)
                errors++;
            memmove(c->in, c->in + len, c->in_len - (size_t)len);
            c->in_len -= (size_t)len;
            c->busy = 0;
            if (sent < total) {
                c->sent_at = at;
                if (send_all(c->fd, request, (size_t)request_len) < 0) {
                    fprintf(stderr, "bench_http_get: send: %s\n", strerror(errno));
                    return 1;
                }
                c->busy = 1;
                sent++;
            }
        }
    }
    double elapsed = bench_now_s() - start;
    qsort(latencies, (size_t)done, sizeof *latencies, compare_doubles);
    printf("requests %ld seconds %.3f rate %.0f p50_ms %.3f p99_ms %.3f errors %ld\n", done,
           elapsed, (double)done / elapsed, latencies[done / 2] * 1e3,
           latencies[(long)((double)done * 0.99)] * 1e3, errors);
    for (int i = 0; i < n_conn; i++)
        close(conns[i].fd);
    close(ep);
    free(conns);
    free(latencies);
    return 0;
}
