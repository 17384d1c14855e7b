/* httpd: libmicrohttpd behind the small interface of httpd.h.
 * libmicrohttpd parses requests, decodes paths and query strings and keeps
 * connections within limits; this file only adapts its callbacks (the body
 * arriving in pieces, the completed-request hook) to one handler call. */
#include "httpd.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "log.h"

/* A scrape or a page is one short request; these keep a stuck or hostile
 * client from holding the single thread or the memory. */
#define HTTPD_CONNECTION_LIMIT 64
#define HTTPD_CONNECTION_TIMEOUT_S 10

struct httpd {
    struct MHD_Daemon *daemon;
    httpd_handler handler;
    void *ctx;
    int port;
};

/* Per request: the POST body as it arrives. */
typedef struct pending {
    char *body;
    size_t len;
    bool too_big;
} pending;

/* libmicrohttpd passes its own format strings; the attribute tells clang so. */
__attribute__((format(printf, 2, 0))) static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    log_warn("http: %s", line);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    pending *p = *con_cls;
    if (p) {
        free(p->body);
        free(p);
        *con_cls = NULL;
    }
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
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)resp->status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    (void)version;
    httpd *srv = cls;
    pending *p = *con_cls;
    if (!p) {
        /* First call: only the headers are in. */
        p = calloc(1, sizeof *p);
        if (!p)
            return MHD_NO;
        *con_cls = p;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (p->too_big || p->len + n > HTTPD_MAX_BODY) {
            p->too_big = true;
            return MHD_YES;
        }
        char *grown = realloc(p->body, p->len + n + 1);
        if (!grown)
            return MHD_NO;
        p->body = grown;
        memcpy(p->body + p->len, upload_data, n);
        p->len += n;
        p->body[p->len] = '\0';
        return MHD_YES;
    }

    httpd_response resp = {.status = 200};
    snprintf(resp.content_type, sizeof resp.content_type, "text/plain; charset=utf-8");
    if (p->too_big) {
        httpd_reply_text(&resp, 413, "text/plain; charset=utf-8", "request body too large\n");
        return queue(conn, &resp);
    }
    httpd_request req = {
        .method = method,
        .path = url,
        .body = p->body ? p->body : "",
        .body_len = p->len,
        .conn_ = conn,
    };
    srv->handler(srv->ctx, &req, &resp);
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
    char host[256], port[8];
    if (!listen || split_listen(listen, host, sizeof host, port, sizeof port) != 0) {
        vf_error_set(err, VF_ECONFIG, "listen address '%s' is not HOST:PORT",
                     listen ? listen : "(null)");
        return NULL;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    int gai = getaddrinfo(host, port, &hints, &ai);
    if (gai != 0 || !ai) {
        vf_error_set(err, VF_ECONFIG, "listen address '%s': %s", listen, gai_strerror(gai));
        return NULL;
    }
    httpd *srv = calloc(1, sizeof *srv);
    if (!srv) {
        freeaddrinfo(ai);
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    srv->handler = handler;
    srv->ctx = ctx;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    srv->daemon =
        /* The logger goes first so that libmicrohttpd's own messages use it. */
        MHD_start_daemon(
            flags, (uint16_t)atoi(port), NULL, NULL, answer, srv, MHD_OPTION_EXTERNAL_LOGGER,
            log_mhd, NULL, MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_NOTIFY_COMPLETED,
            completed, NULL, MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTPD_CONNECTION_LIMIT,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTPD_CONNECTION_TIMEOUT_S, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!srv->daemon) {
        vf_error_set(err, VF_EIO, "cannot listen on %s (in use, or not an address of this machine)",
                     listen);
        free(srv);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : atoi(port);
    return srv;
}

void httpd_stop(httpd *srv)
{
    if (!srv)
        return;
    MHD_stop_daemon(srv->daemon);
    free(srv);
}

int httpd_port(const httpd *srv)
{
    return srv->port;
}

bool httpd_listen_is_loopback(const char *listen)
{
    char host[256], port[8];
    if (!listen || split_listen(listen, host, sizeof host, port, sizeof port) != 0)
        return false;
    if (strcasecmp(host, "localhost") == 0)
        return true;
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton(AF_INET, host, &v4) == 1)
        return (ntohl(v4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

const char *httpd_query(const httpd_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn_, MHD_GET_ARGUMENT_KIND, name);
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
