/* store: opening, schema migrations, transactions and the helpers shared by
 * store_tasks.c, store_reservations.c, store_outbox.c, store_deliveries.c. */
#include "store.h"
#include "store_internal.h"
#include "store_migrate.h"

#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Writers wait this long for the write lock before reporting "busy". */
#define STORE_BUSY_TIMEOUT_MS 5000

int store_schema_version(void)
{
    return store_migrations_count;
}

void store_now(char buf[STORE_TIME_SIZE])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (store_format_time(ms, buf) != 0)
        snprintf(buf, STORE_TIME_SIZE, "1970-01-01T00:00:00.000Z");
}

int store_format_time(int64_t unix_ms, char buf[STORE_TIME_SIZE])
{
    if (unix_ms < 0)
        return -1;
    time_t seconds = (time_t)(unix_ms / 1000);
    struct tm tm;
    if (!gmtime_r(&seconds, &tm) || tm.tm_year + 1900 > 9999)
        return -1;
    /* A roomy buffer keeps the compiler's worst-case width analysis quiet;
     * the year check above bounds the real length to 24. */
    char text[80];
    int len = snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                       (int)(unix_ms % 1000));
    if (len < 0 || len >= STORE_TIME_SIZE)
        return -1;
    memcpy(buf, text, (size_t)len + 1);
    return 0;
}

/* ---- shared helpers ---- */

int store_fail(store *s, int rc, const char *what, vf_error *err)
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
    const char *message = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
    vf_error_set(err, code, "store %s: %s: %s", s->path, what, message);
    return -1;
}

sqlite3_stmt *store_prepare(store *s, sqlite3_stmt **slot, const char *sql, vf_error *err)
{
    if (*slot)
        return *slot;
    int rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(*slot);
        *slot = NULL;
        store_fail(s, rc, "preparing a statement", err);
        return NULL;
    }
    return *slot;
}

sqlite3_stmt *store_stmt(store *s, store_stmt_id id, const char *sql, vf_error *err)
{
    return store_prepare(s, &s->stmts[id], sql, err);
}

void store_stmt_done(sqlite3_stmt *st)
{
    if (!st)
        return;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

int store_bind_text(sqlite3_stmt *st, int index, const char *text)
{
    if (!text)
        return sqlite3_bind_null(st, index);
    return sqlite3_bind_text(st, index, text, -1, SQLITE_STATIC);
}

int store_bind_id(sqlite3_stmt *st, int index, int64_t value_or_negative)
{
    if (value_or_negative < 0)
        return sqlite3_bind_null(st, index);
    return sqlite3_bind_int64(st, index, value_or_negative);
}

int store_exec_change(store *s, sqlite3_stmt *st, const char *what, vf_error *err)
{
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) {
        store_fail(s, rc, what, err);
        store_stmt_done(st);
        return -1;
    }
    int changes = sqlite3_changes(s->db);
    store_stmt_done(st);
    return changes;
}

int store_rows_collect(store *s, sqlite3_stmt *st, int limit, store_rows *rows, const char *what,
                       vf_error *err)
{
    int result = -1;
    rows->columns = sqlite3_column_count(st);
    for (;;) {
        if (limit > 0 && rows->count >= limit)
            break;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            store_fail(s, rc, what, err);
            goto out;
        }
        if (rows->count == rows->capacity) {
            int capacity = rows->capacity ? rows->capacity * 2 : 16;
            sqlite3_value **values =
                realloc(rows->values, sizeof *values * (size_t)capacity * (size_t)rows->columns);
            if (!values) {
                vf_error_set(err, VF_ENOMEM, "store %s: %s: out of memory", s->path, what);
                goto out;
            }
            rows->values = values;
            rows->capacity = capacity;
        }
        sqlite3_value **row = rows->values + (size_t)rows->count * (size_t)rows->columns;
        for (int c = 0; c < rows->columns; c++) {
            row[c] = sqlite3_value_dup(sqlite3_column_value(st, c));
            if (!row[c]) {
                for (int k = 0; k < c; k++)
                    sqlite3_value_free(row[k]);
                vf_error_set(err, VF_ENOMEM, "store %s: %s: out of memory", s->path, what);
                goto out;
            }
        }
        rows->count++;
    }
    result = 0;
out:
    store_stmt_done(st);
    return result;
}

void store_rows_free(store_rows *rows)
{
    if (!rows)
        return;
    for (int i = 0; i < rows->count * rows->columns; i++)
        sqlite3_value_free(rows->values[i]);
    free(rows->values);
    memset(rows, 0, sizeof *rows);
}

static sqlite3_value *rows_value(const store_rows *rows, int row, int column)
{
    return rows->values[(size_t)row * (size_t)rows->columns + (size_t)column];
}

const char *store_rows_text(const store_rows *rows, int row, int column)
{
    return (const char *)sqlite3_value_text(rows_value(rows, row, column));
}

int64_t store_rows_int(const store_rows *rows, int row, int column)
{
    return sqlite3_value_int64(rows_value(rows, row, column));
}

int64_t store_rows_id(const store_rows *rows, int row, int column)
{
    sqlite3_value *value = rows_value(rows, row, column);
    if (sqlite3_value_type(value) == SQLITE_NULL)
        return -1;
    return sqlite3_value_int64(value);
}

double store_rows_double(const store_rows *rows, int row, int column)
{
    return sqlite3_value_double(rows_value(rows, row, column));
}

/* ---- opening ---- */

static int read_user_version(store *s, int *version, vf_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *version = sqlite3_column_int(st, 0);
            rc = SQLITE_OK;
        }
    }
    if (rc != SQLITE_OK)
        store_fail(s, rc, "reading the schema version", err);
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? 0 : -1;
}

static int exec_sql(store *s, const char *sql, const char *what, vf_error *err)
{
    char *message = NULL;
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, &message);
    if (rc != SQLITE_OK) {
        /* sqlite3_exec's message is the one for the failing statement. */
        vf_error_code code =
            (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED ? VF_EUNAVAILABLE : VF_EIO;
        vf_error_set(err, code, "store %s: %s: %s", s->path, what,
                     message ? message : sqlite3_errstr(rc));
        sqlite3_free(message);
        return -1;
    }
    return 0;
}

/* Apply the migrations newer than `version`, each in its own transaction
 * that also sets user_version, so a crash leaves the store at a version
 * boundary. The version is read again under the write lock because another
 * process (a second worker, the relay) may be migrating the same file. */
static int migrate(store *s, int version, vf_error *err)
{
    for (int i = 0; i < store_migrations_count; i++) {
        const store_migration *m = &store_migrations[i];
        if (m->version <= version)
            continue;
        char what[96];
        snprintf(what, sizeof what, "applying migration %s", m->name);
        if (exec_sql(s, "BEGIN IMMEDIATE", what, err) != 0)
            return -1;
        if (read_user_version(s, &version, err) != 0)
            goto fail;
        if (version >= m->version) {
            if (exec_sql(s, "COMMIT", what, err) != 0)
                goto fail;
            continue;
        }
        if (exec_sql(s, m->sql, what, err) != 0)
            goto fail;
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", m->version);
        if (exec_sql(s, pragma, what, err) != 0 || exec_sql(s, "COMMIT", what, err) != 0)
            goto fail;
        version = m->version;
        log_info("store %s: applied migration %s (schema version %d)", s->path, m->name,
                 m->version);
    }
    return 0;
fail:
    if (!sqlite3_get_autocommit(s->db))
        exec_sql(s, "ROLLBACK", "rolling back a migration", NULL);
    return -1;
}

/* Create the file ourselves so it gets owner-only permissions: it holds
 * every request, which may name internal hosts and clusters.
 *
 * Never open() and close() a database file that exists: close() cancels
 * every POSIX lock this process holds on it, including those of another
 * store handle already open on it (the worker's checkpoint thread opens a
 * second one), and two writers without locks corrupt the database. So only
 * a file that does not exist yet is touched here, created exclusively. */
static int create_file(const char *path, vf_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return 0;
    if (errno != ENOENT) {
        int saved = errno;
        vf_error_set(err, VF_EIO, "store %s: %s", path, strerror(saved));
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        int saved = errno;
        if (saved == EEXIST)
            return 0; /* created meanwhile by someone else: theirs to set up */
        if (saved == EACCES || saved == EPERM || saved == EROFS)
            vf_error_set(err, VF_EIO, "store %s: permission denied (%s)", path, strerror(saved));
        else
            vf_error_set(err, VF_EIO, "store %s: cannot create: %s", path, strerror(saved));
        return -1;
    }
    close(fd); /* a new, empty file: no handle of ours has it open */
    return 0;
}

/* The same rule for readers: check with stat/access, never with an fd. */
static int check_readable(const char *path, vf_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0 || access(path, R_OK) != 0) {
        int saved = errno;
        if (saved == ENOENT)
            vf_error_set(err, VF_EIO,
                         "store %s does not exist (start virtflow-worker once, or check "
                         "store.path)",
                         path);
        else if (saved == EACCES || saved == EPERM)
            vf_error_set(err, VF_EIO, "store %s: permission denied (%s)", path, strerror(saved));
        else
            vf_error_set(err, VF_EIO, "store %s: cannot open: %s", path, strerror(saved));
        return -1;
    }
    return 0;
}

static int set_pragma(store *s, const char *sql, const char *expect, vf_error *err)
{
    sqlite3_stmt *st = NULL;
    int result = -1;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        store_fail(s, rc, sql, err);
        goto out;
    }
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        store_fail(s, rc, sql, err);
        goto out;
    }
    if (expect) {
        const char *got = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
        if (!got || strcmp(got, expect) != 0) {
            vf_error_set(err, VF_EIO, "store %s: %s gave \"%s\", want \"%s\"", s->path, sql,
                         got ? got : "", expect);
            goto out;
        }
    }
    result = 0;
out:
    sqlite3_finalize(st);
    return result;
}

store *store_open(const char *path, store_mode mode, vf_error *err)
{
    store *s = NULL;
    if (!path || !*path) {
        vf_error_set(err, VF_EINVAL, "store path is empty");
        return NULL;
    }
    if (mode == STORE_READ_WRITE ? create_file(path, err) : check_readable(path, err))
        return NULL;

    s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        vf_error_set(err, VF_ENOMEM, "store %s: out of memory", path);
        goto fail;
    }
    s->mode = mode;
    s->wal_fd = -1;

    /* NOMUTEX: a handle is used by one thread at a time (store.h). */
    int flags = SQLITE_OPEN_NOMUTEX |
                (mode == STORE_READ_WRITE ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY);
    int rc = sqlite3_open_v2(path, &s->db, flags, NULL);
    if (rc != SQLITE_OK) {
        store_fail(s, rc, "opening", err);
        goto fail;
    }
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);

    int version = 0;
    if (read_user_version(s, &version, err) != 0)
        goto fail;
    int known = store_schema_version();
    if (version > known) {
        vf_error_set(err, VF_EIO,
                     "store %s has schema version %d, newer than this program knows (%d); "
                     "use a newer virtflow",
                     path, version, known);
        goto fail;
    }
    if (mode == STORE_READ_ONLY) {
        if (version < known) {
            vf_error_set(err, VF_EIO,
                         "store %s has schema version %d, older than this program's %d "
                         "(start virtflow-worker once to migrate it)",
                         path, version, known);
            goto fail;
        }
        return s;
    }

    /* A new store gives the pages that retention frees back to the file
     * system (store_vacuum_step). SQLite takes this only before the first
     * page is written, so before the switch to WAL (which writes the
     * header); on an older store it is a no-op (README "Retention"). */
    if (version == 0 && set_pragma(s, "PRAGMA auto_vacuum=INCREMENTAL", NULL, err) != 0)
        goto fail;
    /* WAL: readers (virtflowctl) never block the worker and vice versa.
     * synchronous=FULL: a commit is fsynced before store_commit returns,
     * because the broker message is acked right after (see store.h). */
    if (set_pragma(s, "PRAGMA journal_mode=WAL", "wal", err) != 0 ||
        set_pragma(s, "PRAGMA synchronous=FULL", NULL, err) != 0 ||
        set_pragma(s, "PRAGMA foreign_keys=ON", NULL, err) != 0)
        goto fail;
    if (migrate(s, version, err) != 0)
        goto fail;
    return s;
fail:
    store_close(s);
    return NULL;
}

void store_close(store *s)
{
    if (!s)
        return;
    for (int i = 0; i < STORE_STMT_COUNT; i++)
        sqlite3_finalize(s->stmts[i]);
    for (size_t i = 0; i < sizeof s->task_list / sizeof s->task_list[0]; i++)
        sqlite3_finalize(s->task_list[i]);
    for (size_t i = 0; i < sizeof s->delivery_list / sizeof s->delivery_list[0]; i++)
        sqlite3_finalize(s->delivery_list[i]);
    if (s->db && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    if (s->db && sqlite3_close(s->db) != SQLITE_OK)
        log_warn("store %s: close: %s", s->path, sqlite3_errmsg(s->db));
    /* After sqlite3_close: SQLite holds no lock on the WAL file, so this
     * close cannot drop one of its locks (the main file is never opened
     * outside SQLite, see store_open). */
    if (s->wal_fd >= 0)
        close(s->wal_fd);
    free(s->path);
    free(s);
}

/* ---- transactions ---- */

static int exec_stmt(store *s, store_stmt_id id, const char *sql, const char *what, vf_error *err)
{
    sqlite3_stmt *st = store_stmt(s, id, sql, err);
    if (!st)
        return -1;
    return store_exec_change(s, st, what, err) < 0 ? -1 : 0;
}

int store_set_autocheckpoint(store *s, int pages, vf_error *err)
{
    int rc = sqlite3_wal_autocheckpoint(s->db, pages);
    if (rc != SQLITE_OK) {
        vf_error_set(err, VF_EIO, "store %s: setting autocheckpoint: %s", s->path,
                     sqlite3_errstr(rc));
        return -1;
    }
    return 0;
}

int store_checkpoint(store *s, int *wal_pages, int *copied, vf_error *err)
{
    int log = 0, done = 0;
    int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
        vf_error_set(err, rc == SQLITE_LOCKED ? VF_EUNAVAILABLE : VF_EIO,
                     "store %s: checkpoint: %s", s->path, sqlite3_errmsg(s->db));
        return -1;
    }
    if (wal_pages)
        *wal_pages = log;
    if (copied)
        *copied = done;
    return 0;
}

int store_defer_sync(store *s, vf_error *err)
{
    if (s->mode != STORE_READ_WRITE) {
        vf_error_set(err, VF_EINTERNAL, "store %s: deferred sync needs a read-write handle",
                     s->path);
        return -1;
    }
    if (s->wal_fd >= 0)
        return 0;
    /* The WAL exists from the first transaction in WAL mode (store_open ran
     * several) until the last connection closes; this one stays open. */
    const char *wal = sqlite3_filename_wal(sqlite3_db_filename(s->db, "main"));
    int fd = wal ? open(wal, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) {
        int saved = errno;
        vf_error_set(err, VF_EIO, "store %s: opening the WAL to sync it: %s", s->path,
                     wal ? strerror(saved) : "no WAL file name");
        return -1;
    }
    if (set_pragma(s, "PRAGMA synchronous=NORMAL", NULL, err) != 0) {
        close(fd);
        return -1;
    }
    s->wal_fd = fd;
    return 0;
}

int store_sync(store *s, vf_error *err)
{
    if (s->wal_fd < 0) {
        vf_error_set(err, VF_EINTERNAL, "store %s: sync without store_defer_sync", s->path);
        return -1;
    }
    if (fdatasync(s->wal_fd) != 0) {
        int saved = errno;
        vf_error_set(err, VF_EIO, "store %s: fdatasync of the WAL: %s", s->path, strerror(saved));
        return -1;
    }
    /* A WAL unlinked under us (deleted by hand) would make every sync a
     * no-op for the file SQLite now writes: refuse rather than pretend. */
    struct stat st;
    if (fstat(s->wal_fd, &st) != 0 || st.st_nlink == 0) {
        vf_error_set(err, VF_EIO, "store %s: the WAL file was removed while in use", s->path);
        return -1;
    }
    return 0;
}

bool store_in_transaction(const store *s)
{
    return s && s->db && !sqlite3_get_autocommit(s->db);
}

int store_begin(store *s, vf_error *err)
{
    if (store_in_transaction(s)) {
        vf_error_set(err, VF_EINTERNAL, "store %s: begin: a transaction is already open", s->path);
        return -1;
    }
    /* IMMEDIATE takes the write lock now, waiting up to the busy timeout,
     * rather than at the first write where SQLITE_BUSY cannot be waited out. */
    return exec_stmt(s, STORE_STMT_BEGIN, "BEGIN IMMEDIATE", "begin", err);
}

int store_commit(store *s, vf_error *err)
{
    if (exec_stmt(s, STORE_STMT_COMMIT, "COMMIT", "commit", err) == 0)
        return 0;
    /* A failed COMMIT may leave the transaction open; the contract is that a
     * failed commit did nothing, so end it here. */
    if (store_in_transaction(s))
        (void)store_rollback(s, NULL);
    return -1;
}

int store_rollback(store *s, vf_error *err)
{
    if (!store_in_transaction(s))
        return 0;
    return exec_stmt(s, STORE_STMT_ROLLBACK, "ROLLBACK", "rollback", err);
}

int store_probe_write(store *s, vf_error *err)
{
    char now[STORE_TIME_SIZE];
    store_now(now);
    if (store_begin(s, err) < 0)
        return -1;
    sqlite3_stmt *st = store_stmt(s, STORE_STMT_PROBE_WRITE,
                                  "INSERT INTO store_probe (id, at) VALUES (1, ?1) "
                                  "ON CONFLICT (id) DO UPDATE SET at = excluded.at",
                                  err);
    if (!st || store_bind_text(st, 1, now) != SQLITE_OK ||
        store_exec_change(s, st, "probing the store with a write", err) < 0 ||
        store_commit(s, err) < 0) {
        if (st)
            store_stmt_done(st);
        (void)store_rollback(s, NULL);
        return -1;
    }
    return 0;
}
