/* store_receivers: receiver_states, the lag per receiver, redeliveries. */
#include "store_receivers.h"
#include "store_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int store_receiver_state_put(store *s, const store_receiver_state *state, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RECEIVER_STATE_PUT,
                             "INSERT INTO receiver_states (receiver, state, failing_since, "
                             "disabled_at, last_error, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
                             "ON CONFLICT (receiver) DO UPDATE SET state = excluded.state, "
                             "failing_since = excluded.failing_since, "
                             "disabled_at = excluded.disabled_at, "
                             "last_error = excluded.last_error, updated_at = excluded.updated_at",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, state->receiver);
    db_bind_text(st, 2, state->state);
    db_bind_text(st, 3, state->failing_since);
    db_bind_text(st, 4, state->disabled_at);
    db_bind_text(st, 5, state->last_error);
    db_bind_text(st, 6, state->updated_at);
    return store_exec_change(s, st, "recording a receiver's state", err) < 0 ? -1 : 0;
}

int store_receiver_states(store *s, store_receiver_state_fn fn, void *ctx, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RECEIVER_STATES,
                             "SELECT receiver, state, failing_since, disabled_at, last_error, "
                             "updated_at FROM receiver_states ORDER BY receiver",
                             err);
    if (!st)
        return -1;
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "reading the receivers' states", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.count; i++) {
        store_receiver_state state = {.receiver = store_rows_text(&rows, i, 0),
                                      .state = store_rows_text(&rows, i, 1),
                                      .failing_since = store_rows_text(&rows, i, 2),
                                      .disabled_at = store_rows_text(&rows, i, 3),
                                      .last_error = store_rows_text(&rows, i, 4),
                                      .updated_at = store_rows_text(&rows, i, 5)};
        if (fn(&state, ctx) != 0)
            break;
    }
    store_rows_free(&rows);
    return 0;
}

int store_deliveries_lag(store *s, const char *now, store_lag_fn fn, void *ctx, vf_error *err)
{
    /* One range per receiver on deliveries_due_by_receiver (receiver,
     * status, next_attempt_at): its first due row. */
    db_stmt *st = store_stmt(s, STORE_STMT_DELIVERIES_LAG,
                             "SELECT receiver, MIN(next_attempt_at) FROM deliveries "
                             "WHERE status = 'pending' AND next_attempt_at <= ?1 GROUP BY receiver",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "reading the receivers' lag", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.count; i++)
        if (fn(store_rows_text(&rows, i, 0), store_rows_text(&rows, i, 1), ctx) != 0)
            break;
    store_rows_free(&rows);
    return 0;
}

/* The redeliveries row of `id` into *out (progress not read), and its
 * request text into *request (owned) when not NULL: 0, 1 none, -1. */
static int redelivery_row(store *s, const char *id, store_redelivery *out, char **request,
                          vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_REDELIVERY_GET,
                             "SELECT id, receiver, created_at, status_filter, rate_per_s, "
                             "matched, request FROM redeliveries WHERE id = ?1",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    store_rows rows = {0};
    if (store_rows_collect(s, st, 1, &rows, "reading a redelivery", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    int rc = rows.count == 1 ? 0 : 1;
    if (rc == 0) {
        memset(out, 0, sizeof *out);
        snprintf(out->id, sizeof out->id, "%s", store_rows_text(&rows, 0, 0));
        snprintf(out->receiver, sizeof out->receiver, "%s", store_rows_text(&rows, 0, 1));
        snprintf(out->created_at, sizeof out->created_at, "%s", store_rows_text(&rows, 0, 2));
        snprintf(out->status_filter, sizeof out->status_filter, "%s", store_rows_text(&rows, 0, 3));
        out->rate_per_s = store_rows_text(&rows, 0, 4) ? store_rows_double(&rows, 0, 4) : 0;
        out->matched = store_rows_int(&rows, 0, 5);
        if (request) {
            const char *text = store_rows_text(&rows, 0, 6);
            *request = text ? strdup(text) : NULL;
        }
    }
    store_rows_free(&rows);
    return rc;
}

/* Its deliveries by status now. */
static int redelivery_progress(store *s, store_redelivery *out, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_REDELIVERY_PROGRESS,
                             "SELECT status, COUNT(*) FROM deliveries WHERE redelivery_id = ?1 "
                             "GROUP BY status",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, out->id);
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "reading a redelivery's progress", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    out->pending = out->delivering = out->delivered = out->failed = 0;
    static const char *const names[] = {"pending", "delivering", "delivered", "failed"};
    int64_t *counts[] = {&out->pending, &out->delivering, &out->delivered, &out->failed};
    for (int i = 0; i < rows.count; i++)
        for (int k = 0; k < 4; k++)
            if (strcmp(store_rows_text(&rows, i, 0), names[k]) == 0)
                *counts[k] = store_rows_int(&rows, i, 1);
    store_rows_free(&rows);
    return 0;
}

int store_redelivery_get(store *s, const char *id, store_redelivery *out, vf_error *err)
{
    int rc = redelivery_row(s, id, out, NULL, err);
    if (rc == 0 && redelivery_progress(s, out, err) < 0)
        return -1;
    return rc;
}

/* Whether two requests' JSON texts say the same. */
static bool same_request(const char *a, const char *b)
{
    json_t *x = a ? json_loads(a, 0, NULL) : NULL, *y = b ? json_loads(b, 0, NULL) : NULL;
    bool same = x && y && json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return same;
}

/* The rows a redelivery resets, oldest first: 0 with *rows set, or -1. */
static int matching(store *s, const store_redelivery_request *req, store_rows *rows, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_REDELIVERY_MATCH_FAILED,
                             "SELECT event_id FROM deliveries WHERE receiver = ?1 "
                             "AND created_at >= ?2 AND (status = 'failed' OR (?3 = 0 AND "
                             "status = 'pending' AND attempts > 0)) ORDER BY created_at, event_id",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, req->receiver);
    db_bind_text(st, 2, req->since);
    db_bind_int64(st, 3, req->exhausted_only);
    return store_rows_collect(s, st, 0, rows, "finding deliveries to redeliver", err);
}

/* One delivery back to pending under the redelivery, due at `due`: 1 reset,
 * 0 it moved on meanwhile, -1. */
static int reset_one(store *s, const store_redelivery_request *req, const char *event_id,
                     const char *due, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_REDELIVERY_RESET,
                             "UPDATE deliveries SET status = 'pending', attempts = 0, "
                             "next_attempt_at = ?3, delivered_at = NULL, redelivery_id = ?4 "
                             "WHERE event_id = ?1 AND receiver = ?2 AND (status = 'failed' OR "
                             "(?5 = 0 AND status = 'pending' AND attempts > 0))",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, event_id);
    db_bind_text(st, 2, req->receiver);
    db_bind_text(st, 3, due);
    db_bind_text(st, 4, req->id);
    db_bind_int64(st, 5, req->exhausted_only);
    return store_exec_change(s, st, "redelivering", err);
}

static int record(store *s, const store_redelivery_request *req, int64_t matched, const char *now,
                  vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_REDELIVERY_ADD,
                             "INSERT INTO redeliveries (id, receiver, since, status_filter, "
                             "rate_per_s, requested_by, request, matched, created_at) VALUES "
                             "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, req->id);
    db_bind_text(st, 2, req->receiver);
    db_bind_text(st, 3, req->since);
    db_bind_text(st, 4, req->exhausted_only ? "exhausted" : "failed");
    if (req->rate_per_s > 0)
        db_bind_double(st, 5, req->rate_per_s);
    else
        db_bind_null(st, 5);
    db_bind_text(st, 6, req->requested_by);
    db_bind_text(st, 7, req->request);
    db_bind_int64(st, 8, matched);
    db_bind_text(st, 9, now);
    return store_exec_change(s, st, "recording a redelivery", err) < 0 ? -1 : 0;
}

/* Inside the transaction: reset every matching delivery, record the
 * redelivery. Returns 0 or -1. */
static int start_new(store *s, const store_redelivery_request *req, vf_error *err)
{
    store_rows rows = {0};
    int rc = matching(s, req, &rows, err);
    int64_t matched = 0;
    char due[STORE_TIME_SIZE], now[STORE_TIME_SIZE];
    store_format_time(req->now_ms, now);
    for (int i = 0; rc == 0 && i < rows.count; i++) {
        int64_t at = req->now_ms;
        if (req->rate_per_s > 0)
            at += (int64_t)((double)matched * 1000.0 / req->rate_per_s);
        store_format_time(at, due);
        int changed = reset_one(s, req, store_rows_text(&rows, i, 0), due, err);
        if (changed < 0)
            rc = -1;
        else
            matched += changed;
    }
    store_rows_free(&rows);
    if (rc == 0)
        rc = record(s, req, matched, now, err);
    return rc;
}

int store_redelivery_start(store *s, const store_redelivery_request *req, store_redelivery *out,
                           vf_error *err)
{
    if (store_begin(s, err) < 0)
        return -1;
    char *recorded = NULL;
    int rc = redelivery_row(s, req->id, out, &recorded, err);
    if (rc == 0) /* made before: the same request again, or another under its id */
        rc = same_request(recorded, req->request) ? 1 : 2;
    else if (rc == 1)
        rc = start_new(s, req, err);
    free(recorded);
    if (rc < 0 || rc == 2 || store_commit(s, err) < 0) {
        (void)store_rollback(s, NULL);
        return rc == 2 ? 2 : -1;
    }
    if (store_redelivery_get(s, req->id, out, err) != 0)
        return -1;
    return rc;
}
