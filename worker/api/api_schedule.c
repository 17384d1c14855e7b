/* POST /schedule: the prototype's request body is virtflow's task.schedule
 * body (requested_cpu, requested_memory, requested_pool, dedicated, and
 * virtflow's optional fields), checked by the worker's own parser, recorded
 * as `queued`, then published with a confirm; POST /v1/tasks does the same
 * through api_submit. */
#include <ctype.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_internal.h"
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

/* The task id an Idempotency-Key stands for: the same key from the same
 * submitter is the same task, so the task-id rules (same body: same answer;
 * other body: 409) apply to it, in the store every replica shares. */
static void idempotent_task_id(const char *submitter, const char *key,
                               char task_id[REQUEST_TASK_ID_LEN])
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok =
        ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
        EVP_DigestUpdate(ctx, submitter ? submitter : "", submitter ? strlen(submitter) : 0) &&
        EVP_DigestUpdate(ctx, "\n", 1) && EVP_DigestUpdate(ctx, key, strlen(key)) &&
        EVP_DigestFinal_ex(ctx, digest, &len) && len >= 16;
    EVP_MD_CTX_free(ctx);
    static const char hex[] = "0123456789abcdef";
    char digits[33];
    for (int i = 0; i < 16; i++) {
        digits[2 * i] = hex[ok ? digest[i] >> 4 : 0];
        digits[2 * i + 1] = hex[ok ? digest[i] & 15 : 0];
    }
    digits[32] = '\0';
    snprintf(task_id, REQUEST_TASK_ID_LEN, "idem_%s", digits);
}

/* An Idempotency-Key: 1 to 255 printable ASCII characters. */
static bool idempotency_key_is_valid(const char *key)
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

int api_submit(api *a, const httpd_request *req, const char *submitter, const char *idempotency_key,
               bool blocking, char task_id[REQUEST_TASK_ID_LEN], httpd_response *resp)
{
    if (!blocking && req->calls > 0)
        return collect(a, req, task_id, resp);
    task_id[0] = '\0';
    json_t *body = NULL;
    char detail[VF_ERROR_TEXT + 64];
    vf_error err;
    vf_error_init(&err);

    if (req->body_too_large) {
        snprintf(detail, sizeof detail, "the request body is over %d bytes", HTTPD_MAX_BODY);
        problem_reply(resp, 413, detail);
        return -1;
    }
    if (!is_json_type(httpd_header(req, "Content-Type"))) {
        problem_reply(resp, 415, "send the request as Content-Type: application/json");
        return -1;
    }
    /* The worker's parse: same flags, same parser, same messages. */
    json_error_t jerr;
    body = json_loadb(req->body, req->body_len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (!body) {
        snprintf(detail, sizeof detail, "not JSON: %s (at byte %d)", jerr.text, jerr.position);
        problem_reply(resp, 400, detail);
        return -1;
    }
    if (!json_is_object(body)) {
        snprintf(detail, sizeof detail, "not a JSON object: got %s", json_util_type_name(body));
        problem_reply(resp, 400, detail);
        json_decref(body);
        return -1;
    }
    sched_request parsed;
    sched_request_init(&parsed);
    vf_error invalid;
    vf_error_init(&invalid);
    const char *refusal = NULL;
    if (sched_request_parse(body, &parsed, &invalid) < 0)
        refusal = invalid.text;
    else if (idempotency_key && !idempotency_key_is_valid(idempotency_key))
        refusal = "Idempotency-Key: expected 1 to 255 printable ASCII characters";
    else if (idempotency_key && parsed.task_id[0])
        refusal = "give a task_id in the body or an Idempotency-Key header, not both (a "
                  "task_id is its own idempotency key)";
    if (refusal) {
        problem_reply(resp, 400, refusal);
        json_decref(body);
        return -1;
    }
    /* The admission webhook (blocking) keeps its task: the worker fails it
     * at once as never_fits and the denial quotes that task's explanation. */
    char never[sizeof detail];
    if (!blocking && api_never_fits(a, &parsed, never, sizeof never)) {
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
        idempotent_task_id(submitter, idempotency_key, task_id);
    } else if (parsed.task_id[0]) {
        snprintf(task_id, REQUEST_TASK_ID_LEN, "%s", parsed.task_id);
    } else {
        char fresh[IDS_LEN];
        ids_new("tsk", fresh);
        snprintf(task_id, REQUEST_TASK_ID_LEN, "%s", fresh);
    }
    /* The id travels in the body too: readable in the task row, and the
     * worker prefers it to message_id. */
    json_object_set_new(body, "task_id", json_string(task_id));
    char *text = json_util_dump(body);
    if (!text) {
        json_decref(body);
        problem_reply(resp, 500, "out of memory");
        return -1;
    }
    /* The body is parsed already: its priority from it, not from the text again. */
    const char *key =
        queue_order_routing_key(queue_order_body_priority(body, a->config), a->config);
    /* The intake takes text and body, whatever it answers. */
    if (api_intake_submit(a->intake, req->ticket, task_id, text, body, submitter,
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
    if (api_submit(a, req, submitter, NULL, false, task_id, resp) == 0)
        api_reply_json(resp, 200, json_pack("{s:s}", "task_id", task_id));
}
