/* db_sqlite: the SQLite backend of db (see db.h). */
#include "db.h"
#include "db_internal.h"

#include <stdlib.h>
#include <string.h>

void db_sqlite_fail(db *d, int rc, const char *what, vf_error *err)
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

db *db_open_sqlite(const char *path, bool read_only, int busy_timeout_ms, const char *label,
                   vf_error *err)
{
    db *d = calloc(1, sizeof *d);
    if (!d || !(d->label = strdup(label))) {
        vf_error_set(err, VF_ENOMEM, "%s: out of memory", label);
        free(d);
        return NULL;
    }
    d->kind = DB_SQLITE;
    /* NOMUTEX: a handle is used by one thread at a time (db.h). */
    int flags = SQLITE_OPEN_NOMUTEX | (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE);
    int rc = sqlite3_open_v2(path, &d->sqlite, flags, NULL);
    if (rc != SQLITE_OK) {
        db_sqlite_fail(d, rc, "opening", err);
        db_close(d);
        return NULL;
    }
    sqlite3_extended_result_codes(d->sqlite, 1);
    sqlite3_busy_timeout(d->sqlite, busy_timeout_ms);
    return d;
}

int db_sqlite_exec(db *d, const char *sql, const char *what, vf_error *err)
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

int db_sqlite_prepare(db_stmt *st, const char *sql, vf_error *err)
{
    /* PERSISTENT: kept for the life of the handle and run thousands of times. */
    int rc = sqlite3_prepare_v3(st->owner->sqlite, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->sqlite,
                                NULL);
    if (rc != SQLITE_OK) {
        db_sqlite_fail(st->owner, rc, "preparing a statement", err);
        return -1;
    }
    return 0;
}
