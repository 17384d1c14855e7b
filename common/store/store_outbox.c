/* store_outbox: events waiting for their publisher confirm. */
#include "store_outbox.h"
#include "store_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int store_outbox_add(store *s, const char *event_id, const char *routing_key, const char *body,
                     const char *created_at, vf_error *err)
{
    if (store_batches(s))
        return store_batch_add(s, STORE_BATCH_OUTBOX,
                               (const char *const[]){event_id, routing_key, body, created_at}, err);
    db_stmt *st = store_stmt(s, STORE_STMT_OUTBOX_ADD,
                             "INSERT INTO outbox (id, routing_key, body, created_at) "
                             "VALUES (?1, ?2, ?3, ?4)",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, event_id);
    db_bind_text(st, 2, routing_key);
    db_bind_text(st, 3, body);
    db_bind_text(st, 4, created_at);
    return store_exec_change(s, st, "recording an event", err) < 0 ? -1 : 0;
}

static int each_outbox_event(store *s, db_stmt *st, store_outbox_fn fn, void *ctx, vf_error *err);

int store_outbox_pending(store *s, const char *created_before, int limit, store_outbox_fn fn,
                         void *ctx, vf_error *err)
{
    if (store_batch_flush(s, err) != 0)
        return -1;
    /* seq is PostgreSQL's stand-in for SQLite's rowid: the write order. */
    db_stmt *st =
        store_stmt(s, STORE_STMT_OUTBOX_PENDING,
                   store_is_pg(s) ? "SELECT id, routing_key, body, created_at, published_at, "
                                    "attempts FROM outbox WHERE confirmed_at IS NULL "
                                    "AND (CAST(?2 AS TEXT) IS NULL OR created_at < ?2) "
                                    "ORDER BY created_at, seq LIMIT ?1"
                                  : "SELECT id, routing_key, body, created_at, published_at, "
                                    "attempts FROM outbox WHERE confirmed_at IS NULL "
                                    "AND (?2 IS NULL OR created_at < ?2) "
                                    "ORDER BY created_at, rowid LIMIT ?1",
                   err);
    if (!st)
        return -1;
    store_bind_limit(st, 1, limit);
    db_bind_text(st, 2, created_before);
    return each_outbox_event(s, st, fn, ctx, err);
}

int store_outbox_events_between(store *s, const char *after_id, const char *before_id, int limit,
                                store_outbox_fn fn, void *ctx, vf_error *err)
{
    if (store_batch_flush(s, err) != 0)
        return -1;
    /* The primary key's range. */
    db_stmt *st = store_stmt(s, STORE_STMT_OUTBOX_EVENTS_BETWEEN,
                             "SELECT id, routing_key, body, created_at, published_at, attempts "
                             "FROM outbox WHERE id > ?1 AND id < ?2 AND routing_key LIKE 'event.%' "
                             "ORDER BY id LIMIT ?3",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, after_id);
    db_bind_text(st, 2, before_id);
    store_bind_limit(st, 3, limit);
    return each_outbox_event(s, st, fn, ctx, err);
}

/* Run `st` (bound, a SELECT of id, routing_key, body, created_at,
 * published_at, attempts) and call fn for each row. */
static int each_outbox_event(store *s, db_stmt *st, store_outbox_fn fn, void *ctx, vf_error *err)
{
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "listing pending events", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.count; i++) {
        store_outbox_event event = {
            .id = store_rows_text(&rows, i, 0),
            .routing_key = store_rows_text(&rows, i, 1),
            .body = store_rows_text(&rows, i, 2),
            .created_at = store_rows_text(&rows, i, 3),
            .published_at = store_rows_text(&rows, i, 4),
            .attempts = (int)store_rows_int(&rows, i, 5),
        };
        if (fn(&event, ctx) != 0)
            break;
    }
    store_rows_free(&rows);
    return 0;
}

int store_outbox_mark_published(store *s, const char *event_id, const char *at, vf_error *err)
{
    if (store_batch_flush(s, err) != 0)
        return -1;
    db_stmt *st = store_stmt(s, STORE_STMT_OUTBOX_PUBLISHED,
                             "UPDATE outbox SET published_at = ?2, attempts = attempts + 1 "
                             "WHERE id = ?1",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, event_id);
    db_bind_text(st, 2, at);
    int changed = store_exec_change(s, st, "marking an event published", err);
    return changed < 0 ? -1 : changed == 0 ? 1 : 0;
}

int store_outbox_mark_confirmed(store *s, const char *event_id, const char *at, vf_error *err)
{
    if (store_batch_flush(s, err) != 0)
        return -1;
    db_stmt *st = store_stmt(s, STORE_STMT_OUTBOX_CONFIRMED,
                             "UPDATE outbox SET confirmed_at = ?2 WHERE id = ?1", err);
    if (!st)
        return -1;
    db_bind_text(st, 1, event_id);
    db_bind_text(st, 2, at);
    if (store_defers(s))
        return store_exec_deferred(st, "marking an event confirmed", &(db_expect){0}, err);
    int changed = store_exec_change(s, st, "marking an event confirmed", err);
    return changed < 0 ? -1 : changed == 0 ? 1 : 0;
}

int store_outbox_mark_confirmed_many(store *s, const char *const *event_ids, size_t n,
                                     const char *at, vf_error *err)
{
    if (n == 0)
        return 0;
    if (store_batch_flush(s, err) != 0)
        return -1;
    char *ids = store_json_strings(event_ids, n);
    if (!ids) {
        vf_error_set(err, VF_EINVAL,
                     "store %s: marking events confirmed: out of memory or an id "
                     "not UTF-8",
                     s->path);
        return -1;
    }
    db_stmt *st = store_stmt(s, STORE_STMT_OUTBOX_CONFIRMED_MANY,
                             store_is_pg(s) ? "UPDATE outbox SET confirmed_at = ?2 WHERE id IN "
                                              "(SELECT json_array_elements_text(CAST(?1 AS json)))"
                                            : "UPDATE outbox SET confirmed_at = ?2 WHERE id IN "
                                              "(SELECT value FROM json_each(?1))",
                             err);
    int rc = -1;
    if (st && db_bind_text(st, 1, ids) == 0 && db_bind_text(st, 2, at) == 0)
        rc = store_defers(s)
                 ? store_exec_deferred(st, "marking events confirmed", &(db_expect){0}, err)
                 : (store_exec_change(s, st, "marking events confirmed", err) < 0 ? -1 : 0);
    /* Bound, not copied, on SQLite: freed once the statement is done. */
    free(ids);
    return rc;
}

int store_outbox_count_pending(store *s, int64_t *count, vf_error *err)
{
    if (store_batch_flush(s, err) != 0)
        return -1;
    db_stmt *st = store_stmt(s, STORE_STMT_OUTBOX_COUNT,
                             "SELECT count(*) FROM outbox WHERE confirmed_at IS NULL", err);
    if (!st)
        return -1;
    int rc = db_step(st, "counting pending events", err);
    int result = -1;
    if (rc == DB_ROW) {
        *count = db_column_int64(st, 0);
        result = 0;
    }
    db_reset(st);
    return result;
}

int store_outbox_prune(store *s, const char *before, int limit, vf_error *err)
{
    if (store_batch_flush(s, err) != 0)
        return -1;
    /* Through the outbox_confirmed index, so a bounded batch costs what it
     * deletes however many events are still young. */
    db_stmt *st = store_stmt(s, STORE_STMT_OUTBOX_PRUNE,
                             "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox "
                             "WHERE confirmed_at IS NOT NULL AND confirmed_at < ?1 "
                             "ORDER BY confirmed_at LIMIT ?2)",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, before);
    store_bind_limit(st, 2, limit);
    return store_exec_change(s, st, "pruning confirmed events", err);
}

void store_outbox_id_bound(int64_t unix_ms, char fill, char out[48])
{
    int used = snprintf(out, 48, "evt_%012" PRIx64, (uint64_t)unix_ms);
    memset(out + used, fill, 20);
    out[used + 20] = '\0';
}
