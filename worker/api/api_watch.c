/* Watching as Server-Sent Events (docs/api.md "Watching"): a client without
 * a webhook endpoint follows a task, or every event, over one connection.
 *
 *   GET /v1/tasks/{id}/events   the task's history rows: those recorded    read
 *                               so far, then each as it is recorded; the
 *                               stream ends after the task's final one
 *   GET /v1/events?since=C      the events virtflow publishes (the        read
 *                               outbox), after cursor C (an event id, or
 *                               30m / 2h / an RFC 3339 time); without C,
 *                               only those from now on
 *
 * Each message carries its cursor as the SSE `id` (a history row's number,
 * an event's id); a client that reconnects with Last-Event-ID (EventSource
 * does) goes on after it. The stream reads the store on the HTTP thread's
 * handle every WATCH_POLL_MS while it has nothing to send, with the
 * connection suspended meanwhile (httpd.h "Streams"), and sends a comment
 * every WATCH_HEARTBEAT_MS so that proxies keep it and a gone client is
 * noticed. Streams share virtflow-api's waiting places with long polls. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "api_routes.h"
#include "clock.h"
#include "grow.h"
#include "ids.h"
#include "json_util.h"
#include "log.h"
#include "problem.h"
#include "store_outbox.h"
#include "task_view.h"

#define WATCH_POLL_MS 250
#define WATCH_HEARTBEAT_MS 15000
#define WATCH_BATCH 200 /* rows read at once */

typedef struct watch {
    api *a;
    bool all; /* every event; else one task's history */
    char task_id[REQUEST_TASK_ID_LEN];
    int64_t after_row;         /* the task's: the last history row sent */
    char after_event[IDS_LEN]; /* every event's: the last event id sent */
    char *out;                 /* SSE text not yet sent */
    size_t out_len, out_sent, out_cap;
    bool ending;               /* nothing more after what is buffered */
    int64_t read_ms, wrote_ms; /* monotonic: the last store read, the last write */
} watch;

static void watch_free(void *ctx)
{
    watch *w = ctx;
    if (!w)
        return;
    free(w->out);
    free(w);
}

/* Append one SSE message (id, event, data on one line: JSON has no newline). */
static int append(watch *w, const char *id, const char *event, const char *data)
{
    size_t need = strlen(id) + strlen(event) + strlen(data) + 32;
    if (grow_array((void **)&w->out, &w->out_cap, w->out_len + need, 1) < 0)
        return -1;
    int n = snprintf(w->out + w->out_len, w->out_cap - w->out_len,
                     "id: %s\nevent: %s\ndata: %s\n\n", id, event, data);
    if (n < 0)
        return -1;
    w->out_len += (size_t)n;
    return 0;
}

static int add_history_row(const store_task_event *e, void *user)
{
    watch *w = user;
    json_t *data = task_view_event_json(e);
    char *text = data ? json_util_dump(data) : NULL;
    json_decref(data);
    char id[32];
    snprintf(id, sizeof id, "%" PRId64, e->id);
    int rc = text ? append(w, id, e->status, text) : -1;
    free(text);
    if (rc == 0)
        w->after_row = e->id;
    return rc;
}

static int add_event(const store_outbox_event *e, void *user)
{
    watch *w = user;
    const char *type = e->routing_key + strlen("event.");
    if (append(w, e->id, type, e->body) < 0)
        return -1;
    snprintf(w->after_event, sizeof w->after_event, "%s", e->id);
    return 0;
}

/* New rows into w->out; a task that has ended (and nothing more of it) ends
 * the stream. 0, or -1 when the store failed (the stream ends). */
static int read_more(watch *w)
{
    vf_error err;
    vf_error_init(&err);
    if (w->all) {
        char before[IDS_LEN];
        store_outbox_id_bound(clock_wall_ms() - STORE_OUTBOX_SETTLE_MS, '0', before);
        if (store_outbox_events_between(w->a->store, w->after_event, before, WATCH_BATCH, add_event,
                                        w, &err) < 0)
            goto failed;
        return 0;
    }
    int64_t before = w->after_row;
    if (store_task_events_after(w->a->store, w->task_id, w->after_row, WATCH_BATCH, add_history_row,
                                w, &err) < 0)
        goto failed;
    if (w->after_row == before) {
        /* Nothing new: has it ended? Its final row is written with its
         * final status, in one transaction, so none follows. */
        store_task task = {0};
        int found = store_task_get(w->a->store, w->task_id, &task, &err);
        if (found < 0)
            goto failed;
        w->ending = found == 1 || task_view_is_final(task.status);
        store_task_clear(&task);
    }
    return 0;
failed:
    log_warn("watch: store: %s; the stream ends (the client reconnects)", err.text);
    return -1;
}

/* httpd_stream_fn: what is buffered, else what the store has now, else a
 * wait (or the end). */
static long produce(void *ctx, char *buf, size_t max, bool stopping, int *wait_ms)
{
    watch *w = ctx;
    int64_t now = clock_mono_us() / 1000;
    if (w->out_sent == w->out_len && !w->ending && !stopping && now - w->read_ms >= WATCH_POLL_MS) {
        w->out_len = w->out_sent = 0;
        w->read_ms = now;
        if (read_more(w) < 0)
            w->ending = true;
    }
    if (w->out_sent == w->out_len && !w->ending && !stopping &&
        now - w->wrote_ms >= WATCH_HEARTBEAT_MS) {
        static const char beat[] = ": keepalive\n\n";
        if (grow_array((void **)&w->out, &w->out_cap, sizeof beat, 1) == 0) {
            memcpy(w->out, beat, sizeof beat - 1);
            w->out_len = sizeof beat - 1;
            w->out_sent = 0;
        }
    }
    if (w->out_sent < w->out_len) {
        size_t n = w->out_len - w->out_sent < max ? w->out_len - w->out_sent : max;
        memcpy(buf, w->out + w->out_sent, n);
        w->out_sent += n;
        w->wrote_ms = now;
        return (long)n;
    }
    if (w->ending || stopping)
        return -1;
    *wait_ms = WATCH_POLL_MS;
    return 0;
}

/* Begin streaming: the headers now, the messages as produce() finds them. */
static void start(watch *w, const httpd_request *req, httpd_response *resp)
{
    if (!req->can_wait) {
        watch_free(w);
        problem_reply(resp, 503, "too many clients are waiting or watching; try again");
        return;
    }
    resp->status = 200;
    snprintf(resp->content_type, sizeof resp->content_type, "text/event-stream; charset=utf-8");
    resp->stream = produce;
    resp->stream_ctx = w;
    resp->stream_free = watch_free;
    w->wrote_ms = clock_mono_us() / 1000;
}

static watch *watch_new(api *a, httpd_response *resp)
{
    watch *w = calloc(1, sizeof *w);
    if (!w)
        problem_reply(resp, 500, "out of memory");
    else
        w->a = a;
    return w;
}

/* GET /v1/tasks/{id}/events */
static void watch_task(api *a, const httpd_request *req, const char *task_id, httpd_response *resp)
{
    if (httpd_query_unknown(req, (const char *const[]){NULL})) {
        problem_reply(resp, 400, "this route takes no parameter (resume with Last-Event-ID)");
        return;
    }
    const char *last = httpd_header(req, "Last-Event-ID");
    char *end = NULL;
    errno = 0;
    long long after = last ? strtoll(last, &end, 10) : 0;
    if (last && (errno || end == last || *end || after < 0)) {
        problem_reply(resp, 400, "Last-Event-ID: expected the id of a message of this stream");
        return;
    }
    store_task task = {0};
    int found = api_find_task(a, task_id, &task, "GET /v1/tasks/{task_id}/events", resp);
    store_task_clear(&task);
    if (found != 0)
        return;
    watch *w = watch_new(a, resp);
    if (!w)
        return;
    snprintf(w->task_id, sizeof w->task_id, "%s", task_id);
    w->after_row = after;
    w->read_ms = -WATCH_POLL_MS; /* read at once */
    start(w, req, resp);
}

/* The cursor of GET /v1/events: Last-Event-ID (an event id), else `since`
 * (an event id, or a time: events made since then), else now. 0, or -1
 * answered 400. */
static int events_cursor(const httpd_request *req, char after[IDS_LEN], httpd_response *resp)
{
    const char *last = httpd_header(req, "Last-Event-ID");
    const char *since = httpd_query(req, "since");
    const char *cursor = last ? last : since;
    if (cursor && strncmp(cursor, "evt_", 4) == 0 && strlen(cursor) < IDS_LEN) {
        snprintf(after, IDS_LEN, "%s", cursor);
        return 0;
    }
    char at[STORE_TIME_SIZE];
    int64_t unix_s = 0;
    if (cursor &&
        (last || task_view_parse_since(cursor, at) < 0 || ids_parse_time(at, &unix_s) < 0)) {
        problem_reply(resp, 400,
                      last ? "Last-Event-ID: expected an event id (evt_...)"
                           : "since: expected an event id (evt_...), 30m, 2h, 1d or an RFC 3339 "
                             "UTC time like 2026-11-22T01:02:03Z");
        return -1;
    }
    store_outbox_id_bound(cursor ? unix_s * 1000 : clock_wall_ms() - STORE_OUTBOX_SETTLE_MS, '0',
                          after);
    return 0;
}

/* GET /v1/events */
static void watch_all(api *a, const httpd_request *req, httpd_response *resp)
{
    static const char *const known[] = {"since", NULL};
    if (httpd_query_unknown(req, known)) {
        problem_reply(resp, 400, "unknown parameter (this route takes since)");
        return;
    }
    char after[IDS_LEN];
    if (events_cursor(req, after, resp) < 0)
        return;
    watch *w = watch_new(a, resp);
    if (!w)
        return;
    w->all = true;
    memcpy(w->after_event, after, IDS_LEN);
    w->read_ms = -WATCH_POLL_MS;
    start(w, req, resp);
}

void api_route_watch_events(api *a, const api_call *call, httpd_response *resp)
{
    watch_all(a, call->req, resp);
}

void api_route_watch_task(api *a, const api_call *call, httpd_response *resp)
{
    if (!api_task_id_is_valid(call->param)) {
        problem_reply(resp, 404, "no such task: a task id is 1 to 128 of A-Z a-z 0-9 . _ : -");
        return;
    }
    watch_task(a, call->req, call->param, resp);
}
