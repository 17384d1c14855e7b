/* store_outbox: events waiting for their publisher confirm. */
#include "store.h"
#include "store_internal.h"

int store_outbox_add(store *s, const char *event_id, const char *routing_key, const char *body,
                     const char *created_at, vf_error *err)
{
    sqlite3_stmt *st = store_stmt(s, STORE_STMT_OUTBOX_ADD,
                                  "INSERT INTO outbox (id, routing_key, body, created_at) "
                                  "VALUES (?1, ?2, ?3, ?4)",
                                  err);
    if (!st)
        return -1;
    store_bind_text(st, 1, event_id);
    store_bind_text(st, 2, routing_key);
    store_bind_text(st, 3, body);
    store_bind_text(st, 4, created_at);
    return store_exec_change(s, st, "recording an event", err) < 0 ? -1 : 0;
}

int store_outbox_pending(store *s, const char *created_before, int limit, store_outbox_fn fn,
                         void *ctx, vf_error *err)
{
    sqlite3_stmt *st = store_stmt(s, STORE_STMT_OUTBOX_PENDING,
                                  "SELECT id, routing_key, body, created_at, published_at, "
                                  "attempts FROM outbox WHERE confirmed_at IS NULL "
                                  "AND (?2 IS NULL OR created_at < ?2) "
                                  "ORDER BY created_at, rowid LIMIT ?1",
                                  err);
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, limit > 0 ? limit : -1);
    store_bind_text(st, 2, created_before);
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
    sqlite3_stmt *st = store_stmt(s, STORE_STMT_OUTBOX_PUBLISHED,
                                  "UPDATE outbox SET published_at = ?2, attempts = attempts + 1 "
                                  "WHERE id = ?1",
                                  err);
    if (!st)
        return -1;
    store_bind_text(st, 1, event_id);
    store_bind_text(st, 2, at);
    int changed = store_exec_change(s, st, "marking an event published", err);
    return changed < 0 ? -1 : changed == 0 ? 1 : 0;
}

int store_outbox_mark_confirmed(store *s, const char *event_id, const char *at, vf_error *err)
{
    sqlite3_stmt *st = store_stmt(s, STORE_STMT_OUTBOX_CONFIRMED,
                                  "UPDATE outbox SET confirmed_at = ?2 WHERE id = ?1", err);
    if (!st)
        return -1;
    store_bind_text(st, 1, event_id);
    store_bind_text(st, 2, at);
    int changed = store_exec_change(s, st, "marking an event confirmed", err);
    return changed < 0 ? -1 : changed == 0 ? 1 : 0;
}

int store_outbox_count_pending(store *s, int64_t *count, vf_error *err)
{
    sqlite3_stmt *st = store_stmt(s, STORE_STMT_OUTBOX_COUNT,
                                  "SELECT count(*) FROM outbox WHERE confirmed_at IS NULL", err);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    int result = -1;
    if (rc == SQLITE_ROW) {
        *count = sqlite3_column_int64(st, 0);
        result = 0;
    } else {
        store_fail(s, rc, "counting pending events", err);
    }
    store_stmt_done(st);
    return result;
}

int store_outbox_prune(store *s, const char *before, int limit, vf_error *err)
{
    /* By rowid through the outbox_confirmed index, so a bounded batch costs
     * what it deletes however many events are still young. */
    sqlite3_stmt *st = store_stmt(s, STORE_STMT_OUTBOX_PRUNE,
                                  "DELETE FROM outbox WHERE rowid IN (SELECT rowid FROM outbox "
                                  "WHERE confirmed_at IS NOT NULL AND confirmed_at < ?1 "
                                  "ORDER BY confirmed_at LIMIT ?2)",
                                  err);
    if (!st)
        return -1;
    store_bind_text(st, 1, before);
    sqlite3_bind_int(st, 2, limit > 0 ? limit : -1);
    return store_exec_change(s, st, "pruning confirmed events", err);
}
