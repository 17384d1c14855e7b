/* db: the thin SQL layer under the store, over SQLite or PostgreSQL (libpq).
 *
 * SQL is written once, with SQLite's numbered placeholders ?1, ?2, ... (a
 * bare ? takes the next number, as in SQLite); for PostgreSQL they become
 * $1, $2, ... Where the dialects differ the caller picks the text by
 * db_kind_of; keep such differences small.
 *
 * A statement is prepared once per connection and kept in a caller's slot
 * (db_prepare): SQLite compiles it, libpq sends PQprepare. Parameters are
 * bound by index (text, int64, double, NULL); db_step runs it (libpq: one
 * PQexecPrepared at the first step, text format both ways) and walks the
 * rows. Column values borrowed from a row are valid until the next
 * db_step or db_reset of that statement.
 *
 * Errors fill vf_error with "<label>: <what>: <server message>" and a code:
 * VF_EUNAVAILABLE busy, locked, lock or statement timeout, connection lost
 * (retry later); VF_EINVAL a unique, foreign-key, not-null or check
 * violation; VF_ECONFLICT a serialization failure or deadlock (redo the
 * transaction); VF_ENOMEM; VF_EIO anything else.
 *
 * Threads: a db handle and its statements are used by one thread at a time. */
#ifndef VF_DB_H
#define VF_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vf_error.h"

typedef struct db db;
typedef struct db_stmt db_stmt;

typedef enum { DB_SQLITE, DB_POSTGRES } db_kind;

/* db_step results besides -1. */
enum { DB_DONE = 0, DB_ROW = 1 };

/* Open an SQLite file (which must exist unless !read_only: SQLite creates it
 * then). Writers wait up to busy_timeout_ms for the write lock, trying for
 * it every millisecond. `label`
 * starts every error message ("store /var/lib/virtflow/virtflow.db"); it is
 * copied. Returns an owned handle or NULL with err set. */
db *db_open_sqlite(const char *path, bool read_only, int busy_timeout_ms, const char *label,
                   vf_error *err) __attribute__((warn_unused_result));

/* PostgreSQL connection settings. Only url is required. */
typedef struct db_pg_options {
    const char *url;      /* postgresql://USER@HOST:PORT/DB[?...] (libpq URI) */
    const char *password; /* overrides one in the URL; NULL: URL, ~/.pgpass or none */
    const char *sslmode;  /* libpq sslmode ("verify-full", "require", "disable"); NULL: libpq's */
    const char *ca_file;  /* sslrootcert; NULL: libpq's default */
    bool read_only;       /* every transaction read-only (default_transaction_read_only) */
} db_pg_options;

/* TCP keepalives and tcp_user_timeout are on by default (see db_open_pg), so a
 * dead host or a cut network is noticed by the kernel; the URL's own values win. */

/* Connect to PostgreSQL. `label` as for db_open_sqlite: it must not hold the
 * password. Returns an owned handle or NULL with err set (VF_EUNAVAILABLE
 * when the server cannot be reached, VF_EIO otherwise). */
db *db_open_pg(const db_pg_options *options, const char *label, vf_error *err)
    __attribute__((warn_unused_result));

/* PostgreSQL: bound every later command by `timeout_ms` (0: no bound, the
 * default, which migrations run under). The server cancels a statement that
 * runs longer (statement_timeout: VF_EUNAVAILABLE, the session stays). A
 * server that does not answer at all, frozen, partitioned or on a dead host,
 * is not waited for beyond DB_PG_ANSWER_GRACE_MS more: the command fails
 * with VF_EUNAVAILABLE and the connection is dropped as if it were lost (an
 * open transaction is gone with it: roll back; a COMMIT's outcome is then
 * unknown, as for any connection lost during a COMMIT). Connecting again is
 * bounded by connect_timeout (10 s unless the URL says otherwise). SQLite: a
 * no-op (its bound is the busy timeout). Returns 0 or -1 with err. */
#define DB_PG_ANSWER_GRACE_MS 2000
int db_set_timeout(db *d, int timeout_ms, vf_error *err) __attribute__((warn_unused_result));

/* Called while a command waits for the PostgreSQL server, at least every
 * DB_WAIT_HOOK_INTERVAL_MS: for work that must go on while the store is slow
 * or frozen, such as heartbeats on another connection. It runs on the
 * calling thread in the middle of a db call: it must not use this handle.
 * NULL removes it. SQLite never calls it. */
#define DB_WAIT_HOOK_INTERVAL_MS 500
typedef void (*db_wait_fn)(void *user);
void db_set_wait_hook(db *d, db_wait_fn fn, void *user);

/* Roll back an open transaction, free every statement prepared on the
 * handle, close it. NULL is a no-op. */
void db_close(db *d);

db_kind db_kind_of(const db *d);

/* SQLite only: the sqlite3 * behind the handle (for PRAGMAs, WAL, checkpoints);
 * NULL on PostgreSQL. */
void *db_sqlite_handle(db *d);

/* Run one or several ';'-separated statements without parameters (DDL,
 * BEGIN, migrations). Returns 0 or -1 with err set. */
int db_exec(db *d, const char *sql, const char *what, vf_error *err);

/* The statement in *slot, preparing `sql` on the first call; it is reset and
 * unbound. The statement belongs to the handle (db_close frees it) unless
 * given to db_stmt_free first. NULL with err set on failure. */
db_stmt *db_prepare(db *d, db_stmt **slot, const char *sql, vf_error *err);

/* Free a statement (PostgreSQL: DEALLOCATE it) and clear every slot pointer
 * db_prepare was given for it. NULL is a no-op. */
void db_stmt_free(db_stmt *st);

/* End the statement's run: reset, unbind, drop its result, release any lock a
 * SQLite reader holds. NULL is a no-op. */
void db_reset(db_stmt *st);

/* Bind parameter `index` (1-based). Text is copied on PostgreSQL and bound
 * without a copy on SQLite: the caller's string must live until db_reset.
 * NULL text binds SQL NULL. Return 0 or -1 (index out of range). */
int db_bind_text(db_stmt *st, int index, const char *text);
int db_bind_int64(db_stmt *st, int index, int64_t value);
int db_bind_double(db_stmt *st, int index, double value);
int db_bind_null(db_stmt *st, int index);

/* `value` in decimal, as PostgreSQL reads an integer parameter or an array
 * element, NUL-terminated in `out`; returns its length. Written digit by
 * digit: snprintf("%lld") costs several times more, and a batch formats
 * about a dozen integers per task (its binds and its claim's arrays). */
#define DB_INT64_TEXT 21 /* "-9223372036854775808" and its NUL */
size_t db_int64_text(int64_t value, char out[DB_INT64_TEXT]);

/* Run or advance: DB_ROW with a row to read, DB_DONE at the end (or for a
 * statement without rows), -1 with err set. */
int db_step(db_stmt *st, const char *what, vf_error *err);

int db_column_count(db_stmt *st);
/* NULL for SQL NULL. */
const char *db_column_text(db_stmt *st, int column);
bool db_column_is_null(db_stmt *st, int column);
/* 0 for SQL NULL. */
int64_t db_column_int64(db_stmt *st, int column);
double db_column_double(db_stmt *st, int column);

/* Rows inserted, updated or deleted by the statement's last run (after
 * DB_DONE). */
int64_t db_changes(db_stmt *st);

/* SQLite: the rowid of the row an INSERT's last run added (after DB_DONE
 * with db_changes 1), without the cost of RETURNING, which SQLite runs
 * through a table of its own (a third of a reservation's insert). 0 when
 * it added none, and always on PostgreSQL, where RETURNING is the way. */
int64_t db_inserted_id(db_stmt *st);

/* Whether a transaction is open on the handle (also one that failed and
 * awaits ROLLBACK on PostgreSQL). */
bool db_in_transaction(const db *d);

/* PostgreSQL: a statement of the open transaction failed, so the server
 * ignores everything until ROLLBACK (and turns a COMMIT into one). Always
 * false on SQLite, where a failed statement leaves the transaction usable. */
bool db_transaction_failed(const db *d);

/* What a deferred statement must do (db_step_deferred). */
typedef struct db_expect {
    int64_t min_changes;      /* rows it must insert, update or delete; 0: any number */
    vf_error_code short_code; /* the error when it changes fewer (VF_ECONFLICT, ...) */
    vf_error_code busy_code;  /* VF_EUNAVAILABLE from the server (a lock NOWAIT refused, a
                               * lost connection) reported as this instead; 0: as is */
    const char *short_text;   /* the message when it changes fewer (copied, bounded) */
    bool checks_itself;       /* PostgreSQL, deferred: the statement is its own check. It
                               * raises division_by_zero when it misses (as the checked form
                               * of a plain write does: see db_pg.c's checked_form), which is
                               * then reported with short_code and short_text; min_changes
                               * must be 0. Statements that write twice (a data-modifying
                               * WITH) cannot be wrapped and use this. Elsewhere (run now)
                               * the miss is the server's error as is. */
} db_expect;

/* Run a statement (its rows, if any, unread) whose outcome the caller needs only by the
 * end of the transaction. Outside a transaction, and on SQLite, it runs now:
 * returns 0, or -1 with err when it fails or misses `expect`. Inside a
 * PostgreSQL transaction it is sent without waiting (libpq pipeline mode)
 * and returns 0 once sent; the next call that waits for the server (a
 * statement with rows, db_exec, COMMIT) first collects every deferred
 * result in one round trip, and fails with the first deferred failure if
 * any. That failure sticks until ROLLBACK: every statement of the
 * transaction then fails with it, so COMMIT cannot succeed. The statement
 * is reset (its parameters may be bound again at once). */
int db_step_deferred(db_stmt *st, const char *what, const db_expect *expect, vf_error *err)
    __attribute__((warn_unused_result));

/* One statement without parameters (BEGIN, say) sent as db_step_deferred
 * sends, whether or not a transaction is open: PostgreSQL sends it without
 * waiting and reports its failure at the next call that waits (BEGIN and
 * the transaction's first read then cost one round trip); SQLite runs it
 * now. Returns 0, or -1 with err. */
int db_exec_deferred(db *d, const char *sql, const char *what, vf_error *err)
    __attribute__((warn_unused_result));

/* How many times this handle waited for the server's answer: every libpq
 * call that sends and then blocks until the reply (a statement, a prepare, a
 * DEALLOCATE, a reconnection; a connection counts once though it takes a
 * few). What a store's hot path costs at a network's round-trip time is
 * this count times that time. Always 0 on SQLite, which has no server. */
uint64_t db_round_trips(const db *d);

#endif
