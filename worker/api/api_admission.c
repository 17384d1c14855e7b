/* POST /v1/admission/proxmoxmachine: a Kubernetes mutating admission
 * webhook (AdmissionReview admission.k8s.io/v1) for CAPPX's ProxmoxMachine
 * (infrastructure.cluster.x-k8s.io/v1beta1; docs/cappx.md).
 *
 * CREATE of a machine without spec.node: placed through the same path as
 * POST /v1/tasks: its task ("cappx-" + the first review's request.uid) is
 * recorded queued and published with a confirm, a worker places and
 * reserves it as any task, and the answer waits (a long poll) for the task
 * to end, up to the API server's own timeout (its `timeout` query
 * parameter) less a margin. Completed: allowed, with a JSON patch setting
 * spec.node and spec.vmID. Failed: denied, the message the task's error
 * (the placement's explanation). Still pending at the bound: denied, saying
 * what the task waits for and that the placement is kept for the machine.
 *
 * The machine ("namespace/name") is what a placement belongs to
 * (store_admission.h), not the review: a machine created again, under a new
 * uid (the first review was answered "still placing", or the object is
 * applied again), is answered from its task while that task is pending or
 * holds its placement, instead of taking a second one; a task failed, or
 * whose hold ended, gives way to a new one. A machine of another owner (the
 * uid of its first ownerReference) under the same name releases the old
 * placement and takes a new one.
 *
 * DELETE of a machine: its placement is released through the release path
 * (api_release_send, task.release: the worker ends the hold in its next
 * batch) and the machine forgotten; allowed always, and idempotent (a
 * machine forgotten already, or never placed here, has nothing to release).
 *
 * Anything else (another kind or operation, a machine that has a node, a
 * dry run, which must have no side effects) is allowed as it is. A body that
 * is no AdmissionReview is 400; the store or the broker unreachable is 503
 * (the webhook's failurePolicy decides). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission_review.h"
#include "api_internal.h"
#include "api_routes.h"
#include "clock.h"
#include "json_util.h"
#include "log.h"
#include "problem.h"
#include "task_view.h"

/* Without a `timeout` from the API server: below the webhook's default
 * timeoutSeconds (10), so an answer, even "still placing", reaches it in
 * time. With one, that much less ADMISSION_MARGIN_MS, within the bounds
 * (Kubernetes takes 1..30 s). */
#define ADMISSION_WAIT_MS 8000
#define ADMISSION_MARGIN_MS 1500
#define ADMISSION_MIN_WAIT_MS 500
#define ADMISSION_MAX_WAIT_MS 28500
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

static void store_unavailable(const char *what, const vf_error *err, httpd_response *resp)
{
    log_error("%s: admission: store: %s", what, err->text);
    problem_reply(resp, err->code == VF_EUNAVAILABLE ? 503 : 500,
                  "the store is unavailable; try again");
}

/* How long this review may wait for its answer, in ms: the API server's
 * `timeout` ("10s", the time it has left, in whole seconds) less the
 * margin; ADMISSION_WAIT_MS without one (or with one that reads otherwise,
 * which is logged). */
static int64_t wait_bound_ms(const httpd_request *req)
{
    const char *timeout = httpd_query(req, "timeout");
    if (!timeout)
        return ADMISSION_WAIT_MS;
    char *end = NULL;
    long seconds = strtol(timeout, &end, 10);
    if (end == timeout || strcmp(end, "s") != 0 || seconds < 1 || seconds > 30) {
        log_warn("admission: timeout=%.32s is not a number of seconds 1s..30s; waiting %d ms",
                 timeout, ADMISSION_WAIT_MS);
        return ADMISSION_WAIT_MS;
    }
    int64_t ms = (int64_t)seconds * 1000 - ADMISSION_MARGIN_MS;
    return ms < ADMISSION_MIN_WAIT_MS   ? ADMISSION_MIN_WAIT_MS
           : ms > ADMISSION_MAX_WAIT_MS ? ADMISSION_MAX_WAIT_MS
                                        : ms;
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

/* Whether the machine's recorded task may answer this review: one still
 * pending, or completed and holding its placement (a live reservation).
 * One failed, cancelled, released, expired or bound (its VM was seen: the
 * hold ended) gives way to a new task. Another owner's placement is
 * released first. Returns 1 usable, 0 not, -1 with err. */
static int reusable(api *a, const admission_review *review, const store_admission_machine *m,
                    vf_error *err)
{
    store_task task = {0};
    int found = store_task_get(a->store, m->task_id, &task, err);
    int usable = found < 0 ? -1 : 0;
    if (found != 0)
        goto out;
    bool pending = !task_view_is_final(task.status);
    int live = pending                                 ? 0
               : strcmp(task.status, "completed") == 0 ? api_release_live(a, task.id, err)
                                                       : 0;
    if (live < 0) {
        usable = -1;
        goto out;
    }
    bool other_owner = m->owner[0] && review->owner[0] && strcmp(m->owner, review->owner) != 0;
    if (other_owner && live > 0 && api_release_send(a, task.id, review->machine, err) < 0) {
        usable = -1;
        goto out;
    }
    usable = !other_owner && (pending || live > 0);
out:
    store_task_clear(&task);
    return usable;
}

/* The task that places this review's machine into `chosen`: the one the
 * machine has when it may answer (reusable), else the review's own, made
 * the machine's. Without a machine name, the review's own. Returns 0, or -1
 * with err (the store, the broker, or VF_ECONFLICT: other reviews of the
 * machine kept changing its task). */
static int choose_task(api *a, const admission_review *review, char chosen[REQUEST_TASK_ID_LEN],
                       vf_error *err)
{
    snprintf(chosen, REQUEST_TASK_ID_LEN, "%s", review->task_id);
    if (!review->machine[0])
        return 0;
    char now[STORE_TIME_SIZE];
    store_now(now);
    for (int round = 0; round < 3; round++) {
        store_admission_machine m;
        int found = store_admission_get(a->store, review->machine, &m, err);
        if (found < 0)
            return -1;
        const char *replacing = NULL;
        if (found == 0) {
            if (strcmp(m.task_id, review->task_id) == 0)
                return 0;
            int usable = reusable(a, review, &m, err);
            if (usable < 0)
                return -1;
            if (usable) {
                snprintf(chosen, REQUEST_TASK_ID_LEN, "%s", m.task_id);
                log_info("task %s: admission: ProxmoxMachine %s created again (review %s): its "
                         "placement answers",
                         m.task_id, review->machine, review->uid);
                return 0;
            }
            replacing = m.task_id;
        }
        int set = store_admission_set(a->store, review->machine, review->task_id, review->owner,
                                      replacing, now, err);
        if (set != 0)
            return set < 0 ? -1 : 0;
    }
    vf_error_set(err, VF_ECONFLICT, "ProxmoxMachine %s: its task kept changing; try again",
                 review->machine);
    return -1;
}

/* Record and publish the machine's task as POST /v1/tasks would. Returns 0
 * submitted, 1 answered already (a denial for a request the worker would
 * refuse, or a problem), -1 when resp holds api_submit's failure. */
static int submit_machine(api *a, const httpd_request *req, const api_caller *caller,
                          const admission_review *review, httpd_response *resp)
{
    char why[256];
    json_t *body = admission_review_task_body(review->object, why, sizeof why);
    if (!body) {
        review_reply(resp, review->uid, false, NULL, why);
        return 1;
    }
    json_object_set_new(body, "task_id", json_string(review->task_id));
    char *text = json_util_dump(body);
    json_decref(body);
    if (!text) {
        problem_reply(resp, 500, "out of memory");
        return 1;
    }
    httpd_request submit = *req;
    submit.body = text;
    submit.body_len = strlen(text);
    char submitted[REQUEST_TASK_ID_LEN];
    int rc = api_submit(a, &submit, caller->name ? caller->name : "cappx", NULL, NULL, true,
                        submitted, resp);
    free(text);
    if (rc == 0) {
        log_info("task %s: admission: ProxmoxMachine %s submitted", review->task_id,
                 review->machine[0] ? review->machine : "(unnamed)");
        return 0;
    }
    /* A request the worker would refuse is the machine's fault: a denial
     * the user reads in kubectl; the rest (503) the API server's
     * failurePolicy decides. */
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
        review_reply(resp, review->uid, false, NULL, message);
    }
    return 1;
}

/* Still pending at the bound: denied, saying what the task waits for and
 * that the machine keeps it. */
static void still_placing(httpd_response *resp, const admission_review *review,
                          const store_task *task)
{
    char message[1024];
    int used =
        snprintf(message, sizeof message, "virtflow is still placing this machine (task %s, %s",
                 task->id, task->status);
    if (used > 0 && task->error && task->error[0] && (size_t)used < sizeof message)
        used +=
            snprintf(message + used, sizeof message - (size_t)used, " after: %.400s", task->error);
    if (used > 0 && (size_t)used < sizeof message)
        snprintf(message + used, sizeof message - (size_t)used, "); %s",
                 review->machine[0]
                     ? "its placement is kept for this machine: created again under the same "
                       "name, it gets that placement, not a second one"
                     : "the API server's retry of this review will have its answer");
    log_info("task %s: admission: %s", task->id, message);
    review_reply(resp, review->uid, false, NULL, message);
}

static void place_machine(api *a, const httpd_request *req, const api_caller *caller,
                          const admission_review *review, httpd_response *resp)
{
    char task_id[REQUEST_TASK_ID_LEN];
    store_task task = {0};
    vf_error err;
    vf_error_init(&err);
    if (choose_task(a, review, task_id, &err) < 0) {
        if (err.code == VF_ECONFLICT)
            problem_reply(resp, 503, err.text);
        else
            store_unavailable(review->task_id, &err, resp);
        goto out;
    }
    int found = store_task_get(a->store, task_id, &task, &err);
    if (found < 0) {
        store_unavailable(task_id, &err, resp);
        goto out;
    }
    if (found == 1) {
        /* Only the review's own task can be missing: the machine's task
         * was read from the store. */
        if (submit_machine(a, req, caller, review, resp) != 0)
            goto out;
        if (store_task_get(a->store, task_id, &task, &err) != 0) {
            problem_reply(resp, 503, "the store is unavailable; try again");
            goto out;
        }
    }
    if (task_view_is_final(task.status)) {
        answer_from_task(resp, review->uid, review->object, &task);
        goto out;
    }
    int64_t left_ms = req->started_ms + wait_bound_ms(req) - clock_mono_us() / 1000;
    if (left_ms > 0 && req->can_wait) {
        resp->wait_ms = (int)(left_ms < ADMISSION_POLL_MS ? left_ms : ADMISSION_POLL_MS);
        goto out;
    }
    still_placing(resp, review, &task);
out:
    store_task_clear(&task);
}

/* DELETE: the machine's placement released (its live hold: task.release),
 * the machine forgotten; allowed. */
static void release_machine(api *a, const admission_review *review, httpd_response *resp)
{
    vf_error err;
    vf_error_init(&err);
    store_admission_machine m;
    int found = review->machine[0] ? store_admission_get(a->store, review->machine, &m, &err) : 1;
    if (found < 0) {
        store_unavailable(review->machine, &err, resp);
        return;
    }
    if (found == 1) {
        log_info("admission: ProxmoxMachine %s deleted: nothing placed for it here",
                 review->machine[0] ? review->machine : "(unnamed)");
        review_reply(resp, review->uid, true, NULL, NULL);
        return;
    }
    int live = api_release_live(a, m.task_id, &err);
    if (live < 0) {
        store_unavailable(m.task_id, &err, resp);
        return;
    }
    if (live > 0 && api_release_send(a, m.task_id, review->machine, &err) < 0) {
        char detail[VF_ERROR_TEXT + 96];
        snprintf(detail, sizeof detail, "the broker did not take the release: %.160s; try again",
                 err.text);
        problem_reply(resp, err.code == VF_ENOMEM ? 500 : 503, detail);
        return;
    }
    if (store_admission_forget(a->store, review->machine, m.task_id, &err) < 0) {
        store_unavailable(m.task_id, &err, resp);
        return;
    }
    log_info("task %s: admission: ProxmoxMachine %s deleted: %s", m.task_id, review->machine,
             live > 0 ? "its placement released" : "nothing held any more");
    review_reply(resp, review->uid, true, NULL, NULL);
}

void api_admission(api *a, const httpd_request *req, const api_caller *caller, httpd_response *resp)
{
    char detail[VF_ERROR_TEXT + 128];
    admission_review review = {0};
    if (req->body_too_large) {
        snprintf(detail, sizeof detail, "the request body is over %d bytes", HTTPD_MAX_BODY);
        problem_reply(resp, 413, detail);
        goto out;
    }
    if (admission_review_parse(req->body, req->body_len, &review, detail, sizeof detail) < 0) {
        problem_reply(resp, 400, detail);
        goto out;
    }
    switch (review.action) {
    case ADMISSION_ALLOW:
        review_reply(resp, review.uid, true, NULL, NULL);
        break;
    case ADMISSION_PLACE:
        place_machine(a, req, caller, &review, resp);
        break;
    case ADMISSION_RELEASE:
        release_machine(a, &review, resp);
        break;
    }
out:
    admission_review_close(&review);
}

void api_route_admission(api *a, const api_call *call, httpd_response *resp)
{
    api_admission(a, call->req, call->caller, resp);
}
