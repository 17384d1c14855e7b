/* db_internal: what db.c shares with its two backends, db_sqlite.c and
 * db_pg.c. Not for other modules. */
#ifndef VF_DB_INTERNAL_H
#define VF_DB_INTERNAL_H

#include <libpq-fe.h>
#include <sqlite3.h>

#include "db.h"

/* A statement sent in pipeline mode whose result is still to be read. */
typedef struct db_deferred {
    db_stmt *prepared; /* a PQsendPrepare of this statement; NULL: an execution */
    db_expect expect;
    char what[96];  /* what it does, for the error message */
    char text[160]; /* expect.short_text, copied */
} db_deferred;

struct db {
    db_kind kind;
    char *label;           /* owned; starts every error message, never a password */
    db_stmt *stmts;        /* every statement prepared on the handle, freed by db_close */
    sqlite3 *sqlite;       /* DB_SQLITE */
    PGconn *pg;            /* DB_POSTGRES */
    bool read_only;        /* DB_POSTGRES: re-applied after a reconnection */
    unsigned epoch;        /* DB_POSTGRES: bumped at each reconnection, which forgets
                            * every prepared statement of the session */
    unsigned names;        /* DB_POSTGRES: statements named so far */
    uint64_t round_trips;  /* DB_POSTGRES: waits for the server's answer (db_round_trips) */
    db_deferred *deferred; /* DB_POSTGRES: sent, results unread, in order */
    size_t n_deferred, cap_deferred;
    bool deferred_failed;   /* one failed: everything fails until ROLLBACK */
    vf_error deferred_err;  /* the first deferred failure */
    bool tx_open;           /* DB_POSTGRES: a transaction was open after the last command;
                             * if the connection is then lost, so is the transaction, and
                             * nothing runs until the caller's ROLLBACK (db_pg_exec) */
    bool abandoned;         /* DB_POSTGRES: a round trip outlived its deadline: the
                             * connection is treated as lost and replaced at next use */
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
    char *sql;        /* owned, with $N placeholders */
    char name[24];    /* server-side prepared statement name */
    unsigned epoch;   /* owner->epoch when prepared; 0: not prepared */
    int params;       /* the highest $N */
    char **values;    /* params owned copies; NULL: SQL NULL */
    PGresult *result; /* from the first step until db_reset */
    int row;          /* current row of result */
    int64_t changes;
};

/* SQL with ?N and ? rewritten as $N; *params gets the highest number. Owned
 * result or NULL (out of memory). */
char *db_translate(const char *sql, int *params);

/* Backends. */
int db_sqlite_exec(db *d, const char *sql, const char *what, vf_error *err);
int db_sqlite_prepare(db_stmt *st, const char *sql, vf_error *err);
void db_sqlite_fail(db *d, int rc, const char *what, vf_error *err);

int db_pg_exec(db *d, const char *sql, const char *what, vf_error *err);
int db_pg_prepare(db_stmt *st, const char *sql, vf_error *err);
void db_pg_reset(db_stmt *st);
void db_pg_free(db_stmt *st);
int db_pg_step(db_stmt *st, const char *what, vf_error *err);
int db_pg_defer(db_stmt *st, const char *what, const db_expect *expect, vf_error *err);
int db_pg_exec_deferred(db *d, const char *sql, const char *what, vf_error *err);
void db_pg_close(db *d);
int db_pg_set_timeout(db *d, int timeout_ms, vf_error *err);
/* Whether the connection can carry a command: up, and not abandoned. */
bool db_pg_usable(const db *d);

#endif
