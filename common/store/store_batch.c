/* store_batch: the hot path's append-only inserts, a few statements per
 * table per transaction (see store_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "store_internal.h"

/* A table's kept rows go as multi-row INSERT ... VALUES statements of these
 * sizes, largest first (100 rows: 64 + 16 + 16 + 4): each size is one
 * statement prepared once per connection, and the server reads the values
 * as it reads a single row's parameters. Rows keep their order, so identity
 * and sequence columns (task_events.id, outbox.seq) number them as separate
 * inserts did. */
static const int chunk_rows[STORE_BATCH_CHUNKS] = {64, 16, 4, 1};

typedef struct batch_table {
    const char *insert; /* up to VALUES */
    int columns;
    const char *what;
} batch_table;

static const batch_table tables[STORE_BATCH_COUNT] = {
    [STORE_BATCH_TASK_EVENTS] = {"INSERT INTO task_events (task_id, at, status, detail) VALUES ", 4,
                                 "recording task history"},
    [STORE_BATCH_OUTBOX] = {"INSERT INTO outbox (id, routing_key, body, created_at) VALUES ", 4,
                            "recording events"},
};

/* Only db.h and the store's struct here: store.c calls this file, not the
 * other way round. */
bool store_batches(const store *s)
{
    return s->defer_writes && db_in_transaction(s->db);
}

int store_batch_add(store *s, store_batch_id id, const char *const *values, vf_error *err)
{
    const batch_table *table = &tables[id];
    store_batch_rows *rows = &s->batches[id];
    size_t need = rows->n_values + (size_t)table->columns;
    size_t row = rows->n_values / (size_t)table->columns;
    if (grow_array((void **)&rows->values, &rows->cap, need, sizeof *rows->values) != 0 ||
        grow_array((void **)&rows->tags, &rows->cap_tags, row + 1, sizeof *rows->tags) != 0)
        goto nomem;
    rows->tags[row] = NULL;
    if (s->write_tag && !(rows->tags[row] = strdup(s->write_tag)))
        goto nomem;
    for (int i = 0; i < table->columns; i++) {
        char *copy = values[i] ? strdup(values[i]) : NULL;
        if (values[i] && !copy) {
            while (i-- > 0)
                free(rows->values[rows->n_values + (size_t)i]);
            free(rows->tags[row]);
            goto nomem;
        }
        rows->values[rows->n_values + (size_t)i] = copy;
    }
    rows->n_values = need;
    return 0;
nomem:
    vf_error_set(err, VF_ENOMEM, "store %s: %s: out of memory", s->path, table->what);
    return -1;
}

/* The INSERT of `n` rows, "(?1, ?2, ...), (...)", prepared in its slot. */
static db_stmt *chunk_stmt(store *s, store_batch_id id, int chunk, vf_error *err)
{
    db_stmt **slot = &s->batch_stmts[id][chunk];
    if (*slot)
        return db_prepare(s->db, slot, NULL, err);
    const batch_table *table = &tables[id];
    int n = chunk_rows[chunk];
    /* "?NNN, " at most 7 characters per value, "(" and ")" per row. */
    size_t size = strlen(table->insert) + (size_t)n * ((size_t)table->columns * 7 + 4) + 1;
    char *sql = malloc(size);
    if (!sql) {
        vf_error_set(err, VF_ENOMEM, "store %s: %s: out of memory", s->path, table->what);
        return NULL;
    }
    size_t at = (size_t)snprintf(sql, size, "%s", table->insert);
    int param = 1;
    for (int row = 0; row < n; row++)
        for (int column = 0; column < table->columns; column++)
            at += (size_t)snprintf(sql + at, size - at, "%s?%d%s",
                                   column == 0 ? (row == 0 ? "(" : ", (") : ", ", param++,
                                   column == table->columns - 1 ? ")" : "");
    db_stmt *st = db_prepare(s->db, slot, sql, err);
    free(sql);
    return st;
}

static void free_values(store_batch_rows *rows, int columns)
{
    for (size_t i = 0; i < rows->n_values; i++)
        free(rows->values[i]);
    for (size_t i = 0; columns && i < rows->n_values / (size_t)columns; i++)
        free(rows->tags[i]);
    rows->n_values = 0;
}

int store_batch_flush(store *s, vf_error *err)
{
    for (int id = 0; id < STORE_BATCH_COUNT; id++) {
        store_batch_rows *rows = &s->batches[id];
        if (rows->n_values == 0)
            continue;
        const batch_table *table = &tables[id];
        if (!store_batches(s)) {
            /* Rows are kept only inside one transaction: it ended without
             * them (a lost connection). */
            store_batch_drop(s);
            vf_error_set(err, VF_EUNAVAILABLE, "store %s: %s: the transaction ended first", s->path,
                         table->what);
            return -1;
        }
        size_t n_rows = rows->n_values / (size_t)table->columns, sent = 0;
        int rc = 0;
        for (int chunk = 0; rc == 0 && chunk < STORE_BATCH_CHUNKS; chunk++) {
            while (rc == 0 && n_rows - sent >= (size_t)chunk_rows[chunk]) {
                db_stmt *st = chunk_stmt(s, (store_batch_id)id, chunk, err);
                if (!st) {
                    rc = -1;
                    break;
                }
                const char *const *values =
                    (const char *const *)rows->values + sent * (size_t)table->columns;
                int n_values = chunk_rows[chunk] * table->columns;
                for (int i = 0; i < n_values; i++)
                    db_bind_text(st, i + 1, values[i]);
                /* No count to check: without ON CONFLICT an INSERT writes
                 * every row or fails (a unique, foreign-key or not-null
                 * violation), which fails the transaction. */
                rc = db_step_deferred(st, table->what, &(db_expect){0}, err);
                db_reset(st);
                sent += (size_t)chunk_rows[chunk];
            }
        }
        /* Sent (libpq copied the values) or failed: either way done with. */
        free_values(rows, table->columns);
        s->batch_sent = true;
        if (rc != 0)
            return -1;
    }
    return 0;
}

void store_batch_drop(store *s)
{
    for (int id = 0; id < STORE_BATCH_COUNT; id++)
        free_values(&s->batches[id], tables[id].columns);
    s->batch_sent = false;
}

void store_batch_free(store *s)
{
    store_batch_drop(s);
    for (int id = 0; id < STORE_BATCH_COUNT; id++) {
        free(s->batches[id].values);
        free(s->batches[id].tags);
        s->batches[id] = (store_batch_rows){0};
    }
    free(s->write_tag);
    s->write_tag = NULL;
}

void store_tag_writes(store *s, const char *tag)
{
    free(s->write_tag);
    s->write_tag = tag ? strdup(tag) : NULL; /* out of memory: untagged, never forgotten */
}

int store_forget_tagged(store *s, const char *tag, vf_error *err)
{
    if (s->batch_sent) {
        vf_error_set(err, VF_EINTERNAL,
                     "store %s: the transaction's history and events were sent already", s->path);
        return -1;
    }
    for (int id = 0; id < STORE_BATCH_COUNT; id++) {
        store_batch_rows *rows = &s->batches[id];
        size_t columns = (size_t)tables[id].columns, kept = 0;
        size_t n_rows = rows->n_values / columns;
        for (size_t row = 0; row < n_rows; row++) {
            char **values = rows->values + row * columns;
            if (rows->tags[row] && strcmp(rows->tags[row], tag) == 0) {
                for (size_t c = 0; c < columns; c++)
                    free(values[c]);
                free(rows->tags[row]);
                continue;
            }
            memmove(rows->values + kept * columns, values, columns * sizeof *values);
            rows->tags[kept++] = rows->tags[row];
        }
        rows->n_values = kept * columns;
    }
    return 0;
}
