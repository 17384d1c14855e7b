/* db: statement slots, binding and rows over the two backends (db_sqlite.c,
 * db_pg.c), reached through the handle's table of functions (db_internal.h);
 * see db.h. */
#include "db.h"
#include "db_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

db_kind db_kind_of(const db *d)
{
    return d->backend->kind;
}

void *db_sqlite_handle(db *d)
{
    return d->sqlite; /* NULL on PostgreSQL */
}

void db_free_statements(db *d)
{
    while (d->stmts)
        db_stmt_free(d->stmts);
}

void db_close(db *d)
{
    if (!d)
        return;
    d->backend->close(d);
    free(d->deferred);
    free(d->label);
    free(d);
}

int db_exec(db *d, const char *sql, const char *what, vf_error *err)
{
    return d->backend->exec(d, sql, what, err);
}

int db_exec_deferred(db *d, const char *sql, const char *what, vf_error *err)
{
    return d->backend->exec_deferred(d, sql, what, err);
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
    int rc = d->backend->prepare(st, sql, err);
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
    d->backend->stmt_free(st);
    free(st);
}

void db_reset(db_stmt *st)
{
    if (!st)
        return;
    st->owner->backend->reset(st);
}

int db_bind_text(db_stmt *st, int index, const char *text)
{
    return st->owner->backend->bind_text(st, index, text);
}

int db_bind_int64(db_stmt *st, int index, int64_t value)
{
    return st->owner->backend->bind_int64(st, index, value);
}

size_t db_int64_text(int64_t value, char out[DB_INT64_TEXT])
{
    char digits[20];
    size_t n = 0, len = 0;
    /* The magnitude in unsigned arithmetic: -INT64_MIN does not fit. */
    uint64_t magnitude = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
    do {
        digits[n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (value < 0)
        out[len++] = '-';
    while (n)
        out[len++] = digits[--n];
    out[len] = '\0';
    return len;
}

int db_bind_double(db_stmt *st, int index, double value)
{
    return st->owner->backend->bind_double(st, index, value);
}

int db_bind_null(db_stmt *st, int index)
{
    return st->owner->backend->bind_null(st, index);
}

int db_step(db_stmt *st, const char *what, vf_error *err)
{
    return st->owner->backend->step(st, what, err);
}

int db_step_now(db_stmt *st, const char *what, const db_expect *expect, vf_error *err)
{
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

int db_step_deferred(db_stmt *st, const char *what, const db_expect *expect, vf_error *err)
{
    return st->owner->backend->step_deferred(st, what, expect, err);
}

int db_column_count(db_stmt *st)
{
    return st->owner->backend->column_count(st);
}

bool db_column_is_null(db_stmt *st, int column)
{
    return st->owner->backend->column_is_null(st, column);
}

const char *db_column_text(db_stmt *st, int column)
{
    return st->owner->backend->column_text(st, column);
}

int64_t db_column_int64(db_stmt *st, int column)
{
    return st->owner->backend->column_int64(st, column);
}

double db_column_double(db_stmt *st, int column)
{
    return st->owner->backend->column_double(st, column);
}

int64_t db_changes(db_stmt *st)
{
    return st->changes;
}

int64_t db_inserted_id(db_stmt *st)
{
    return st->inserted_id;
}

bool db_in_transaction(const db *d)
{
    return d && d->backend->in_transaction(d);
}

uint64_t db_round_trips(const db *d)
{
    return d ? d->round_trips : 0;
}

bool db_transaction_failed(const db *d)
{
    return d && d->backend->transaction_failed(d);
}

int db_set_timeout(db *d, int timeout_ms, vf_error *err)
{
    return d->backend->set_timeout(d, timeout_ms, err);
}

void db_set_wait_hook(db *d, db_wait_fn fn, void *user)
{
    d->wait_hook = fn;
    d->wait_user = user;
}
