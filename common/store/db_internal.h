/* db_internal: what db.c shares with its two backends, db_sqlite.c and
 * db_pg.c. Not for other modules.
 *
 * Each backend is one table of functions (db_backend), as rabbitmq-c's
 * socket classes (amqp_socket_class_t): a handle points at its backend's
 * table, and db.c does what is common to both (statement slots, the list of
 * statements, argument checks) and dispatches the rest through the table,
 * never asking which backend it holds. */
#ifndef VF_DB_INTERNAL_H
#define VF_DB_INTERNAL_H

#include <libpq-fe.h>
#include <sqlite3.h>

#include "db.h"

/* A statement sent in pipeline mode whose result is still to be read. */
typedef struct db_deferred {
    unsigned *prepared; /* a PQsendPrepare: the epoch of the statement (or of its checked
                         * form) to clear if it fails; NULL: an execution */
    bool checked;       /* the checked form (db_pg.c): the server refuses too few changes */
    db_expect expect;
    char what[96];  /* what it does, for the error message */
    char text[160]; /* expect.short_text, copied */
} db_deferred;

typedef struct db_backend db_backend;

struct db {
    const db_backend *backend; /* set before anything can fail: db_close uses it */
    char *label;               /* owned; starts every error message, never a password */
    db_stmt *stmts;            /* every statement prepared on the handle, freed by db_close */
    sqlite3 *sqlite;           /* DB_SQLITE */
    int busy_timeout_ms;       /* DB_SQLITE: how long a writer waits for the write lock */
    int64_t busy_since_us;     /* DB_SQLITE: when the current wait began (monotonic) */
    PGconn *pg;                /* DB_POSTGRES */
    bool read_only;            /* DB_POSTGRES: re-applied after a reconnection */
    unsigned epoch;            /* DB_POSTGRES: bumped at each reconnection, which forgets
                                * every prepared statement of the session */
    unsigned names;            /* DB_POSTGRES: statements named so far */
    uint64_t round_trips;      /* DB_POSTGRES: waits for the server's answer (db_round_trips) */
    db_deferred *deferred;     /* DB_POSTGRES: sent, results unread, in order */
    size_t n_deferred, cap_deferred;
    PGresult **carried;     /* DB_POSTGRES: where drain puts the result of the one statement
                             * sent after the deferred ones (pg_step); NULL: none */
    bool deferred_failed;   /* one failed: everything fails until ROLLBACK */
    vf_error deferred_err;  /* the first deferred failure */
    bool tx_open;           /* DB_POSTGRES: a transaction was open after the last command;
                             * if the connection is then lost, so is the transaction, and
                             * nothing runs until the caller's ROLLBACK (db_pg_exec) */
    bool abandoned;         /* DB_POSTGRES: a round trip outlived its deadline: the
                             * connection is treated as lost and replaced at next use */
    bool renew;             /* DB_POSTGRES: the connection lacks a statement it prepared:
                             * replaced at the next use outside a transaction (a ROLLBACK
                             * still goes on it, and ends the transaction's locks) */
    int timeout_ms;         /* DB_POSTGRES: db_set_timeout's bound; 0: none */
    int connect_timeout_ms; /* DB_POSTGRES: bound of connecting (libpq's connect_timeout) */
    db_wait_fn wait_hook;   /* db_set_wait_hook; NULL: none */
    void *wait_user;
    int64_t hooked_ms; /* when the wait hook last ran (monotonic ms) */
};

struct db_stmt {
    db *owner;
    db_stmt **slot; /* the caller's slot, cleared by db_stmt_free; may be NULL */
    db_stmt *next;  /* in owner->stmts */
    sqlite3_stmt *sqlite;
    /* DB_POSTGRES */
    char *sql;             /* owned, with $N placeholders */
    char name[24];         /* server-side prepared statement name */
    unsigned epoch;        /* owner->epoch when prepared; 0: not prepared */
    int params;            /* the highest $N */
    char **values;         /* params owned copies; NULL: SQL NULL */
    char *checked_sql;     /* owned: the statement that fails when it changes fewer than
                            * checked_min rows (db_pg.c); NULL: not made yet */
    char checked_name[24]; /* its server-side name */
    unsigned checked_epoch;
    int64_t checked_min;
    PGresult *result; /* from the first step until db_reset */
    int row;          /* current row of result */
    int64_t changes;
    int64_t inserted_id; /* SQLite: the rowid the last run inserted (db_inserted_id) */
};

/* One backend: every operation of db.h whose work depends on it. Every
 * member is set; none is called with a NULL handle or statement. */
struct db_backend {
    db_kind kind;
    /* End the session and free what the backend holds, statements included
     * (db_free_statements, before or after the connection as it needs). */
    void (*close)(db *d);
    int (*exec)(db *d, const char *sql, const char *what, vf_error *err);
    int (*exec_deferred)(db *d, const char *sql, const char *what, vf_error *err);
    int (*set_timeout)(db *d, int timeout_ms, vf_error *err);
    bool (*in_transaction)(const db *d);
    bool (*transaction_failed)(const db *d);
    /* st is zeroed but for owner; after a failure db.c frees it (stmt_free). */
    int (*prepare)(db_stmt *st, const char *sql, vf_error *err);
    void (*stmt_free)(db_stmt *st);
    void (*reset)(db_stmt *st);
    int (*bind_text)(db_stmt *st, int index, const char *text); /* text NULL: SQL NULL */
    int (*bind_int64)(db_stmt *st, int index, int64_t value);
    int (*bind_double)(db_stmt *st, int index, double value);
    int (*bind_null)(db_stmt *st, int index);
    /* Sets st->changes at DB_DONE. */
    int (*step)(db_stmt *st, const char *what, vf_error *err);
    int (*step_deferred)(db_stmt *st, const char *what, const db_expect *expect, vf_error *err);
    int (*column_count)(db_stmt *st);
    bool (*column_is_null)(db_stmt *st, int column);
    const char *(*column_text)(db_stmt *st, int column);
    int64_t (*column_int64)(db_stmt *st, int column);
    double (*column_double)(db_stmt *st, int column);
};

extern const db_backend db_sqlite_backend;
extern const db_backend db_pg_backend;

/* Free every statement prepared on d (through its backend's stmt_free). */
void db_free_statements(db *d);

/* db_step_deferred run now: step, reset, then hold the outcome to expect.
 * A backend's step_deferred when it has nothing to defer. */
int db_step_now(db_stmt *st, const char *what, const db_expect *expect, vf_error *err);

/* SQL with ?N and ? rewritten as $N; *params gets the highest number. Owned
 * result or NULL (out of memory). */
char *db_translate(const char *sql, int *params);

#endif
