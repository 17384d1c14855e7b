/* db_pg: the PostgreSQL backend of db (libpq; see db.h). Statements are
 * prepared server-side once per session (PQprepare) and run with
 * PQexecPrepared; parameters and results travel as text. */
#include "db.h"
#include "db_internal.h"

#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The code for a SQLSTATE (PostgreSQL manual, appendix A). */
static vf_error_code code_of_state(const char *state)
{
    if (!state || strlen(state) != 5)
        return VF_EIO;
    if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0)
        return VF_ECONFLICT; /* serialization failure, deadlock: redo */
    if (strncmp(state, "23", 2) == 0 || strncmp(state, "22", 2) == 0)
        return VF_EINVAL; /* integrity constraint violation, bad data (bytes) */
    if (strcmp(state, "53200") == 0)
        return VF_ENOMEM;
    if (strcmp(state, "55P03") == 0 || strcmp(state, "57014") == 0 ||
        strncmp(state, "08", 2) == 0 || strncmp(state, "53", 2) == 0 ||
        strncmp(state, "57P", 3) == 0)
        return VF_EUNAVAILABLE; /* lock or statement timeout, connection, shutdown */
    return VF_EIO;
}

/* Fill err from a failed result (or the connection when result is NULL). */
static void fail(db *d, const PGresult *result, const char *what, vf_error *err)
{
    const char *state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : NULL;
    const char *message = result ? PQresultErrorMessage(result) : NULL;
    if (!message || !*message)
        message = PQerrorMessage(d->pg);
    vf_error_code code = code_of_state(state);
    if (!state && PQstatus(d->pg) == CONNECTION_BAD)
        code = VF_EUNAVAILABLE;
    /* libpq messages end in a newline and may span lines; keep the first. */
    int len = (int)strcspn(message, "\n");
    vf_error_set(err, code, "%s: %s: %.*s", d->label, what, len, message);
}

/* libpq prints NOTICEs ("relation already exists, skipping") to stderr by
 * default; the store has nothing to learn from them. */
static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static int session_setup(db *d, vf_error *err)
{
    PQsetNoticeProcessor(d->pg, ignore_notice, NULL);
    if (d->read_only &&
        db_pg_exec(d, "SET default_transaction_read_only = on", "opening read-only", err) != 0)
        return -1;
    return 0;
}

db *db_open_pg(const db_pg_options *options, const char *label, vf_error *err)
{
    db *d = calloc(1, sizeof *d);
    if (!d || !(d->label = strdup(label))) {
        vf_error_set(err, VF_ENOMEM, "%s: out of memory", label);
        free(d);
        return NULL;
    }
    d->kind = DB_POSTGRES;
    d->read_only = options->read_only;
    d->epoch = 1;
    /* Keywords before dbname are defaults the URL may override; those after
     * it override the URL (PQconnectdbParams with expand_dbname). */
    const char *keys[8], *values[8];
    int n = 0;
    keys[n] = "connect_timeout", values[n++] = "10";
    keys[n] = "fallback_application_name", values[n++] = "virtflow";
    keys[n] = "dbname", values[n++] = options->url;
    if (options->password)
        keys[n] = "password", values[n++] = options->password;
    if (options->sslmode)
        keys[n] = "sslmode", values[n++] = options->sslmode;
    if (options->ca_file)
        keys[n] = "sslrootcert", values[n++] = options->ca_file;
    keys[n] = NULL, values[n] = NULL;
    d->pg = PQconnectdbParams(keys, values, 1);
    if (!d->pg) {
        vf_error_set(err, VF_ENOMEM, "%s: connecting: out of memory", label);
        goto fail;
    }
    if (PQstatus(d->pg) != CONNECTION_OK) {
        const char *message = PQerrorMessage(d->pg);
        int len = (int)strcspn(message, "\n");
        vf_error_set(err, VF_EUNAVAILABLE, "%s: connecting: %.*s", label, len, message);
        goto fail;
    }
    if (session_setup(d, err) != 0)
        goto fail;
    const char *encoding = PQparameterStatus(d->pg, "server_encoding");
    if (!options->read_only && encoding && strcmp(encoding, "SQL_ASCII") != 0)
        log_warn("%s: database encoding is %s, not SQL_ASCII: text that is not valid in it "
                 "(a receiver's reply in a delivery error, say) will be refused rather than "
                 "kept byte for byte (docs/operations.md \"PostgreSQL store\")",
                 label, encoding);
    return d;
fail:
    db_close(d);
    return NULL;
}

void db_pg_close(db *d)
{
    if (d->pg)
        PQfinish(d->pg); /* an open transaction is rolled back by the server */
    d->pg = NULL;
}

/* Remember whether a transaction is open, for when the connection is lost. */
static void note_transaction(db *d)
{
    PGTransactionStatusType status = PQtransactionStatus(d->pg);
    if (status != PQTRANS_UNKNOWN)
        d->tx_open = status != PQTRANS_IDLE;
}

/* A connection lost between transactions is opened again once; statements
 * are prepared again as they are used (epoch). A connection lost inside a
 * transaction took the transaction with it: running the caller's next
 * statements on a new connection would commit them one by one, so every
 * statement fails until the caller rolls back. */
static int reconnect_if_lost(db *d, vf_error *err)
{
    if (PQstatus(d->pg) == CONNECTION_OK)
        return 0;
    if (d->tx_open) {
        vf_error_set(err, VF_EUNAVAILABLE,
                     "%s: the connection was lost inside a transaction, which is gone: roll back",
                     d->label);
        return -1;
    }
    PQreset(d->pg);
    d->epoch++;
    if (PQstatus(d->pg) != CONNECTION_OK) {
        fail(d, NULL, "reconnecting", err);
        return -1;
    }
    return session_setup(d, err);
}

int db_pg_exec(db *d, const char *sql, const char *what, vf_error *err)
{
    if (PQstatus(d->pg) != CONNECTION_OK && d->tx_open && strcmp(sql, "ROLLBACK") == 0) {
        d->tx_open = false; /* the server rolled it back when the connection went */
        return 0;
    }
    if (reconnect_if_lost(d, err) != 0)
        return -1;
    PGresult *result = PQexec(d->pg, sql);
    note_transaction(d);
    ExecStatusType status = PQresultStatus(result);
    int rc = 0;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        fail(d, result, what, err);
        rc = -1;
    }
    PQclear(result);
    return rc;
}

static int send_prepare(db_stmt *st, vf_error *err)
{
    db *d = st->owner;
    if (reconnect_if_lost(d, err) != 0)
        return -1;
    PGresult *result = PQprepare(d->pg, st->name, st->sql, 0, NULL);
    int rc = 0;
    if (PQresultStatus(result) != PGRES_COMMAND_OK) {
        fail(d, result, "preparing a statement", err);
        rc = -1;
    } else {
        st->epoch = d->epoch;
    }
    PQclear(result);
    return rc;
}

int db_pg_prepare(db_stmt *st, const char *sql, vf_error *err)
{
    db *d = st->owner;
    st->sql = db_translate(sql, &st->params);
    if (!st->sql ||
        (st->params > 0 && !(st->values = calloc((size_t)st->params, sizeof(char *))))) {
        vf_error_set(err, VF_ENOMEM, "%s: preparing a statement: out of memory", d->label);
        return -1;
    }
    snprintf(st->name, sizeof st->name, "vf%u", ++d->names);
    return send_prepare(st, err);
}

void db_pg_reset(db_stmt *st)
{
    PQclear(st->result);
    st->result = NULL;
    st->row = 0;
    for (int i = 0; i < st->params; i++) {
        free(st->values[i]);
        st->values[i] = NULL;
    }
}

void db_pg_free(db_stmt *st)
{
    db_pg_reset(st);
    db *d = st->owner;
    /* Only a session that prepared it knows it; the next statement of a
     * failed transaction would fail, so leave it to the session's end then. */
    if (d->pg && st->epoch == d->epoch && PQstatus(d->pg) == CONNECTION_OK &&
        PQtransactionStatus(d->pg) != PQTRANS_INERROR) {
        char sql[48];
        snprintf(sql, sizeof sql, "DEALLOCATE %s", st->name);
        PQclear(PQexec(d->pg, sql));
    }
    free(st->values);
    free(st->sql);
}

int db_pg_step(db_stmt *st, const char *what, vf_error *err)
{
    db *d = st->owner;
    if (st->result) {
        if (PQresultStatus(st->result) != PGRES_TUPLES_OK || st->row + 1 >= PQntuples(st->result))
            return DB_DONE;
        st->row++;
        return DB_ROW;
    }
    /* send_prepare reconnects a lost connection (outside a transaction). */
    if ((st->epoch != d->epoch || PQstatus(d->pg) != CONNECTION_OK) && send_prepare(st, err) != 0)
        return -1;
    st->result =
        PQexecPrepared(d->pg, st->name, st->params, (const char *const *)st->values, NULL, NULL, 0);
    note_transaction(d);
    ExecStatusType status = PQresultStatus(st->result);
    if (status == PGRES_COMMAND_OK) {
        const char *tuples = PQcmdTuples(st->result);
        st->changes = *tuples ? strtoll(tuples, NULL, 10) : 0;
        return DB_DONE;
    }
    if (status == PGRES_TUPLES_OK) {
        st->changes = 0;
        st->row = 0;
        return PQntuples(st->result) > 0 ? DB_ROW : DB_DONE;
    }
    fail(d, st->result, what, err);
    PQclear(st->result);
    st->result = NULL;
    return -1;
}
