/* store: opening, schema migrations, transactions and the helpers shared by
 * store_tasks.c, store_reservations.c, store_outbox.c, store_deliveries.c. */
#include "store.h"
#include "store_internal.h"
#include "store_migrate.h"

#include "clock.h"
#include "grow.h"
#include "log.h"

#include <jansson.h>
#include <sqlite3.h>

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
    if (store_format_time(clock_wall_ms(), buf) != 0)
        snprintf(buf, STORE_TIME_SIZE, "1970-01-01T00:00:00.000Z");
}

/* `width` decimal digits of `value` at `out`, zero-padded. */
static char *put_digits(char *out, int value, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        out[i] = (char)('0' + value % 10);
        value /= 10;
    }
    return out + width;
}

int store_format_time(int64_t unix_ms, char buf[STORE_TIME_SIZE])
{
    if (unix_ms < 0)
        return -1;
    time_t seconds = (time_t)(unix_ms / 1000);
    struct tm tm;
    if (!gmtime_r(&seconds, &tm) || tm.tm_year + 1900 > 9999)
        return -1;
    /* "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" written digit by digit: every
     * task writes two of these, and snprintf cost more than the rest of
     * them together. */
    char *out = put_digits(buf, tm.tm_year + 1900, 4);
    *out++ = '-';
    out = put_digits(out, tm.tm_mon + 1, 2);
    *out++ = '-';
    out = put_digits(out, tm.tm_mday, 2);
    *out++ = 'T';
    out = put_digits(out, tm.tm_hour, 2);
    *out++ = ':';
    out = put_digits(out, tm.tm_min, 2);
    *out++ = ':';
    out = put_digits(out, tm.tm_sec, 2);
    *out++ = '.';
    out = put_digits(out, (int)(unix_ms % 1000), 3);
    *out++ = 'Z';
    *out = '\0';
    return 0;
}

/* ---- shared helpers ---- */

bool store_is_pg(const store *s)
{
    return db_kind_of(s->db) == DB_POSTGRES;
}

void store_defer_writes(store *s)
{
    s->defer_writes = true;
}

bool store_defers(const store *s)
{
    return s->defer_writes && store_is_pg(s) && store_in_transaction(s);
}

int store_exec_deferred(db_stmt *st, const char *what, const db_expect *expect, vf_error *err)
{
    int rc = db_step_deferred(st, what, expect, err);
    db_reset(st);
    return rc;
}

db_stmt *store_stmt(store *s, store_stmt_id id, const char *sql, vf_error *err)
{
    return db_prepare(s->db, &s->stmts[id], sql, err);
}

char *store_json_strings(const char *const *values, size_t n)
{
    json_t *array = json_array();
    for (size_t i = 0; array && i < n; i++)
        if (json_array_append_new(array, json_string(values[i])) != 0) {
            json_decref(array);
            array = NULL;
        }
    char *text = array ? json_dumps(array, JSON_COMPACT) : NULL;
    json_decref(array);
    return text;
}

char *store_json_ids(const int64_t *ids, size_t n)
{
    json_t *array = json_array();
    for (size_t i = 0; array && i < n; i++)
        if (json_array_append_new(array, json_integer(ids[i])) != 0) {
            json_decref(array);
            array = NULL;
        }
    char *text = array ? json_dumps(array, JSON_COMPACT) : NULL;
    json_decref(array);
    return text;
}

int store_bind_id(db_stmt *st, int index, int64_t value_or_negative)
{
    if (value_or_negative < 0)
        return db_bind_null(st, index);
    return db_bind_int64(st, index, value_or_negative);
}

int store_bind_limit(db_stmt *st, int index, int limit)
{
    /* SQLite reads LIMIT -1 as "none", PostgreSQL rejects it. */
    return db_bind_int64(st, index, limit > 0 ? limit : INT64_MAX);
}

int store_exec_change(store *s, db_stmt *st, const char *what, vf_error *err)
{
    int rc = db_step(st, what, err);
    if (rc != DB_DONE) {
        if (rc == DB_ROW)
            vf_error_set(err, VF_EINTERNAL, "store %s: %s: the statement returned rows", s->path,
                         what);
        db_reset(st);
        return -1;
    }
    int changes = (int)db_changes(st);
    db_reset(st);
    return changes;
}

int store_rows_collect(store *s, db_stmt *st, int limit, store_rows *rows, const char *what,
                       vf_error *err)
{
    int result = -1;
    for (;;) {
        if (limit > 0 && rows->count >= limit)
            break;
        int rc = db_step(st, what, err);
        if (rc == DB_DONE)
            break;
        if (rc != DB_ROW)
            goto out;
        rows->columns = db_column_count(st);
        if (grow_array((void **)&rows->values, &rows->capacity, (size_t)rows->count + 1,
                       sizeof *rows->values * (size_t)rows->columns) < 0)
            goto nomem;
        char **row = rows->values + (size_t)rows->count * (size_t)rows->columns;
        for (int c = 0; c < rows->columns; c++) {
            const char *text = db_column_text(st, c);
            row[c] = NULL;
            if (text && !(row[c] = strdup(text))) {
                for (int k = 0; k < c; k++)
                    free(row[k]);
                goto nomem;
            }
        }
        rows->count++;
    }
    result = 0;
    goto out;
nomem:
    vf_error_set(err, VF_ENOMEM, "store %s: %s: out of memory", s->path, what);
out:
    db_reset(st);
    return result;
}

void store_rows_free(store_rows *rows)
{
    if (!rows)
        return;
    for (int i = 0; i < rows->count * rows->columns; i++)
        free(rows->values[i]);
    free(rows->values);
    memset(rows, 0, sizeof *rows);
}

const char *store_rows_text(const store_rows *rows, int row, int column)
{
    return rows->values[(size_t)row * (size_t)rows->columns + (size_t)column];
}

int64_t store_rows_int(const store_rows *rows, int row, int column)
{
    const char *text = store_rows_text(rows, row, column);
    return text ? strtoll(text, NULL, 10) : 0;
}

int64_t store_rows_id(const store_rows *rows, int row, int column)
{
    const char *text = store_rows_text(rows, row, column);
    return text ? strtoll(text, NULL, 10) : -1;
}

double store_rows_double(const store_rows *rows, int row, int column)
{
    const char *text = store_rows_text(rows, row, column);
    return text ? strtod(text, NULL) : 0.0;
}

/* ---- opening ---- */

/* Run one query that returns one integer (0 when it returns no row). */
static int query_int(store *s, const char *sql, int64_t *value, const char *what, vf_error *err)
{
    db_stmt *st = NULL;
    if (!db_prepare(s->db, &st, sql, err))
        return -1;
    int rc = db_step(st, what, err);
    *value = rc == DB_ROW ? db_column_int64(st, 0) : 0;
    db_stmt_free(st);
    return rc < 0 ? -1 : 0;
}

/* SQLite: PRAGMA user_version. PostgreSQL: the one row of virtflow_schema,
 * 0 while that table does not exist. */
static int read_version(store *s, int *version, vf_error *err)
{
    int64_t value = 0;
    const char *what = "reading the schema version";
    if (store_is_pg(s)) {
        int64_t exists = 0;
        if (query_int(s,
                      "SELECT CASE WHEN to_regclass('virtflow_schema') IS NULL THEN 0 ELSE 1 END",
                      &exists, what, err) != 0)
            return -1;
        if (exists && query_int(s, "SELECT version FROM virtflow_schema", &value, what, err) != 0)
            return -1;
    } else if (query_int(s, "PRAGMA user_version", &value, what, err) != 0) {
        return -1;
    }
    *version = (int)value;
    return 0;
}

/* Any constant: PostgreSQL's advisory locks are named by number. */
#define STORE_PG_MIGRATION_LOCK 0x76697274666c6f77LL /* "virtflow" */

/* Take the store-wide migration lock for this transaction: SQLite's write
 * lock, or on PostgreSQL (which has none) an advisory lock, so processes
 * starting together apply each migration once. */
static int lock_for_migration(store *s, const char *what, vf_error *err)
{
    if (!store_is_pg(s))
        return db_exec(s->db, "BEGIN IMMEDIATE", what, err);
    char sql[320];
    snprintf(sql, sizeof sql,
             "BEGIN; SELECT pg_advisory_xact_lock(%lld); "
             "CREATE TABLE IF NOT EXISTS virtflow_schema (version INTEGER NOT NULL); "
             "INSERT INTO virtflow_schema SELECT 0 WHERE NOT EXISTS "
             "(SELECT 1 FROM virtflow_schema)",
             (long long)STORE_PG_MIGRATION_LOCK);
    return db_exec(s->db, sql, what, err);
}

static int write_version(store *s, int version, const char *what, vf_error *err)
{
    char sql[64];
    if (store_is_pg(s))
        snprintf(sql, sizeof sql, "UPDATE virtflow_schema SET version = %d", version);
    else
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", version);
    return db_exec(s->db, sql, what, err);
}

/* Apply the migrations newer than `version`, each in its own transaction
 * that also records the version, so a crash leaves the store at a version
 * boundary. The version is read again under the migration lock because
 * another process (a second worker, the relay) may be migrating the same
 * store. */
static int migrate(store *s, int version, vf_error *err)
{
    const store_migration *migrations = store_is_pg(s) ? store_pg_migrations : store_migrations;
    int count = store_is_pg(s) ? store_pg_migrations_count : store_migrations_count;
    for (int i = 0; i < count; i++) {
        const store_migration *m = &migrations[i];
        if (m->version <= version)
            continue;
        char what[96];
        snprintf(what, sizeof what, "applying migration %s", m->name);
        if (lock_for_migration(s, what, err) != 0)
            goto fail;
        if (read_version(s, &version, err) != 0)
            goto fail;
        if (version >= m->version) {
            if (db_exec(s->db, "COMMIT", what, err) != 0)
                goto fail;
            continue;
        }
        if (db_exec(s->db, m->sql, what, err) != 0 ||
            write_version(s, m->version, what, err) != 0 ||
            db_exec(s->db, "COMMIT", what, err) != 0)
            goto fail;
        version = m->version;
        log_info("store %s: applied migration %s (schema version %d)", s->path, m->name,
                 m->version);
    }
    return 0;
fail:
    if (db_in_transaction(s->db))
        db_exec(s->db, "ROLLBACK", "rolling back a migration", NULL);
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
    db_stmt *st = NULL;
    int result = -1;
    if (!db_prepare(s->db, &st, sql, err))
        goto out;
    int rc = db_step(st, sql, err);
    if (rc < 0)
        goto out;
    if (expect) {
        const char *got = rc == DB_ROW ? db_column_text(st, 0) : NULL;
        if (!got || strcmp(got, expect) != 0) {
            vf_error_set(err, VF_EIO, "store %s: %s gave \"%s\", want \"%s\"", s->path, sql,
                         got ? got : "", expect);
            goto out;
        }
    }
    result = 0;
out:
    db_stmt_free(st);
    return result;
}

bool store_is_url(const char *location)
{
    return location && (strncmp(location, "postgresql://", 13) == 0 ||
                        strncmp(location, "postgres://", 11) == 0);
}

void store_url_for_messages(const char *url, char *out, size_t size)
{
    const char *scheme_end = strstr(url, "://");
    const char *authority = scheme_end ? scheme_end + 3 : url;
    size_t authority_len = strcspn(authority, "/?");
    const char *at = NULL;
    for (size_t i = 0; i < authority_len; i++)
        if (authority[i] == '@')
            at = authority + i; /* the last one: a password may hold '@' */
    const char *colon = at ? memchr(authority, ':', (size_t)(at - authority)) : NULL;
    if (colon)
        snprintf(out, size, "%.*s***%s", (int)(colon + 1 - url), url, at);
    else
        snprintf(out, size, "%s", url);
    char *password = strstr(out, "password=");
    if (password) {
        char *end = password + 9 + strcspn(password + 9, "&");
        memmove(password + 12, end, strlen(end) + 1);
        memcpy(password + 9, "***", 3);
    }
}

/* The store on its database handle: check the schema version, migrate a
 * read-write store. Takes s; NULL with err set on failure. */
static store *store_ready(store *s, vf_error *err)
{
    int version = 0;
    if (read_version(s, &version, err) != 0)
        goto fail;
    int known = store_is_pg(s) ? store_pg_migrations_count : store_migrations_count;
    if (version > known) {
        vf_error_set(err, VF_EIO,
                     "store %s has schema version %d, newer than this program knows (%d); "
                     "use a newer virtflow",
                     s->path, version, known);
        goto fail;
    }
    if (s->mode == STORE_READ_ONLY) {
        if (version < known) {
            vf_error_set(err, VF_EIO,
                         "store %s has schema version %d, older than this program's %d "
                         "(start virtflow-worker once to migrate it)",
                         s->path, version, known);
            goto fail;
        }
        return s;
    }

    /* A new store gives the pages that retention frees back to the file
     * system (store_vacuum_step). SQLite takes this only before the first
     * page is written, so before the switch to WAL (which writes the
     * header); on an older store it is a no-op (docs/upgrading.md). */
    if (!store_is_pg(s) && version == 0 &&
        set_pragma(s, "PRAGMA auto_vacuum=INCREMENTAL", NULL, err) != 0)
        goto fail;
    /* WAL: readers (virtflowctl) never block the worker and vice versa.
     * synchronous=FULL: a commit is fsynced before store_commit returns,
     * because the broker message is acked right after (see store.h). */
    if (!store_is_pg(s) && (set_pragma(s, "PRAGMA journal_mode=WAL", "wal", err) != 0 ||
                            set_pragma(s, "PRAGMA synchronous=FULL", NULL, err) != 0 ||
                            set_pragma(s, "PRAGMA foreign_keys=ON", NULL, err) != 0))
        goto fail;
    if (migrate(s, version, err) != 0)
        goto fail;
    return s;
fail:
    store_close(s);
    return NULL;
}

static store *store_new(const char *shown, store_mode mode, vf_error *err)
{
    store *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(shown))) {
        vf_error_set(err, VF_ENOMEM, "store %s: out of memory", shown);
        free(s);
        return NULL;
    }
    s->mode = mode;
    s->wal_fd = -1;
    return s;
}

static store *open_pg(const store_location *where, store_mode mode, vf_error *err)
{
    char shown[512];
    store_url_for_messages(where->url, shown, sizeof shown);
    store *s = store_new(shown, mode, err);
    if (!s)
        return NULL;
    char label[600];
    snprintf(label, sizeof label, "store %s", shown);
    db_pg_options options = {
        .url = where->url,
        .password = where->password,
        .read_only = mode == STORE_READ_ONLY,
    };
    /* With a CA to check against, check the server's certificate and name;
     * tls_verify false still insists on TLS but checks nothing (libpq would
     * check the chain under "require" if it were given the CA). Without a CA
     * the URL's sslmode (libpq's default: prefer) applies. */
    if (where->ca_file && where->tls_verify) {
        options.sslmode = "verify-full";
        options.ca_file = where->ca_file;
    } else if (where->ca_file) {
        options.sslmode = "require";
    }
    if (!(s->db = db_open_pg(&options, label, err))) {
        store_close(s);
        return NULL;
    }
    /* After the migrations, which may rightly take longer. */
    if (!(s = store_ready(s, err)))
        return NULL;
    if (db_set_timeout(s->db, where->statement_timeout_ms, err) != 0) {
        store_close(s);
        return NULL;
    }
    return s;
}

void store_set_wait_hook(store *s, void (*fn)(void *user), void *user)
{
    db_set_wait_hook(s->db, fn, user);
}

store *store_open_at(const store_location *where, store_mode mode, vf_error *err)
{
    if ((where->path && *where->path) == (where->url && *where->url)) {
        vf_error_set(err, VF_EINVAL, "store: give either a path or a postgresql:// URL");
        return NULL;
    }
    if (where->url && *where->url) {
        if (!store_is_url(where->url)) {
            vf_error_set(err, VF_EINVAL, "store URL must start with postgresql://");
            return NULL;
        }
        return open_pg(where, mode, err);
    }
    const char *path = where->path;
    if (mode == STORE_READ_WRITE ? create_file(path, err) : check_readable(path, err))
        return NULL;
    store *s = store_new(path, mode, err);
    if (!s)
        return NULL;
    char label[4200];
    snprintf(label, sizeof label, "store %s", path);
    if (!(s->db =
              db_open_sqlite(path, mode == STORE_READ_ONLY, STORE_BUSY_TIMEOUT_MS, label, err))) {
        store_close(s);
        return NULL;
    }
    return store_ready(s, err);
}

store *store_open(const char *path, store_mode mode, vf_error *err)
{
    if (!path || !*path) {
        vf_error_set(err, VF_EINVAL, "store path is empty");
        return NULL;
    }
    store_location where = {.tls_verify = true, .statement_timeout_ms = STORE_STATEMENT_TIMEOUT_MS};
    if (store_is_url(path))
        where.url = path;
    else
        where.path = path;
    return store_open_at(&where, mode, err);
}

void store_tx_cache_drop(store *s)
{
    if (s->tx_cache.data && s->tx_cache.free)
        s->tx_cache.free(s->tx_cache.data);
    s->tx_cache = (store_tx_cache){0};
}

void store_close(store *s)
{
    if (!s)
        return;
    /* db_close frees every statement and rolls back an open transaction. */
    db_close(s->db);
    /* After the database is closed: SQLite holds no lock on the WAL file, so
     * this close cannot drop one of its locks (the main file is never opened
     * outside SQLite, see store_open). */
    if (s->wal_fd >= 0)
        close(s->wal_fd);
    store_tx_cache_drop(s);
    store_batch_free(s);
    free(s->path);
    free(s);
}

/* ---- transactions ---- */

static int exec_stmt(store *s, store_stmt_id id, const char *sql, const char *what, vf_error *err)
{
    db_stmt *st = store_stmt(s, id, sql, err);
    if (!st)
        return -1;
    return store_exec_change(s, st, what, err) < 0 ? -1 : 0;
}

int store_set_autocheckpoint(store *s, int pages, vf_error *err)
{
    if (store_is_pg(s))
        return 0; /* checkpoints are the server's */
    int rc = sqlite3_wal_autocheckpoint(db_sqlite_handle(s->db), pages);
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
    if (!store_is_pg(s)) {
        sqlite3 *handle = db_sqlite_handle(s->db);
        int rc = sqlite3_wal_checkpoint_v2(handle, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
            vf_error_set(err, rc == SQLITE_LOCKED ? VF_EUNAVAILABLE : VF_EIO,
                         "store %s: checkpoint: %s", s->path, sqlite3_errmsg(handle));
            return -1;
        }
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
    if (store_is_pg(s) || s->wal_fd >= 0)
        return 0; /* PostgreSQL: a COMMIT is durable when it returns (store.h) */
    /* The WAL exists from the first transaction in WAL mode (store_open ran
     * several) until the last connection closes; this one stays open. */
    sqlite3 *handle = db_sqlite_handle(s->db);
    const char *wal = sqlite3_filename_wal(sqlite3_db_filename(handle, "main"));
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
    if (store_is_pg(s))
        return 0;
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

uint64_t store_round_trips(const store *s)
{
    return s ? db_round_trips(s->db) : 0;
}

bool store_in_transaction(const store *s)
{
    return s && db_in_transaction(s->db);
}

int store_begin(store *s, vf_error *err)
{
    store_tx_cache_drop(s);
    store_batch_drop(s);
    if (store_in_transaction(s)) {
        vf_error_set(err, VF_EINTERNAL, "store %s: begin: a transaction is already open", s->path);
        return -1;
    }
    /* SQLite: IMMEDIATE takes the write lock now, waiting up to the busy
     * timeout, rather than at the first write where SQLITE_BUSY cannot be
     * waited out. PostgreSQL: READ COMMITTED, writers side by side (what
     * keeps their reservations apart is store_claims.h's, not a lock on the
     * store). */
    if (!store_is_pg(s)) {
        if (exec_stmt(s, STORE_STMT_BEGIN, "BEGIN IMMEDIATE", "begin", err) < 0)
            return -1;
        /* A placement's reservation is claimed (store_claims.h) before its
         * task's row is written: the foreign key is checked at the commit.
         * The setting ends with the transaction. */
        if (exec_stmt(s, STORE_STMT_DEFER_KEYS, "PRAGMA defer_foreign_keys = ON", "begin", err) ==
            0)
            return 0;
        (void)store_rollback(s, NULL);
        return -1;
    }
    /* Sent with the transaction's first read (store_defer_writes). */
    if (s->defer_writes ? db_exec_deferred(s->db, "BEGIN", "begin", err) == 0
                        : db_exec(s->db, "BEGIN", "begin", err) == 0)
        return 0;
    (void)store_rollback(s, NULL);
    return -1;
}

int store_commit(store *s, vf_error *err)
{
    store_tx_cache_drop(s);
    int flushed = store_batch_flush(s, err);
    store_batch_drop(s);
    if (flushed != 0) {
        (void)store_rollback(s, NULL);
        return -1;
    }
    /* PostgreSQL answers COMMIT of a failed transaction with a rollback, not
     * an error: say so rather than report the work as committed. */
    if (db_transaction_failed(s->db)) {
        vf_error_set(err, VF_EINTERNAL,
                     "store %s: commit: a statement of the transaction failed; rolled back",
                     s->path);
        (void)store_rollback(s, NULL);
        return -1;
    }
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
    store_tx_cache_drop(s);
    store_batch_drop(s);
    if (!store_in_transaction(s))
        return 0;
    /* PostgreSQL: db_exec knows a transaction lost with its connection. */
    if (store_is_pg(s))
        return db_exec(s->db, "ROLLBACK", "rollback", err);
    return exec_stmt(s, STORE_STMT_ROLLBACK, "ROLLBACK", "rollback", err);
}

int store_probe_write(store *s, vf_error *err)
{
    char now[STORE_TIME_SIZE];
    store_now(now);
    if (store_begin(s, err) < 0)
        return -1;
    db_stmt *st = store_stmt(s, STORE_STMT_PROBE_WRITE,
                             "INSERT INTO store_probe (id, at) VALUES (1, ?1) "
                             "ON CONFLICT (id) DO UPDATE SET at = excluded.at",
                             err);
    if (!st || db_bind_text(st, 1, now) != 0 ||
        store_exec_change(s, st, "probing the store with a write", err) < 0 ||
        store_commit(s, err) < 0) {
        if (st)
            db_reset(st);
        (void)store_rollback(s, NULL);
        return -1;
    }
    return 0;
}
