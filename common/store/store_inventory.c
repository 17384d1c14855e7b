/* store_inventory: inventory snapshots (store_inventory.h). Recorded at most
 * once per inventory refresh and read by operators' replays, so statements
 * are prepared per call, not kept in the handle's slots. */
#include "store_inventory.h"
#include "store_internal.h"

#include <openssl/evp.h>

#include <stdio.h>

void store_inventory_hash(const void *data, size_t len, char out[STORE_INVENTORY_HASH_SIZE])
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    out[0] = '\0';
    if (EVP_Digest(data, len, digest, &size, EVP_sha256(), NULL) != 1 || size != 32)
        return; /* cannot happen with OpenSSL's own SHA-256; "" never equals a stored hash */
    static const char hex[] = "0123456789abcdef";
    for (unsigned int i = 0; i < size; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[2 * size] = '\0';
}

int store_inventory_snapshot_record(store *s, const char *content_hash, const char *at,
                                    const char *hosts, vf_error *err)
{
    /* COALESCE: an empty table has no newest hash, and '' is never one. */
    db_stmt *st = NULL;
    if (!db_prepare(s->db, &st,
                    "INSERT INTO inventory_snapshots (content_hash, recorded_at, hosts) "
                    "SELECT ?1, ?2, ?3 WHERE COALESCE((SELECT content_hash FROM "
                    "inventory_snapshots ORDER BY recorded_at DESC, id DESC LIMIT 1), '') <> ?1",
                    err))
        return -1;
    db_bind_text(st, 1, content_hash);
    db_bind_text(st, 2, at);
    db_bind_text(st, 3, hosts);
    int changed = store_exec_change(s, st, "recording an inventory snapshot", err);
    db_stmt_free(st);
    return changed < 0 ? -1 : changed > 0 ? 1 : 0;
}

/* The rows in force from ?1 on, without their (large) hosts: those are read
 * one at a time, so a week of snapshots is never in memory at once. */
#define SNAPSHOTS_SINCE                                                                            \
    "SELECT id, content_hash, recorded_at FROM inventory_snapshots WHERE recorded_at >= "          \
    "COALESCE((SELECT MAX(recorded_at) FROM inventory_snapshots WHERE recorded_at <= ?1), ?1) "    \
    "ORDER BY recorded_at, id"
#define SNAPSHOTS_ALL                                                                              \
    "SELECT id, content_hash, recorded_at FROM inventory_snapshots ORDER BY recorded_at, id"

int store_inventory_snapshots(store *s, const char *since, store_inventory_snapshot_fn fn,
                              void *ctx, vf_error *err)
{
    db_stmt *list = NULL, *one = NULL;
    store_rows rows = {0};
    int result = -1;
    if (!db_prepare(s->db, &list, since ? SNAPSHOTS_SINCE : SNAPSHOTS_ALL, err) ||
        !db_prepare(s->db, &one, "SELECT hosts FROM inventory_snapshots WHERE id = ?1", err))
        goto out;
    if (since)
        db_bind_text(list, 1, since);
    if (store_rows_collect(s, list, 0, &rows, "listing inventory snapshots", err) < 0)
        goto out;
    result = 0;
    bool stop = false;
    for (int row = 0; row < rows.count && result == 0 && !stop; row++) {
        store_rows hosts = {0};
        db_bind_int64(one, 1, store_rows_int(&rows, row, 0));
        if (store_rows_collect(s, one, 1, &hosts, "reading an inventory snapshot", err) < 0) {
            result = -1;
        } else if (hosts.count == 1) { /* 0: pruned since the listing */
            store_inventory_snapshot snapshot = {
                .id = store_rows_int(&rows, row, 0),
                .content_hash = store_rows_text(&rows, row, 1),
                .recorded_at = store_rows_text(&rows, row, 2),
                .hosts = store_rows_text(&hosts, 0, 0),
            };
            stop = fn(&snapshot, ctx) != 0;
        }
        store_rows_free(&hosts);
    }
out:
    store_rows_free(&rows);
    db_stmt_free(list);
    db_stmt_free(one);
    return result;
}

int store_history(store *s, const char *since, store_history_fn fn, void *ctx, vf_error *err)
{
    db_stmt *st = NULL;
    if (!db_prepare(
            s->db, &st,
            "SELECT 0, id, created_at, request, CASE WHEN kind = 'spare' THEN 1 ELSE 0 END, "
            "reason FROM tasks "
            "WHERE created_at >= ?1 "
            "UNION ALL "
            "SELECT 1, task_id, released_at, NULL, 0, NULL FROM reservations "
            "WHERE released_at >= ?1 AND bound_at IS NULL AND coalesce(vmid_only, 0) = 0 "
            "ORDER BY 3, 1, 2",
            err))
        return -1;
    db_bind_text(st, 1, since);
    store_rows rows = {0};
    int rc = store_rows_collect(s, st, 0, &rows, "reading the history to replay", err);
    db_stmt_free(st);
    for (int i = 0; rc == 0 && i < rows.count; i++) {
        store_history_step step = {
            .release = store_rows_int(&rows, i, 0) != 0,
            .task_id = store_rows_text(&rows, i, 1),
            .at = store_rows_text(&rows, i, 2),
            .request = store_rows_text(&rows, i, 3),
            .spare = store_rows_int(&rows, i, 4) != 0,
            .reason = store_rows_text(&rows, i, 5),
        };
        if (fn(&step, ctx) != 0)
            break;
    }
    store_rows_free(&rows);
    return rc;
}

int store_reservation_flow(store *s, const char *since, store_flow_fn fn, void *ctx, vf_error *err)
{
    static const char *const queries[2] = {
        "SELECT node, substr(created_at, 1, 13), cpu, memory, count(*) FROM reservations "
        "WHERE created_at >= ?1 GROUP BY 1, 2, 3, 4",
        "SELECT node, substr(released_at, 1, 13), cpu, memory, count(*) FROM reservations "
        "WHERE released_at >= ?1 AND bound_at IS NULL GROUP BY 1, 2, 3, 4"};
    int rc = 0;
    bool stop = false;
    for (int q = 0; q < 2 && rc == 0 && !stop; q++) {
        db_stmt *st = NULL;
        store_rows rows = {0};
        if (!db_prepare(s->db, &st, queries[q], err))
            return -1;
        db_bind_text(st, 1, since);
        rc = store_rows_collect(s, st, 0, &rows, "reading placements and releases", err);
        db_stmt_free(st);
        for (int i = 0; rc == 0 && i < rows.count && !stop; i++) {
            store_flow flow = {.node = store_rows_text(&rows, i, 0),
                               .hour = store_rows_text(&rows, i, 1),
                               .cpu = store_rows_double(&rows, i, 2),
                               .memory = store_rows_int(&rows, i, 3),
                               .count = store_rows_int(&rows, i, 4),
                               .sign = q == 0 ? 1 : -1};
            stop = fn(&flow, ctx) != 0;
        }
        store_rows_free(&rows);
    }
    return rc;
}
