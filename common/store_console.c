/* store_console: the read-outs of the web console (virtflowctl serve) that
 * the command-line listings do not have: tasks a page at a time with a
 * keyset cursor, and tasks counted per hour for its pictures. Run per page
 * view, so each query is prepared for the call and freed, as store_stats
 * does; the cost that matters is the query's, which the indexes of
 * schema/008_console.sql keep to the rows shown. */
#include "store_console.h"
#include "store_internal.h"

#include <stdio.h>
#include <string.h>

#define PAGE_COLUMNS                                                                               \
    "id, kind, status, reason, attempts, request, result, error, node, vmid, created_at, "         \
    "updated_at"

/* The filters of store_task_filter in its field order, then the cursor. */
static const char *const page_filter_sql[] = {
    "status = ?", "reason = ?",      "kind = ?",
    "node = ?",   "created_at >= ?", "(created_at, id) < (?, ?)",
};

int store_task_page(store *s, const store_task_filter *filter, const char *before_created_at,
                    const char *before_id, store_task_fn fn, void *ctx, vf_error *err)
{
    store_task_filter none = {0};
    if (!filter)
        filter = &none;
    const char *values[] = {filter->status, filter->reason, filter->kind, filter->node,
                            filter->since};
    const size_t n_values = sizeof values / sizeof values[0];
    bool cursor = before_created_at && before_id;

    /* Built only from the fixed fragments above; every value is bound. */
    char sql[640];
    size_t len = (size_t)snprintf(sql, sizeof sql, "SELECT " PAGE_COLUMNS " FROM tasks");
    const char *joiner = " WHERE ";
    for (size_t i = 0; i <= n_values; i++) {
        if (i < n_values ? !values[i] : !cursor)
            continue;
        len += (size_t)snprintf(sql + len, sizeof sql - len, "%s%s", joiner, page_filter_sql[i]);
        joiner = " AND ";
    }
    snprintf(sql + len, sizeof sql - len, " ORDER BY created_at DESC, id DESC LIMIT ?");

    db_stmt *st = NULL;
    if (!db_prepare(s->db, &st, sql, err))
        return -1;
    int index = 1;
    for (size_t i = 0; i < n_values; i++)
        if (values[i])
            db_bind_text(st, index++, values[i]);
    if (cursor) {
        db_bind_text(st, index++, before_created_at);
        db_bind_text(st, index++, before_id);
    }
    store_bind_limit(st, index, filter->limit);
    store_rows rows = {0};
    int rc = store_rows_collect(s, st, 0, &rows, "listing a page of tasks", err);
    db_stmt_free(st);
    if (rc == 0) {
        for (int i = 0; i < rows.count; i++) {
            /* Borrowed from rows for the callback, as store_task_fn says. */
            store_task t = {
                .id = (char *)store_rows_text(&rows, i, 0),
                .kind = (char *)store_rows_text(&rows, i, 1),
                .status = (char *)store_rows_text(&rows, i, 2),
                .reason = (char *)store_rows_text(&rows, i, 3),
                .attempts = (int)store_rows_int(&rows, i, 4),
                .request = (char *)store_rows_text(&rows, i, 5),
                .result = (char *)store_rows_text(&rows, i, 6),
                .error = (char *)store_rows_text(&rows, i, 7),
                .node = (char *)store_rows_text(&rows, i, 8),
                .vmid = store_rows_id(&rows, i, 9),
                .created_at = (char *)store_rows_text(&rows, i, 10),
                .updated_at = (char *)store_rows_text(&rows, i, 11),
            };
            if (fn(&t, ctx) != 0)
                break;
        }
    }
    store_rows_free(&rows);
    return rc;
}

int store_task_hours(store *s, const char *since, store_task_hour_fn fn, void *ctx, vf_error *err)
{
    db_stmt *st = NULL;
    /* The first 13 characters of a store timestamp are its hour
     * ("2026-11-22T01"), in both dialects. */
    if (!db_prepare(s->db, &st,
                    "SELECT substr(created_at, 1, 13) AS hour, status, reason, COUNT(*) "
                    "FROM tasks WHERE created_at >= ?1 "
                    "GROUP BY substr(created_at, 1, 13), status, reason ORDER BY 1, 2, 3",
                    err))
        return -1;
    db_bind_text(st, 1, since);
    store_rows rows = {0};
    int rc = store_rows_collect(s, st, 0, &rows, "counting tasks per hour", err);
    db_stmt_free(st);
    if (rc == 0) {
        for (int i = 0; i < rows.count; i++) {
            store_task_hour h = {
                .hour = store_rows_text(&rows, i, 0),
                .status = store_rows_text(&rows, i, 1),
                .reason = store_rows_text(&rows, i, 2),
                .count = store_rows_int(&rows, i, 3),
            };
            if (fn(&h, ctx) != 0)
                break;
        }
    }
    store_rows_free(&rows);
    return rc;
}
