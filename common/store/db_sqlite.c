/* db_sqlite: the SQLite backend of db (see db.h). */
#include "db.h"
#include "db_internal.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

static void sqlite_fail(db *d, int rc, const char *what, vf_error *err)
{
    vf_error_code code;
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        code = VF_EUNAVAILABLE;
        break;
    case SQLITE_CONSTRAINT:
        code = VF_EINVAL;
        break;
    case SQLITE_NOMEM:
        code = VF_ENOMEM;
        break;
    default:
        code = VF_EIO;
        break;
    }
    const char *message = d->sqlite ? sqlite3_errmsg(d->sqlite) : sqlite3_errstr(rc);
    vf_error_set(err, code, "%s: %s: %s", d->label, what, message);
}

/* SQLite's memory statistics take a process-wide mutex on every allocation
 * (dozens per statement); nothing here reads them (sqlite3_status,
 * sqlite3_memory_used) or sets a heap limit, which needs them. Only possible
 * before SQLite initialises, which the first open does: every handle of the
 * project opens here, so the first caller does it while any other waits in
 * pthread_once. Should something have initialised SQLite already,
 * sqlite3_config refuses (SQLITE_MISUSE) and the statistics stay on. */
static void configure_sqlite(void)
{
    (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* How often a writer waiting for the write lock tries again. SQLite's own
 * busy timeout backs off to 100 ms between tries; a worker under steady load
 * leaves the lock free for well under a millisecond between its
 * transactions, so a writer that slept that long (the retention job, the
 * relay, virtflowctl) found it taken try after try and waited seconds for a
 * lock that was free a tenth of the time. A try is one failed lock call. */
#define BUSY_RETRY_US 1000

/* sqlite3_busy_handler's callback: 1 waits and tries again, 0 gives up
 * (the statement then fails with SQLITE_BUSY). `tries` starts at 0 for each
 * wait. */
static int busy_retry(void *arg, int tries)
{
    db *d = arg;
    int64_t now = clock_mono_us();
    if (tries == 0)
        d->busy_since_us = now;
    if (now - d->busy_since_us >= (int64_t)d->busy_timeout_ms * 1000)
        return 0;
    struct timespec pause = {0, BUSY_RETRY_US * 1000L};
    nanosleep(&pause, NULL);
    return 1;
}

db *db_open_sqlite(const char *path, bool read_only, int busy_timeout_ms, const char *label,
                   vf_error *err)
{
    db *d = calloc(1, sizeof *d);
    if (!d || !(d->label = strdup(label))) {
        vf_error_set(err, VF_ENOMEM, "%s: out of memory", label);
        free(d);
        return NULL;
    }
    d->backend = &db_sqlite_backend;
    static pthread_once_t configured = PTHREAD_ONCE_INIT;
    pthread_once(&configured, configure_sqlite);
    /* NOMUTEX: a handle is used by one thread at a time (db.h). */
    int flags = SQLITE_OPEN_NOMUTEX | (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE);
    int rc = sqlite3_open_v2(path, &d->sqlite, flags, NULL);
    if (rc != SQLITE_OK) {
        sqlite_fail(d, rc, "opening", err);
        db_close(d);
        return NULL;
    }
    sqlite3_extended_result_codes(d->sqlite, 1);
    d->busy_timeout_ms = busy_timeout_ms;
    sqlite3_busy_handler(d->sqlite, busy_retry, d);
    return d;
}

static int sqlite_exec(db *d, const char *sql, const char *what, vf_error *err)
{
    char *message = NULL;
    int rc = sqlite3_exec(d->sqlite, sql, NULL, NULL, &message);
    if (rc != SQLITE_OK) {
        /* sqlite3_exec's message is the one for the failing statement. */
        vf_error_code code =
            (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED ? VF_EUNAVAILABLE : VF_EIO;
        vf_error_set(err, code, "%s: %s: %s", d->label, what,
                     message ? message : sqlite3_errstr(rc));
        sqlite3_free(message);
        return -1;
    }
    return 0;
}

static int sqlite_prepare(db_stmt *st, const char *sql, vf_error *err)
{
    /* PERSISTENT: kept for the life of the handle and run thousands of times. */
    int rc = sqlite3_prepare_v3(st->owner->sqlite, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->sqlite,
                                NULL);
    if (rc != SQLITE_OK) {
        sqlite_fail(st->owner, rc, "preparing a statement", err);
        return -1;
    }
    return 0;
}

static void sqlite_close(db *d)
{
    db_free_statements(d); /* sqlite3_close wants them finalized */
    if (d->sqlite) {
        if (!sqlite3_get_autocommit(d->sqlite))
            sqlite3_exec(d->sqlite, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close(d->sqlite);
    }
}

static int sqlite_set_timeout(db *d, int timeout_ms, vf_error *err)
{
    (void)d, (void)timeout_ms, (void)err;
    return 0; /* a local file: the busy timeout bounds the waits (db_open_sqlite) */
}

static bool sqlite_in_transaction(const db *d)
{
    return d->sqlite && !sqlite3_get_autocommit(d->sqlite);
}

static bool sqlite_transaction_failed(const db *d)
{
    (void)d;
    return false; /* a failed statement leaves the transaction usable */
}

static void sqlite_stmt_free(db_stmt *st)
{
    sqlite3_finalize(st->sqlite);
}

static void sqlite_reset(db_stmt *st)
{
    sqlite3_reset(st->sqlite);
    sqlite3_clear_bindings(st->sqlite);
}

static int sqlite_bind_text(db_stmt *st, int index, const char *text)
{
    int rc = text ? sqlite3_bind_text(st->sqlite, index, text, -1, SQLITE_STATIC)
                  : sqlite3_bind_null(st->sqlite, index);
    return rc == SQLITE_OK ? 0 : -1;
}

static int sqlite_bind_int64(db_stmt *st, int index, int64_t value)
{
    return sqlite3_bind_int64(st->sqlite, index, value) == SQLITE_OK ? 0 : -1;
}

static int sqlite_bind_double(db_stmt *st, int index, double value)
{
    return sqlite3_bind_double(st->sqlite, index, value) == SQLITE_OK ? 0 : -1;
}

static int sqlite_bind_null(db_stmt *st, int index)
{
    return sqlite3_bind_null(st->sqlite, index) == SQLITE_OK ? 0 : -1;
}

static int sqlite_step(db_stmt *st, const char *what, vf_error *err)
{
    db *d = st->owner;
    int rc = sqlite3_step(st->sqlite);
    if (rc == SQLITE_ROW)
        return DB_ROW;
    if (rc == SQLITE_DONE) {
        st->changes = sqlite3_changes(d->sqlite);
        st->inserted_id = st->changes > 0 ? sqlite3_last_insert_rowid(d->sqlite) : 0;
        return DB_DONE;
    }
    sqlite_fail(d, rc, what, err);
    return -1;
}

static int sqlite_column_count(db_stmt *st)
{
    return sqlite3_column_count(st->sqlite);
}

static bool sqlite_column_is_null(db_stmt *st, int column)
{
    return sqlite3_column_type(st->sqlite, column) == SQLITE_NULL;
}

static const char *sqlite_column_text(db_stmt *st, int column)
{
    return (const char *)sqlite3_column_text(st->sqlite, column);
}

static int64_t sqlite_column_int64(db_stmt *st, int column)
{
    return sqlite3_column_int64(st->sqlite, column);
}

static double sqlite_column_double(db_stmt *st, int column)
{
    return sqlite3_column_double(st->sqlite, column);
}

/* Nothing is deferred: SQLite answers from memory or the local file. */
const db_backend db_sqlite_backend = {
    .kind = DB_SQLITE,
    .close = sqlite_close,
    .exec = sqlite_exec,
    .exec_deferred = sqlite_exec,
    .set_timeout = sqlite_set_timeout,
    .in_transaction = sqlite_in_transaction,
    .transaction_failed = sqlite_transaction_failed,
    .prepare = sqlite_prepare,
    .stmt_free = sqlite_stmt_free,
    .reset = sqlite_reset,
    .bind_text = sqlite_bind_text,
    .bind_int64 = sqlite_bind_int64,
    .bind_double = sqlite_bind_double,
    .bind_null = sqlite_bind_null,
    .step = sqlite_step,
    .step_deferred = db_step_now,
    .column_count = sqlite_column_count,
    .column_is_null = sqlite_column_is_null,
    .column_text = sqlite_column_text,
    .column_int64 = sqlite_column_int64,
    .column_double = sqlite_column_double,
};
