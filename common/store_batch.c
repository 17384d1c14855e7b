/* store_batch: the hot path's append-only inserts, one statement per table
 * per transaction on PostgreSQL (see store_internal.h). */
#include <jansson.h>
#include <stdlib.h>

#include "store_internal.h"

/* Each table's rows arrive as one JSON array of rows, each row an array of
 * strings (or null) in the column order of the INSERT; the server unpacks
 * them in that order, so identity and sequence columns (task_events.id,
 * outbox.seq) number the rows as separate inserts would have. */
typedef struct batch_table {
    store_stmt_id stmt;
    int columns;
    const char *sql;
    const char *what;
} batch_table;

static const batch_table tables[STORE_BATCH_COUNT] = {
    [STORE_BATCH_TASK_EVENTS] = {STORE_STMT_BATCH_TASK_EVENTS, 4,
                                 "INSERT INTO task_events (task_id, at, status, detail) "
                                 "SELECT r->>0, r->>1, r->>2, r->>3 "
                                 "FROM json_array_elements(CAST(?1 AS json)) "
                                 "WITH ORDINALITY AS b(r, n) ORDER BY n",
                                 "recording task history"},
    [STORE_BATCH_OUTBOX] = {STORE_STMT_BATCH_OUTBOX, 4,
                            "INSERT INTO outbox (id, routing_key, body, created_at) "
                            "SELECT r->>0, r->>1, r->>2, r->>3 "
                            "FROM json_array_elements(CAST(?1 AS json)) "
                            "WITH ORDINALITY AS b(r, n) ORDER BY n",
                            "recording events"},
};

int store_batch_add(store *s, store_batch_id id, const char *const *values, vf_error *err)
{
    const batch_table *table = &tables[id];
    json_t **rows = &s->batches[id];
    if (!*rows)
        *rows = json_array();
    json_t *row = json_array();
    int bad = !*rows || !row;
    for (int i = 0; !bad && i < table->columns; i++) {
        json_t *value = values[i] ? json_string(values[i]) : json_null();
        bad = json_array_append_new(row, value) != 0;
    }
    if (bad || json_array_append_new(*rows, row) != 0) {
        if (bad)
            json_decref(row);
        vf_error_set(err, VF_EINVAL, "store %s: %s: out of memory or text not UTF-8", s->path,
                     table->what);
        return -1;
    }
    return 0;
}

int store_batch_flush(store *s, vf_error *err)
{
    for (int id = 0; id < STORE_BATCH_COUNT; id++) {
        json_t *rows = s->batches[id];
        if (!rows || json_array_size(rows) == 0)
            continue;
        const batch_table *table = &tables[id];
        if (!store_defers(s)) {
            /* Rows are kept only while writes are deferred, inside one
             * transaction: it ended without them (a lost connection). */
            store_batch_drop(s);
            vf_error_set(err, VF_EUNAVAILABLE, "store %s: %s: the transaction ended first", s->path,
                         table->what);
            return -1;
        }
        char *text = json_dumps(rows, JSON_COMPACT);
        json_array_clear(rows);
        if (!text) {
            vf_error_set(err, VF_ENOMEM, "store %s: %s: out of memory", s->path, table->what);
            return -1;
        }
        db_stmt *st = store_stmt(s, table->stmt, table->sql, err);
        int rc = -1;
        /* No count to check: without ON CONFLICT an INSERT ... SELECT
         * writes every row or fails (a unique, foreign-key or not-null
         * violation), which fails the transaction. */
        if (st && db_bind_text(st, 1, text) == 0)
            rc = store_exec_deferred(st, table->what, &(db_expect){0}, err);
        free(text);
        if (rc != 0)
            return -1;
    }
    return 0;
}

void store_batch_drop(store *s)
{
    for (int id = 0; id < STORE_BATCH_COUNT; id++) {
        json_decref(s->batches[id]);
        s->batches[id] = NULL;
    }
}
