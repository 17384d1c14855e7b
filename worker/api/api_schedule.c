/* POST /schedule: the prototype's request body is virtflow's task.schedule
 * body (requested_cpu, requested_memory, requested_pool, dedicated, and
 * virtflow's optional fields), checked by the worker's own parser, recorded
 * as `queued`, then published with a confirm; POST /v1/tasks does the same
 * through api_submit, and the spare routes (api_spare.c) through
 * api_submit_kind with their own check and routing key. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_internal.h"
#include "api_routes.h"
#include "ids.h"
#include "json_util.h"
#include "log.h"
#include "problem.h"
#include "request.h"
#include "api_intake.h"
#include "clock.h"
#include "queue_order.h"

/* application/json, with or without parameters (charset=utf-8). */
static bool is_json_type(const char *content_type)
{
    static const char json_type[] = "application/json";
    if (!content_type || strncasecmp(content_type, json_type, sizeof json_type - 1) != 0)
        return false;
    char next = content_type[sizeof json_type - 1];
    return next == '\0' || next == ';' || isspace((unsigned char)next);
}

json_t *api_json_body(const httpd_request *req, httpd_response *resp)
{
    char detail[VF_ERROR_TEXT + 64];
    if (req->body_too_large) {
        snprintf(detail, sizeof detail, "the request body is over %d bytes", HTTPD_MAX_BODY);
        problem_reply(resp, 413, detail);
        return NULL;
    }
    if (!is_json_type(httpd_header(req, "Content-Type"))) {
        problem_reply(resp, 415, "send the request as Content-Type: application/json");
        return NULL;
    }
    /* The worker's parse: same flags, same parser, same messages. */
    json_error_t jerr;
    json_t *body =
        json_loadb(req->body, req->body_len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (!body) {
        snprintf(detail, sizeof detail, "not JSON: %s (at byte %d)", jerr.text, jerr.position);
        problem_reply(resp, 400, detail);
        return NULL;
    }
    if (!json_is_object(body)) {
        snprintf(detail, sizeof detail, "not a JSON object: got %s", json_util_type_name(body));
        problem_reply(resp, 400, detail);
        json_decref(body);
        return NULL;
    }
    return body;
}

/* The task id an Idempotency-Key stands for (api_idempotency.h): the same
 * key from the same key holder is the same task, so the task-id rules (same
 * body: same answer; other body: 409) apply to it, in the store every
 * replica shares. While a secret is being rotated, a task recorded under an
 * earlier secret's id keeps it. */
void api_idempotent_task_id(api *a, const char *submitter, const unsigned char *digest,
                            const char *key, char task_id[REQUEST_TASK_ID_LEN])
{
    api_idempotency_task_id(a->idempotency, 0, submitter, digest, key, task_id);
    for (size_t i = 1; i < api_idempotency_count(a->idempotency); i++) {
        char earlier[REQUEST_TASK_ID_LEN];
        api_idempotency_task_id(a->idempotency, i, submitter, digest, key, earlier);
        store_task task = {0};
        vf_error err;
        vf_error_init(&err);
        int found = store_task_get(a->store, earlier, &task, &err);
        store_task_clear(&task);
        if (found == 0) {
            snprintf(task_id, REQUEST_TASK_ID_LEN, "%s", earlier);
            return;
        }
        if (found < 0) /* the intake meets the store's trouble too, and answers it */
            log_warn("Idempotency-Key: looking up an earlier secret's task id: %s", err.text);
    }
}

bool api_idempotency_key_is_valid(const char *key)
{
    size_t len = strlen(key);
    if (len == 0 || len > 255)
        return false;
    for (const char *c = key; *c; c++)
        if (*c < 0x21 || *c > 0x7e)
            return false;
    return true;
}

/* A submission's outcome as the answer: 0 accepted, -1 answered. */
static int answer_outcome(const api_intake_outcome *out, char task_id[REQUEST_TASK_ID_LEN],
                          httpd_response *resp)
{
    snprintf(task_id, REQUEST_TASK_ID_LEN, "%s", out->task_id);
    if (out->status == 0)
        return 0;
    problem_reply(resp, out->status, out->detail);
    return -1;
}

/* A later call of a waiting submission: its outcome, which is normally
 * there (the intake woke the request). Without one (the server is stopping,
 * or the wait ran out), this call waits for it, bounded. */
static int collect(api *a, const httpd_request *req, char task_id[REQUEST_TASK_ID_LEN],
                   httpd_response *resp)
{
    api_intake_outcome out;
    if (api_intake_take(a->intake, req->ticket, &out))
        return answer_outcome(&out, task_id, resp);
    int64_t left = req->started_ms + API_INTAKE_MAX_MS - clock_mono_ms();
    if (req->can_wait && left > 0) {
        resp->wait_ms = (int)left;
        return 1;
    }
    if (left > 0 && api_intake_await(a->intake, req->ticket, (int)left, &out))
        return answer_outcome(&out, task_id, resp);
    api_intake_abandon(a->intake, req->ticket);
    task_id[0] = '\0';
    problem_reply(resp, 503, "the request was not handled in time; try again");
    return -1;
}

/* task.schedule's check: the worker's own parser. */
static int check_schedule(const vf_config *config, const json_t *body,
                          char task_id[REQUEST_TASK_ID_LEN], vf_error *err)
{
    (void)config;
    sched_request parsed;
    sched_request_init(&parsed);
    if (sched_request_parse(body, &parsed, err) < 0)
        return -1;
    snprintf(task_id, REQUEST_TASK_ID_LEN, "%s", parsed.task_id);
    return 0;
}

/* task.schedule's request that no host of the inventory could hold even
 * empty (api_never_fits), parsed again from the checked body. */
static bool schedule_never_fits(api *a, const json_t *body, char *why, size_t size)
{
    sched_request parsed;
    sched_request_init(&parsed);
    return sched_request_parse(body, &parsed, NULL) == 0 && api_never_fits(a, &parsed, why, size);
}

const api_request_kind api_request_schedule = {.kind = "schedule",
                                               .routing_key = NULL,
                                               .body_names_task = true,
                                               .check = check_schedule,
                                               .never_fits = schedule_never_fits};

int api_submit(api *a, const httpd_request *req, const char *submitter,
               const unsigned char *key_digest, const char *idempotency_key, bool blocking,
               char task_id[REQUEST_TASK_ID_LEN], httpd_response *resp)
{
    return api_submit_kind(a, &api_request_schedule, req, submitter, key_digest, idempotency_key,
                           blocking, task_id, resp);
}

int api_submit_kind(api *a, const api_request_kind *kind, const httpd_request *req,
                    const char *submitter, const unsigned char *key_digest,
                    const char *idempotency_key, bool blocking, char task_id[REQUEST_TASK_ID_LEN],
                    httpd_response *resp)
{
    if (!blocking && req->calls > 0)
        return collect(a, req, task_id, resp);
    task_id[0] = '\0';
    vf_error err;
    vf_error_init(&err);
    json_t *body = api_json_body(req, resp);
    if (!body)
        return -1;
    char named[REQUEST_TASK_ID_LEN] = "";
    vf_error invalid;
    vf_error_init(&invalid);
    const char *refusal = NULL;
    if (kind->check(a->config, body, named, &invalid) < 0)
        refusal = invalid.text;
    else if (idempotency_key && !api_idempotency_key_is_valid(idempotency_key))
        refusal = "Idempotency-Key: expected 1 to 255 printable ASCII characters";
    else if (idempotency_key && named[0])
        refusal = "give a task_id in the body or an Idempotency-Key header, not both (a "
                  "task_id is its own idempotency key)";
    if (refusal) {
        problem_reply(resp, 400, refusal);
        json_decref(body);
        return -1;
    }
    /* The admission webhook (blocking) keeps its task: the worker fails it
     * at once as never_fits and the denial quotes that task's explanation. */
    char never[VF_ERROR_TEXT + 64];
    if (!blocking && kind->never_fits && kind->never_fits(a, body, never, sizeof never)) {
        problem_reply(resp, 422, never);
        json_decref(body);
        return -1;
    }
    if (!blocking && !req->can_wait) {
        /* Every waiting place is taken (or the server is stopping). */
        json_decref(body);
        problem_reply(resp, 503, "too many requests in flight; try again");
        return -1;
    }
    if (idempotency_key) {
        api_idempotent_task_id(a, submitter, key_digest, idempotency_key, task_id);
    } else if (named[0]) {
        snprintf(task_id, REQUEST_TASK_ID_LEN, "%s", named);
    } else {
        char fresh[IDS_LEN];
        ids_new("tsk", fresh);
        snprintf(task_id, REQUEST_TASK_ID_LEN, "%s", fresh);
    }
    /* The id travels in the body too when the body has room for it:
     * readable in the task row, and the worker prefers it to message_id. */
    if (kind->body_names_task)
        json_object_set_new(body, "task_id", json_string(task_id));
    char *text = json_util_dump(body);
    if (!text) {
        json_decref(body);
        problem_reply(resp, 500, "out of memory");
        return -1;
    }
    /* The body is parsed already: its priority from it, not from the text again. */
    const char *key =
        kind->routing_key
            ? kind->routing_key
            : queue_order_routing_key(queue_order_body_priority(body, a->config), a->config);
    /* The intake takes text and body, whatever it answers. */
    if (api_intake_submit_as(a->intake, kind->kind, req->ticket, task_id, text, body, submitter,
                             idempotency_key != NULL, key, &err) < 0) {
        problem_reply(resp, 503, "virtflow-api cannot take the request now; try again");
        return -1;
    }
    if (!blocking) {
        resp->wait_ms = API_INTAKE_MAX_MS; /* the intake wakes it sooner */
        return 1;
    }
    api_intake_outcome out;
    if (api_intake_await(a->intake, req->ticket, API_INTAKE_MAX_MS, &out))
        return answer_outcome(&out, task_id, resp);
    api_intake_abandon(a->intake, req->ticket);
    problem_reply(resp, 503, "the request was not handled in time; try again");
    return -1;
}

void api_schedule(api *a, const httpd_request *req, const char *submitter, httpd_response *resp)
{
    char task_id[REQUEST_TASK_ID_LEN];
    if (api_submit(a, req, submitter, NULL, NULL, false, task_id, resp) == 0)
        api_reply_json(resp, 200, json_pack("{s:s}", "task_id", task_id));
}

void api_route_schedule(api *a, const api_call *call, httpd_response *resp)
{
    api_schedule(a, call->req, call->caller->name, resp);
}
