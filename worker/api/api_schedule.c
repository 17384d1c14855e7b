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
#include "task_intake.h"

/* application/json, with or without parameters (charset=utf-8). */
static bool is_json_type(const char *content_type)
{
    static const char json_type[] = "application/json";
    if (!content_type || strncasecmp(content_type, json_type, sizeof json_type - 1) != 0)
        return false;
    char next = content_type[sizeof json_type - 1];
    return next == '\0' || next == ';' || isspace((unsigned char)next);
}

/* Whether a recorded task is the same request as `body`: same kind, and
 * the same JSON once both name the task id (a request published by
 * virtflowctl may carry its id in message_id only). */
static bool same_request(const store_task *task, const json_t *body, const char *task_id)
{
    if (!task->kind || strcmp(task->kind, "schedule") != 0 || !task->request)
        return false;
    json_t *recorded = json_loads(task->request, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(recorded)) {
        json_decref(recorded);
        return false;
    }
    if (!json_is_string(json_object_get(recorded, "task_id")))
        json_object_set_new(recorded, "task_id", json_string(task_id));
    bool same = json_equal(recorded, body);
    json_decref(recorded);
    return same;
}

/* The broker refused: take the row back unless a worker has it already
 * (a publish reported lost may still have reached the queue). */
static void withdraw(api *a, const char *task_id)
{
    vf_error err;
    vf_error_init(&err);
    int rc = task_intake_withdraw(a->store, task_id, &err);
    if (rc < 0)
        log_error("task %s: could not withdraw the queued row after a refused publish: %s", task_id,
                  err.text);
    else if (rc == 1)
        log_info("task %s: publish unconfirmed but a worker has the task already; kept", task_id);
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

int api_submit(api *a, const httpd_request *req, const char *submitter, const char *idempotency_key,
               char task_id[REQUEST_TASK_ID_LEN], httpd_response *resp)
{
    int answered = -1;
    json_t *body = NULL;
    char *text = NULL;
    store_task existing = {0};
    char detail[VF_ERROR_TEXT + 64];
    vf_error err;
    vf_error_init(&err);

    if (req->body_too_large) {
        snprintf(detail, sizeof detail, "the request body is over %d bytes", HTTPD_MAX_BODY);
        problem_reply(resp, 413, detail);
        goto out;
    }
    if (!is_json_type(httpd_header(req, "Content-Type"))) {
        problem_reply(resp, 415, "send the request as Content-Type: application/json");
        goto out;
    }
    /* The worker's parse: same flags, same parser, same messages. */
    json_error_t jerr;
    body = json_loadb(req->body, req->body_len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (!body) {
        snprintf(detail, sizeof detail, "not JSON: %s (at byte %d)", jerr.text, jerr.position);
        problem_reply(resp, 400, detail);
        goto out;
    }
    if (!json_is_object(body)) {
        snprintf(detail, sizeof detail, "not a JSON object: got %s", json_util_type_name(body));
        problem_reply(resp, 400, detail);
        goto out;
    }
    sched_request parsed;
    sched_request_init(&parsed);
    vf_error invalid;
    vf_error_init(&invalid);
    if (sched_request_parse(body, &parsed, &invalid) < 0) {
        problem_reply(resp, 400, invalid.text);
        goto out;
    }
    if (idempotency_key && !idempotency_key_is_valid(idempotency_key)) {
        problem_reply(resp, 400, "Idempotency-Key: expected 1 to 255 printable ASCII characters");
        goto out;
    }
    if (idempotency_key && parsed.task_id[0]) {
        problem_reply(resp, 400,
                      "give a task_id in the body or an Idempotency-Key header, not both (a "
                      "task_id is its own idempotency key)");
        goto out;
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
    if (!(text = json_util_dump(body))) {
        problem_reply(resp, 500, "out of memory");
        goto out;
    }

    bool republish = false;
    for (int tries = 0;; tries++) {
        int found = store_task_get(a->store, task_id, &existing, &err);
        if (found < 0)
            goto store_failed;
        if (found == 0) {
            if (!same_request(&existing, body, task_id)) {
                snprintf(detail, sizeof detail,
                         idempotency_key
                             ? "task %s exists with another request: an Idempotency-Key stands for "
                               "one request; use a new key"
                             : "task %s exists with another request; use a new task_id",
                         task_id);
                problem_reply(resp, 409, detail);
                goto out;
            }
            /* Same id, same body: the same answer. Still queued means the
             * first publish may have been lost: publish again (the worker
             * decides a task id once, however many copies arrive). */
            if (strcmp(existing.status, "queued") != 0) {
                answered = 0;
                goto out;
            }
            republish = true;
            break;
        }
        int recorded = task_intake_record(a->store, task_id, text, "virtflow-api", submitter, &err);
        if (recorded < 0)
            goto store_failed;
        if (recorded == 0)
            break;
        if (tries > 0) { /* inserted by someone else, yet not readable: give up */
            vf_error_set(&err, VF_EUNAVAILABLE, "task %s: recorded elsewhere, not readable",
                         task_id);
            goto store_failed;
        }
    }

    if (api_publish(a, task_id, text, &err) < 0) {
        log_warn("task %s: not accepted: %s", task_id, err.text);
        if (!republish)
            withdraw(a, task_id);
        api_metrics_submission(a->metrics, false);
        snprintf(detail, sizeof detail, "the broker did not take the request: %s; try again",
                 err.text);
        problem_reply(resp, 503, detail);
        goto out;
    }
    log_info("task %s: queued and published%s%s%s", task_id, republish ? " again" : "",
             submitter ? " for key " : "", submitter ? submitter : "");
    api_metrics_submission(a->metrics, true);
    answered = 0;
    goto out;

store_failed:
    log_error("task %s: submit: store: %s", task_id, err.text);
    /* The store's words name files and hosts: the log has them, not the client. */
    problem_reply(resp, err.code == VF_EUNAVAILABLE ? 503 : 500,
                  "the store is unavailable; try again");
out:
    store_task_clear(&existing);
    free(text);
    json_decref(body);
    return answered;
}

void api_schedule(api *a, const httpd_request *req, const char *submitter, httpd_response *resp)
{
    char task_id[REQUEST_TASK_ID_LEN];
    if (api_submit(a, req, submitter, NULL, task_id, resp) == 0)
        api_reply_json(resp, 200, json_pack("{s:s}", "task_id", task_id));
}
