/* store_spares: the spares table (schema/002_spares.sql). */
#include "store_spares.h"
#include "store_internal.h"

#define SPARE_COLUMNS                                                                              \
    "id, task_id, upgrade_id, cluster, spare_index, name, node, ip, vmid, cpu, memory, disk, "     \
    "state, attempts, next_at, ready_by, ready_timeout_s, release_task_id, pipeline_id, "          \
    "pipeline_url, last_error, created_at, updated_at"

int store_spare_add(store *s, const store_spare *p, vf_error *err)
{
    db_stmt *st = store_stmt(
        s, STORE_STMT_SPARE_ADD,
        "INSERT INTO spares (task_id, upgrade_id, cluster, spare_index, name, node, ip, vmid, cpu, "
        "memory, disk, state, attempts, next_at, ready_by, ready_timeout_s, release_task_id, "
        "pipeline_id, pipeline_url, last_error, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, "
        "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?21)",
        err);
    if (!st)
        return -1;
    db_bind_text(st, 1, p->task_id);
    db_bind_text(st, 2, p->upgrade_id);
    db_bind_text(st, 3, p->cluster);
    db_bind_int64(st, 4, p->index);
    db_bind_text(st, 5, p->name);
    db_bind_text(st, 6, p->node);
    db_bind_text(st, 7, p->ip ? p->ip : "");
    db_bind_int64(st, 8, p->vmid);
    db_bind_double(st, 9, p->cpu);
    db_bind_int64(st, 10, p->memory);
    db_bind_int64(st, 11, p->disk);
    db_bind_text(st, 12, p->state);
    db_bind_int64(st, 13, p->attempts);
    db_bind_text(st, 14, p->next_at);
    db_bind_text(st, 15, p->ready_by);
    db_bind_int64(st, 16, p->ready_timeout_s);
    db_bind_text(st, 17, p->release_task_id);
    store_bind_id(st, 18, p->pipeline_id);
    db_bind_text(st, 19, p->pipeline_url);
    db_bind_text(st, 20, p->last_error);
    db_bind_text(st, 21, p->created_at);
    return store_exec_change(s, st, "recording a spare", err) < 0 ? -1 : 0;
}

int store_spare_update(store *s, const store_spare *p, const char *seen_updated_at, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_SPARE_UPDATE,
                             "UPDATE spares SET state = ?2, attempts = ?3, next_at = ?4, "
                             "ready_by = ?5, release_task_id = ?6, pipeline_id = ?7, "
                             "pipeline_url = ?8, last_error = ?9, updated_at = ?10 "
                             "WHERE id = ?1 AND updated_at = ?11",
                             err);
    if (!st)
        return -1;
    db_bind_int64(st, 1, p->id);
    db_bind_text(st, 2, p->state);
    db_bind_int64(st, 3, p->attempts);
    db_bind_text(st, 4, p->next_at);
    db_bind_text(st, 5, p->ready_by);
    db_bind_text(st, 6, p->release_task_id);
    store_bind_id(st, 7, p->pipeline_id);
    db_bind_text(st, 8, p->pipeline_url);
    db_bind_text(st, 9, p->last_error);
    db_bind_text(st, 10, p->updated_at);
    db_bind_text(st, 11, seen_updated_at);
    int changed = store_exec_change(s, st, "updating a spare", err);
    return changed < 0 ? -1 : changed == 0 ? 1 : 0;
}

int store_spare_list(store *s, store_spare_query query, const char *key, int limit,
                     store_spare_fn fn, void *ctx, vf_error *err)
{
    db_stmt *st = NULL;
    switch (query) {
    case STORE_SPARES_OF_TASK:
        st = store_stmt(s, STORE_STMT_SPARES_BY_TASK,
                        "SELECT " SPARE_COLUMNS " FROM spares WHERE task_id = ?1 "
                        "ORDER BY spare_index",
                        err);
        break;
    case STORE_SPARES_OF_UPGRADE:
        st = store_stmt(s, STORE_STMT_SPARES_BY_UPGRADE,
                        "SELECT " SPARE_COLUMNS " FROM spares WHERE upgrade_id = ?1 "
                        "ORDER BY id",
                        err);
        break;
    case STORE_SPARES_OF_RELEASE:
        st = store_stmt(s, STORE_STMT_SPARES_BY_RELEASE,
                        "SELECT " SPARE_COLUMNS " FROM spares WHERE release_task_id = ?1 "
                        "ORDER BY id",
                        err);
        break;
    case STORE_SPARES_DUE:
        st = store_stmt(s, STORE_STMT_SPARES_DUE,
                        "SELECT " SPARE_COLUMNS " FROM spares WHERE next_at IS NOT NULL AND "
                        "next_at <= ?1 ORDER BY next_at",
                        err);
        break;
    case STORE_SPARES_ALL:
        st = store_stmt(s, STORE_STMT_SPARES_ALL,
                        "SELECT " SPARE_COLUMNS " FROM spares WHERE CAST(?1 AS TEXT) IS NULL "
                        "OR CAST(?1 AS TEXT) IS NOT NULL "
                        "ORDER BY id",
                        err);
        break;
    }
    if (!st) {
        if (err && !err->code)
            vf_error_set(err, VF_EINVAL, "unknown spare query %d", (int)query);
        return -1;
    }
    db_bind_text(st, 1, key);
    store_rows rows = {0};
    if (store_rows_collect(s, st, limit, &rows, "listing spares", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.count; i++) {
        store_spare p = {
            .id = store_rows_int(&rows, i, 0),
            .task_id = store_rows_text(&rows, i, 1),
            .upgrade_id = store_rows_text(&rows, i, 2),
            .cluster = store_rows_text(&rows, i, 3),
            .index = (int)store_rows_int(&rows, i, 4),
            .name = store_rows_text(&rows, i, 5),
            .node = store_rows_text(&rows, i, 6),
            .ip = store_rows_text(&rows, i, 7),
            .vmid = store_rows_int(&rows, i, 8),
            .cpu = store_rows_double(&rows, i, 9),
            .memory = store_rows_int(&rows, i, 10),
            .disk = store_rows_int(&rows, i, 11),
            .state = store_rows_text(&rows, i, 12),
            .attempts = (int)store_rows_int(&rows, i, 13),
            .next_at = store_rows_text(&rows, i, 14),
            .ready_by = store_rows_text(&rows, i, 15),
            .ready_timeout_s = (int)store_rows_int(&rows, i, 16),
            .release_task_id = store_rows_text(&rows, i, 17),
            .pipeline_id = store_rows_id(&rows, i, 18),
            .pipeline_url = store_rows_text(&rows, i, 19),
            .last_error = store_rows_text(&rows, i, 20),
            .created_at = store_rows_text(&rows, i, 21),
            .updated_at = store_rows_text(&rows, i, 22),
        };
        if (fn(&p, ctx) != 0)
            break;
    }
    store_rows_free(&rows);
    return 0;
}
