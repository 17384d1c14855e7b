/* store_internal: what the store_*.c files share. Not for other modules:
 * everything here may change without notice. */
#ifndef VF_STORE_INTERNAL_H
#define VF_STORE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"
#include "store.h"
#include "store_reservations.h"
#include "store_tasks.h"

/* One slot per prepared statement; each is prepared on first use and kept
 * for the life of the handle (the worker runs these thousands of times per
 * second, so parsing SQL each time would cost more than the work). */
typedef enum {
    STORE_STMT_BEGIN,
    STORE_STMT_COMMIT,
    STORE_STMT_ROLLBACK,
    STORE_STMT_TASK_GET,
    STORE_STMT_TASKS_PREFETCH,
    STORE_STMT_TASK_INSERT,
    STORE_STMT_TASK_INSERT_NEW,
    STORE_STMT_TASK_UPDATE,
    STORE_STMT_TASK_WITHDRAW_EVENTS,
    STORE_STMT_TASK_WITHDRAW,
    STORE_STMT_TASK_UPDATE_IF,
    STORE_STMT_TASK_EVENT_ADD,
    STORE_STMT_TASK_EVENTS,
    STORE_STMT_TASKS_WAITING,
    STORE_STMT_TASKS_STALE_QUEUED,
    STORE_STMT_TASK_REQUEUE_TOUCH,
    STORE_STMT_TASK_GIVE_UP,
    STORE_STMT_TASK_SET_ACTION,
    STORE_STMT_RESERVATION_ADD,
    STORE_STMT_RESERVATIONS_LIVE,
    STORE_STMT_RESERVATIONS_COUNTED,
    STORE_STMT_RESERVATION_RELEASE_TASK,
    STORE_STMT_RESERVATION_RELEASE_VMID,
    STORE_STMT_RESERVATION_PREEMPT,
    STORE_STMT_RESERVATIONS_EXPIRE,
    STORE_STMT_RESERVATIONS_COUNTED_NODES,
    STORE_STMT_RESERVATION_RELEASE_EXPIRED_VMID,
    STORE_STMT_RESERVATION_HOLDING_VMID,
    STORE_STMT_RESERVATION_ADD_OR_FREE,
    STORE_STMT_LEASE_ACQUIRE,
    STORE_STMT_LEASE_RELEASE,
    STORE_STMT_LEASE_FORGET,
    STORE_STMT_LEASE_FENCE,
    STORE_STMT_LEASES_RENEW,
    STORE_STMT_LEASE_HOLDER,
    STORE_STMT_LEASE_TAKE_OVER,
    STORE_STMT_LEASES_LIVE,
    STORE_STMT_INVENTORY_FRESH_SET,
    STORE_STMT_RESERVATION_CLOCK,
    STORE_STMT_PROBE_WRITE,
    STORE_STMT_OUTBOX_ADD,
    STORE_STMT_OUTBOX_PENDING,
    STORE_STMT_OUTBOX_PUBLISHED,
    STORE_STMT_OUTBOX_CONFIRMED,
    STORE_STMT_OUTBOX_COUNT,
    STORE_STMT_OUTBOX_PRUNE,
    STORE_STMT_DELIVERY_ADD,
    STORE_STMT_DELIVERIES_DUE,
    STORE_STMT_DELIVERY_UPDATE,
    STORE_STMT_DELIVERIES_DUE_RECEIVER,
    STORE_STMT_DELIVERIES_REQUEUE,
    STORE_STMT_DELIVERY_REDELIVER,
    STORE_STMT_DELIVERY_REDELIVER_ALL,
    STORE_STMT_DELIVERIES_BACKLOG,
    STORE_STMT_DEAD_LETTER_RECORD,
    STORE_STMT_DEAD_LETTER_REDRIVEN,
    STORE_STMT_DEAD_LETTER_PARKED_AT,
    STORE_STMT_DEAD_LETTERS_FIRST,
    STORE_STMT_DEAD_LETTERS_AFTER,
    STORE_STMT_SPARE_ADD,
    STORE_STMT_SPARE_UPDATE,
    STORE_STMT_SPARES_BY_TASK,
    STORE_STMT_SPARES_BY_UPGRADE,
    STORE_STMT_SPARES_BY_RELEASE,
    STORE_STMT_SPARES_DUE,
    STORE_STMT_SPARES_ALL,
    STORE_STMT_GROUP_GET,
    STORE_STMT_GROUP_CLAIM,
    STORE_STMT_RESERVATIONS_SET_GROUP,
    STORE_STMT_OUTBOX_CONFIRMED_MANY,
    STORE_STMT_RESERVATION_END_TASK_RESOURCES,
    STORE_STMT_RESERVATIONS_HOLDING_RESOURCES,
    STORE_STMT_RESERVATION_END_RESOURCES,
    STORE_STMT_CLAIM,
    STORE_STMT_CLAIM_CHECKED,
    STORE_STMT_CLAIM_USED,
    STORE_STMT_CHANGES_SINCE,
    STORE_STMT_RESERVATION_INSERT_CLAIMED,
    STORE_STMT_RESERVATION_UNRECORD,
    STORE_STMT_RESERVATION_WITHDRAW,
    STORE_STMT_RESERVATIONS_LATEST_ID,
    STORE_STMT_TASK_UNDO,
    STORE_STMT_TASK_UNDO_NEW,
    STORE_STMT_DEFER_KEYS,
    STORE_STMT_RESERVATION_RELEASE_UNANSWERED,
    STORE_STMT_RESERVATION_KEEP_VMID,
    STORE_STMT_CLAIM_USED_RESOURCES,
    STORE_STMT_TASK_PROVENANCE,
    STORE_STMT_RECEIVER_STATE_PUT,
    STORE_STMT_RECEIVER_STATES,
    STORE_STMT_DELIVERIES_LAG,
    STORE_STMT_REDELIVERY_GET,
    STORE_STMT_REDELIVERY_ADD,
    STORE_STMT_REDELIVERY_MATCH_FAILED,
    STORE_STMT_REDELIVERY_MATCH_EXHAUSTED,
    STORE_STMT_REDELIVERY_RESET,
    STORE_STMT_REDELIVERY_PROGRESS,
    STORE_STMT_TASK_EVENTS_AFTER,
    STORE_STMT_OUTBOX_EVENTS_BETWEEN,
    STORE_STMT_PROCESS_BEAT,
    STORE_STMT_PROCESS_FORGET_SILENT,
    STORE_STMT_PROCESS_FORGET,
    STORE_STMT_PROCESSES_LIST,
    STORE_STMT_LEASES_LIST,
    STORE_STMT_ADMISSION_GET,
    STORE_STMT_ADMISSION_ADD,
    STORE_STMT_ADMISSION_REPLACE,
    STORE_STMT_ADMISSION_FORGET,
    STORE_STMT_COUNT,
} store_stmt_id;

/* List queries are built from fixed SQL fragments, one statement per
 * combination of filters present, so each uses the matching index. */
#define STORE_TASK_FILTERS 8
#define STORE_DELIVERY_FILTERS 5

/* store_task_filter's conditions in its field order, shared by the listings
 * (store_tasks.c) and the console's pages (store_console.c): fragment i in
 * this store's dialect, how many ? it has (each bound to value i), and the
 * values (NULL: not filtered; *like is the owned LIKE pattern of
 * filter->error, to free). store_task_filter_values returns 0, or -1 when
 * out of memory. */
const char *store_task_filter_sql(const store *s, int i);
int store_task_filter_params(int i);
int store_task_filter_values(const store_task_filter *f, const char *values[STORE_TASK_FILTERS],
                             char **like);

/* What a store file keeps for the open transaction only (today the tasks
 * store_tasks_prefetch read ahead): the file that fills it says how to free
 * it, and store.c drops it whenever a transaction ends or the store closes,
 * without knowing what it holds. */
typedef struct store_tx_cache {
    void *data;               /* NULL: none */
    void (*free)(void *data); /* set with data */
} store_tx_cache;

/* Free the transaction's cache, if any (store.c, at every transaction end). */
void store_tx_cache_drop(store *s);

/* The hot path's append-only inserts (store_batches: the worker's
 * transactions): each row would be its own statement, on PostgreSQL bound,
 * planned and executed by the server; kept here instead, a table's rows go
 * as a few multi-row INSERTs at the latest at commit, which cost the server
 * a fraction of that (and SQLite a few percent of the worker's CPU less).
 * Rows keep their order (and so their ids). */
typedef enum {
    STORE_BATCH_TASK_EVENTS, /* task_id, at, status, detail */
    STORE_BATCH_OUTBOX,      /* id, routing_key, body, created_at */
    STORE_BATCH_COUNT,
} store_batch_id;

/* The statement sizes a table's rows are sent in (store_batch.c). */
#define STORE_BATCH_CHUNKS 4

typedef struct store_batch_rows {
    char **values;   /* owned copies (NULL: SQL NULL), row after row */
    size_t n_values; /* rows times the table's columns */
    size_t cap;      /* grow_array */
    char **tags;     /* owned: each row's store_tag_writes tag (NULL: none) */
    size_t cap_tags;
} store_batch_rows;

/* Keep one row (the table's columns, in the order above; NULL for SQL NULL)
 * for the transaction. Returns 0, or -1 with err (out of memory). */
int store_batch_add(store *s, store_batch_id id, const char *const *values, vf_error *err);

/* Send every kept row (deferred on PostgreSQL, see db_step_deferred; run
 * now on SQLite): store_commit does,
 * and so must every statement of the transaction that reads or changes
 * those tables' rows. Returns 0, or -1 with err. */
int store_batch_flush(store *s, vf_error *err);

/* Forget the kept rows (store.c, at every transaction end). */
void store_batch_drop(store *s);
/* And free what holds them (store_close). */
void store_batch_free(store *s);

struct store {
    db *db;
    char *path; /* owned; in every error message: the file, or the URL without password */
    store_mode mode;
    int wal_fd; /* -1 unless store_defer_sync: the WAL, opened read-only to fsync it */
    db_stmt *stmts[STORE_STMT_COUNT];
    db_stmt *task_list[1 << STORE_TASK_FILTERS];
    db_stmt *delivery_list[1 << STORE_DELIVERY_FILTERS];
    bool defer_writes;                                           /* store_defer_writes */
    store_batch_rows batches[STORE_BATCH_COUNT];                 /* store_batch_add */
    db_stmt *batch_stmts[STORE_BATCH_COUNT][STORE_BATCH_CHUNKS]; /* store_batch_flush's */
    store_tx_cache tx_cache;                                     /* store_tx_cache_drop */
    char *write_tag; /* owned: store_tag_writes; NULL: none */
    bool batch_sent; /* kept rows were sent before the commit (a read needed them) */
};

/* Whether the store is on PostgreSQL (else SQLite), for the few statements
 * whose text differs between the dialects. */
bool store_is_pg(const store *s);

/* The store files speak db.h for statements (db_prepare, db_bind_*,
 * db_step, db_column_*, db_reset: a statement is reset before its function
 * returns, so it holds no lock and no borrowed text); the helpers below are
 * only what adds to it. */

/* db_prepare of the fixed statement slot `id` (SQL with SQLite's ?N
 * placeholders, see db.h). NULL with err set on failure. */
db_stmt *store_stmt(store *s, store_stmt_id id, const char *sql, vf_error *err);

/* A JSON array of the n strings, as text to bind (the statement unpacks it
 * with json_each or json_array_elements_text); free() it. NULL when out of
 * memory or a string is not UTF-8. */
char *store_json_strings(const char *const *values, size_t n);

/* A PostgreSQL array literal ("{1,NULL,\"a b\"}"), built element by
 * element (store_arrays.c): zero it, add, then finish (owned text, or NULL
 * when memory ran out at any step: the failure sticks) or free. */
typedef struct store_pg_array {
    char *text;
    size_t len, cap, n;
    bool failed;
} store_pg_array;
void store_pg_array_null(store_pg_array *a);
void store_pg_array_text(store_pg_array *a, const char *text); /* NULL: NULL */
void store_pg_array_int(store_pg_array *a, int64_t value);
void store_pg_array_double(store_pg_array *a, double value);
void store_pg_array_bool(store_pg_array *a, bool value);
char *store_pg_array_finish(store_pg_array *a);
void store_pg_array_free(store_pg_array *a);

/* A JSON array of the n ids, as text to bind; free() it. NULL when out of
 * memory. */
char *store_json_ids(const int64_t *ids, size_t n);

/* Bind helpers: negative "none" numbers bind SQL NULL. */
int store_bind_id(db_stmt *st, int index, int64_t value_or_negative);
/* A LIMIT: limit > 0, else no limit (a number both dialects accept). */
int store_bind_limit(db_stmt *st, int index, int limit);

/* Step a statement that changes rows and finish it. Returns the number of
 * rows changed, or -1 with err set. */
int store_exec_change(store *s, db_stmt *st, const char *what, vf_error *err);

/* Whether the hot path's writes are deferred now: store_defer_writes on a
 * PostgreSQL handle, inside a transaction. Such a write goes through
 * store_exec_deferred and cannot report its row count. */
bool store_defers(const store *s);

/* Whether the hot path's append-only inserts are kept for store_batch_flush
 * now: store_defer_writes, inside a transaction, on either backend. */
bool store_batches(const store *s);

/* db_step_deferred, then finish st. Returns 0 or -1 with err set. */
int store_exec_deferred(db_stmt *st, const char *what, const db_expect *expect, vf_error *err);

/* Owned copies of result rows, so that callbacks run after the query is
 * finished and may use the store themselves. Values are kept as text (NULL
 * for SQL NULL), which both backends give exactly for integers and text. */
typedef struct store_rows {
    int columns;
    int count;
    size_t capacity; /* rows allocated (grow_array) */
    char **values;   /* count * columns, owned */
} store_rows;

/* Step st to the end (or `limit` rows, 0: no limit), copying every row into
 * *rows (zero it first), then finish st. Returns 0 or -1 with err set. */
int store_rows_collect(store *s, db_stmt *st, int limit, store_rows *rows, const char *what,
                       vf_error *err);
void store_rows_free(store_rows *rows);

/* The reservations columns, in the order store_reservation_rows_each reads. */
#define STORE_RESERVATION_COLUMNS                                                                  \
    "id, task_id, node, cpu, memory, disk, vmid, created_at, expires_at, released_at, bound_at, "  \
    "priority, resources, resources_ended_at, vmid_only"

/* A bound reservation whose custom resources still count (schema/021), as
 * reservations_resources_held's predicate: that index is its one range. */
#define STORE_RESERVATION_HOLDS_RESOURCES                                                          \
    "bound_at IS NOT NULL AND resources IS NOT NULL AND resources_ended_at IS NULL"

/* "Not released" in the statements that find a task's reservations by its
 * id (release, preemption, a group's mark). Written so that PostgreSQL cannot
 * prove `released_at IS NULL` from it: the partial indexes on that predicate
 * (reservations_live, reservations_live_by_node, reservations_by_vmid) stay
 * out of their plans, and reservations_by_task's range on task_id is the only
 * index they can use. With `released_at IS NULL`, the generic plan (made at
 * the sixth run, often while the table has no statistics and all those
 * indexes cost the same) scanned reservations_live_by_node with no index
 * condition: every live reservation read on every call, until an ANALYZE.
 * A task has few reservations, released ones included. released_at
 * is a store time or NULL, never empty. */
#define STORE_RESERVATION_NOT_RELEASED "coalesce(released_at, '') = ''"

/* Free the vmid of a live reservation that expired at or before `now`
 * (the sweep marks them every few seconds). Returns the number released
 * (0 or 1), or -1. */
int store_reservation_release_expired_vmid(store *s, int64_t vmid, const char *now, vf_error *err);

/* The reservation of collected row `row` whose STORE_RESERVATION_COLUMNS
 * start at column `first`; its texts live as long as rows. */
store_reservation store_reservation_at(const store_rows *rows, int row, int first);

/* Call fn for each collected row of a SELECT STORE_RESERVATION_COLUMNS, until
 * it returns non-zero. */
void store_reservation_rows_each(const store_rows *rows, store_reservation_fn fn, void *ctx);
/* Run `st` (bound, a SELECT of STORE_RESERVATION_COLUMNS), then call fn for
 * each row as above. Returns 0, or -1 with err ("<what>: ..."). */
int store_reservations_each(store *s, db_stmt *st, const char *what, store_reservation_fn fn,
                            void *ctx, vf_error *err) __attribute__((warn_unused_result));

/* Column `column` of row `row`; text is NULL for SQL NULL and lives as long
 * as rows. */
const char *store_rows_text(const store_rows *rows, int row, int column);
int64_t store_rows_int(const store_rows *rows, int row, int column);
/* -1 for SQL NULL. */
int64_t store_rows_id(const store_rows *rows, int row, int column);
double store_rows_double(const store_rows *rows, int row, int column);

#endif
