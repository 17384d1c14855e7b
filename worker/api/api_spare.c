/* The spare routes (docs/api.md "Spares"): UpgradeCtrl's entry point over
 * HTTP, beside the AMQP one.
 *
 *   POST /spare/prepare       a spare.prepare body    200 {"task_id"}     submit
 *   POST /spare/release       a spare.release body    200 {"task_id"}     submit
 *   POST /v1/spares/prepare   the same, Idempotency-Key, 202 + Location   submit
 *   POST /v1/spares/release   the same, Idempotency-Key, 202 + Location   submit
 *
 * Each goes through api_submit_kind, as POST /schedule does: the worker's
 * own check of the body (spare_handler_check: 400 with its message), the
 * task recorded `queued` (kind spare) before the answer, published with a
 * confirm on spare.prepare or spare.release, the same idempotency on the
 * task id and the same 409, 413, 415 and 503. The spares' progress is read
 * with GET /result/{task_id} and GET /v1/tasks/{task_id}. */
#include <stdio.h>
#include <string.h>

#include "api_documents.h"
#include "api_internal.h"
#include "api_routes.h"
#include "broker_names.h"
#include "json_util.h"
#include "problem.h"
#include "spare_handler.h"
#include "task_view.h"

#define V1_TASK_PREFIX "/v1/tasks/"

static int check_prepare(const vf_config *config, const json_t *body,
                         char task_id[REQUEST_TASK_ID_LEN], vf_error *err)
{
    if (spare_handler_check(config, BROKER_KEY_SPARE_PREPARE, body, err) < 0)
        return -1;
    /* Checked by the handler's parser already: 1 to 128 of its characters. */
    const char *named = json_string_value(json_object_get(body, "task_id"));
    snprintf(task_id, REQUEST_TASK_ID_LEN, "%s", named ? named : "");
    return 0;
}

/* A spare.release body is {"upgrade_id"} only: the task id travels as the
 * message's message_id (an Idempotency-Key's, or a new one). */
static int check_release(const vf_config *config, const json_t *body,
                         char task_id[REQUEST_TASK_ID_LEN], vf_error *err)
{
    task_id[0] = '\0';
    return spare_handler_check(config, BROKER_KEY_SPARE_RELEASE, body, err);
}

static const api_request_kind prepare_kind = {.kind = "spare",
                                              .routing_key = BROKER_KEY_SPARE_PREPARE,
                                              .body_names_task = true,
                                              .check = check_prepare};
static const api_request_kind release_kind = {.kind = "spare",
                                              .routing_key = BROKER_KEY_SPARE_RELEASE,
                                              .body_names_task = false,
                                              .check = check_release};

typedef struct spare_route {
    const char *path;
    const api_request_kind *kind;
    bool v1; /* Idempotency-Key, 202 with Location; else the prototype's 200 */
} spare_route;

static const spare_route routes[] = {
    {"/spare/prepare", &prepare_kind, false},
    {"/spare/release", &release_kind, false},
    {"/v1/spares/prepare", &prepare_kind, true},
    {"/v1/spares/release", &release_kind, true},
};

static void submit(api *a, const spare_route *route, const httpd_request *req,
                   const api_caller *caller, httpd_response *resp)
{
    char task_id[REQUEST_TASK_ID_LEN];
    const char *key = route->v1 ? httpd_header(req, "Idempotency-Key") : NULL;
    if (api_submit_kind(a, route->kind, req, caller->name, caller->digest, key, false, task_id,
                        resp) != 0)
        return;
    if (!route->v1) {
        api_reply_json(resp, 200, json_pack("{s:s}", "task_id", task_id));
        return;
    }
    char href[sizeof V1_TASK_PREFIX + REQUEST_TASK_ID_LEN];
    snprintf(href, sizeof href, "%s%s", V1_TASK_PREFIX, task_id);
    api_reply_json(resp, 202, json_pack("{s:s, s:s}", "task_id", task_id, "href", href));
    snprintf(resp->location, sizeof resp->location, "%s", href);
}

/* The request bodies' schemas, which /openapi.json refers to by these
 * relative URLs; open, as the document is. */
static const struct {
    const char *path;
    const char *text;
} documents[] = {
    {"/request.spare.prepare.json", api_spare_prepare_schema_json},
    {"/request.spare.release.json", api_spare_release_schema_json},
};

void api_route_spare_schema(api *a, const api_call *call, httpd_response *resp)
{
    (void)a;
    for (size_t i = 0; i < sizeof documents / sizeof documents[0]; i++)
        if (strcmp(call->req->path, documents[i].path) == 0) {
            httpd_reply_text(resp, 200, "application/json", documents[i].text);
            return;
        }
    problem_reply(resp, 404, "no such document");
}

void api_route_spare(api *a, const api_call *call, httpd_response *resp)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(call->req->path, routes[i].path) == 0) {
            submit(a, &routes[i], call->req, call->caller, resp);
            return;
        }
    problem_reply(resp, 404, "no such route");
}

/* The prototype's status for a spare task's state: ready (its spares are
 * up) and released are what the request asked for. */
static const char *prototype_status(const char *state)
{
    if (strcmp(state, "ready") == 0 || strcmp(state, "released") == 0)
        return "completed";
    if (strcmp(state, "failed") == 0 || strcmp(state, "cancelled") == 0)
        return "failed";
    return "processing";
}

json_t *api_spare_result_json(store *s, const store_task *task, vf_error *err)
{
    json_t *spares = task_view_spares_json(s, task->id, err);
    if (!spares)
        return NULL;
    const char *state = task->status ? task->status : "";
    json_t *request = task->request ? json_loads(task->request, 0, NULL) : NULL;
    json_t *out =
        json_pack("{s:s, s:s, s:s, s:i, s:o}", "status", prototype_status(state), "task_id",
                  task->id, "state", state, "attempts", task->attempts, "spares", spares);
    json_t *upgrade_id = json_object_get(request, "upgrade_id");
    if (out && json_is_string(upgrade_id))
        json_object_set(out, "upgrade_id", upgrade_id);
    if (out && strcmp(prototype_status(state), "failed") == 0) {
        /* The failed shape of a task.schedule: `state` only when cancelled. */
        bool cancelled = strcmp(state, "cancelled") == 0;
        if (!cancelled)
            json_object_del(out, "state");
        json_object_set_new(out, "error", json_string(task->error ? task->error : state));
        const char *reason = cancelled ? "cancelled" : task->reason;
        if (reason)
            json_object_set_new(out, "reason", json_string(reason));
    }
    json_decref(request);
    if (!out)
        vf_error_set(err, VF_ENOMEM, "out of memory");
    return out;
}
