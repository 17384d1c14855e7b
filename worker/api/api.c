#include "api.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_docs.h"
#include "api_documents.h"
#include "api_internal.h"
#include "clock.h"
#include "json_util.h"
#include "log.h"
#include "problem.h"
#include "store_config.h"

#define RESULT_PREFIX "/result/"
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
    pthread_mutex_init(&a->keys_lock, NULL);
    if (!(a->store = store_config_open(config, STORE_READ_WRITE, err)))
        goto fail;
    if (!(a->broker = api_broker_new())) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        goto fail;
    }
    if (!(a->link = amqp_link_new(config, "virtflow-api", err)))
        goto fail;
    amqp_link_set_confirm_callback(a->link, amqp_link_confirm_record, &a->confirm);
    if (!(a->metrics = api_metrics_new(err)))
        goto fail;
    if (!(a->results = result_cache_new(API_RESULT_CACHE_SLOTS))) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        goto fail;
    }
    if (!(a->idempotency = api_idempotency_new(config, err)))
        goto fail;
    if (config->api.keys_file && !(a->keys = api_keys_load(config->api.keys_file, err))) {
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
    amqp_link_free(a->link);
    api_broker_free(a->broker); /* after every link's thread has stopped */
    store_close(a->store);
    api_metrics_free(a->metrics);
    result_cache_free(a->results);
    api_keys_free(a->keys);
    api_idempotency_free(a->idempotency);
    pthread_mutex_destroy(&a->keys_lock);
    free(a);
}

/* /readyz: the store answers and the broker link is (or can be) up. */
static void readyz(api *a, httpd_response *resp)
{
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

static void serve_metrics(api *a, httpd_response *resp)
{
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

size_t api_key_count(api *a)
{
    pthread_mutex_lock(&a->keys_lock);
    size_t n = api_keys_count(a->keys);
    pthread_mutex_unlock(&a->keys_lock);
    return n;
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
    api_keys *fresh = api_keys_load(path, &err);
    if (!fresh) {
        log_error("SIGHUP: %s: keys not reloaded, the %zu keys read before stay in force", err.text,
                  api_key_count(a));
        return -1;
    }
    pthread_mutex_lock(&a->keys_lock);
    api_keys *old = a->keys;
    a->keys = fresh;
    pthread_mutex_unlock(&a->keys_lock);
    log_info("SIGHUP: %zu keys read again from %s (were %zu)", api_keys_count(fresh), path,
             api_keys_count(old));
    api_keys_free(old);
    return 0;
}

/* Answers the request; returns the route's template for the metrics. */
static const char *route(api *a, const httpd_request *req, const api_caller *caller,
                         httpd_response *resp)
{
    bool get = strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
    const char *id = strncmp(req->path, RESULT_PREFIX, strlen(RESULT_PREFIX)) == 0
                         ? req->path + strlen(RESULT_PREFIX)
                         : NULL;
    if (strcmp(req->path, "/healthz") == 0 && get) {
        httpd_reply_text(resp, 200, "text/plain; charset=utf-8", "ok\n");
        return "/healthz";
    }
    if (strcmp(req->path, "/readyz") == 0 && get) {
        readyz(a, resp);
        return "/readyz";
    }
    if (strcmp(req->path, "/metrics") == 0 && get) {
        serve_metrics(a, resp);
        return "/metrics";
    }
    if (strcmp(req->path, "/openapi.json") == 0 && get) {
        serve_document(resp, api_openapi_json, api_openapi_json_len);
        return "/openapi.json";
    }
    if (strcmp(req->path, "/docs") == 0 && get) {
        api_docs(req, resp);
        return "/docs";
    }
    if (strcmp(req->path, "/docs.css") == 0 && get) {
        api_docs_style(resp);
        return "/docs.css";
    }
    if (strcmp(req->path, "/docs/try") == 0 && get) {
        api_docs_try(req, resp);
        return "/docs/try";
    }
    /* /openapi.json refers to the request body's schema by this relative URL. */
    if (strcmp(req->path, "/request.task.schedule.json") == 0 && get) {
        serve_document(resp, api_request_schema_json, api_request_schema_json_len);
        return "/request.task.schedule.json";
    }
    if (strcmp(req->path, "/v1/admission/proxmoxmachine") == 0) {
        if (strcmp(req->method, "POST") != 0) {
            problem_reply(resp, 405, "/v1/admission/proxmoxmachine takes POST");
            snprintf(resp->allow, sizeof resp->allow, "POST");
        } else if (api_allow(caller, API_SCOPE_SUBMIT, resp)) {
            api_admission(a, req, caller, resp);
        }
        return "/v1/admission/proxmoxmachine";
    }
    const char *spare = api_spare_route(a, req, caller, resp);
    if (spare)
        return spare;
    const char *redeliver = api_redeliver_route(a, req, caller, resp);
    if (redeliver)
        return redeliver;
    const char *watch = api_watch_route(a, req, caller, resp);
    if (watch)
        return watch;
    const char *v1 = api_v1_route(a, req, caller, resp);
    if (v1)
        return v1;
    if (strcmp(req->path, "/schedule") == 0) {
        if (strcmp(req->method, "POST") == 0) {
            if (api_allow(caller, API_SCOPE_SUBMIT, resp))
                api_schedule(a, req, caller->name, resp);
        } else {
            problem_reply(resp, 405, "/schedule takes POST");
            snprintf(resp->allow, sizeof resp->allow, "POST");
        }
        return "/schedule";
    }
    if (id && id[0] && !strchr(id, '/')) {
        if (get) {
            if (api_allow(caller, API_SCOPE_READ, resp))
                api_result(a, id, resp);
        } else {
            problem_reply(resp, 405, "/result/{task_id} takes GET");
            snprintf(resp->allow, sizeof resp->allow, "GET, HEAD");
        }
        return "/result/{task_id}";
    }
    problem_reply(resp, 404,
                  "no such route: try POST /schedule, POST /spare/prepare, GET /result/{task_id} "
                  "or /v1/tasks");
    return "other";
}

void api_handle(void *ctx, const httpd_request *req, httpd_response *resp)
{
    api *a = ctx;
    api_caller caller = {.scopes = API_SCOPE_SUBMIT | API_SCOPE_READ | API_SCOPE_RELEASE |
                                   API_SCOPE_ADMIN};
    char name[API_KEY_NAME_SIZE] = "";
    unsigned char digest[API_KEY_DIGEST_LEN];
    pthread_mutex_lock(&a->keys_lock);
    if (a->keys) {
        const char *authorization = httpd_header(req, "Authorization");
        caller.presented = authorization != NULL;
        caller.scopes = api_keys_check_digest(a->keys, authorization, name, digest);
        caller.name = caller.scopes ? name : NULL;
        caller.digest = caller.scopes ? digest : NULL;
    }
    pthread_mutex_unlock(&a->keys_lock);
    const char *template = route(a, req, &caller, resp);
    OPENSSL_cleanse(digest, sizeof digest);
    if (resp->wait_ms > 0)
        return; /* no answer yet: counted when it comes */
    /* From the request's first call: a long poll's whole wait. */
    api_metrics_request(a->metrics, template, resp->status,
                        (double)(clock_mono_us() / 1000 - req->started_ms) / 1e3);
}
