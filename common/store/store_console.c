/* store_console: the read-outs of the web console (virtflowctl serve) that
 * the command-line listings do not have: tasks a page at a time with a
 * keyset cursor, and tasks counted per hour for its pictures. Run per page
 * view, so each query is prepared for the call and freed, as store_stats
 * does; the cost that matters is the query's, which the indexes of
 * schema/008_console.sql keep to the rows shown. */
#include "store_console.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_COLUMNS                                                                               \
    "id, kind, status, reason, attempts, request, result, error, node, vmid, created_at, "         \
    "updated_at"

/* After store_task_filter's conditions (store_task_filter_sql): the
 * prefixes (each a range [prefix, prefix U+10FFFF), which holds exactly the
 * strings starting with the prefix but for those followed by U+10FFFF
 * itself), then the cursors; each binds its pair of values. */
static const char *const page_filter_sql[] = {
    "id >= ? AND id < ?",
    "node >= ? AND node < ?",
    "(created_at, id) < (?, ?)",
    "(created_at, id) > (?, ?)",
};
#define N_FILTER_SQL (sizeof page_filter_sql / sizeof page_filter_sql[0])
/* The largest code point in UTF-8: every text that starts with a prefix and
 * goes on sorts below the prefix followed by it. */
#define PREFIX_END "\xF4\x8F\xBF\xBF"

typedef struct built {
    char sql[1400];
    const char *values[2 * (STORE_TASK_FILTERS + N_FILTER_SQL)];
    char ends[2][600]; /* the prefixes' upper bounds */
    char *like;        /* owned: filter->error's pattern */
    int n_values;
    bool ascending;
} built;

/* Append " WHERE "/" AND " and a fragment to b->sql at *len. */
static void append(built *b, size_t *len, const char *fragment)
{
    if (*len < sizeof b->sql)
        *len += (size_t)snprintf(b->sql + *len, sizeof b->sql - *len, "%s%s",
                                 b->n_values ? " AND " : " WHERE ", fragment);
}

/* The WHERE clause of q after `head`; false when a prefix is too long or
 * out of memory (b->like is freed by the caller either way). */
static bool build(store *s, const store_task_search *q, const char *head, built *b, bool cursors)
{
    bool before = cursors && q->before_created_at && q->before_id;
    bool after = cursors && !before && q->after_created_at && q->after_id;
    const char *prefixes[2] = {q->id_prefix, q->node_prefix};
    for (int i = 0; i < 2; i++)
        if (prefixes[i] && (size_t)snprintf(b->ends[i], sizeof b->ends[i], "%s" PREFIX_END,
                                            prefixes[i]) >= sizeof b->ends[i])
            return false;
    const char *filters[STORE_TASK_FILTERS];
    if (store_task_filter_values(&q->filter, filters, &b->like) < 0)
        return false;
    size_t len = (size_t)snprintf(b->sql, sizeof b->sql, "%s", head);
    b->n_values = 0;
    for (int i = 0; i < STORE_TASK_FILTERS; i++) {
        if (!filters[i])
            continue;
        append(b, &len, store_task_filter_sql(s, i));
        for (int k = 0; k < store_task_filter_params(i); k++)
            b->values[b->n_values++] = filters[i];
    }
    const char *pairs[N_FILTER_SQL][2] = {
        {prefixes[0], prefixes[0] ? b->ends[0] : NULL},
        {prefixes[1], prefixes[1] ? b->ends[1] : NULL},
        {before ? q->before_created_at : NULL, q->before_id},
        {after ? q->after_created_at : NULL, q->after_id},
    };
    for (size_t i = 0; i < N_FILTER_SQL; i++) {
        if (!pairs[i][0])
            continue;
        append(b, &len, page_filter_sql[i]);
        b->values[b->n_values++] = pairs[i][0];
        b->values[b->n_values++] = pairs[i][1];
    }
    b->ascending = after;
    return len < sizeof b->sql;
}

int store_task_search_page(store *s, const store_task_search *q, store_task_fn fn, void *ctx,
                           vf_error *err)
{
    built b = {0};
    if (!build(s, q, "SELECT " PAGE_COLUMNS " FROM tasks", &b, true)) {
        free(b.like);
        vf_error_set(err, VF_EINVAL, "a search term is too long");
        return -1;
    }
    size_t len = strlen(b.sql);
    snprintf(b.sql + len, sizeof b.sql - len, " ORDER BY created_at %s, id %s LIMIT ?",
             b.ascending ? "ASC" : "DESC", b.ascending ? "ASC" : "DESC");

    db_stmt *st = NULL;
    if (!db_prepare(s->db, &st, b.sql, err)) {
        free(b.like);
        return -1;
    }
    int index = 1;
    for (int i = 0; i < b.n_values; i++)
        db_bind_text(st, index++, b.values[i]);
    store_bind_limit(st, index, q->filter.limit);
    store_rows rows = {0};
    int rc = store_rows_collect(s, st, 0, &rows, "listing a page of tasks", err);
    db_stmt_free(st);
    free(b.like);
    if (rc == 0) {
        for (int k = 0; k < rows.count; k++) {
            /* Newest first either way. */
            int i = b.ascending ? rows.count - 1 - k : k;
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

int64_t store_task_search_count(store *s, const store_task_search *q, int64_t cap, vf_error *err)
{
    built b = {0};
    if (!build(s, q, "SELECT COUNT(*) FROM (SELECT 1 FROM tasks", &b, false)) {
        free(b.like);
        vf_error_set(err, VF_EINVAL, "a search term is too long");
        return -1;
    }
    size_t len = strlen(b.sql);
    snprintf(b.sql + len, sizeof b.sql - len, " LIMIT ?) AS capped");
    db_stmt *st = NULL;
    if (!db_prepare(s->db, &st, b.sql, err)) {
        free(b.like);
        return -1;
    }
    int index = 1;
    for (int i = 0; i < b.n_values; i++)
        db_bind_text(st, index++, b.values[i]);
    store_bind_limit(st, index, (int)cap);
    store_rows rows = {0};
    int rc = store_rows_collect(s, st, 0, &rows, "counting tasks", err);
    db_stmt_free(st);
    free(b.like);
    int64_t count = rc == 0 && rows.count == 1 ? store_rows_int(&rows, 0, 0) : -1;
    store_rows_free(&rows);
    return count;
}

int store_task_page(store *s, const store_task_filter *filter, const char *before_created_at,
                    const char *before_id, store_task_fn fn, void *ctx, vf_error *err)
{
    store_task_search q = {.before_created_at = before_created_at, .before_id = before_id};
    if (filter)
        q.filter = *filter;
    return store_task_search_page(s, &q, fn, ctx, err);
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
