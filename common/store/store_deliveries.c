/* store_deliveries: webhook deliveries, one row per event and receiver. */
#include "store_deliveries.h"
#include "store_internal.h"

#include <stdio.h>

#define DELIVERY_COLUMNS                                                                           \
    "event_id, receiver, status, attempts, next_attempt_at, last_code, last_error, "               \
    "delivered_at, created_at, body"

int store_delivery_add(store *s, const char *event_id, const char *receiver, const char *body,
                       const char *now, vf_error *err)
{
    db_stmt *st =
        store_stmt(s, STORE_STMT_DELIVERY_ADD,
                   "INSERT INTO deliveries (event_id, receiver, status, attempts, "
                   "next_attempt_at, created_at, body) VALUES (?1, ?2, 'pending', 0, ?3, ?3, ?4) "
                   "ON CONFLICT (event_id, receiver) DO NOTHING",
                   err);
    if (!st)
        return -1;
    db_bind_text(st, 1, event_id);
    db_bind_text(st, 2, receiver);
    db_bind_text(st, 3, now);
    db_bind_text(st, 4, body);
    int changed = store_exec_change(s, st, "recording a delivery", err);
    return changed < 0 ? -1 : changed == 0 ? 1 : 0;
}

/* Run fn over the rows of an executed-and-bound SELECT DELIVERY_COLUMNS. */
static int deliveries_each(store *s, db_stmt *st, store_delivery_fn fn, void *ctx, vf_error *err)
{
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "listing deliveries", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.count; i++) {
        int64_t code = store_rows_id(&rows, i, 5);
        store_delivery d = {
            .event_id = store_rows_text(&rows, i, 0),
            .receiver = store_rows_text(&rows, i, 1),
            .status = store_rows_text(&rows, i, 2),
            .attempts = (int)store_rows_int(&rows, i, 3),
            .next_attempt_at = store_rows_text(&rows, i, 4),
            .last_code = code < 0 ? 0 : (int)code,
            .last_error = store_rows_text(&rows, i, 6),
            .delivered_at = store_rows_text(&rows, i, 7),
            .created_at = store_rows_text(&rows, i, 8),
            .body = store_rows_text(&rows, i, 9),
        };
        if (fn(&d, ctx) != 0)
            break;
    }
    store_rows_free(&rows);
    return 0;
}

int store_deliveries_due(store *s, const char *now, int limit, store_delivery_fn fn, void *ctx,
                         vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_DELIVERIES_DUE,
                             "SELECT " DELIVERY_COLUMNS " FROM deliveries "
                             "WHERE status = 'pending' AND next_attempt_at <= ?1 "
                             "ORDER BY next_attempt_at, created_at, event_id, receiver "
                             "LIMIT ?2",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    store_bind_limit(st, 2, limit);
    return deliveries_each(s, st, fn, ctx, err);
}

int store_delivery_update(store *s, const store_delivery_change *c, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_DELIVERY_UPDATE,
                             "UPDATE deliveries SET status = ?3, attempts = ?4, "
                             "next_attempt_at = ?5, last_code = ?6, last_error = ?7, "
                             "delivered_at = ?8 WHERE event_id = ?1 AND receiver = ?2",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, c->event_id);
    db_bind_text(st, 2, c->receiver);
    db_bind_text(st, 3, c->status);
    db_bind_int64(st, 4, c->attempts);
    db_bind_text(st, 5, c->next_attempt_at);
    store_bind_id(st, 6, c->last_code > 0 ? c->last_code : -1);
    db_bind_text(st, 7, c->last_error);
    db_bind_text(st, 8, c->delivered_at);
    int changed = store_exec_change(s, st, "updating a delivery", err);
    return changed < 0 ? -1 : changed == 0 ? 1 : 0;
}

static const char *const delivery_filter_sql[STORE_DELIVERY_FILTERS] = {
    "status = ?",
    "receiver = ?",
    "event_id = ?",
    NULL, /* the type: in the body, read per dialect (type_sql) */
    "(created_at, event_id, receiver) < (?, ?, ?)", /* the cursor: three values */
};

/* The event's type from the JSON body: no index covers it, so it filters
 * the rows the created_at order reads (the console's newest N). */
static const char *type_sql(const store *s)
{
    return store_is_pg(s) ? "(body::json ->> 'type') = ?" : "json_extract(body, '$.type') = ?";
}

int store_delivery_list(store *s, const store_delivery_filter *filter, store_delivery_fn fn,
                        void *ctx, vf_error *err)
{
    store_delivery_filter none = {0};
    if (!filter)
        filter = &none;
    bool cursor = filter->before_created_at && filter->before_event_id && filter->before_receiver;
    const char *values[STORE_DELIVERY_FILTERS] = {filter->status, filter->receiver,
                                                  filter->event_id, filter->type,
                                                  cursor ? filter->before_created_at : NULL};
    unsigned mask = 0;
    for (int i = 0; i < STORE_DELIVERY_FILTERS; i++)
        if (values[i])
            mask |= 1u << i;
    if (!s->delivery_list[mask]) {
        /* Built only from the fixed fragments above; values are bound. */
        char sql[512];
        size_t len =
            (size_t)snprintf(sql, sizeof sql, "SELECT " DELIVERY_COLUMNS " FROM deliveries");
        const char *joiner = " WHERE ";
        for (int i = 0; i < STORE_DELIVERY_FILTERS; i++) {
            if (!(mask & (1u << i)))
                continue;
            len += (size_t)snprintf(sql + len, sizeof sql - len, "%s%s", joiner,
                                    delivery_filter_sql[i] ? delivery_filter_sql[i] : type_sql(s));
            joiner = " AND ";
        }
        snprintf(sql + len, sizeof sql - len,
                 " ORDER BY created_at DESC, event_id DESC, receiver DESC LIMIT ?");
        if (!db_prepare(s->db, &s->delivery_list[mask], sql, err))
            return -1;
    }
    db_stmt *st = s->delivery_list[mask];
    int index = 1;
    for (int i = 0; i < STORE_DELIVERY_FILTERS; i++)
        if (values[i])
            db_bind_text(st, index++, values[i]);
    if (cursor) {
        db_bind_text(st, index++, filter->before_event_id);
        db_bind_text(st, index++, filter->before_receiver);
    }
    store_bind_limit(st, index, filter->limit);
    return deliveries_each(s, st, fn, ctx, err);
}

int store_deliveries_due_receiver(store *s, const char *receiver, const char *now, int limit,
                                  store_delivery_fn fn, void *ctx, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_DELIVERIES_DUE_RECEIVER,
                             "SELECT " DELIVERY_COLUMNS " FROM deliveries "
                             "WHERE status = 'pending' AND next_attempt_at <= ?1 "
                             "AND receiver = ?3 "
                             "ORDER BY next_attempt_at, created_at, event_id LIMIT ?2",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    store_bind_limit(st, 2, limit);
    db_bind_text(st, 3, receiver);
    return deliveries_each(s, st, fn, ctx, err);
}

int store_deliveries_requeue(store *s, const char *now, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_DELIVERIES_REQUEUE,
                             "UPDATE deliveries SET status = 'pending', next_attempt_at = ?1 "
                             "WHERE status = 'delivering'",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    return store_exec_change(s, st, "requeueing deliveries", err);
}

int store_delivery_redeliver(store *s, const char *event_id, const char *receiver, const char *now,
                             vf_error *err)
{
    db_stmt *st;
    if (receiver)
        st = store_stmt(s, STORE_STMT_DELIVERY_REDELIVER,
                        "UPDATE deliveries SET status = 'pending', attempts = 0, "
                        "next_attempt_at = ?2, delivered_at = NULL WHERE event_id = ?1 "
                        "AND receiver = ?3 AND status IN ('failed', 'delivered')",
                        err);
    else
        st = store_stmt(s, STORE_STMT_DELIVERY_REDELIVER_ALL,
                        "UPDATE deliveries SET status = 'pending', attempts = 0, "
                        "next_attempt_at = ?2, delivered_at = NULL WHERE event_id = ?1 "
                        "AND status IN ('failed', 'delivered')",
                        err);
    if (!st)
        return -1;
    db_bind_text(st, 1, event_id);
    db_bind_text(st, 2, now);
    if (receiver)
        db_bind_text(st, 3, receiver);
    return store_exec_change(s, st, "redelivering", err);
}

int store_deliveries_backlog(store *s, store_backlog_fn fn, void *ctx, vf_error *err)
{
    /* Two equality groups on the (receiver, status, ...) index: no table scan
     * of delivered rows, which are nearly all of them. */
    db_stmt *st = store_stmt(s, STORE_STMT_DELIVERIES_BACKLOG,
                             "SELECT receiver, COUNT(*), MIN(created_at) FROM deliveries "
                             "WHERE status IN ('pending', 'delivering') GROUP BY receiver",
                             err);
    if (!st)
        return -1;
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "counting the delivery backlog", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.count; i++)
        if (fn(store_rows_text(&rows, i, 0), store_rows_int(&rows, i, 1),
               store_rows_text(&rows, i, 2), ctx) != 0)
            break;
    store_rows_free(&rows);
    return 0;
}
