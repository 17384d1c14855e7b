/* store_reservations: capacity and vmids held for placements. */
#include "store_reservations.h"

#include <stdio.h>
#include <string.h>

#include "store_internal.h"

#include <stdbool.h>

/* A reservation that expired but was not yet marked released (the sweep
 * marks them every few seconds) still holds its vmid in the unique index. */
int store_reservation_release_expired_vmid(store *s, int64_t vmid, const char *now, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATION_RELEASE_EXPIRED_VMID,
                             "UPDATE reservations SET released_at = ?2 "
                             "WHERE vmid = ?1 AND released_at IS NULL AND expires_at <= ?2",
                             err);
    if (!st)
        return -1;
    db_bind_int64(st, 1, vmid);
    db_bind_text(st, 2, now);
    return store_exec_change(s, st, "releasing an expired vmid", err);
}

/* The reservation's insert (`sql`: RESERVATION_INSERT and its conflict
 * action) prepared as `id`, its values bound; NULL with err set. */
static db_stmt *insert_stmt(store *s, store_stmt_id id, const char *sql, const char *task_id,
                            const char *node, double cpu, int64_t memory_mib, int64_t disk_gib,
                            int64_t vmid, const int32_t *priority, const char *resources,
                            const char *created_at, const char *expires_at, vf_error *err)
{
    db_stmt *st = store_stmt(s, id, sql, err);
    if (!st)
        return NULL;
    db_bind_text(st, 1, task_id);
    db_bind_text(st, 2, node);
    db_bind_double(st, 3, cpu);
    db_bind_int64(st, 4, memory_mib);
    db_bind_int64(st, 5, disk_gib);
    store_bind_id(st, 6, vmid);
    db_bind_text(st, 7, created_at);
    db_bind_text(st, 8, expires_at);
    if (priority)
        db_bind_int64(st, 9, *priority);
    else
        db_bind_null(st, 9);
    db_bind_text(st, 10, resources);
    return st;
}

#define RESERVATION_COLUMNS                                                                        \
    "reservations (task_id, node, cpu, memory, disk, vmid, created_at, expires_at, priority, "     \
    "resources) "
#define LIVE_VMID "ON CONFLICT (vmid) WHERE released_at IS NULL AND vmid IS NOT NULL "
#define RESERVATION_INSERT                                                                         \
    "INSERT INTO " RESERVATION_COLUMNS "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "              \
    "?10) " LIVE_VMID

/* Deferred (store_defer_writes): the answer comes at the commit, so one
 * statement does all a vmid needs. Its first insert adds the row, or, when
 * a live-vmid row is in the way and has expired, releases that row instead
 * (its AFTER UPDATE trigger bumps its host as a release does); its second
 * insert adds the row after such a release (the released holder, updated by
 * this very statement, no longer counts against the unique index). When a
 * reservation that has not expired holds the vmid, neither adds a row and
 * the statement fails itself (division_by_zero, db_expect.checks_itself):
 * the conflict. Without a vmid (NULL, never a conflict) a plain insert.
 *
 * The holder is found through the live-vmid index as the insert's arbiter,
 * never by a planned scan: an UPDATE ... WHERE vmid = ?1 AND released_at IS
 * NULL, prepared while the table was still small, kept a generic plan that
 * walked every live reservation through another partial index
 * (reservations_live_by_node: all of them tie in cost on a table without
 * statistics), 0.5 ms per task at 3,000 live rows, until the next ANALYZE.
 * These were two statements until 2026-11-27: the second, an insert that
 * found its own row in the way, was a twentieth of the server's CPU per
 * task. */
static int add_deferred(store *s, const char *task_id, const char *node, double cpu,
                        int64_t memory_mib, int64_t disk_gib, int64_t vmid, const int32_t *priority,
                        const char *resources, const char *created_at, const char *expires_at,
                        vf_error *err)
{
    if (vmid < 0) {
        db_stmt *st = insert_stmt(s, STORE_STMT_RESERVATION_ADD, RESERVATION_INSERT "DO NOTHING",
                                  task_id, node, cpu, memory_mib, disk_gib, vmid, priority,
                                  resources, created_at, expires_at, err);
        if (!st)
            return -1;
        return store_exec_deferred(st, "recording a reservation", &(db_expect){0}, err);
    }
    db_stmt *st = insert_stmt(
        s, STORE_STMT_RESERVATION_ADD_OR_FREE,
        "WITH vf_first AS (INSERT INTO " RESERVATION_COLUMNS "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
        "?8, ?9, ?10) " LIVE_VMID "DO UPDATE SET released_at = excluded.created_at "
        "WHERE reservations.expires_at <= excluded.created_at "
        "RETURNING released_at IS NULL AS added), "
        "vf_again AS (INSERT INTO " RESERVATION_COLUMNS
        "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 "
        "FROM vf_first WHERE NOT added " LIVE_VMID "DO NOTHING RETURNING 1) "
        "SELECT 1 / ((SELECT count(*) FROM vf_first WHERE added) + "
        "(SELECT count(*) FROM vf_again) >= 1)::int",
        task_id, node, cpu, memory_mib, disk_gib, vmid, priority, resources, created_at, expires_at,
        err);
    if (!st)
        return -1;
    char held[96];
    snprintf(held, sizeof held, "vmid %lld is already held by another reservation",
             (long long)vmid);
    db_expect expect = {.short_code = VF_ECONFLICT, .short_text = held, .checks_itself = true};
    return store_exec_deferred(st, "recording a reservation", &expect, err);
}

int store_reservation_add(store *s, const char *task_id, const char *node, double cpu,
                          int64_t memory_mib, int64_t disk_gib, int64_t vmid,
                          const char *created_at, const char *expires_at, vf_error *err)
{
    return store_reservation_add_priority(s, task_id, node, cpu, memory_mib, disk_gib, vmid, NULL,
                                          created_at, expires_at, err);
}

int store_reservation_add_priority(store *s, const char *task_id, const char *node, double cpu,
                                   int64_t memory_mib, int64_t disk_gib, int64_t vmid,
                                   const int32_t *priority, const char *created_at,
                                   const char *expires_at, vf_error *err)
{
    return store_reservation_add_resources(s, task_id, node, cpu, memory_mib, disk_gib, vmid,
                                           priority, NULL, created_at, expires_at, err);
}

int store_reservation_add_resources(store *s, const char *task_id, const char *node, double cpu,
                                    int64_t memory_mib, int64_t disk_gib, int64_t vmid,
                                    const int32_t *priority, const char *resources,
                                    const char *created_at, const char *expires_at, vf_error *err)
{
    if (store_defers(s))
        return add_deferred(s, task_id, node, cpu, memory_mib, disk_gib, vmid, priority, resources,
                            created_at, expires_at, err);
    /* A vmid held by a live reservation makes the insert do nothing rather
     * than fail: a failed statement would abort the whole transaction on
     * PostgreSQL, and the caller's batch with it. */
    for (int pass = 0;; pass++) {
        db_stmt *st = insert_stmt(s, STORE_STMT_RESERVATION_ADD, RESERVATION_INSERT "DO NOTHING",
                                  task_id, node, cpu, memory_mib, disk_gib, vmid, priority,
                                  resources, created_at, expires_at, err);
        if (!st)
            return -1;
        int added = store_exec_change(s, st, "recording a reservation", err);
        if (added < 0)
            return -1;
        if (added > 0)
            return 0;
        /* Only the live-vmid index is a conflict target here. */
        int released =
            pass == 0 ? store_reservation_release_expired_vmid(s, vmid, created_at, err) : 0;
        if (released < 0)
            return -1;
        if (released == 0) {
            vf_error_set(err, VF_ECONFLICT,
                         "store %s: vmid %lld is already held by another reservation", s->path,
                         (long long)vmid);
            return -1;
        }
    }
}

store_reservation store_reservation_at(const store_rows *rows, int i, int f)
{
    return (store_reservation){
        .id = store_rows_int(rows, i, f),
        .task_id = store_rows_text(rows, i, f + 1),
        .node = store_rows_text(rows, i, f + 2),
        .cpu = store_rows_double(rows, i, f + 3),
        .memory = store_rows_int(rows, i, f + 4),
        .disk = store_rows_int(rows, i, f + 5),
        .vmid = store_rows_id(rows, i, f + 6),
        .created_at = store_rows_text(rows, i, f + 7),
        .expires_at = store_rows_text(rows, i, f + 8),
        .released_at = store_rows_text(rows, i, f + 9),
        .bound_at = store_rows_text(rows, i, f + 10),
        .has_priority = store_rows_text(rows, i, f + 11) != NULL,
        .priority = (int32_t)store_rows_int(rows, i, f + 11),
        .resources = store_rows_text(rows, i, f + 12),
        .resources_ended_at = store_rows_text(rows, i, f + 13),
        .vmid_only = store_rows_int(rows, i, f + 14) != 0,
    };
}

void store_reservation_rows_each(const store_rows *rows, store_reservation_fn fn, void *ctx)
{
    for (int i = 0; i < rows->count; i++) {
        store_reservation r = store_reservation_at(rows, i, 0);
        if (fn(&r, ctx) != 0)
            break;
    }
}

int store_reservations_each(store *s, db_stmt *st, const char *what, store_reservation_fn fn,
                            void *ctx, vf_error *err)
{
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, what, err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    store_reservation_rows_each(&rows, fn, ctx);
    store_rows_free(&rows);
    return 0;
}

int store_reservations_live(store *s, const char *now, store_reservation_fn fn, void *ctx,
                            vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATIONS_LIVE,
                             "SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
                             "WHERE released_at IS NULL AND expires_at > ?1 ORDER BY id",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    return store_reservations_each(s, st, "listing reservations", fn, ctx, err);
}

/* Four disjoint sets, each one index range (schema/009, 016): held; ended
 * by an inventory fetched after the reader's view; ended by one fetched
 * before it but not expired; and, of the rest of the bound ones, those
 * whose custom resources still count. */
int store_reservations_counted(store *s, const char *now, const char *view_at,
                               store_reservation_fn fn, void *ctx, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATIONS_COUNTED,
                             "SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
                             "WHERE released_at IS NULL AND expires_at > ?1 "
                             "UNION ALL SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
                             "WHERE bound_at IS NOT NULL AND bound_at > ?2 "
                             "UNION ALL SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
                             "WHERE bound_at IS NOT NULL AND expires_at > ?1 AND bound_at <= ?2 "
                             "UNION ALL SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
                             "WHERE " STORE_RESERVATION_HOLDS_RESOURCES
                             " AND expires_at <= ?1 AND bound_at <= ?2 "
                             "ORDER BY 1",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    db_bind_text(st, 2, view_at);
    return store_reservations_each(s, st, "listing reservations", fn, ctx, err);
}

int store_reservation_release_task(store *s, const char *task_id, const char *at, vf_error *err)
{
    /* Its bound reservations' custom resources first: the task gives its VMs
     * back. Found through reservations_by_task as the release below is
     * (STORE_RESERVATION_NOT_RELEASED explains why not by a partial index). */
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATION_END_TASK_RESOURCES,
                             "UPDATE reservations SET resources_ended_at = ?2 "
                             "WHERE task_id = ?1 AND coalesce(resources_ended_at, '') = '' "
                             "AND coalesce(bound_at, '') <> '' AND coalesce(resources, '') <> ''",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, task_id);
    db_bind_text(st, 2, at);
    int ended = store_exec_change(s, st, "ending a task's custom resources", err);
    if (ended < 0)
        return -1;
    st = store_stmt(s, STORE_STMT_RESERVATION_RELEASE_TASK,
                    "UPDATE reservations SET released_at = ?2 "
                    "WHERE task_id = ?1 AND " STORE_RESERVATION_NOT_RELEASED,
                    err);
    if (!st)
        return -1;
    db_bind_text(st, 1, task_id);
    db_bind_text(st, 2, at);
    int released = store_exec_change(s, st, "releasing a task's reservations", err);
    return released < 0 ? -1 : released + ended;
}

int store_reservations_holding_resources(store *s,
                                         int (*fn)(const store_held_resources *r, void *ctx),
                                         void *ctx, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATIONS_HOLDING_RESOURCES,
                             "SELECT id, task_id, node, vmid, bound_at FROM reservations "
                             "WHERE " STORE_RESERVATION_HOLDS_RESOURCES " ORDER BY id",
                             err);
    if (!st)
        return -1;
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "listing the custom resources of bound reservations",
                           err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.count; i++) {
        store_held_resources r = {.id = store_rows_int(&rows, i, 0),
                                  .task_id = store_rows_text(&rows, i, 1),
                                  .node = store_rows_text(&rows, i, 2),
                                  .vmid = store_rows_id(&rows, i, 3),
                                  .bound_at = store_rows_text(&rows, i, 4)};
        if (fn(&r, ctx) != 0)
            break;
    }
    store_rows_free(&rows);
    return 0;
}

int store_reservation_resources_end(store *s, int64_t id, const char *at, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATION_END_RESOURCES,
                             "UPDATE reservations SET resources_ended_at = ?2 "
                             "WHERE id = ?1 AND resources_ended_at IS NULL",
                             err);
    if (!st)
        return -1;
    db_bind_int64(st, 1, id);
    db_bind_text(st, 2, at);
    int changed = store_exec_change(s, st, "ending a VM's custom resources", err);
    return changed < 0 ? -1 : changed > 0;
}

int store_reservation_release_unanswered(store *s, const char *task_id, const char *at,
                                         vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATION_RELEASE_UNANSWERED,
                             "UPDATE reservations SET released_at = ?2 "
                             "WHERE task_id = ?1 AND " STORE_RESERVATION_NOT_RELEASED
                             " AND bound_at IS NULL AND coalesce(vmid_only, 0) = 0 "
                             "AND created_at < ?2",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, task_id);
    db_bind_text(st, 2, at);
    if (store_defers(s))
        return store_exec_deferred(st, "releasing a task's unanswered reservations",
                                   &(db_expect){0}, err);
    return store_exec_change(s, st, "releasing a task's unanswered reservations", err) < 0 ? -1 : 0;
}

int store_reservation_preempt(store *s, const char *task_id, const char *node, int32_t below,
                              const char *placed_before, const char *at, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATION_PREEMPT,
                             "UPDATE reservations SET released_at = ?3 "
                             "WHERE task_id = ?1 AND node = ?2 AND " STORE_RESERVATION_NOT_RELEASED
                             " AND bound_at IS NULL AND priority IS NOT NULL AND priority < ?4 "
                             "AND created_at <= ?5",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, task_id);
    db_bind_text(st, 2, node);
    db_bind_text(st, 3, at);
    db_bind_int64(st, 4, below);
    db_bind_text(st, 5, placed_before);
    return store_exec_change(s, st, "preempting a task's reservations", err);
}

int store_reservation_keep_vmid(store *s, const char *task_id, const char *node, int64_t vmid,
                                const char *at, const char *expires_at, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATION_KEEP_VMID,
                             "INSERT INTO reservations (task_id, node, cpu, memory, disk, vmid, "
                             "created_at, expires_at, vmid_only) "
                             "VALUES (?1, ?2, 0, 0, 0, ?3, ?4, ?5, 1) "
                             "ON CONFLICT (vmid) WHERE released_at IS NULL AND vmid IS NOT NULL "
                             "DO NOTHING",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, task_id);
    db_bind_text(st, 2, node);
    db_bind_int64(st, 3, vmid);
    db_bind_text(st, 4, at);
    db_bind_text(st, 5, expires_at);
    int added = store_exec_change(s, st, "keeping a preempted placement's vmid", err);
    if (added < 0)
        return -1;
    if (added == 0) {
        vf_error_set(err, VF_ECONFLICT, "vmid %lld of a preempted placement is held meanwhile",
                     (long long)vmid);
        return -1;
    }
    return 0;
}

int store_reservation_release_vmid(store *s, int64_t vmid, const char *node, const char *at,
                                   const char *shown_at, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATION_RELEASE_VMID,
                             "UPDATE reservations SET released_at = ?2, bound_at = ?4 "
                             "WHERE vmid = ?1 AND node = ?3 AND released_at IS NULL",
                             err);
    if (!st)
        return -1;
    db_bind_int64(st, 1, vmid);
    db_bind_text(st, 2, at);
    db_bind_text(st, 3, node);
    db_bind_text(st, 4, shown_at);
    return store_exec_change(s, st, "releasing a vmid's reservation", err);
}

int store_reservations_expire(store *s, const char *now, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATIONS_EXPIRE,
                             "UPDATE reservations SET released_at = ?1 "
                             "WHERE released_at IS NULL AND expires_at <= ?1",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    return store_exec_change(s, st, "expiring reservations", err);
}

int store_inventory_fresh_set(store *s, const char *at, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_INVENTORY_FRESH_SET,
                             store_is_pg(s)
                                 ? "INSERT INTO inventory_clock AS c (id, fresh_at) VALUES (1, ?1) "
                                   "ON CONFLICT (id) DO UPDATE SET "
                                   "fresh_at = GREATEST(c.fresh_at, excluded.fresh_at)"
                                 : "INSERT INTO inventory_clock (id, fresh_at) VALUES (1, ?1) "
                                   "ON CONFLICT (id) DO UPDATE SET "
                                   "fresh_at = MAX(fresh_at, excluded.fresh_at)",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, at);
    return store_exec_change(s, st, "recording the inventory clock", err) < 0 ? -1 : 0;
}

int store_reservation_clock(store *s, char out[STORE_TIME_SIZE], vf_error *err)
{
    store_now(out);
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATION_CLOCK,
                             "SELECT fresh_at FROM inventory_clock WHERE id = 1", err);
    if (!st)
        return -1;
    store_rows rows = {0};
    if (store_rows_collect(s, st, 1, &rows, "reading the inventory clock", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    const char *fresh = rows.count ? store_rows_text(&rows, 0, 0) : NULL;
    /* Fixed-width RFC 3339 text: comparing the text compares the times. */
    if (fresh && strlen(fresh) < STORE_TIME_SIZE && strcmp(fresh, out) < 0)
        snprintf(out, STORE_TIME_SIZE, "%s", fresh);
    store_rows_free(&rows);
    return 0;
}

int store_reservation_holding_vmid(store *s, int64_t vmid, store_reservation_fn fn, void *ctx,
                                   vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATION_HOLDING_VMID,
                             "SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
                             "WHERE vmid = ?1 AND released_at IS NULL",
                             err);
    if (!st)
        return -1;
    db_bind_int64(st, 1, vmid);
    return store_reservations_each(s, st, "finding the reservation holding a vmid", fn, ctx, err);
}

int store_reservations_latest_id(store *s, int64_t *id, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATIONS_LATEST_ID,
                             "SELECT coalesce(max(id), 0) FROM reservations", err);
    if (!st)
        return -1;
    store_rows rows = {0};
    int rc = store_rows_collect(s, st, 1, &rows, "reading the latest reservation", err);
    *id = rc == 0 && rows.count ? store_rows_int(&rows, 0, 0) : 0;
    store_rows_free(&rows);
    return rc;
}
