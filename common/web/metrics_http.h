/* metrics_http: the endpoints every long-running program serves on its
 * http_listen address, over httpd:
 *   GET /metrics  the registry in the Prometheus text format
 *   GET /healthz  200 "ok" while the process answers at all (liveness)
 *   GET /readyz   200 "ready", or 503 with a one-line reason (readiness)
 * Another method on these paths is 405 with Allow: GET, HEAD (httpd_route.h,
 * the routing every server here shares); any other path 404. Nothing here
 * needs authentication: it shows counts and states, never task contents or
 * secrets; keep it on loopback unless a scraper elsewhere needs it (the
 * Kubernetes pods listen on 0.0.0.0).
 *
 * Any Host header is answered (no httpd_options.check_host): the kubelet
 * names the pod's IP, Prometheus whatever its service discovery found, and
 * a page that rebinds a name to this port could read only those counts.
 * httpd's read deadline and per-address limit keep slow clients from
 * starving the probes (httpd.h). */
#ifndef VF_METRICS_HTTP_H
#define VF_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "metrics.h"
#include "vf_error.h"

/* Runs on the server's thread for each /readyz: true when ready, else false
 * with a short plain-text reason in why[size]. */
typedef bool (*metrics_http_ready_fn)(void *ctx, char *why, size_t size);

typedef struct metrics_http metrics_http;

/* Listens on `listen` (HOST:PORT; port 0 picks one). `m` and `ctx` are
 * borrowed and must outlive the server. NULL with err when it cannot bind. */
metrics_http *metrics_http_start(const char *listen, metrics *m, metrics_http_ready_fn ready,
                                 void *ctx, vf_error *err) __attribute__((warn_unused_result));

/* Stops serving and frees. NULL is fine. */
void metrics_http_stop(metrics_http *server);

/* The port bound. */
int metrics_http_port(const metrics_http *server);

#endif
