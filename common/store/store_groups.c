/* store_groups: groups of tasks and their generations (schema/014). */
#include "store_groups.h"

#include <stdio.h>
#include <string.h>

#include "store_internal.h"

int store_group_read(store *s, const char *name, const char *now, store_group *out,
                     store_group_member_fn fn, void *ctx, vf_error *err)
{
    memset(out, 0, sizeof *out);
    /* The group's row and its members in one statement, so one snapshot (see
     * the header): on PostgreSQL each statement sees what was committed when
     * it started, and two statements let a member committed between them be
     * seen without the generation and policy recorded with it (the members of
     * an apparently new group, at odds with "its" policy: invalid). One row
     * per member, the group's columns repeated; one row with no member when
     * there is none. */
    db_stmt *st =
        store_stmt(s, STORE_STMT_GROUP_GET,
                   "SELECT g.generation, g.policy, g.max_per_host, r.task_id, r.node, r.vmid, "
                   "CASE WHEN r.released_at IS NULL THEN 1 ELSE 0 END, g.spread_key, "
                   "g.spread_max_skew, g.spread_when, g.spread_min_domains "
                   "FROM (SELECT CAST(?1 AS TEXT) AS name) AS q "
                   "LEFT JOIN server_groups g ON g.name = CAST(?1 AS TEXT) "
                   "LEFT JOIN reservations r ON r.group_name = CAST(?1 AS TEXT) "
                   "AND ((r.released_at IS NULL AND r.expires_at > ?2) OR r.bound_at IS NOT NULL) "
                   "ORDER BY r.id",
                   err);
    if (!st)
        return -1;
    db_bind_text(st, 1, name);
    db_bind_text(st, 2, now);
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "reading a group and its members", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    if (rows.count && store_rows_text(&rows, 0, 0)) {
        out->generation = store_rows_int(&rows, 0, 0);
        const char *policy = store_rows_text(&rows, 0, 1);
        snprintf(out->policy, sizeof out->policy, "%s", policy ? policy : "");
        out->max_per_host = store_rows_int(&rows, 0, 2);
        const char *key = store_rows_text(&rows, 0, 7);
        const char *when = store_rows_text(&rows, 0, 9);
        if (key) {
            snprintf(out->spread.key, sizeof out->spread.key, "%s", key);
            out->spread.max_skew = store_rows_int(&rows, 0, 8);
            snprintf(out->spread.when, sizeof out->spread.when, "%s", when ? when : "");
            out->spread.min_domains = store_rows_int(&rows, 0, 10);
        }
    }
    for (int i = 0; fn && i < rows.count; i++) {
        const char *task_id = store_rows_text(&rows, i, 3);
        if (!task_id)
            continue; /* the one row of a group without members */
        store_group_member m = {
            .task_id = task_id,
            .node = store_rows_text(&rows, i, 4),
            .vmid = store_rows_id(&rows, i, 5),
            .held = store_rows_int(&rows, i, 6) != 0,
        };
        if (fn(&m, ctx) != 0)
            break;
    }
    store_rows_free(&rows);
    return 0;
}

int store_group_claim(store *s, const char *name, const char *policy, int64_t max_per_host,
                      const store_group_spread *spread, int64_t expected, const char *at,
                      vf_error *err)
{
    /* One statement for a new group and a known one: a new group is at
     * generation 0, so a row another writer inserted meanwhile (at 1 or
     * more) fails the condition as an update by it would. */
    db_stmt *st = store_stmt(
        s, STORE_STMT_GROUP_CLAIM,
        "INSERT INTO server_groups (name, policy, max_per_host, generation, changed_at, "
        "spread_key, spread_max_skew, spread_when, spread_min_domains) "
        "VALUES (?1, ?2, ?3, ?4 + 1, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (name) DO UPDATE SET "
        "generation = server_groups.generation + 1, policy = excluded.policy, "
        "max_per_host = excluded.max_per_host, changed_at = excluded.changed_at, "
        "spread_key = excluded.spread_key, spread_max_skew = excluded.spread_max_skew, "
        "spread_when = excluded.spread_when, spread_min_domains = excluded.spread_min_domains "
        "WHERE server_groups.generation = ?4",
        err);
    if (!st)
        return -1;
    bool spreads = spread && spread->key[0];
    db_bind_text(st, 1, name);
    db_bind_text(st, 2, policy);
    db_bind_int64(st, 3, max_per_host);
    db_bind_int64(st, 4, expected);
    db_bind_text(st, 5, at);
    if (spreads) {
        db_bind_text(st, 6, spread->key);
        db_bind_int64(st, 7, spread->max_skew);
        db_bind_text(st, 8, spread->when);
        db_bind_int64(st, 9, spread->min_domains);
    } else {
        for (int param = 6; param <= 9; param++)
            db_bind_null(st, param);
    }
    char moved[160];
    snprintf(moved, sizeof moved, "group %.63s changed since read (generation %lld)", name,
             (long long)expected);
    if (store_defers(s)) {
        db_expect expect = {.min_changes = 1, .short_code = VF_ECONFLICT, .short_text = moved};
        return store_exec_deferred(st, "claiming a group", &expect, err);
    }
    int changed = store_exec_change(s, st, "claiming a group", err);
    if (changed < 0)
        return -1;
    if (changed == 0) {
        vf_error_set(err, VF_ECONFLICT, "store %s: %s", s->path, moved);
        return -1;
    }
    return 0;
}

int store_reservations_set_group(store *s, const char *task_id, const char *name, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATIONS_SET_GROUP,
                             "UPDATE reservations SET group_name = ?2 "
                             "WHERE task_id = ?1 AND " STORE_RESERVATION_NOT_RELEASED,
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, task_id);
    db_bind_text(st, 2, name);
    if (store_defers(s))
        return store_exec_deferred(st, "marking a group's reservations", &(db_expect){0}, err);
    return store_exec_change(s, st, "marking a group's reservations", err) < 0 ? -1 : 0;
}
