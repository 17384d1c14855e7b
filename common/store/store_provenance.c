/* store_provenance: decision records (store_provenance.h). The record is
 * written on the hot path (one statement per decided task, kept in a slot);
 * everything else is read by operators' replays and prepared per call. */
#include "store_provenance.h"
#include "store_internal.h"

#include <stdlib.h>
#include <string.h>

int store_provenance_record(store *s, const char *task_id, const store_provenance *p, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_TASK_PROVENANCE,
                             "UPDATE tasks SET decided_snapshot = ?2, decided_holds = ?3, "
                             "decided_config = ?4, decided_clock_ms = ?5, decided_ms = ?6 "
                             "WHERE id = ?1",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, task_id);
    store_bind_id(st, 2, p->snapshot_id);
    /* The digest's bits as a signed 64-bit integer: both dialects keep it. */
    int64_t holds;
    memcpy(&holds, &p->holds, sizeof holds);
    db_bind_int64(st, 3, holds);
    store_bind_id(st, 4, p->config_id);
    db_bind_int64(st, 5, p->clock_ms);
    db_bind_int64(st, 6, p->decided_ms);
    if (store_defers(s))
        return store_exec_deferred(st, "recording a decision's provenance", &(db_expect){0}, err);
    return store_exec_change(s, st, "recording a decision's provenance", err) < 0 ? -1 : 0;
}

/* Run a prepared-per-call SELECT bound by `bind` into rows. */
static int collect_once(store *s, const char *sql, const char *what, const char *text,
                        const int64_t *number, store_rows *rows, vf_error *err)
{
    db_stmt *st = NULL;
    if (!db_prepare(s->db, &st, sql, err))
        return -1;
    if (text)
        db_bind_text(st, 1, text);
    if (number)
        db_bind_int64(st, 1, *number);
    int rc = store_rows_collect(s, st, 0, rows, what, err);
    db_stmt_free(st);
    return rc;
}

int store_provenance_get(store *s, const char *task_id, store_provenance *out, vf_error *err)
{
    memset(out, 0, sizeof *out);
    if (store_batch_flush(s, err) != 0)
        return -1;
    store_rows rows = {0};
    if (collect_once(s,
                     "SELECT decided_snapshot, decided_holds, decided_config, decided_clock_ms, "
                     "decided_ms FROM tasks WHERE id = ?1",
                     "reading a decision's provenance", task_id, NULL, &rows, err) < 0)
        return -1;
    if (rows.count == 1 && store_rows_text(&rows, 0, 4)) {
        out->present = true;
        out->snapshot_id = store_rows_id(&rows, 0, 0);
        int64_t holds = store_rows_int(&rows, 0, 1);
        memcpy(&out->holds, &holds, sizeof holds);
        out->config_id = store_rows_id(&rows, 0, 2);
        out->clock_ms = store_rows_int(&rows, 0, 3);
        out->decided_ms = store_rows_int(&rows, 0, 4);
    }
    store_rows_free(&rows);
    return 0;
}

int store_engine_config_record(store *s, const char *digest, const char *at, const char *body,
                               int64_t *id, vf_error *err)
{
    db_stmt *st = NULL;
    if (!db_prepare(s->db, &st,
                    "INSERT INTO engine_configs (digest, recorded_at, body) VALUES (?1, ?2, ?3) "
                    "ON CONFLICT (digest) DO NOTHING",
                    err))
        return -1;
    db_bind_text(st, 1, digest);
    db_bind_text(st, 2, at);
    db_bind_text(st, 3, body);
    int rc = store_exec_change(s, st, "recording a scheduler configuration", err);
    db_stmt_free(st);
    if (rc < 0)
        return -1;
    store_rows rows = {0};
    if (collect_once(s, "SELECT id FROM engine_configs WHERE digest = ?1",
                     "reading a scheduler configuration", digest, NULL, &rows, err) < 0)
        return -1;
    rc = rows.count == 1 ? 0 : -1;
    if (rc == 0)
        *id = store_rows_int(&rows, 0, 0);
    else
        vf_error_set(err, VF_EIO, "store %s: scheduler configuration %.16s vanished", s->path,
                     digest);
    store_rows_free(&rows);
    return rc;
}

/* Copy two text columns of the only row, if there is one: 1, 0 or -1. */
static int two_texts(store_rows *rows, char **first, char **second, vf_error *err)
{
    if (rows->count != 1)
        return 0;
    *first = strdup(store_rows_text(rows, 0, 0) ? store_rows_text(rows, 0, 0) : "");
    *second = strdup(store_rows_text(rows, 0, 1) ? store_rows_text(rows, 0, 1) : "");
    if (!*first || !*second) {
        free(*first);
        free(*second);
        *first = *second = NULL;
        vf_error_set(err, VF_ENOMEM, "out of memory reading a decision's record");
        return -1;
    }
    return 1;
}

int store_engine_config_get(store *s, int64_t id, char **body, char **recorded_at, vf_error *err)
{
    store_rows rows = {0};
    if (collect_once(s, "SELECT body, recorded_at FROM engine_configs WHERE id = ?1",
                     "reading a scheduler configuration", NULL, &id, &rows, err) < 0)
        return -1;
    int rc = two_texts(&rows, body, recorded_at, err);
    store_rows_free(&rows);
    return rc;
}

int store_inventory_snapshot_find(store *s, const char *hash, int64_t *id, vf_error *err)
{
    store_rows rows = {0};
    if (collect_once(s,
                     "SELECT id FROM inventory_snapshots WHERE content_hash = ?1 "
                     "ORDER BY id DESC LIMIT 1",
                     "finding an inventory snapshot", hash, NULL, &rows, err) < 0)
        return -1;
    int found = rows.count == 1;
    if (found)
        *id = store_rows_int(&rows, 0, 0);
    store_rows_free(&rows);
    return found;
}

int store_inventory_snapshot_get(store *s, int64_t id, char **hosts, char **recorded_at,
                                 vf_error *err)
{
    store_rows rows = {0};
    if (collect_once(s, "SELECT hosts, recorded_at FROM inventory_snapshots WHERE id = ?1",
                     "reading an inventory snapshot", NULL, &id, &rows, err) < 0)
        return -1;
    int rc = two_texts(&rows, hosts, recorded_at, err);
    store_rows_free(&rows);
    return rc;
}

/* Run a prepared-per-call SELECT of STORE_RESERVATION_COLUMNS bound to `text`. */
static int reservations_where(store *s, const char *sql, const char *text, const char *what,
                              store_reservation_fn fn, void *ctx, vf_error *err)
{
    db_stmt *st = NULL;
    if (!db_prepare(s->db, &st, sql, err))
        return -1;
    db_bind_text(st, 1, text);
    int rc = store_reservations_each(s, st, what, fn, ctx, err);
    db_stmt_free(st);
    return rc;
}

int store_reservations_around(store *s, const char *at, const char *view_at,
                              store_reservation_fn fn, void *ctx, vf_error *err)
{
    /* Released before `at` and bound: another view saw the VM; it counts
     * while it may not have expired or that view is newer than the
     * decision's, and its custom resources count while the VM lives (the
     * rules of store_reservations_counted, at `at`). */
    db_stmt *st = NULL;
    if (!db_prepare(s->db, &st,
                    "SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
                    "WHERE created_at <= ?1 AND (released_at IS NULL OR released_at >= ?1 OR "
                    "(bound_at IS NOT NULL AND (expires_at > ?2 OR bound_at > ?2 OR "
                    "(resources IS NOT NULL AND (resources_ended_at IS NULL OR "
                    "resources_ended_at >= ?1))))) ORDER BY id",
                    err))
        return -1;
    db_bind_text(st, 1, at);
    db_bind_text(st, 2, view_at);
    int rc = store_reservations_each(s, st, "reading the reservations of a decision", fn, ctx, err);
    db_stmt_free(st);
    return rc;
}

int store_task_event_first_at(store *s, const char *task_id, const char *at, int64_t *id,
                              vf_error *err)
{
    db_stmt *st = NULL;
    if (!db_prepare(s->db, &st,
                    "SELECT min(id) FROM task_events WHERE task_id = ?1 AND at = ?2 "
                    "HAVING count(*) > 0",
                    err))
        return -1;
    db_bind_text(st, 1, task_id);
    db_bind_text(st, 2, at);
    store_rows rows = {0};
    int rc = store_rows_collect(s, st, 0, &rows, "reading a decision's order", err);
    db_stmt_free(st);
    if (rc < 0)
        return -1;
    rc = rows.count == 1;
    if (rc)
        *id = store_rows_int(&rows, 0, 0);
    store_rows_free(&rows);
    return rc;
}

int store_group_reservations(store *s, const char *group, store_reservation_fn fn, void *ctx,
                             vf_error *err)
{
    return reservations_where(s,
                              "SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
                              "WHERE group_name = ?1 ORDER BY id",
                              group, "reading a group's reservations", fn, ctx, err);
}
