/* db: statement slots, binding and rows over the two backends (db_sqlite.c,
 * db_pg.c); see db.h. */
#include "db.h"
#include "db_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

db_kind db_kind_of(const db *d)
{
    return d->kind;
}

void *db_sqlite_handle(db *d)
{
    return d->kind == DB_SQLITE ? d->sqlite : NULL;
}

void db_close(db *d)
{
    if (!d)
        return;
    /* PostgreSQL: the session's end forgets its prepared statements (and
     * rolls back an open transaction); no DEALLOCATE round trip each. */
    if (d->kind == DB_POSTGRES)
        db_pg_close(d);
    while (d->stmts)
        db_stmt_free(d->stmts);
    if (d->kind == DB_SQLITE && d->sqlite) {
        if (!sqlite3_get_autocommit(d->sqlite))
            sqlite3_exec(d->sqlite, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close(d->sqlite);
    }
    free(d->deferred);
    free(d->label);
    free(d);
}

int db_exec(db *d, const char *sql, const char *what, vf_error *err)
{
    return d->kind == DB_SQLITE ? db_sqlite_exec(d, sql, what, err) : db_pg_exec(d, sql, what, err);
}

int db_exec_deferred(db *d, const char *sql, const char *what, vf_error *err)
{
    return d->kind == DB_SQLITE ? db_sqlite_exec(d, sql, what, err)
                                : db_pg_exec_deferred(d, sql, what, err);
}

char *db_translate(const char *sql, int *params)
{
    size_t len = strlen(sql);
    /* "?" becomes at most "$" and 10 digits. */
    char *out = malloc(len * 11 + 1);
    if (!out)
        return NULL;
    char *o = out;
    int highest = 0;
    char quote = 0;
    for (const char *p = sql; *p;) {
        if (quote) {
            if (*p == quote)
                quote = 0;
            *o++ = *p++;
            continue;
        }
        if (*p == '\'' || *p == '"') {
            quote = *p;
            *o++ = *p++;
            continue;
        }
        if (*p != '?') {
            *o++ = *p++;
            continue;
        }
        p++;
        int number = 0;
        if (*p >= '0' && *p <= '9') {
            while (*p >= '0' && *p <= '9' && number < 100000)
                number = number * 10 + (*p++ - '0');
        } else {
            number = highest + 1; /* SQLite's rule for a bare ? */
        }
        if (number > highest)
            highest = number;
        o += sprintf(o, "$%d", number);
    }
    *o = '\0';
    *params = highest;
    return out;
}

db_stmt *db_prepare(db *d, db_stmt **slot, const char *sql, vf_error *err)
{
    if (*slot) {
        db_reset(*slot);
        return *slot;
    }
    db_stmt *st = calloc(1, sizeof *st);
    if (!st) {
        vf_error_set(err, VF_ENOMEM, "%s: preparing a statement: out of memory", d->label);
        return NULL;
    }
    st->owner = d;
    int rc = d->kind == DB_SQLITE ? db_sqlite_prepare(st, sql, err) : db_pg_prepare(st, sql, err);
    st->next = d->stmts;
    d->stmts = st;
    if (rc != 0) {
        db_stmt_free(st);
        return NULL;
    }
    st->slot = slot;
    *slot = st;
    return st;
}

void db_stmt_free(db_stmt *st)
{
    if (!st)
        return;
    db *d = st->owner;
    for (db_stmt **p = &d->stmts; *p; p = &(*p)->next) {
        if (*p == st) {
            *p = st->next;
            break;
        }
    }
    if (st->slot)
        *st->slot = NULL;
    if (d->kind == DB_SQLITE)
        sqlite3_finalize(st->sqlite);
    else
        db_pg_free(st);
    free(st);
}

void db_reset(db_stmt *st)
{
    if (!st)
        return;
    if (st->owner->kind == DB_SQLITE) {
        sqlite3_reset(st->sqlite);
        sqlite3_clear_bindings(st->sqlite);
    } else {
        db_pg_reset(st);
    }
}

/* PostgreSQL: keep an owned text copy of a parameter. */
static int pg_bind(db_stmt *st, int index, const char *text)
{
    if (index < 1 || index > st->params)
        return -1;
    char *copy = NULL;
    if (text && !(copy = strdup(text)))
        return -1;
    free(st->values[index - 1]);
    st->values[index - 1] = copy;
    return 0;
}

int db_bind_text(db_stmt *st, int index, const char *text)
{
    if (st->owner->kind == DB_POSTGRES)
        return pg_bind(st, index, text);
    int rc = text ? sqlite3_bind_text(st->sqlite, index, text, -1, SQLITE_STATIC)
                  : sqlite3_bind_null(st->sqlite, index);
    return rc == SQLITE_OK ? 0 : -1;
}

int db_bind_int64(db_stmt *st, int index, int64_t value)
{
    if (st->owner->kind == DB_POSTGRES) {
        char text[24];
        snprintf(text, sizeof text, "%" PRId64, value);
        return pg_bind(st, index, text);
    }
    return sqlite3_bind_int64(st->sqlite, index, value) == SQLITE_OK ? 0 : -1;
}

int db_bind_double(db_stmt *st, int index, double value)
{
    if (st->owner->kind == DB_POSTGRES) {
        char text[40];
        snprintf(text, sizeof text, "%.17g", value); /* round-trips exactly */
        return pg_bind(st, index, text);
    }
    return sqlite3_bind_double(st->sqlite, index, value) == SQLITE_OK ? 0 : -1;
}

int db_bind_null(db_stmt *st, int index)
{
    if (st->owner->kind == DB_POSTGRES)
        return pg_bind(st, index, NULL);
    return sqlite3_bind_null(st->sqlite, index) == SQLITE_OK ? 0 : -1;
}

int db_step(db_stmt *st, const char *what, vf_error *err)
{
    db *d = st->owner;
    if (d->kind == DB_POSTGRES)
        return db_pg_step(st, what, err);
    int rc = sqlite3_step(st->sqlite);
    if (rc == SQLITE_ROW)
        return DB_ROW;
    if (rc == SQLITE_DONE) {
        st->changes = sqlite3_changes(d->sqlite);
        return DB_DONE;
    }
    db_sqlite_fail(d, rc, what, err);
    return -1;
}

int db_step_deferred(db_stmt *st, const char *what, const db_expect *expect, vf_error *err)
{
    db *d = st->owner;
    if (d->kind == DB_POSTGRES && db_in_transaction(d))
        return db_pg_defer(st, what, expect, err);
    vf_error step_err;
    vf_error_init(&step_err);
    int rc = db_step(st, what, &step_err);
    int64_t changes = rc == DB_DONE ? st->changes : 0;
    db_reset(st);
    if (rc < 0) {
        if (step_err.code == VF_EUNAVAILABLE && expect->busy_code)
            step_err.code = expect->busy_code;
        vf_error_set(err, step_err.code, "%s", step_err.text);
        return -1;
    }
    if (changes < expect->min_changes) {
        vf_error_set(err, expect->short_code, "%s", expect->short_text ? expect->short_text : what);
        return -1;
    }
    return 0;
}

int db_column_count(db_stmt *st)
{
    if (st->owner->kind == DB_SQLITE)
        return sqlite3_column_count(st->sqlite);
    return st->result ? PQnfields(st->result) : 0;
}

bool db_column_is_null(db_stmt *st, int column)
{
    if (st->owner->kind == DB_SQLITE)
        return sqlite3_column_type(st->sqlite, column) == SQLITE_NULL;
    return PQgetisnull(st->result, st->row, column) != 0;
}

const char *db_column_text(db_stmt *st, int column)
{
    if (st->owner->kind == DB_SQLITE)
        return (const char *)sqlite3_column_text(st->sqlite, column);
    if (PQgetisnull(st->result, st->row, column))
        return NULL;
    return PQgetvalue(st->result, st->row, column);
}

int64_t db_column_int64(db_stmt *st, int column)
{
    if (st->owner->kind == DB_SQLITE)
        return sqlite3_column_int64(st->sqlite, column);
    const char *text = db_column_text(st, column);
    return text ? strtoll(text, NULL, 10) : 0;
}

double db_column_double(db_stmt *st, int column)
{
    if (st->owner->kind == DB_SQLITE)
        return sqlite3_column_double(st->sqlite, column);
    const char *text = db_column_text(st, column);
    return text ? strtod(text, NULL) : 0.0;
}

int64_t db_changes(db_stmt *st)
{
    return st->changes;
}

bool db_in_transaction(const db *d)
{
    if (!d)
        return false;
    if (d->kind == DB_SQLITE)
        return d->sqlite && !sqlite3_get_autocommit(d->sqlite);
    if (!d->pg)
        return false;
    if (!db_pg_usable(d))
        return d->tx_open; /* lost with the connection, but the caller must still roll back */
    PGTransactionStatusType status = PQtransactionStatus(d->pg);
    return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE;
}

uint64_t db_round_trips(const db *d)
{
    return d ? d->round_trips : 0;
}

bool db_transaction_failed(const db *d)
{
    return d && d->kind == DB_POSTGRES && d->pg && db_pg_usable(d) &&
           PQtransactionStatus(d->pg) == PQTRANS_INERROR;
}

int db_set_timeout(db *d, int timeout_ms, vf_error *err)
{
    return d->kind == DB_POSTGRES ? db_pg_set_timeout(d, timeout_ms, err) : 0;
}

void db_set_wait_hook(db *d, db_wait_fn fn, void *user)
{
    d->wait_hook = fn;
    d->wait_user = user;
}
