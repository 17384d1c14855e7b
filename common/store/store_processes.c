/* store_processes: the programs working on this store and their leases. */
#include "store_processes.h"
#include "store_internal.h"

#include <stdio.h>

#include "clock.h"

int store_process_beat(store *s, const store_process *p, vf_error *err)
{
    db_stmt *st =
        store_stmt(s, STORE_STMT_PROCESS_BEAT,
                   "INSERT INTO processes (owner, program, host, pid, version, "
                   "started_at, beat_at, in_hand) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                   "ON CONFLICT (owner) DO UPDATE SET beat_at = excluded.beat_at, "
                   "in_hand = excluded.in_hand",
                   err);
    if (!st)
        return -1;
    db_bind_text(st, 1, p->owner);
    db_bind_text(st, 2, p->program);
    db_bind_text(st, 3, p->host);
    db_bind_int64(st, 4, p->pid);
    db_bind_text(st, 5, p->version);
    db_bind_text(st, 6, p->started_at);
    db_bind_text(st, 7, p->beat_at);
    db_bind_int64(st, 8, p->in_hand);
    if (store_exec_change(s, st, "recording a heartbeat", err) < 0)
        return -1;
    char before[STORE_TIME_SIZE];
    if (store_format_time(clock_wall_ms() - (int64_t)STORE_PROCESS_FORGET_S * 1000, before) < 0)
        return 0;
    st = store_stmt(s, STORE_STMT_PROCESS_FORGET_SILENT, "DELETE FROM processes WHERE beat_at < ?1",
                    err);
    if (!st)
        return -1;
    db_bind_text(st, 1, before);
    return store_exec_change(s, st, "forgetting silent processes", err) < 0 ? -1 : 0;
}

int store_process_forget(store *s, const char *owner, vf_error *err)
{
    db_stmt *st =
        store_stmt(s, STORE_STMT_PROCESS_FORGET, "DELETE FROM processes WHERE owner = ?1", err);
    if (!st)
        return -1;
    db_bind_text(st, 1, owner);
    return store_exec_change(s, st, "forgetting a process", err) < 0 ? -1 : 0;
}

int store_processes_list(store *s, const char *since, store_process_fn fn, void *ctx, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_PROCESSES_LIST,
                             "SELECT owner, program, host, pid, version, started_at, beat_at, "
                             "in_hand FROM processes WHERE beat_at >= ?1 "
                             "ORDER BY program, host, started_at, owner",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, since ? since : "");
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "listing processes", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.count; i++) {
        store_process p = {
            .owner = store_rows_text(&rows, i, 0),
            .program = store_rows_text(&rows, i, 1),
            .host = store_rows_text(&rows, i, 2),
            .pid = store_rows_int(&rows, i, 3),
            .version = store_rows_text(&rows, i, 4),
            .started_at = store_rows_text(&rows, i, 5),
            .beat_at = store_rows_text(&rows, i, 6),
            .in_hand = store_rows_int(&rows, i, 7),
        };
        if (fn(&p, ctx) != 0)
            break;
    }
    store_rows_free(&rows);
    return 0;
}

int store_leases_list(store *s, const char *now, store_lease_fn fn, void *ctx, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_LEASES_LIST,
                             "SELECT name, owner, epoch, acquired_at, expires_at FROM leases "
                             "WHERE expires_at > ?1 ORDER BY owner, name",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, now);
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "listing leases", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.count; i++) {
        store_lease_row lease = {
            .name = store_rows_text(&rows, i, 0),
            .owner = store_rows_text(&rows, i, 1),
            .epoch = store_rows_int(&rows, i, 2),
            .acquired_at = store_rows_text(&rows, i, 3),
            .expires_at = store_rows_text(&rows, i, 4),
        };
        if (fn(&lease, ctx) != 0)
            break;
    }
    store_rows_free(&rows);
    return 0;
}
