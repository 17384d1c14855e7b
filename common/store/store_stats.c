/* store_stats: operator read-outs (virtflowctl stats, task): counts per state
 * and a task's whole reservation record. Run rarely, so each query is
 * prepared for the call and freed, not kept in a statement slot. */
#include "store_stats.h"
#include "store_internal.h"
#include "store_reservations.h"

#include <stdio.h>

/* SQLite documents that a bare column beside MIN() comes from the row that
 * holds the minimum, so oldest_id is the id of the oldest row of the group.
 * PostgreSQL says the same with an ordered array_agg. */
static const char *const count_sql_pg =
    "SELECT 'tasks', status, reason, COUNT(*), MIN(created_at), "
    "(array_agg(id ORDER BY created_at))[1] FROM tasks GROUP BY status, reason "
    "UNION ALL "
    "SELECT 'deliveries', status, NULL, COUNT(*), MIN(created_at), "
    "(array_agg(event_id ORDER BY created_at))[1] FROM deliveries GROUP BY status "
    "UNION ALL "
    "SELECT 'outbox', 'pending', NULL, COUNT(*), MIN(created_at), "
    "(array_agg(id ORDER BY created_at))[1] FROM outbox "
    "WHERE confirmed_at IS NULL HAVING COUNT(*) > 0";

static const char *const count_sql =
    "SELECT 'tasks', status, reason, COUNT(*), MIN(created_at), id FROM tasks "
    "GROUP BY status, reason "
    "UNION ALL "
    /* By receiver first, so the rows come in the order of the index
     * deliveries_due_by_receiver (the deliveries_by_receiver migration). Since
     * that migration dropped the index on status, grouping by status alone
     * would sort the whole table, several times slower with a 1,000,000-row
     * backlog (tests/bench/bench_deliveries). */
    "SELECT 'deliveries', status, NULL, SUM(n), MIN(oldest_at), event_id FROM "
    "(SELECT status, COUNT(*) AS n, MIN(created_at) AS oldest_at, event_id FROM deliveries "
    "GROUP BY receiver, status) GROUP BY status "
    "UNION ALL "
    "SELECT 'outbox', 'pending', NULL, COUNT(*), MIN(created_at), id FROM outbox "
    "WHERE confirmed_at IS NULL HAVING COUNT(*) > 0";

int store_counts(store *s, store_count_fn fn, void *ctx, vf_error *err)
{
    if (store_batch_flush(s, err) != 0)
        return -1;
    db_stmt *st = NULL;
    if (!db_prepare(s->db, &st, store_is_pg(s) ? count_sql_pg : count_sql, err))
        return -1;
    store_rows rows = {0};
    /* store_rows_collect finishes (resets) st; it is still ours to free. */
    int rc = store_rows_collect(s, st, 0, &rows, "counting rows", err);
    db_stmt_free(st);
    if (rc == 0) {
        for (int i = 0; i < rows.count; i++) {
            store_count c = {
                .table = store_rows_text(&rows, i, 0),
                .status = store_rows_text(&rows, i, 1),
                .reason = store_rows_text(&rows, i, 2),
                .count = store_rows_int(&rows, i, 3),
                .oldest_at = store_rows_text(&rows, i, 4),
                .oldest_id = store_rows_text(&rows, i, 5),
            };
            if (fn(&c, ctx) != 0)
                break;
        }
    }
    store_rows_free(&rows);
    return rc;
}

int store_task_reservations(store *s, const char *task_id, store_reservation_fn fn, void *ctx,
                            vf_error *err)
{
    db_stmt *st = NULL;
    if (!db_prepare(s->db, &st,
                    "SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
                    "WHERE task_id = ?1 ORDER BY id",
                    err))
        return -1;
    db_bind_text(st, 1, task_id);
    store_rows rows = {0};
    int rc = store_rows_collect(s, st, 0, &rows, "listing a task's reservations", err);
    db_stmt_free(st);
    if (rc == 0)
        store_reservation_rows_each(&rows, fn, ctx);
    store_rows_free(&rows);
    return rc;
}
