/* The versioned API (docs/api.md "/v1"):
 *
 *   POST /v1/tasks            submit (api_submit; Idempotency-Key)     submit
 *   GET  /v1/tasks            list, virtflowctl tasks' filters, keyset read
 *                             pages (store_task_page)
 *   GET  /v1/tasks/{id}       one task, its history and reservations   read
 *                             (task_view_detail_json, as virtflowctl
 *                             task --json); ?wait=30s holds the answer
 *                             until the task ends or the wait passes
 *   POST /v1/tasks/{id}/release  publish task.release (api_release.c) release
 *   GET  /v1/deliveries       webhook deliveries, filtered             read
 *                             (api_deliveries.c)
 *   GET  /v1/dead-letters     what is parked in virtflow.dead, as the  read
 *                             store records it (api_dead_letters.c)
 *   GET  /v1/hosts            hosts and pools with free capacity       read
 *                             (api_hosts.c)
 *
 * A wait polls the store every API_WAIT_POLL_MS with the connection
 * suspended in httpd meanwhile (no thread, no busy loop), at most
 * API_MAX_WAITING requests at once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "api_routes.h"
#include "clock.h"
#include "log.h"
#include "problem.h"
#include "store_console.h"
#include "task_view.h"

#define TASK_PREFIX "/v1/tasks/"
/* How often a waiting request reads its task again: a task ends at most this
 * late for its waiter; API_MAX_WAITING waiters cost 4 indexed reads each a
 * second. */
#define API_WAIT_POLL_MS 250
#define API_WAIT_MAX_MS 60000
#define LIST_DEFAULT_LIMIT 50
#define LIST_MAX_LIMIT 500

static void store_unavailable(const char *what, const vf_error *err, httpd_response *resp)
{
    log_error("%s: store: %s", what, err->text);
    /* The store's words name files and hosts: the log has them, not the client. */
    problem_reply(resp, err->code == VF_EUNAVAILABLE ? 503 : 500,
                  "the store is unavailable; try again");
}

static void submit(api *a, const httpd_request *req, const api_caller *caller, httpd_response *resp)
{
    char task_id[REQUEST_TASK_ID_LEN];
    if (api_submit(a, req, caller->name, caller->digest, httpd_header(req, "Idempotency-Key"),
                   false, task_id, resp) != 0)
        return;
    char href[sizeof TASK_PREFIX + REQUEST_TASK_ID_LEN];
    snprintf(href, sizeof href, "%s%s", TASK_PREFIX, task_id);
    api_reply_json(resp, 202, json_pack("{s:s, s:s}", "task_id", task_id, "href", href));
    snprintf(resp->location, sizeof resp->location, "%s", href);
}

/* "30s", "30", "1500ms", "2m" into ms (cut to API_WAIT_MAX_MS); -1 when it
 * is none of these. */
static int64_t parse_wait(const char *text)
{
    char *end = NULL;
    errno = 0;
    long long amount = strtoll(text, &end, 10);
    if (errno || end == text || amount < 0 || text[0] < '0' || text[0] > '9')
        return -1;
    long long unit = strcmp(end, "ms") == 0                    ? 1
                     : strcmp(end, "s") == 0 || end[0] == '\0' ? 1000
                     : strcmp(end, "m") == 0                   ? 60000
                                                               : 0;
    if (unit == 0)
        return -1;
    return amount > API_WAIT_MAX_MS / unit ? API_WAIT_MAX_MS : amount * unit;
}

static void one_task(api *a, const httpd_request *req, const char *id, httpd_response *resp)
{
    static const char *const known[] = {"wait", NULL};
    const char *unknown = httpd_query_unknown(req, known);
    char detail[REQUEST_TASK_ID_LEN + 128];
    if (unknown) {
        snprintf(detail, sizeof detail, "unknown parameter '%.64s' (this route takes wait)",
                 unknown);
        problem_reply(resp, 400, detail);
        return;
    }
    int64_t wait_ms = 0;
    const char *wait_text = httpd_query(req, "wait");
    if (wait_text && (wait_ms = parse_wait(wait_text)) < 0) {
        problem_reply(resp, 400, "wait: expected a duration like 30s, 1500ms or 1m (at most 60s)");
        return;
    }
    if (!api_task_id_is_valid(id)) {
        problem_reply(resp, 404, "no such task: a task id is 1 to 128 of A-Z a-z 0-9 . _ : -");
        return;
    }
    vf_error err;
    vf_error_init(&err);
    store_task task = {0};
    int found = store_task_get(a->store, id, &task, &err);
    if (found < 0) {
        store_unavailable("GET /v1/tasks/{id}", &err, resp);
        return;
    }
    if (found == 1) {
        snprintf(detail, sizeof detail, "no task %s", id);
        problem_reply(resp, 404, detail);
        return;
    }
    int64_t left_ms = req->started_ms + wait_ms - clock_mono_us() / 1000;
    if (left_ms > 0 && !task_view_is_settled(task.status)) {
        if (req->can_wait) {
            resp->wait_ms = (int)(left_ms < API_WAIT_POLL_MS ? left_ms : API_WAIT_POLL_MS);
            store_task_clear(&task);
            return;
        }
        if (req->calls == 0) {
            store_task_clear(&task);
            problem_reply(resp, 503, "too many clients are waiting for tasks; try again");
            return;
        }
        /* Stopping: the task as it is now. */
    }
    json_t *all = task_view_detail_json(a->store, &task, &err);
    store_task_clear(&task);
    if (!all) {
        store_unavailable("GET /v1/tasks/{id}", &err, resp);
        return;
    }
    api_reply_json(resp, 200, all);
}

typedef struct list_ctx {
    json_t *tasks;
    int count;
    char last_created[STORE_TIME_SIZE];
    char last_id[REQUEST_TASK_ID_LEN];
} list_ctx;

static int list_row(const store_task *t, void *user)
{
    list_ctx *ctx = user;
    json_array_append_new(ctx->tasks, task_view_json(t));
    ctx->count++;
    snprintf(ctx->last_created, sizeof ctx->last_created, "%s", t->created_at ? t->created_at : "");
    snprintf(ctx->last_id, sizeof ctx->last_id, "%s", t->id ? t->id : "");
    return 0;
}

static bool one_of(const char *value, const char *const *choices)
{
    for (const char *const *c = choices; *c; c++)
        if (strcmp(*c, value) == 0)
            return true;
    return false;
}

/* GET /v1/tasks?idempotency_key=K: the caller's own task for that key (the
 * id its POST was recorded under: api_idempotent_task_id), as a page of
 * one or none. Another key holder's same key names another task. */
static void task_by_key(api *a, const api_caller *caller, const char *key, httpd_response *resp)
{
    char id[REQUEST_TASK_ID_LEN];
    api_idempotent_task_id(a, caller->name, caller->digest, key, id);
    store_task task = {0};
    vf_error err;
    vf_error_init(&err);
    int found = store_task_get(a->store, id, &task, &err);
    if (found < 0) {
        store_unavailable("GET /v1/tasks?idempotency_key", &err, resp);
        return;
    }
    json_t *tasks = json_array();
    if (found == 0)
        json_array_append_new(tasks, task_view_json(&task));
    store_task_clear(&task);
    api_reply_json(resp, 200, json_pack("{s:o, s:n}", "tasks", tasks, "next_cursor"));
}

/* A search term's value: present, not empty, at most `max` bytes. */
static bool term_ok(const char *value, size_t max)
{
    return !value || (value[0] && strlen(value) <= max);
}

/* GET /v1/tasks' query, read and checked: the filter (its strings the
 * request's, `since` pointing into q), and the page to start after. */
typedef struct list_query {
    store_task_filter filter;
    char since[STORE_TIME_SIZE];
    bool has_cursor; /* before and before_id are set */
    char before[STORE_TIME_SIZE];
    char before_id[REQUEST_TASK_ID_LEN];
} list_query;

/* Returns NULL, or what is wrong (the 400's detail). */
static const char *read_list_query(const httpd_request *req, list_query *q)
{
    *q = (list_query){.filter = {.limit = LIST_DEFAULT_LIMIT}};
    store_task_filter *filter = &q->filter;
    filter->status = httpd_query(req, "status");
    filter->reason = httpd_query(req, "reason");
    filter->kind = httpd_query(req, "kind");
    filter->node = httpd_query(req, "node");
    filter->vm_name = httpd_query(req, "vm_name");
    filter->submitter = httpd_query(req, "submitter");
    filter->error = httpd_query(req, "error");
    const char *since_text = httpd_query(req, "since");
    const char *limit_text = httpd_query(req, "limit");
    const char *cursor = httpd_query(req, "cursor");
    const char *problem = NULL;
    if (filter->status && !one_of(filter->status, task_view_statuses))
        problem = "status: expected queued, processing, retrying, completed, failed, "
                  "provisioning, waiting_ready, ready, releasing or released";
    else if (filter->reason && !one_of(filter->reason, task_view_reasons))
        problem = "reason: expected invalid, unschedulable, never_fits, exhausted or lost";
    else if (filter->kind && !one_of(filter->kind, task_view_kinds))
        problem = "kind: expected schedule or spare";
    else if (filter->node && (!filter->node[0] || strlen(filter->node) > 255))
        problem = "node: expected a host name";
    else if (!term_ok(filter->vm_name, 255))
        problem = "vm_name: expected a VM name (1 to 255 bytes), matched exactly";
    else if (!term_ok(filter->submitter, 255))
        problem = "submitter: expected an API key's name or a broker user (1 to 255 bytes)";
    else if (!term_ok(filter->error, 200))
        problem = "error: expected 1 to 200 bytes of the error text, matched anywhere, ignoring "
                  "case";
    else if (since_text && task_view_parse_since(since_text, q->since) < 0)
        problem = "since: expected 30m, 1h, 2d, 45s or an RFC 3339 UTC time like "
                  "2026-11-22T01:02:03Z";
    if (!problem && limit_text) {
        char *end;
        errno = 0;
        long limit = strtol(limit_text, &end, 10);
        if (errno || end == limit_text || *end || limit < 1 || limit > LIST_MAX_LIMIT)
            problem = "limit: expected a number from 1 to 500";
        else
            filter->limit = (int)limit;
    }
    if (!problem && cursor) {
        /* The previous page's next_cursor: "CREATED_AT,ID". */
        const char *comma = strrchr(cursor, ',');
        size_t created_len = comma ? (size_t)(comma - cursor) : 0;
        if (!comma || created_len == 0 || created_len >= sizeof q->before ||
            !api_task_id_is_valid(comma + 1) || memchr(cursor, ',', created_len)) {
            problem = "cursor: expected the next_cursor of the previous page";
        } else {
            memcpy(q->before, cursor, created_len);
            q->before[created_len] = '\0';
            snprintf(q->before_id, sizeof q->before_id, "%s", comma + 1);
            q->has_cursor = true;
        }
    }
    if (!problem && since_text)
        filter->since = q->since;
    return problem;
}

static void list_tasks(api *a, const httpd_request *req, const api_caller *caller,
                       httpd_response *resp)
{
    static const char *const known[] = {
        "status", "reason",  "kind",      "node",  "since",           "limit",
        "cursor", "vm_name", "submitter", "error", "idempotency_key", NULL};
    char detail[320];
    const char *unknown = httpd_query_unknown(req, known);
    if (unknown) {
        snprintf(detail, sizeof detail,
                 "unknown parameter '%.64s' (filters: status, reason, kind, node, since, "
                 "vm_name, submitter, error, idempotency_key, limit, cursor)",
                 unknown);
        problem_reply(resp, 400, detail);
        return;
    }
    const char *key = httpd_query(req, "idempotency_key");
    if (key) {
        if (!api_idempotency_key_is_valid(key))
            problem_reply(resp, 400,
                          "idempotency_key: expected 1 to 255 visible ASCII characters, as in the "
                          "Idempotency-Key header");
        else if (httpd_query_count(req) > 1)
            problem_reply(resp, 400, "idempotency_key finds one task: it takes no other parameter");
        else
            task_by_key(a, caller, key, resp);
        return;
    }
    list_query q;
    const char *problem = read_list_query(req, &q);
    if (problem) {
        problem_reply(resp, 400, problem);
        return;
    }
    list_ctx ctx = {.tasks = json_array()};
    vf_error err;
    vf_error_init(&err);
    if (store_task_page(a->store, &q.filter, q.has_cursor ? q.before : NULL,
                        q.has_cursor ? q.before_id : NULL, list_row, &ctx, &err) < 0) {
        json_decref(ctx.tasks);
        store_unavailable("GET /v1/tasks", &err, resp);
        return;
    }
    json_t *next = json_null();
    if (ctx.count == q.filter.limit) {
        char next_cursor[STORE_TIME_SIZE + REQUEST_TASK_ID_LEN + 1];
        snprintf(next_cursor, sizeof next_cursor, "%s,%s", ctx.last_created, ctx.last_id);
        next = json_string(next_cursor);
    }
    api_reply_json(resp, 200, json_pack("{s:o, s:o}", "tasks", ctx.tasks, "next_cursor", next));
}

void api_route_submit_task(api *a, const api_call *call, httpd_response *resp)
{
    submit(a, call->req, call->caller, resp);
}

void api_route_list_tasks(api *a, const api_call *call, httpd_response *resp)
{
    list_tasks(a, call->req, call->caller, resp);
}

void api_route_task(api *a, const api_call *call, httpd_response *resp)
{
    one_task(a, call->req, call->param, resp);
}

void api_route_release_task(api *a, const api_call *call, httpd_response *resp)
{
    api_release(a, call->req, call->caller, call->param, resp);
}

void api_route_deliveries(api *a, const api_call *call, httpd_response *resp)
{
    api_deliveries(a, call->req, resp);
}

void api_route_dead_letters(api *a, const api_call *call, httpd_response *resp)
{
    api_dead_letters(a, call->req, resp);
}

void api_route_hosts(api *a, const api_call *call, httpd_response *resp)
{
    api_hosts(a, call->req, resp);
}
