#include "metrics_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpd.h"
#include "httpd_route.h"

struct metrics_http {
    httpd *srv;
    metrics *m;
    metrics_http_ready_fn ready;
    void *ctx;
};

static void serve_metrics(metrics_http *h, httpd_response *resp)
{
    char *body = NULL;
    size_t len = 0;
    if (metrics_render(h->m, &body, &len) < 0)
        httpd_reply_text(resp, 500, "text/plain; charset=utf-8", "out of memory\n");
    else
        httpd_reply_take(resp, 200, "text/plain; version=0.0.4; charset=utf-8", body, len);
}

static void healthz(metrics_http *h, httpd_response *resp)
{
    (void)h;
    httpd_reply_text(resp, 200, "text/plain; charset=utf-8", "ok\n");
}

static void readyz(metrics_http *h, httpd_response *resp)
{
    char why[512] = "";
    bool ready = h->ready ? h->ready(h->ctx, why, sizeof why - 1) : true;
    if (ready) {
        httpd_reply_text(resp, 200, "text/plain; charset=utf-8", "ready\n");
    } else {
        char text[sizeof why + 16];
        snprintf(text, sizeof text, "not ready: %s\n", why);
        httpd_reply_text(resp, 503, "text/plain; charset=utf-8", text);
    }
}

/* The routes (httpd_route.h): GET, and so HEAD, only. */
typedef struct route {
    httpd_route at;
    void (*fn)(metrics_http *h, httpd_response *resp);
} route;

static const route routes[] = {
    {{"GET", "/metrics", false}, serve_metrics},
    {{"GET", "/healthz", false}, healthz},
    {{"GET", "/readyz", false}, readyz},
};

static void handle(void *arg, const httpd_request *req, httpd_response *resp)
{
    httpd_route_match match;
    const route *r = HTTPD_ROUTE_FIND(routes, req, resp, &match);
    if (r)
        r->fn(arg, resp);
    else if (match.path) /* resp->allow is set */
        httpd_reply_text(resp, 405, "text/plain; charset=utf-8", "GET only\n");
    else
        httpd_reply_text(resp, 404, "text/plain; charset=utf-8",
                         "not found: try /metrics, /healthz or /readyz\n");
}

metrics_http *metrics_http_start(const char *listen, metrics *m, metrics_http_ready_fn ready,
                                 void *ctx, vf_error *err)
{
    metrics_http *h = calloc(1, sizeof *h);
    if (!h) {
        vf_error_set(err, VF_ENOMEM, "out of memory starting the HTTP endpoints");
        return NULL;
    }
    h->m = m;
    h->ready = ready;
    h->ctx = ctx;
    h->srv = httpd_start(listen, handle, h, err);
    if (!h->srv) {
        free(h);
        return NULL;
    }
    return h;
}

void metrics_http_stop(metrics_http *h)
{
    if (!h)
        return;
    httpd_stop(h->srv);
    free(h);
}

int metrics_http_port(const metrics_http *h)
{
    return httpd_port(h->srv);
}
