/* POST /v1/admission/proxmoxmachine: a Kubernetes mutating admission
 * webhook (AdmissionReview admission.k8s.io/v1) for CAPPX's ProxmoxMachine
 * (infrastructure.cluster.x-k8s.io/v1beta1; docs/cappx.md).
 *
 * A machine created without spec.node is placed now through the same path
 * as POST /v1/tasks: its task ("cappx-" + the review's request.uid) is
 * recorded queued and published with a confirm, a worker places and
 * reserves it as any task, and the answer waits (a long poll, at most
 * ADMISSION_WAIT_MS) for the task to end. Completed: allowed, with a JSON
 * patch setting spec.node and spec.vmID. Failed: denied, the message the
 * task's error (the placement's explanation). Still running at the bound:
 * denied, saying so; the API server's retry (same uid) finds the task and
 * its outcome, so a review answered twice places once.
 *
 * A machine that has a node already, another kind, an operation other than
 * CREATE, or a dry run (which must have no side effects) is allowed as it
 * is. A body that is no AdmissionReview is 400. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission_review.h"
#include "api_internal.h"
#include "clock.h"
#include "json_util.h"
#include "log.h"
#include "problem.h"
#include "task_view.h"

/* Below the webhook's default timeoutSeconds (10): an answer, even "still
 * placing", reaches the API server before it gives up. */
#define ADMISSION_WAIT_MS 8000
#define ADMISSION_POLL_MS 250

/* The AdmissionReview answer (admission_review_answer; the patch's
 * reference is taken). */
static void review_reply(httpd_response *resp, const char *uid, bool allowed, json_t *patch,
                         const char *message)
{
    json_t *answer = admission_review_answer(uid, allowed, patch, message);
    if (!answer) {
        problem_reply(resp, 500, "out of memory");
        return;
    }
    api_reply_json(resp, 200, answer);
}

/* Answer from the task as it ended. */
static void answer_from_task(httpd_response *resp, const char *uid, json_t *object,
                             const store_task *task)
{
    char message[1024];
    if (strcmp(task->status, "completed") == 0 && task->node) {
        log_info("task %s: admission: ProxmoxMachine placed on %s (vmid %lld)", task->id,
                 task->node, (long long)task->vmid);
        review_reply(resp, uid, true, admission_review_patch(object, task->node, task->vmid), NULL);
        return;
    }
    if (strcmp(task->status, "failed") == 0)
        snprintf(message, sizeof message,
                 "virtflow could not place this machine (task %s, %s): %.900s", task->id,
                 task->reason ? task->reason : "failed",
                 task->error ? task->error : "no reason recorded");
    else
        snprintf(message, sizeof message,
                 "virtflow task %s ended %s: its placement is no longer held", task->id,
                 task->status);
    log_info("task %s: admission: denied: %s", task->id, message);
    review_reply(resp, uid, false, NULL, message);
}

void api_admission(api *a, const httpd_request *req, const api_caller *caller, httpd_response *resp)
{
    char detail[VF_ERROR_TEXT + 128];
    admission_review review = {0};
    store_task task = {0};
    if (req->body_too_large) {
        snprintf(detail, sizeof detail, "the request body is over %d bytes", HTTPD_MAX_BODY);
        problem_reply(resp, 413, detail);
        goto out;
    }
    if (admission_review_parse(req->body, req->body_len, &review, detail, sizeof detail) < 0) {
        problem_reply(resp, 400, detail);
        goto out;
    }
    const char *uid = review.uid;
    json_t *object = review.object;
    if (!review.place) {
        review_reply(resp, uid, true, NULL, NULL);
        goto out;
    }
    const char *task_id = review.task_id;

    vf_error err;
    vf_error_init(&err);
    int found = store_task_get(a->store, task_id, &task, &err);
    if (found < 0) {
        log_error("task %s: admission: store: %s", task_id, err.text);
        problem_reply(resp, err.code == VF_EUNAVAILABLE ? 503 : 500,
                      "the store is unavailable; try again");
        goto out;
    }
    if (found == 1) {
        /* Not placed yet: submit as POST /v1/tasks would, with the
         * machine's request as the body (same checks, record, publish). */
        char why[256];
        json_t *body = admission_review_task_body(object, why, sizeof why);
        if (!body) {
            review_reply(resp, uid, false, NULL, why);
            goto out;
        }
        json_object_set_new(body, "task_id", json_string(task_id));
        char *text = json_util_dump(body);
        json_decref(body);
        if (!text) {
            problem_reply(resp, 500, "out of memory");
            goto out;
        }
        httpd_request submit = *req;
        submit.body = text;
        submit.body_len = strlen(text);
        char submitted[REQUEST_TASK_ID_LEN];
        int rc = api_submit(a, &submit, caller->name ? caller->name : "cappx", NULL, NULL, true,
                            submitted, resp);
        free(text);
        if (rc < 0) {
            /* A request the worker would refuse is the machine's fault: a
             * denial the user reads in kubectl; the rest (503) the API
             * server's failurePolicy decides. */
            if (resp->status == 400 || resp->status == 409) {
                json_t *problem = resp->body ? json_loads(resp->body, 0, NULL) : NULL;
                const char *said = json_string_value(json_object_get(problem, "detail"));
                char message[512];
                snprintf(message, sizeof message, "virtflow refused this machine's request: %s",
                         said ? said : "invalid");
                json_decref(problem);
                free(resp->body);
                resp->body = NULL;
                resp->body_len = 0;
                review_reply(resp, uid, false, NULL, message);
            }
            goto out;
        }
        const char *machine =
            json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
        log_info("task %s: admission: ProxmoxMachine %s submitted", task_id,
                 machine ? machine : "(unnamed)");
        found = store_task_get(a->store, task_id, &task, &err);
        if (found != 0) {
            problem_reply(resp, 503, "the store is unavailable; try again");
            goto out;
        }
    }
    if (task_view_is_final(task.status)) {
        answer_from_task(resp, uid, object, &task);
        goto out;
    }
    int64_t left_ms = req->started_ms + ADMISSION_WAIT_MS - clock_mono_us() / 1000;
    if (left_ms > 0 && req->can_wait) {
        resp->wait_ms = (int)(left_ms < ADMISSION_POLL_MS ? left_ms : ADMISSION_POLL_MS);
        goto out;
    }
    snprintf(detail, sizeof detail,
             "virtflow is still placing this machine (task %s, %s); the API server's retry "
             "will have its answer",
             task_id, task.status);
    review_reply(resp, uid, false, NULL, detail);
out:
    store_task_clear(&task);
    admission_review_close(&review);
}
