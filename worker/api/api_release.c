/* POST /v1/tasks/{task_id}/release: give a completed task's reservation back
 * by publishing task.release (the body virtflowctl release sends:
 * task_intake_release_body) with a confirm, through the link submits use.
 * The worker ends the reservation; this route only decides whether asking
 * makes sense, and who may ask:
 *
 *   no task of that id                         404
 *   a key with `release` but not `admin`, on a
 *   task its name did not submit               403
 *   a live reservation, or custom resources
 *   its VM holds (the ledger)                  publish, 202 "releasing"
 *   none, but a release ended one before       202 "released" (idempotent,
 *                                              nothing published)
 *   none (never placed, failed, expired, the
 *   VM seen without custom resources, a spare
 *   task)                                      409
 *   the broker refused or is unreachable       503 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "ids.h"
#include "json_util.h"
#include "log.h"
#include "problem.h"
#include "store_reservations.h"
#include "store_stats.h"
#include "task_intake.h"
#include "task_owner.h"

static int find_released(const store_task_event *event, void *ctx)
{
    bool *released = ctx;
    if (strcmp(event->status, "released") != 0)
        return 0;
    *released = true;
    return 1;
}

typedef struct holding {
    const char *now; /* the reservation clock */
    int placements;  /* held, not bound, not expired */
    int lasting;     /* bound to a VM that exists, its custom resources still counted */
} holding;

static int count_held(const store_reservation *r, void *ctx)
{
    holding *h = ctx;
    if (!r->released_at && !r->bound_at && r->expires_at && strcmp(r->expires_at, h->now) > 0)
        h->placements++;
    /* The ledger (docs/guarantees.md): a VM's GPUs count while it exists,
     * until its task is released. */
    else if (r->bound_at && r->resources && !r->resources_ended_at)
        h->lasting++;
    return 0;
}

/* What task `id` holds, counted into *held; -1 with err (the store). */
static int task_holds(api *a, const char *id, holding *held, char now[STORE_TIME_SIZE],
                      vf_error *err)
{
    *held = (holding){.now = now};
    if (store_reservation_clock(a->store, now, err) < 0 ||
        store_task_reservations(a->store, id, count_held, held, err) < 0)
        return -1;
    return 0;
}

int api_release_live(api *a, const char *id, vf_error *err)
{
    char now[STORE_TIME_SIZE];
    holding held;
    return task_holds(a, id, &held, now, err) < 0 ? -1 : held.placements + held.lasting;
}

int api_release_placements(api *a, const char *id, vf_error *err)
{
    char now[STORE_TIME_SIZE];
    holding held;
    return task_holds(a, id, &held, now, err) < 0 ? -1 : held.placements;
}

int api_release_send(api *a, const char *id, const char *by, vf_error *err)
{
    char *body = task_intake_release_body(id);
    if (!body) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    char message_id[IDS_LEN];
    ids_new("rel", message_id);
    int rc = api_publish_to(a, BROKER_KEY_TASK_RELEASE, message_id, id, body, err);
    free(body);
    if (rc < 0) {
        if (api_broker_down(a->broker))
            api_broker_refused(a->broker, 1); /* one warning for the outage's refusals */
        else if (!api_broker_refuses(a->broker, BROKER_KEY_TASK_RELEASE)) /* said once */
            log_warn("task %s: release not accepted: %s", id, err->text);
        return -1;
    }
    log_info("task %s: release %s published%s%s", id, message_id, by ? " for " : "", by ? by : "");
    return 0;
}

static void store_failed(const char *task_id, const vf_error *err, httpd_response *resp)
{
    log_error("task %s: release: store: %s", task_id, err->text);
    problem_reply(resp, err->code == VF_EUNAVAILABLE ? 503 : 500,
                  "the store is unavailable; try again");
}

static void accepted(httpd_response *resp, const char *task_id, const char *status)
{
    char href[REQUEST_TASK_ID_LEN + 16];
    snprintf(href, sizeof href, "/v1/tasks/%s", task_id);
    api_reply_json(
        resp, 202,
        json_pack("{s:s, s:s, s:s}", "task_id", task_id, "status", status, "href", href));
}

void api_release(api *a, const httpd_request *req, const api_caller *caller, const char *id,
                 httpd_response *resp)
{
    static const char *const known[] = {NULL};
    char detail[REQUEST_TASK_ID_LEN + 256];
    store_task task = {0};
    task_owner owner = {NULL, NULL};
    vf_error err;
    vf_error_init(&err);

    const char *unknown = httpd_query_unknown(req, known);
    if (unknown) {
        snprintf(detail, sizeof detail, "unknown parameter '%.64s' (this route takes none)",
                 unknown);
        problem_reply(resp, 400, detail);
        goto out;
    }
    if (!api_task_id_is_valid(id)) {
        problem_reply(resp, 404, "no such task: a task id is 1 to 128 of A-Z a-z 0-9 . _ : -");
        goto out;
    }
    int found = store_task_get(a->store, id, &task, &err);
    if (found < 0) {
        store_failed(id, &err, resp);
        goto out;
    }
    if (found == 1) {
        snprintf(detail, sizeof detail, "no task %s", id);
        problem_reply(resp, 404, detail);
        goto out;
    }
    /* A key that may release but is not admin: only what it submitted. */
    if (caller->name && !(caller->scopes & API_SCOPE_ADMIN)) {
        if (task_owner_read(a->store, id, &owner, &err) < 0) {
            store_failed(id, &err, resp);
            goto out;
        }
        if (!owner.key || strcmp(owner.key, caller->name) != 0) {
            snprintf(detail, sizeof detail,
                     "the key %s may release only the tasks it submitted; task %s was not (an "
                     "admin key may release any)",
                     caller->name, id);
            problem_reply(resp, 403, detail);
            goto out;
        }
    }
    if (!task.kind || strcmp(task.kind, "schedule") != 0) {
        snprintf(detail, sizeof detail,
                 "task %s is a %s task: its reservation goes with spare.release", id,
                 task.kind ? task.kind : "unknown");
        problem_reply(resp, 409, detail);
        goto out;
    }
    int live = api_release_live(a, id, &err);
    if (live < 0) {
        store_failed(id, &err, resp);
        goto out;
    }
    if (live == 0) {
        bool released = false;
        if (store_task_events(a->store, id, find_released, &released, &err) < 0) {
            store_failed(id, &err, resp);
            goto out;
        }
        if (released) {
            accepted(resp, id, "released");
            goto out;
        }
        snprintf(detail, sizeof detail,
                 "task %s holds no reservation (status %s): nothing to release; a task is "
                 "released once it is completed and before its VM is seen or its reservation "
                 "expires (or while its VM exists, when it holds custom resources)",
                 id, task.status ? task.status : "unknown");
        problem_reply(resp, 409, detail);
        goto out;
    }
    char by[96];
    snprintf(by, sizeof by, "key %s", caller->name ? caller->name : "");
    if (api_release_send(a, id, caller->name ? by : NULL, &err) < 0) {
        snprintf(detail, sizeof detail, "the broker did not take the release: %.160s; try again",
                 err.text);
        problem_reply(resp, err.code == VF_ENOMEM ? 500 : 503, detail);
        goto out;
    }
    accepted(resp, id, "releasing");
out:
    task_owner_clear(&owner);
    store_task_clear(&task);
}
