/* db_pg: the PostgreSQL backend of db (libpq; see db.h). Statements are
 * prepared server-side once per session and run by name; parameters and
 * results travel as text.
 *
 * Every exchange with the server, connecting included, goes through libpq's
 * asynchronous calls and a poll() of our own, never a blocking PQexec: only
 * so can a wait have a deadline that holds when the server stops answering
 * (a stopped process, a frozen VM or a cut network answers nothing, and
 * neither its statement_timeout nor TCP keepalives fire: the kernel still
 * acknowledges the bytes), and only so can the wait hook run meanwhile.
 * Cancelling is not attempted: PQcancel of libpq 15 blocks on the very
 * server that does not answer. The connection is dropped instead; the
 * server rolls the session's transaction back when it notices. */
#include "db.h"
#include "db_internal.h"

#include "clock.h"
#include "grow.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int pg_exec(db *d, const char *sql, const char *what, vf_error *err);
static bool pg_in_transaction(const db *d);
static void pg_reset(db_stmt *st);

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

/* invalid_sql_statement_name: a named prepared statement the server lacks. */
#define DB_PG_NO_SUCH_STATEMENT "26000"

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
    if (state && strcmp(state, DB_PG_NO_SUCH_STATEMENT) == 0) {
        /* What this connection holds prepared is not what we noted (a
         * DEALLOCATE, a pooler that moved the session): a new connection
         * prepares each statement again at its next use, instead of every
         * later use failing the same way. */
        d->renew = true;
        code = VF_EUNAVAILABLE;
    }
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

/* Whether the connection can carry a command: up, not abandoned, and not
 * to be renewed now that no transaction is open. */
static bool pg_usable(const db *d)
{
    return d->pg && !d->abandoned && !(d->renew && !d->tx_open) && PQstatus(d->pg) == CONNECTION_OK;
}

/* The deadline of a command starting now: the server's own statement
 * timeout answers first; this catches a server that cannot answer. -1: none. */
static int64_t command_deadline(const db *d)
{
    return d->timeout_ms > 0 ? clock_mono_ms() + d->timeout_ms + DB_PG_ANSWER_GRACE_MS : -1;
}

/* Wait until the socket is ready for `events` or the deadline (clock_mono_ms
 * clock, -1: none) passes, calling the wait hook every
 * DB_WAIT_HOOK_INTERVAL_MS meanwhile. Returns the poll revents (> 0), 0
 * when the deadline passed, -1 when poll failed. */
static int wait_socket(db *d, short events, int64_t deadline)
{
    for (;;) {
        int64_t now = clock_mono_ms();
        if (deadline >= 0 && now >= deadline)
            return 0;
        if (d->wait_hook && now - d->hooked_ms >= DB_WAIT_HOOK_INTERVAL_MS) {
            d->wait_hook(d->wait_user);
            d->hooked_ms = now;
        }
        int64_t wait = d->wait_hook ? d->hooked_ms + DB_WAIT_HOOK_INTERVAL_MS - now : -1;
        if (deadline >= 0 && (wait < 0 || deadline - now < wait))
            wait = deadline - now;
        struct pollfd p = {.fd = PQsocket(d->pg), .events = events};
        if (p.fd < 0)
            return -1;
        int rc = poll(&p, 1, (int)wait);
        if (rc > 0)
            return p.revents;
        if (rc < 0 && errno != EINTR)
            return -1;
    }
}

/* One wait for the server's answer (db_round_trips). At debug level each
 * gets a line naming what it was for, so that a benchmark can count them by
 * kind (bench_shared_store.py --log-level debug). */
static void count_round_trip(db *d, const char *what)
{
    d->round_trips++;
    log_debug("%s: round trip: %s", d->label, what);
}

/* Drive PQconnectPoll or PQresetPoll to the end, within the connect
 * timeout. Returns 0 connected, -1 with err (VF_EUNAVAILABLE). */
static int finish_connecting(db *d, bool resetting, const char *what, vf_error *err)
{
    count_round_trip(d, what); /* a few, in fact: counted as one */
    int64_t deadline = clock_mono_ms() + d->connect_timeout_ms;
    PostgresPollingStatusType state = PGRES_POLLING_WRITING;
    while (state != PGRES_POLLING_OK && state != PGRES_POLLING_FAILED) {
        int ready = wait_socket(d, state == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
        if (ready == 0) {
            vf_error_set(err, VF_EUNAVAILABLE, "%s: %s: no answer within %d ms", d->label, what,
                         d->connect_timeout_ms);
            return -1;
        }
        if (ready < 0)
            break; /* no socket: PQconnectPoll reports the failure */
        state = resetting ? PQresetPoll(d->pg) : PQconnectPoll(d->pg);
    }
    if (PQstatus(d->pg) != CONNECTION_OK) {
        const char *message = PQerrorMessage(d->pg);
        int len = (int)strcspn(message, "\n");
        vf_error_set(err, VF_EUNAVAILABLE, "%s: %s: %.*s", d->label, what, len, message);
        return -1;
    }
    d->abandoned = false;
    d->renew = false;
    /* Sends must not block either (closing resets this, PQresetStart too). */
    if (PQsetnonblocking(d->pg, 1) != 0) {
        fail(d, NULL, what, err);
        return -1;
    }
    return 0;
}

/* Give up on the connection: the server did not answer in time. Nothing
 * more is read from it; the next command connects again (pg_exec's
 * ROLLBACK first, inside a transaction). */
static void abandon(db *d, const char *what, vf_error *err)
{
    d->abandoned = true;
    int waited = d->timeout_ms + DB_PG_ANSWER_GRACE_MS;
    vf_error_set(err, VF_EUNAVAILABLE,
                 "%s: %s: no answer from the server within %d ms (the statement timeout and %d "
                 "ms more): connection dropped",
                 d->label, what, waited, DB_PG_ANSWER_GRACE_MS);
    log_warn("%s: %s: no answer from the server within %d ms; dropping the connection", d->label,
             what, waited);
}

/* The results of the command just sent, as PQexec would give them: the last
 * one, or the first error. NULL with err set when the server did not answer
 * in time (the connection is abandoned) or the connection failed. */
static PGresult *await_result(db *d, const char *what, vf_error *err)
{
    count_round_trip(d, what);
    int64_t deadline = command_deadline(d);
    for (;;) {
        int left = PQflush(d->pg);
        if (left <= 0)
            break; /* sent, or failed: PQgetResult reports it */
        int ready = wait_socket(d, POLLIN | POLLOUT, deadline);
        if (ready == 0) {
            abandon(d, what, err);
            return NULL;
        }
        if (ready < 0 || ((ready & POLLIN) && !PQconsumeInput(d->pg)))
            break;
    }
    PGresult *kept = NULL;
    for (;;) {
        while (!PQisBusy(d->pg)) {
            PGresult *result = PQgetResult(d->pg);
            if (!result) {
                if (!kept)
                    fail(d, NULL, what, err);
                return kept;
            }
            ExecStatusType status = PQresultStatus(result);
            bool kept_failed = kept && PQresultStatus(kept) != PGRES_COMMAND_OK &&
                               PQresultStatus(kept) != PGRES_TUPLES_OK;
            if (kept_failed || status == PGRES_COPY_IN || status == PGRES_COPY_OUT) {
                PQclear(result);
                continue;
            }
            PQclear(kept);
            kept = result;
        }
        int ready = wait_socket(d, POLLIN, deadline);
        if (ready == 0) {
            PQclear(kept);
            abandon(d, what, err);
            return NULL;
        }
        if (ready < 0) {
            PQclear(kept);
            d->abandoned = true;
            vf_error_set(err, VF_EUNAVAILABLE, "%s: %s: waiting for the server: %s", d->label, what,
                         strerror(errno));
            return NULL;
        }
        /* A failed read leaves the connection bad: PQgetResult then says why. */
        (void)PQconsumeInput(d->pg);
    }
}

/* PQexec within the deadline: the result (owned) or NULL with err set. */
static PGresult *run_query(db *d, const char *sql, const char *what, vf_error *err)
{
    if (!PQsendQuery(d->pg, sql)) {
        fail(d, NULL, what, err);
        return NULL;
    }
    return await_result(d, what, err);
}

static int session_setup(db *d, vf_error *err)
{
    PQsetNoticeProcessor(d->pg, ignore_notice, NULL);
    if (d->read_only &&
        pg_exec(d, "SET default_transaction_read_only = on", "opening read-only", err) != 0)
        return -1;
    if (d->timeout_ms > 0) {
        char sql[64];
        snprintf(sql, sizeof sql, "SET statement_timeout = %d", d->timeout_ms);
        if (pg_exec(d, sql, "setting statement_timeout", err) != 0)
            return -1;
    }
    return 0;
}

static int pg_set_timeout(db *d, int timeout_ms, vf_error *err)
{
    d->timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
    char sql[64];
    snprintf(sql, sizeof sql, "SET statement_timeout = %d", d->timeout_ms);
    return pg_exec(d, sql, "setting statement_timeout", err);
}

/* connect_timeout as libpq understood it (the URL's, or our default), in
 * ms; libpq leaves it to us once connecting is asynchronous. As libpq: at
 * least 2 s, and 0 or none means no limit (here: an hour). */
static int connect_timeout_ms(const PGconn *conn)
{
    int seconds = 0;
    PQconninfoOption *options = PQconninfo((PGconn *)conn);
    for (PQconninfoOption *o = options; o && o->keyword; o++)
        if (strcmp(o->keyword, "connect_timeout") == 0 && o->val)
            seconds = atoi(o->val);
    PQconninfoFree(options);
    if (seconds <= 0 || seconds > 3600)
        seconds = 3600;
    return (seconds < 2 ? 2 : seconds) * 1000;
}

db *db_open_pg(const db_pg_options *options, const char *label, vf_error *err)
{
    db *d = calloc(1, sizeof *d);
    if (!d || !(d->label = strdup(label))) {
        vf_error_set(err, VF_ENOMEM, "%s: out of memory", label);
        free(d);
        return NULL;
    }
    d->backend = &db_pg_backend;
    d->read_only = options->read_only;
    d->epoch = 1;
    /* Keywords before dbname are defaults the URL may override; those after
     * it override the URL (PQconnectStartParams with expand_dbname). The
     * keepalives let the kernel notice a dead host or a cut network while
     * the connection is idle (about 25 s), tcp_user_timeout while data waits
     * for the server's acknowledgement. */
    const char *keys[16], *values[16];
    int n = 0;
    keys[n] = "connect_timeout", values[n++] = "10";
    keys[n] = "fallback_application_name", values[n++] = "virtflow";
    keys[n] = "keepalives", values[n++] = "1";
    keys[n] = "keepalives_idle", values[n++] = "10";
    keys[n] = "keepalives_interval", values[n++] = "5";
    keys[n] = "keepalives_count", values[n++] = "3";
    keys[n] = "tcp_user_timeout", values[n++] = "30000";
    keys[n] = "dbname", values[n++] = options->url;
    if (options->password)
        keys[n] = "password", values[n++] = options->password;
    if (options->sslmode)
        keys[n] = "sslmode", values[n++] = options->sslmode;
    if (options->ca_file)
        keys[n] = "sslrootcert", values[n++] = options->ca_file;
    keys[n] = NULL, values[n] = NULL;
    d->pg = PQconnectStartParams(keys, values, 1);
    if (!d->pg) {
        vf_error_set(err, VF_ENOMEM, "%s: connecting: out of memory", label);
        goto fail;
    }
    d->connect_timeout_ms = connect_timeout_ms(d->pg);
    if (PQstatus(d->pg) == CONNECTION_BAD) {
        const char *message = PQerrorMessage(d->pg);
        int len = (int)strcspn(message, "\n");
        vf_error_set(err, VF_EUNAVAILABLE, "%s: connecting: %.*s", label, len, message);
        goto fail;
    }
    if (finish_connecting(d, false, "connecting", err) != 0)
        goto fail;
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

/* The session's end forgets its prepared statements (and rolls back an open
 * transaction): no DEALLOCATE round trip each. */
static void pg_close(db *d)
{
    if (d->pg)
        PQfinish(d->pg); /* an open transaction is rolled back by the server */
    d->pg = NULL;
    db_free_statements(d);
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
    if (pg_usable(d))
        return 0;
    if (d->tx_open) {
        vf_error_set(err, VF_EUNAVAILABLE,
                     "%s: the connection was lost inside a transaction, which is gone: roll back",
                     d->label);
        return -1;
    }
    d->epoch++;
    if (!PQresetStart(d->pg)) {
        fail(d, NULL, "reconnecting", err);
        return -1;
    }
    if (finish_connecting(d, true, "reconnecting", err) != 0) {
        d->abandoned = true; /* a connection half made is no use either */
        return -1;
    }
    return session_setup(d, err);
}

/* ---- deferred statements (libpq pipeline mode) ---- */

/* A pipeline this long is collected at once, so its answers stay a
 * bounded amount of memory on both sides. */
#define DB_PG_MAX_DEFERRED 1024

static void defer_failed(db *d, vf_error_code code, const char *text)
{
    if (d->deferred_failed)
        return; /* the first failure wins */
    d->deferred_failed = true;
    vf_error_init(&d->deferred_err);
    vf_error_set(&d->deferred_err, code, "%s", text);
}

/* The SQLSTATE of a checked statement (checked_form) that changed too few
 * rows: division_by_zero, which nothing else the store sends can raise. */
#define DB_PG_CHECK_FAILED "22012"

/* One deferred statement's result. */
static void collect_one(db *d, const db_deferred *entry, PGresult *result)
{
    ExecStatusType status = PQresultStatus(result);
    if (status == PGRES_PIPELINE_ABORTED) {
        /* An earlier statement failed, and that one is reported. The server
         * skipped this one: a preparation sent here never happened, so the
         * statement is prepared again at its next use (without this, every
         * later use on this connection would fail with "does not exist"). */
        if (entry->prepared)
            *entry->prepared = 0;
        return;
    }
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        vf_error failure;
        vf_error_init(&failure);
        const char *state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
        if (entry->checked && state && strcmp(state, DB_PG_CHECK_FAILED) == 0) {
            vf_error_set(&failure, entry->expect.short_code, "%s: %s: %s", d->label, entry->what,
                         entry->text[0] ? entry->text : "it changed nothing");
        } else {
            fail(d, result, entry->what, &failure);
            if (failure.code == VF_EUNAVAILABLE && entry->expect.busy_code)
                failure.code = entry->expect.busy_code;
        }
        if (entry->prepared)
            *entry->prepared = 0; /* not prepared after all: again at next use */
        defer_failed(d, failure.code, failure.text);
        return;
    }
    if (entry->prepared || entry->checked)
        return;
    const char *tuples = PQcmdTuples(result);
    int64_t changes = *tuples ? strtoll(tuples, NULL, 10) : 0;
    if (changes < entry->expect.min_changes) {
        vf_error failure;
        vf_error_init(&failure);
        vf_error_set(&failure, entry->expect.short_code, "%s: %s: %s", d->label, entry->what,
                     entry->text[0] ? entry->text : "it changed nothing");
        defer_failed(d, failure.code, failure.text);
    }
}

/* The pipeline's next result (NULL: the end of a command's results), within
 * the deadline. NULL with *failure set when the server did not answer in
 * time (the connection is abandoned) or the connection failed. */
static PGresult *next_result(db *d, int64_t deadline, vf_error *failure)
{
    while (PQisBusy(d->pg)) {
        int ready = wait_socket(d, POLLIN, deadline);
        if (ready == 0) {
            abandon(d, "collecting deferred statements", failure);
            return NULL;
        }
        if (ready < 0 || !PQconsumeInput(d->pg)) {
            d->abandoned = true;
            fail(d, NULL, "collecting deferred statements", failure);
            failure->code = VF_EUNAVAILABLE;
            return NULL;
        }
    }
    return PQgetResult(d->pg);
}

/* Send what is queued, reading meanwhile so the server never waits on us. */
static int flush_pipeline(db *d, int64_t deadline, vf_error *failure)
{
    for (;;) {
        int left = PQflush(d->pg);
        if (left == 0)
            return 0;
        int ready = left < 0 ? -1 : wait_socket(d, POLLIN | POLLOUT, deadline);
        if (ready == 0) {
            abandon(d, "sending deferred statements", failure);
            return -1;
        }
        if (ready < 0 || ((ready & POLLIN) && !PQconsumeInput(d->pg))) {
            d->abandoned = true;
            fail(d, NULL, "sending deferred statements", failure);
            failure->code = VF_EUNAVAILABLE;
            return -1;
        }
    }
}

/* Collect every deferred result (one round trip) and leave pipeline mode.
 * Returns 0, or -1 with err when a deferred statement failed (now or
 * earlier in the transaction). */
static int drain(db *d, vf_error *err)
{
    if (d->pg && PQpipelineStatus(d->pg) != PQ_PIPELINE_OFF) {
        vf_error failure;
        vf_error_init(&failure);
        bool lost = false;
        if (d->n_deferred > 0) {
            count_round_trip(d, d->deferred[0].what);
            int64_t deadline = command_deadline(d);
            if (!PQpipelineSync(d->pg)) {
                fail(d, NULL, "sending deferred statements", &failure);
                failure.code = VF_EUNAVAILABLE;
                d->abandoned = lost = true;
            }
            lost = lost || flush_pipeline(d, deadline, &failure) != 0;
            for (size_t i = 0; i < d->n_deferred && !lost; i++) {
                PGresult *result = next_result(d, deadline, &failure);
                if (!result) {
                    lost = true;
                    break;
                }
                collect_one(d, &d->deferred[i], result);
                PQclear(result);
                while ((result = next_result(d, deadline, &failure)) != NULL)
                    PQclear(result); /* up to the NULL that ends its results */
                lost = failure.code != VF_OK;
            }
            if (!lost && d->carried) {
                /* The statement that pg_step sent after them: its result
                 * is the caller's, errors included. */
                *d->carried = next_result(d, deadline, &failure);
                PGresult *result;
                while (*d->carried && (result = next_result(d, deadline, &failure)) != NULL)
                    PQclear(result);
                lost = !*d->carried || failure.code != VF_OK;
            }
            if (!lost) {
                PGresult *sync = next_result(d, deadline, &failure);
                if (PQresultStatus(sync) != PGRES_PIPELINE_SYNC) {
                    lost = true;
                    if (failure.code == VF_OK)
                        vf_error_set(&failure, VF_EUNAVAILABLE,
                                     "%s: collecting deferred statements: the pipeline lost its "
                                     "place",
                                     d->label);
                    d->abandoned = true;
                }
                PQclear(sync);
            }
        }
        if (lost) {
            /* The results are gone with the connection, and so is the
             * transaction: nothing sent was prepared for sure. */
            for (size_t i = 0; i < d->n_deferred; i++)
                if (d->deferred[i].prepared)
                    *d->deferred[i].prepared = 0;
            defer_failed(d, VF_EUNAVAILABLE, failure.text);
        }
        d->n_deferred = 0;
        if (!lost && !PQexitPipelineMode(d->pg)) {
            vf_error_init(&failure);
            fail(d, NULL, "leaving pipeline mode", &failure);
            defer_failed(d, VF_EIO, failure.text);
        }
        if (!lost)
            note_transaction(d);
    }
    if (d->deferred_failed) {
        vf_error_set(err, d->deferred_err.code, "%s", d->deferred_err.text);
        return -1;
    }
    return 0;
}

/* Ready to send `what` in pipeline mode, with room for two more entries. */
static int pipeline_ready(db *d, const char *what, vf_error *err)
{
    if (d->deferred_failed)
        return drain(d, err);
    if (reconnect_if_lost(d, err) != 0)
        return -1;
    if (grow_array((void **)&d->deferred, &d->cap_deferred, d->n_deferred + 2,
                   sizeof *d->deferred) < 0) {
        vf_error_set(err, VF_ENOMEM, "%s: %s: out of memory", d->label, what);
        return -1;
    }
    if (PQpipelineStatus(d->pg) == PQ_PIPELINE_OFF && !PQenterPipelineMode(d->pg)) {
        fail(d, NULL, what, err);
        return -1;
    }
    return 0;
}

static int pg_exec_deferred(db *d, const char *sql, const char *what, vf_error *err)
{
    if (pipeline_ready(d, what, err) != 0)
        return -1;
    if (!PQsendQueryParams(d->pg, sql, 0, NULL, NULL, NULL, NULL, 0)) {
        fail(d, NULL, what, err);
        return -1;
    }
    db_deferred *entry = &d->deferred[d->n_deferred++];
    memset(entry, 0, sizeof *entry);
    snprintf(entry->what, sizeof entry->what, "%s", what);
    d->tx_open = true; /* BEGIN, as far as a lost connection is concerned */
    return 0;
}

/* Queue the statement named `name` with st's parameters on the pipeline,
 * prepared first from `sql`, in the same round trip, when this connection
 * has not prepared it yet (*epoch). 0, or -1 with err. */
static int send_named(db *d, db_stmt *st, const char *name, const char *sql, unsigned *epoch,
                      const char *what, vf_error *err)
{
    if (pipeline_ready(d, what, err) != 0)
        return -1;
    if (*epoch != d->epoch) {
        if (!PQsendPrepare(d->pg, name, sql, 0, NULL)) {
            fail(d, NULL, what, err);
            return -1;
        }
        db_deferred *entry = &d->deferred[d->n_deferred++];
        memset(entry, 0, sizeof *entry);
        entry->prepared = epoch;
        snprintf(entry->what, sizeof entry->what, "preparing a statement");
        *epoch = d->epoch;
    }
    if (!PQsendQueryPrepared(d->pg, name, st->params, (const char *const *)st->values, NULL, NULL,
                             0)) {
        fail(d, NULL, what, err);
        return -1;
    }
    return 0;
}

/* Queue st itself (send_named). */
static int send_prepared(db *d, db_stmt *st, const char *what, vf_error *err)
{
    return send_named(d, st, st->name, st->sql, &st->epoch, what, err);
}

static bool starts_with_word(const char *sql, const char *word)
{
    sql += strspn(sql, " \t\n");
    size_t n = strlen(word);
    return strncasecmp(sql, word, n) == 0 && (sql[n] == ' ' || sql[n] == '\n');
}

/* The checked form of st: the same write, made to fail on the server when it
 * changes fewer than `least` rows, so that the failure stops the pipeline
 * (every later statement of it, a COMMIT included, is skipped and the
 * transaction is left failed) instead of being found by the client after
 * the round trip, when a COMMIT sent behind it would already have
 * committed. The write's rows are counted through RETURNING (a
 * data-modifying WITH runs exactly once, whether or not its rows are
 * read); dividing by the comparison raises division_by_zero
 * (DB_PG_CHECK_FAILED) at run time: the count is data, so the planner
 * cannot fold it. Only INSERT, UPDATE and DELETE without a RETURNING of
 * their own qualify; for any other statement (or without memory) false:
 * the client checks it after the round trip, as before. */
static bool checked_form(db_stmt *st, int64_t least)
{
    if (st->checked_sql)
        return st->checked_min == least;
    if (!(starts_with_word(st->sql, "INSERT") || starts_with_word(st->sql, "UPDATE") ||
          starts_with_word(st->sql, "DELETE")) ||
        strcasestr(st->sql, "RETURNING"))
        return false;
    static const char form[] =
        "WITH vf_changed AS (%s RETURNING 1) SELECT 1 / (count(*) >= %lld)::int FROM vf_changed";
    size_t size = sizeof form + strlen(st->sql) + 24;
    if (!(st->checked_sql = malloc(size)))
        return false;
    snprintf(st->checked_sql, size, form, st->sql, (long long)least);
    snprintf(st->checked_name, sizeof st->checked_name, "%.20sc", st->name);
    st->checked_min = least;
    st->checked_epoch = 0;
    return true;
}

static int pg_defer(db_stmt *st, const char *what, const db_expect *expect, vf_error *err)
{
    db *d = st->owner;
    bool checked = expect->min_changes > 0 && checked_form(st, expect->min_changes);
    int sent = checked ? send_named(d, st, st->checked_name, st->checked_sql, &st->checked_epoch,
                                    what, err)
                       : send_prepared(d, st, what, err);
    if (sent < 0)
        return -1;
    db_deferred *entry = &d->deferred[d->n_deferred++];
    memset(entry, 0, sizeof *entry);
    entry->expect = *expect;
    entry->expect.short_text = NULL;
    entry->checked = checked || expect->checks_itself;
    snprintf(entry->what, sizeof entry->what, "%s", what);
    if (expect->short_text)
        snprintf(entry->text, sizeof entry->text, "%s", expect->short_text);
    pg_reset(st);
    if (d->n_deferred >= DB_PG_MAX_DEFERRED)
        return drain(d, err);
    return 0;
}

static int pg_exec(db *d, const char *sql, const char *what, vf_error *err)
{
    if (strcmp(sql, "ROLLBACK") == 0) {
        vf_error ignored;
        vf_error_init(&ignored);
        (void)drain(d, &ignored);
        d->deferred_failed = false; /* what failed is being undone */
    } else if (drain(d, err) != 0) {
        return -1;
    }
    if (!pg_usable(d) && d->tx_open && strcmp(sql, "ROLLBACK") == 0) {
        d->tx_open = false; /* the server rolls it back when it sees the connection gone */
        return 0;
    }
    if (reconnect_if_lost(d, err) != 0)
        return -1;
    PGresult *result = run_query(d, sql, what, err);
    if (!result)
        return -1;
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
    if (drain(d, err) != 0 || reconnect_if_lost(d, err) != 0)
        return -1;
    if (!PQsendPrepare(d->pg, st->name, st->sql, 0, NULL)) {
        fail(d, NULL, "preparing a statement", err);
        return -1;
    }
    PGresult *result = await_result(d, "preparing a statement", err);
    if (!result)
        return -1;
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

static int pg_prepare(db_stmt *st, const char *sql, vf_error *err)
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

static void pg_reset(db_stmt *st)
{
    PQclear(st->result);
    st->result = NULL;
    st->row = 0;
    for (int i = 0; i < st->params; i++) {
        free(st->values[i]);
        st->values[i] = NULL;
    }
}

static void deallocate(db *d, const char *name)
{
    char sql[48];
    snprintf(sql, sizeof sql, "DEALLOCATE %s", name);
    vf_error ignored;
    vf_error_init(&ignored);
    PQclear(run_query(d, sql, "deallocating a statement", &ignored));
}

static void pg_free(db_stmt *st)
{
    pg_reset(st);
    db *d = st->owner;
    if (d->pg) {
        vf_error ignored;
        vf_error_init(&ignored);
        (void)drain(d, &ignored); /* a failure sticks for the transaction's next statement */
    }
    /* Only a session that prepared it knows it; the next statement of a
     * failed transaction would fail, so leave it to the session's end then. */
    if (st->epoch == d->epoch && pg_usable(d) && PQtransactionStatus(d->pg) != PQTRANS_INERROR)
        deallocate(d, st->name);
    if (st->checked_epoch == d->epoch && pg_usable(d) &&
        PQtransactionStatus(d->pg) != PQTRANS_INERROR)
        deallocate(d, st->checked_name);
    free(st->values);
    free(st->sql);
    free(st->checked_sql);
}

/* Whether a deferred statement awaits a check of the client's (a least
 * number of rows changed, for a statement without a checked form): the
 * server does not stop the pipeline when that check fails, so nothing may
 * follow it in the same round trip (a COMMIT would commit). The store's
 * conditional claims all have a checked form, which the server refuses
 * itself: their COMMIT travels with them. */
static bool pending_expectations(const db *d)
{
    for (size_t i = 0; i < d->n_deferred; i++)
        if (d->deferred[i].expect.min_changes > 0 && !d->deferred[i].checked)
            return true;
    return false;
}

/* Run st after the deferred statements, in the same round trip: a
 * transaction's deferred BEGIN and writes travel with its next read, and a
 * statement not yet prepared is prepared on the way. Returns 0 with
 * st->result set (an error result included: the caller reports it), or -1
 * with err when a deferred statement failed or the connection did. */
static int step_in_pipeline(db_stmt *st, const char *what, vf_error *err)
{
    db *d = st->owner;
    if (send_prepared(d, st, what, err) < 0)
        return -1;
    d->carried = &st->result;
    int rc = drain(d, err);
    d->carried = NULL;
    if (rc != 0 || !st->result) {
        PQclear(st->result);
        st->result = NULL;
        if (rc == 0)
            fail(d, NULL, what, err);
        return -1;
    }
    return 0;
}

static int pg_step(db_stmt *st, const char *what, vf_error *err)
{
    db *d = st->owner;
    if (st->result) {
        if (PQresultStatus(st->result) != PGRES_TUPLES_OK || st->row + 1 >= PQntuples(st->result))
            return DB_DONE;
        st->row++;
        return DB_ROW;
    }
    if (d->n_deferred > 0 && !d->deferred_failed && pg_usable(d) && !pending_expectations(d)) {
        if (step_in_pipeline(st, what, err) != 0)
            return -1;
    } else {
        if (drain(d, err) != 0)
            return -1;
        /* send_prepare reconnects a lost connection (outside a transaction). */
        if ((st->epoch != d->epoch || !pg_usable(d)) && send_prepare(st, err) != 0)
            return -1;
        if (!PQsendQueryPrepared(d->pg, st->name, st->params, (const char *const *)st->values, NULL,
                                 NULL, 0)) {
            fail(d, NULL, what, err);
            return -1;
        }
        st->result = await_result(d, what, err);
        if (!st->result)
            return -1;
        note_transaction(d);
    }
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

static int pg_step_deferred(db_stmt *st, const char *what, const db_expect *expect, vf_error *err)
{
    /* Outside a transaction nothing would wait for the end of the batch. */
    if (pg_in_transaction(st->owner))
        return pg_defer(st, what, expect, err);
    return db_step_now(st, what, expect, err);
}

static bool pg_in_transaction(const db *d)
{
    if (!d->pg)
        return false;
    if (!pg_usable(d))
        return d->tx_open; /* lost with the connection, but the caller must still roll back */
    PGTransactionStatusType status = PQtransactionStatus(d->pg);
    return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE;
}

static bool pg_transaction_failed(const db *d)
{
    return d->pg && pg_usable(d) && PQtransactionStatus(d->pg) == PQTRANS_INERROR;
}

/* Keep an owned text copy of a parameter. */
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

static int pg_bind_int64(db_stmt *st, int index, int64_t value)
{
    char text[DB_INT64_TEXT];
    db_int64_text(value, text);
    return pg_bind(st, index, text);
}

static int pg_bind_double(db_stmt *st, int index, double value)
{
    char text[40];
    snprintf(text, sizeof text, "%.17g", value); /* round-trips exactly */
    return pg_bind(st, index, text);
}

static int pg_bind_null(db_stmt *st, int index)
{
    return pg_bind(st, index, NULL);
}

static int pg_column_count(db_stmt *st)
{
    return st->result ? PQnfields(st->result) : 0;
}

static bool pg_column_is_null(db_stmt *st, int column)
{
    return PQgetisnull(st->result, st->row, column) != 0;
}

static const char *pg_column_text(db_stmt *st, int column)
{
    if (PQgetisnull(st->result, st->row, column))
        return NULL;
    return PQgetvalue(st->result, st->row, column);
}

static int64_t pg_column_int64(db_stmt *st, int column)
{
    const char *text = pg_column_text(st, column);
    return text ? strtoll(text, NULL, 10) : 0;
}

static double pg_column_double(db_stmt *st, int column)
{
    const char *text = pg_column_text(st, column);
    return text ? strtod(text, NULL) : 0.0;
}

const db_backend db_pg_backend = {
    .kind = DB_POSTGRES,
    .close = pg_close,
    .exec = pg_exec,
    .exec_deferred = pg_exec_deferred,
    .set_timeout = pg_set_timeout,
    .in_transaction = pg_in_transaction,
    .transaction_failed = pg_transaction_failed,
    .prepare = pg_prepare,
    .stmt_free = pg_free,
    .reset = pg_reset,
    .bind_text = pg_bind,
    .bind_int64 = pg_bind_int64,
    .bind_double = pg_bind_double,
    .bind_null = pg_bind_null,
    .step = pg_step,
    .step_deferred = pg_step_deferred,
    .column_count = pg_column_count,
    .column_is_null = pg_column_is_null,
    .column_text = pg_column_text,
    .column_int64 = pg_column_int64,
    .column_double = pg_column_double,
};
