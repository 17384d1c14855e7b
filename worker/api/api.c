#include "api.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_docs.h"
#include "api_documents.h"
#include "api_internal.h"
#include "api_routes.h"
#include "clock.h"
#include "httpd_route.h"
#include "json_util.h"
#include "log.h"
#include "problem.h"
#include "store_config.h"

/* GET /result answers kept (result_cache.h): room for the tasks being polled
 * at once. A slot holds a row's result text and its answer, under 1 KB for a
 * placement: about 1 MB with every slot taken. */
#define API_RESULT_CACHE_SLOTS 1024

api *api_new(const vf_config *config, vf_error *err)
{
    api *a = calloc(1, sizeof *a);
    if (!a) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    a->config = config;
    if (!(a->store = store_config_open(config, STORE_READ_WRITE, err)))
        goto fail;
    if (!(a->broker = api_broker_new())) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        goto fail;
    }
    if (!(a->publisher = api_publisher_new(config, a->broker, err)))
        goto fail;
    if (!(a->metrics = api_metrics_new(err)))
        goto fail;
    if (!(a->results = result_cache_new(API_RESULT_CACHE_SLOTS))) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        goto fail;
    }
    if (!(a->idempotency = api_idempotency_new(config, err)))
        goto fail;
    if (config->api.keys_file && !(a->keys = api_key_ring_load(config->api.keys_file, err))) {
        if (err->code != VF_ENOMEM)
            err->code = VF_ECONFIG;
        goto fail;
    }
    if (!(a->intake = api_intake_start(config, a->metrics, a->broker, err)))
        goto fail;
    if (api_hosts_start(a, err) < 0)
        goto fail;
    if (!(a->sweep = api_sweep_start(config, a->broker, err)) && err->code != VF_OK)
        goto fail;
    return a;
fail:
    api_free(a);
    return NULL;
}

static void wake(void *ctx, uint64_t ticket)
{
    httpd_wake(ctx, ticket);
}

void api_attach_server(api *a, httpd *srv)
{
    api_intake_set_waker(a->intake, srv ? wake : NULL, srv);
}

void api_free(api *a)
{
    if (!a)
        return;
    api_sweep_stop(a->sweep);
    api_intake_stop(a->intake);
    api_fits_free(a); /* before the inventory its snapshot belongs to */
    api_hosts_stop(a);
    api_publisher_free(a->publisher);
    api_broker_free(a->broker); /* after every link's thread has stopped */
    store_close(a->store);
    api_metrics_free(a->metrics);
    result_cache_free(a->results);
    api_key_ring_free(a->keys);
    api_idempotency_free(a->idempotency);
    free(a);
}

static void healthz(api *a, const api_call *call, httpd_response *resp)
{
    (void)a;
    (void)call;
    httpd_reply_text(resp, 200, "text/plain; charset=utf-8", "ok\n");
}

/* /readyz: the store answers and the broker link is (or can be) up. */
static void readyz(api *a, const api_call *call, httpd_response *resp)
{
    (void)call;
    vf_error err;
    vf_error_init(&err);
    store_task probe = {0};
    int found = store_task_get(a->store, "readyz-probe", &probe, &err);
    store_task_clear(&probe);
    if (found < 0) {
        httpd_reply_text(resp, 503, "text/plain; charset=utf-8", "store unreachable\n");
        return;
    }
    if (api_link_ready(a, &err) < 0) {
        httpd_reply_text(resp, 503, "text/plain; charset=utf-8", "broker unreachable\n");
        return;
    }
    httpd_reply_text(resp, 200, "text/plain; charset=utf-8", "ready\n");
}

static void serve_metrics(api *a, const api_call *call, httpd_response *resp)
{
    (void)call;
    char *text = NULL;
    size_t len = 0;
    if (api_metrics_render(a->metrics, &text, &len) < 0) {
        problem_reply(resp, 500, "out of memory");
        return;
    }
    httpd_reply_take(resp, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

static void serve_document(httpd_response *resp, const char *text, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy) {
        problem_reply(resp, 500, "out of memory");
        return;
    }
    memcpy(copy, text, len + 1);
    httpd_reply_take(resp, 200, "application/json", copy, len);
}

static void openapi_document(api *a, const api_call *call, httpd_response *resp)
{
    (void)a;
    (void)call;
    serve_document(resp, api_openapi_json, api_openapi_json_len);
}

/* /openapi.json refers to the request body's schema by this relative URL. */
static void request_schema(api *a, const api_call *call, httpd_response *resp)
{
    (void)a;
    (void)call;
    serve_document(resp, api_request_schema_json, api_request_schema_json_len);
}

size_t api_key_count(api *a)
{
    return api_key_ring_count(a->keys);
}

int api_reload_keys(api *a)
{
    const char *path = a->config->api.keys_file;
    if (!path) {
        log_info("SIGHUP: no api.keys_file: no keys to read again (a keys file set since "
                 "needs a restart)");
        return 0;
    }
    vf_error err;
    vf_error_init(&err);
    size_t was = 0;
    if (api_key_ring_reload(a->keys, &was, &err) < 0) {
        log_error("SIGHUP: %s: keys not reloaded, the %zu keys read before stay in force", err.text,
                  api_key_count(a));
        return -1;
    }
    log_info("SIGHUP: %zu keys read again from %s (were %zu)", api_key_count(a), path, was);
    return 0;
}

/* The routes (httpd_route.h: GET answers HEAD too, but for a stream). */
typedef struct route {
    httpd_route at; /* method, path: at most one {...} segment, one path element */
    int scope;      /* API_SCOPE_* needed, 0: open (probes, metrics, docs) */
    api_route_fn fn;
} route;

static const route routes[] = {
    {{"GET", "/healthz", false}, 0, healthz},
    {{"GET", "/readyz", false}, 0, readyz},
    {{"GET", "/metrics", false}, 0, serve_metrics},
    {{"GET", "/openapi.json", false}, 0, openapi_document},
    {{"GET", "/docs", false}, 0, api_route_docs},
    {{"GET", "/docs.css", false}, 0, api_route_docs_style},
    {{"GET", "/docs/try", false}, 0, api_route_docs_try},
    {{"GET", "/request.task.schedule.json", false}, 0, request_schema},
    {{"GET", "/request.spare.prepare.json", false}, 0, api_route_spare_schema},
    {{"GET", "/request.spare.release.json", false}, 0, api_route_spare_schema},
    {{"POST", "/schedule", false}, API_SCOPE_SUBMIT, api_route_schedule},
    {{"GET", "/result/{task_id}", false}, API_SCOPE_READ, api_route_result},
    {{"POST", "/spare/prepare", false}, API_SCOPE_SUBMIT, api_route_spare},
    {{"POST", "/spare/release", false}, API_SCOPE_SUBMIT, api_route_spare},
    {{"POST", "/v1/spares/prepare", false}, API_SCOPE_SUBMIT, api_route_spare},
    {{"POST", "/v1/spares/release", false}, API_SCOPE_SUBMIT, api_route_spare},
    {{"POST", "/v1/tasks", false}, API_SCOPE_SUBMIT, api_route_submit_task},
    {{"GET", "/v1/tasks", false}, API_SCOPE_READ, api_route_list_tasks},
    {{"GET", "/v1/tasks/{task_id}", false}, API_SCOPE_READ, api_route_task},
    {{"POST", "/v1/tasks/{task_id}/release", false}, API_SCOPE_RELEASE, api_route_release_task},
    {{"GET", "/v1/tasks/{task_id}/events", true}, API_SCOPE_READ, api_route_watch_task},
    {{"GET", "/v1/events", true}, API_SCOPE_READ, api_route_watch_events},
    {{"GET", "/v1/hosts", false}, API_SCOPE_READ, api_route_hosts},
    {{"GET", "/v1/deliveries", false}, API_SCOPE_READ, api_route_deliveries},
    {{"POST", "/v1/deliveries/redeliver", false}, API_SCOPE_ADMIN, api_route_redeliver},
    {{"GET", "/v1/deliveries/redeliveries/{redelivery_id}", false},
     API_SCOPE_READ,
     api_route_redelivery},
    {{"GET", "/v1/dead-letters", false}, API_SCOPE_READ, api_route_dead_letters},
    {{"POST", "/v1/admission/proxmoxmachine", false}, API_SCOPE_SUBMIT, api_route_admission},
};

/* No route for the path: which routes there are, by family. */
static void not_found(const httpd_request *req, httpd_response *resp)
{
    problem_reply(resp, 404,
                  strncmp(req->path, "/v1/", 4) == 0 || strcmp(req->path, "/v1") == 0
                      ? "no such route: /v1 has /v1/tasks, /v1/tasks/{task_id}, "
                        "/v1/tasks/{task_id}/release, /v1/tasks/{task_id}/events, /v1/events, "
                        "/v1/spares/prepare, /v1/spares/release, /v1/deliveries, "
                        "/v1/deliveries/redeliver, /v1/dead-letters and /v1/hosts"
                      : "no such route: try POST /schedule, POST /spare/prepare, GET "
                        "/result/{task_id} or /v1/tasks");
}

/* Answers the request; returns the route's template for the metrics. */
static const char *route_request(api *a, const httpd_request *req, const api_caller *caller,
                                 httpd_response *resp)
{
    httpd_route_match match;
    const route *r = HTTPD_ROUTE_FIND(routes, req, resp, &match);
    if (r) {
        if (r->scope == 0 || api_allow(caller, r->scope, resp)) {
            api_call call = {req, caller, match.param};
            r->fn(a, &call, resp);
        }
        return match.path;
    }
    if (!match.path) {
        not_found(req, resp);
        return "other";
    }
    char detail[160]; /* resp->allow holds the path's methods (httpd_route_find) */
    snprintf(detail, sizeof detail, "%s takes %s%s", match.path, resp->allow,
             match.streams ? " (a stream: no HEAD)" : "");
    problem_reply(resp, 405, detail);
    return match.path;
}

void api_handle(void *ctx, const httpd_request *req, httpd_response *resp)
{
    api *a = ctx;
    api_caller caller = {.scopes = API_SCOPE_SUBMIT | API_SCOPE_READ | API_SCOPE_RELEASE |
                                   API_SCOPE_ADMIN};
    char name[API_KEY_NAME_SIZE] = "";
    unsigned char digest[API_KEY_DIGEST_LEN];
    if (a->keys) {
        const char *authorization = httpd_header(req, "Authorization");
        caller.presented = authorization != NULL;
        caller.scopes = api_key_ring_check(a->keys, authorization, name, digest);
        caller.name = caller.scopes ? name : NULL;
        caller.digest = caller.scopes ? digest : NULL;
    }
    const char *template = route_request(a, req, &caller, resp);
    OPENSSL_cleanse(digest, sizeof digest);
    if (resp->wait_ms > 0)
        return; /* no answer yet: counted when it comes */
    /* From the request's first call: a long poll's whole wait. */
    api_metrics_request(a->metrics, template, resp->status,
                        (double)(clock_mono_us() / 1000 - req->started_ms) / 1e3);
}
