/* store_prune: retention. Deletes what is final and older than a cutoff, in
 * short transactions, and gives the freed pages back (store.h "retention").
 *
 * The statements here run once per batch (a few per minute), not per
 * message, so they are prepared per call rather than kept in the handle's
 * slots; every value is still a bound parameter. The SQL is the same on both
 * backends; giving pages back and truncating the WAL are SQLite's (on
 * PostgreSQL autovacuum does that work). */
#include "store_prune.h"
#include "store_internal.h"
#include "store_outbox.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tasks a batch may delete: final, last written before TASKS, holding
 * nothing that is still in use: no reservation still held, none whose
 * custom resources still count (its VM exists: the ledger), none an
 * inventory ended that a worker with an older snapshot still counts (bound
 * or expiring at or after BOUND: store_reservations_counted), no spare
 * unfinished. A spare counts as finished once released or failed (a failed
 * spare's VM does not exist, see spare_driver.c). The status IN list with
 * the updated_at range walks tasks_by_status_updated. TASKS and BOUND name
 * the statement's parameters ("?1"), each statement numbering its own. */
#define PRUNABLE_TASKS(TASKS, BOUND)                                                               \
    "FROM tasks t WHERE t.status IN ('completed', 'failed', 'released') "                          \
    "AND t.updated_at < " TASKS " "                                                                \
    "AND NOT EXISTS (SELECT 1 FROM reservations r WHERE r.task_id = t.id "                         \
    "                AND (r.released_at IS NULL OR " STORE_RESERVATION_HOLDS_RESOURCES ")) "       \
    "AND NOT EXISTS (SELECT 1 FROM reservations r WHERE r.task_id = t.id "                         \
    "                AND r.bound_at IS NOT NULL "                                                  \
    "                AND (r.bound_at >= " BOUND " OR r.expires_at >= " BOUND ")) "                 \
    "AND NOT EXISTS (SELECT 1 FROM spares p WHERE p.task_id = t.id "                               \
    "                AND p.state NOT IN ('released', 'failed')) "                                  \
    "AND NOT EXISTS (SELECT 1 FROM spares p WHERE p.release_task_id = t.id "                       \
    "                AND p.state NOT IN ('released', 'failed')) "

/* Reservations ended before ROWS; one an inventory ended (bound_at) only
 * once it was bound and expired before BOUND, and never a bound one whose
 * custom resources still count (its VM exists: schema/021): the ledger
 * keeps it, however old. */
#define RELEASED_RESERVATIONS(ROWS, BOUND)                                                         \
    "FROM reservations WHERE released_at IS NOT NULL AND released_at < " ROWS " "                  \
    "AND (bound_at IS NULL OR (bound_at < " BOUND " AND expires_at < " BOUND ")) "                 \
    "AND NOT (" STORE_RESERVATION_HOLDS_RESOURCES ") "

/* Snapshots older than the cutoff except the newest of them, which was still
 * in force at the cutoff (a decision kept after it was made against it). */
#define SUPERSEDED_SNAPSHOTS                                                                       \
    "FROM inventory_snapshots WHERE recorded_at < (SELECT MAX(recorded_at) "                       \
    "FROM inventory_snapshots WHERE recorded_at < ?1)"

#define FINISHED_DELIVERIES                                                                        \
    "FROM deliveries WHERE created_at < ?1 AND status IN ('delivered', 'failed')"

#define OLD_DEAD_LETTERS "FROM dead_letters WHERE parked_at < ?1"

/* A statement of its own (db_stmt_free it), kept in the caller's *slot,
 * which must outlive it: db_stmt_free clears the slot it was prepared into
 * (a slot local to this function was written after its scope ended). */
static db_stmt *prepare(store *s, db_stmt **slot, const char *sql, vf_error *err)
{
    *slot = NULL;
    return db_prepare(s->db, slot, sql, err);
}

/* Run a DELETE bound to (key) and add the rows it removed to *count. */
static int delete_by_key(store *s, db_stmt *st, const char *key, int64_t *count, const char *what,
                         vf_error *err)
{
    db_bind_text(st, 1, key);
    int changed = store_exec_change(s, st, what, err);
    if (changed < 0)
        return -1;
    *count += changed;
    return 0;
}

/* Up to `limit` prunable tasks and everything that points at them, in one
 * transaction. Children first: the foreign keys are enforced. */
static int prune_tasks(store *s, const store_prune_cutoffs *cutoffs, int limit,
                       store_prune_counts *deleted, int *found, vf_error *err)
{
    static const char *const deletes[] = {
        "DELETE FROM task_events WHERE task_id = ?1",
        "DELETE FROM reservations WHERE task_id = ?1",
        "DELETE FROM spares WHERE task_id = ?1",
        "DELETE FROM tasks WHERE id = ?1",
    };
    enum { N_DELETES = sizeof deletes / sizeof deletes[0] };
    db_stmt *select = NULL;
    db_stmt *statements[N_DELETES] = {0};
    store_rows ids = {0};
    store_prune_counts batch = {0};
    int64_t *counters[N_DELETES] = {&batch.task_events, &batch.reservations, &batch.spares,
                                    &batch.tasks};
    int result = -1;
    *found = 0;

    if (!prepare(s, &select,
                 "SELECT t.id " PRUNABLE_TASKS("?1", "?3") "ORDER BY t.updated_at LIMIT ?2", err))
        goto out;
    for (int i = 0; i < N_DELETES; i++)
        if (!prepare(s, &statements[i], deletes[i], err))
            goto out;
    /* Chosen under the write lock, so nothing changes between choosing a
     * task and deleting it. */
    if (store_begin(s, err) < 0)
        goto out;
    db_bind_text(select, 1, cutoffs->tasks);
    db_bind_int64(select, 2, limit);
    db_bind_text(select, 3, cutoffs->bound);
    if (store_rows_collect(s, select, 0, &ids, "choosing tasks to prune", err) < 0)
        goto rollback;
    for (int row = 0; row < ids.count; row++) {
        const char *id = store_rows_text(&ids, row, 0);
        for (int i = 0; i < N_DELETES; i++)
            if (delete_by_key(s, statements[i], id, counters[i], "pruning a task", err) < 0)
                goto rollback;
    }
    if (store_commit(s, err) < 0)
        goto out;
    deleted->tasks += batch.tasks;
    deleted->task_events += batch.task_events;
    deleted->reservations += batch.reservations;
    deleted->spares += batch.spares;
    *found = ids.count;
    result = 0;
    goto out;
rollback:
    (void)store_rollback(s, NULL);
out:
    store_rows_free(&ids);
    db_stmt_free(select);
    for (int i = 0; i < N_DELETES; i++)
        db_stmt_free(statements[i]);
    return result;
}

/* DELETE up to `limit` rows chosen by `from_where` (bound ?1 = cutoff, and
 * ?3 = `also` when not NULL), in its own (autocommit) transaction; `key`
 * lists the primary key's columns. */
static int prune_rows(store *s, const char *table, const char *key, const char *from_where,
                      const char *order, const char *cutoff, const char *also, int limit,
                      int64_t *count, int *found, vf_error *err)
{
    char sql[512];
    snprintf(sql, sizeof sql, "DELETE FROM %s WHERE (%s) IN (SELECT %s %s ORDER BY %s LIMIT ?2)",
             table, key, key, from_where, order);
    db_stmt *st = NULL;
    prepare(s, &st, sql, err);
    if (!st)
        return -1;
    db_bind_text(st, 1, cutoff);
    db_bind_int64(st, 2, limit);
    if (also)
        db_bind_text(st, 3, also);
    int changed = store_exec_change(s, st, "pruning", err);
    db_stmt_free(st);
    if (changed < 0)
        return -1;
    *count += changed;
    *found = changed;
    return 0;
}

int store_prune_batch_at(store *s, const store_prune_cutoffs *cutoffs, int limit,
                         store_prune_counts *deleted, vf_error *err)
{
    if (limit <= 0 || !cutoffs || !cutoffs->rows || !cutoffs->tasks || !cutoffs->bound) {
        vf_error_set(err, VF_EINVAL, "store %s: prune needs its cutoffs and a batch size > 0",
                     s->path);
        return -1;
    }
    const char *cutoff = cutoffs->rows;
    if (store_batch_flush(s, err) != 0)
        return -1;
    bool more = false;
    int found = 0;
    if (prune_tasks(s, cutoffs, limit, deleted, &found, err) < 0)
        return -1;
    more |= found >= limit;
    if (prune_rows(s, "reservations", "id", RELEASED_RESERVATIONS("?1", "?3"), "released_at",
                   cutoff, cutoffs->bound, limit, &deleted->reservations, &found, err) < 0)
        return -1;
    more |= found >= limit;
    int changed = store_outbox_prune(s, cutoff, limit, err);
    if (changed < 0)
        return -1;
    deleted->outbox += changed;
    more |= changed >= limit;
    if (prune_rows(s, "deliveries", "event_id, receiver", FINISHED_DELIVERIES, "created_at", cutoff,
                   NULL, limit, &deleted->deliveries, &found, err) < 0)
        return -1;
    more |= found >= limit;
    if (prune_rows(s, "inventory_snapshots", "id", SUPERSEDED_SNAPSHOTS, "recorded_at", cutoff,
                   NULL, limit, &deleted->inventory_snapshots, &found, err) < 0)
        return -1;
    more |= found >= limit;
    if (prune_rows(s, "dead_letters", "id", OLD_DEAD_LETTERS, "parked_at", cutoff, NULL, limit,
                   &deleted->dead_letters, &found, err) < 0)
        return -1;
    more |= found >= limit;
    return more ? 1 : 0;
}

int store_prune_batch(store *s, const char *cutoff, int limit, store_prune_counts *deleted,
                      vf_error *err)
{
    store_prune_cutoffs same = {cutoff, cutoff, cutoff};
    return store_prune_batch_at(s, &same, limit, deleted, err);
}

/* One count, its parameters ?1, ?2, ... bound to `values` in order. */
static int count_query(store *s, const char *sql, const char *const *values, int n_values,
                       int64_t *out, vf_error *err)
{
    db_stmt *st = NULL;
    prepare(s, &st, sql, err);
    if (!st)
        return -1;
    for (int i = 0; i < n_values; i++)
        db_bind_text(st, i + 1, values[i]);
    int rc = db_step(st, "counting rows to prune", err);
    int result = -1;
    if (rc == DB_ROW) {
        *out = db_column_int64(st, 0);
        result = 0;
    } else if (rc == DB_DONE) {
        vf_error_set(err, VF_EINTERNAL, "store %s: a count returned no row", s->path);
    }
    db_stmt_free(st);
    return result;
}

/* The counting queries; each numbers its parameters in the order of its
 * `uses`: T the tasks' cutoff, B the bound reservations', R the other
 * rows'. Each element in parentheses: they are built by concatenation,
 * which clang's -Wstring-concatenation would otherwise take for a lost
 * comma. */
#define TASK_IDS "SELECT t.id " PRUNABLE_TASKS("?1", "?2")
static const struct {
    const char *sql;
    const char *uses;
} count_queries[] = {
    {("SELECT count(*) " PRUNABLE_TASKS("?1", "?2")), "TB"},
    {("SELECT count(*) FROM task_events WHERE task_id IN (" TASK_IDS ")"), "TB"},
    {("SELECT (SELECT count(*) FROM reservations WHERE task_id IN (" TASK_IDS
      ")) + (SELECT count(*) " RELEASED_RESERVATIONS("?3", "?2") " AND task_id NOT IN (" TASK_IDS
                                                                 "))"),
     "TBR"},
    {("SELECT count(*) FROM spares WHERE task_id IN (" TASK_IDS ")"), "TB"},
    {"SELECT count(*) FROM outbox WHERE confirmed_at IS NOT NULL AND confirmed_at < ?1", "R"},
    {("SELECT count(*) " FINISHED_DELIVERIES), "R"},
    {("SELECT count(*) " SUPERSEDED_SNAPSHOTS), "R"},
    {("SELECT count(*) " OLD_DEAD_LETTERS), "R"},
};

int store_prune_count_at(store *s, const store_prune_cutoffs *cutoffs, store_prune_counts *counts,
                         vf_error *err)
{
    if (store_batch_flush(s, err) != 0)
        return -1;
    /* The rows store_prune_batch_at would delete, counted the same way:
     * those of prunable tasks, then released reservations of other tasks. */
    int64_t *slots[] = {
        &counts->tasks,  &counts->task_events, &counts->reservations,        &counts->spares,
        &counts->outbox, &counts->deliveries,  &counts->inventory_snapshots, &counts->dead_letters};
    memset(counts, 0, sizeof *counts);
    /* One read transaction: the counts describe one moment. */
    if (db_exec(s->db, "BEGIN", "counting rows to prune", err) < 0)
        return -1;
    int result = 0;
    for (size_t i = 0; i < sizeof count_queries / sizeof count_queries[0] && result == 0; i++) {
        const char *values[3];
        int n = 0;
        for (const char *u = count_queries[i].uses; *u; u++)
            values[n++] = *u == 'T' ? cutoffs->tasks : *u == 'B' ? cutoffs->bound : cutoffs->rows;
        result = count_query(s, count_queries[i].sql, values, n, slots[i], err);
    }
    (void)db_exec(s->db, result == 0 ? "COMMIT" : "ROLLBACK", "counting rows to prune", NULL);
    return result;
}

int store_prune_count(store *s, const char *cutoff, store_prune_counts *counts, vf_error *err)
{
    store_prune_cutoffs same = {cutoff, cutoff, cutoff};
    return store_prune_count_at(s, &same, counts, err);
}

static int pragma_int(store *s, const char *sql, int64_t *value, vf_error *err)
{
    db_stmt *st = NULL;
    prepare(s, &st, sql, err);
    if (!st)
        return -1;
    int rc;
    *value = 0;
    while ((rc = db_step(st, sql, err)) == DB_ROW)
        *value = db_column_int64(st, 0);
    db_stmt_free(st);
    return rc < 0 ? -1 : 0;
}

int store_auto_vacuum_incremental(store *s, bool *incremental, vf_error *err)
{
    if (store_is_pg(s)) {
        *incremental = true; /* autovacuum: the server's job */
        return 0;
    }
    int64_t mode = 0;
    if (pragma_int(s, "PRAGMA auto_vacuum", &mode, err) < 0)
        return -1;
    *incremental = mode == 2; /* 0 NONE, 1 FULL, 2 INCREMENTAL */
    return 0;
}

int store_vacuum_step(store *s, int pages, int64_t *freed, vf_error *err)
{
    if (freed)
        *freed = 0;
    bool incremental = false;
    if (store_is_pg(s))
        return 0;
    if (store_auto_vacuum_incremental(s, &incremental, err) < 0)
        return -1;
    if (!incremental || pages <= 0)
        return 0;
    int64_t before = 0, after = 0, ignored = 0;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA incremental_vacuum(%d)", pages);
    if (pragma_int(s, "PRAGMA freelist_count", &before, err) < 0 ||
        pragma_int(s, sql, &ignored, err) < 0 ||
        pragma_int(s, "PRAGMA freelist_count", &after, err) < 0)
        return -1;
    if (freed)
        *freed = before > after ? before - after : 0;
    return 0;
}

int store_wal_truncate(store *s, bool *truncated, vf_error *err)
{
    if (truncated)
        *truncated = false;
    sqlite3 *handle = db_sqlite_handle(s->db);
    if (!handle)
        return 0; /* PostgreSQL: no WAL file of ours */
    int rc = sqlite3_wal_checkpoint_v2(handle, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
        return 0;
    if (rc != SQLITE_OK) {
        vf_error_set(err, VF_EIO, "store %s: truncating the WAL: %s", s->path,
                     sqlite3_errmsg(handle));
        return -1;
    }
    if (truncated)
        *truncated = true;
    return 0;
}

int store_others_wrote(store *s, int64_t *version, bool *wrote, vf_error *err)
{
    *wrote = false;
    if (store_is_pg(s))
        return 0;
    int64_t now = 0;
    if (pragma_int(s, "PRAGMA data_version", &now, err) < 0)
        return -1;
    *wrote = *version >= 0 && now != *version;
    *version = now;
    return 0;
}
