/* store: the SQLite file, or the same tables in a PostgreSQL database
 * (store_open_at with a URL; docs/operations.md "PostgreSQL store"), that
 * holds everything virtflow records; docs/contracts.md "Store" lists every
 * table and column, and each table has its header beside this one: tasks
 * and their history (store_tasks.h), reservations and host generations
 * (store_reservations.h, store_hosts.h), groups (store_groups.h), spares
 * (store_spares.h), the event outbox (store_outbox.h), webhook deliveries,
 * receivers and bulk redeliveries (store_deliveries.h, store_receivers.h),
 * dead letters (store_dead_letters.h), inventory snapshots
 * (store_inventory.h), what each decision was made over and the scheduler
 * sections decided under (store_provenance.h), leases (leases.h), processes
 * (store_processes.h) and CAPPX machines (store_admission.h). Everything
 * below holds for both stores unless it says otherwise; the SQL goes
 * through common/store/db.h.
 *
 * Durability. A read-write store runs in WAL mode with synchronous=FULL: the
 * WAL is fsynced at every COMMIT, so a committed transaction survives both a
 * process crash and a power loss. The worker acks a broker message only after
 * its outcome is durable, so anything weaker could ack work that is then
 * lost. The fsync cost is amortised by group commit: the caller opens one
 * transaction with store_begin, records many messages (task row, history rows,
 * reservation, outbox event of each), calls store_commit once, and only then
 * publishes and acks all of them. Without store_begin every call below runs
 * in its own transaction (one fsync each).
 *
 * A handle may instead defer the fsync (store_defer_sync): its commits are
 * then atomic and survive a process crash at once (the WAL is written before
 * COMMIT returns), and survive a power loss once store_sync has returned.
 * The worker commits batch N+1 while a thread of its own syncs batch N, and
 * acks and publishes a batch only after its sync.
 *
 * PostgreSQL: a COMMIT is durable when it returns (with the server's
 * synchronous_commit = on, its default), so store_defer_sync and store_sync
 * succeed and do nothing, and checkpoints are the server's business
 * (store_set_autocheckpoint and store_checkpoint do nothing either).
 *
 * Timestamps. Every timestamp is passed in by the caller (tests stay
 * deterministic) and stored as RFC 3339 UTC text with milliseconds, always
 * exactly "YYYY-MM-DDTHH:MM:SS.mmmZ" (24 characters), e.g.
 * "2026-11-22T01:02:03.123Z"; use store_now for the real clock. The fixed
 * width makes text comparison time order, which the "due", "live" and
 * "since" queries rely on: a timestamp in another form compares wrongly.
 *
 * Strings. Every string is bound as a parameter and comes back byte for byte;
 * JSON columns are TEXT holding whatever JSON text the caller gave.
 *
 * Errors. Functions that can fail return -1 and fill the optional `err`
 * with the database's message and a code: VF_EUNAVAILABLE when the database
 * was busy or locked beyond the busy timeout (5 s; retry later) or, on
 * PostgreSQL, the server could not be reached (the next call reconnects),
 * VF_EINVAL for a constraint violation (duplicate id, unknown task id, bad
 * kind/status), VF_ECONFLICT for a PostgreSQL serialization failure or
 * deadlock (redo), VF_ENOMEM, VF_EIO otherwise. After a failure inside
 * store_begin ... store_commit, call store_rollback and redo the whole group
 * (on PostgreSQL a failed statement has ended the transaction).
 *
 * Threads. A store handle is used by one thread at a time. Several processes
 * may open the same file: one writer at a time (the others wait up to the busy
 * timeout), readers never block and are never blocked (WAL). On PostgreSQL
 * any number of processes on any machines write at once (store_begin).
 *
 * Listing functions collect their rows, finish the query, and then call the
 * callback once per row; the row and its strings are borrowed and valid only
 * during that call. Callbacks may call any store function (for instance
 * update the row they are given). A callback returns 0 to continue or
 * non-zero to stop early; stopping is not an error.
 *
 * This header is the core (opening, time, transactions); each table has
 * a header of its own beside it: store_tasks.h, store_reservations.h,
 * store_hosts.h (host generations and leases), store_outbox.h,
 * store_spares.h, store_deliveries.h, store_stats.h, store_prune.h,
 * store_inventory.h (inventory snapshots). */
#ifndef VF_STORE_H
#define VF_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vf_error.h"

typedef struct store store;

typedef enum {
    STORE_READ_WRITE, /* create if missing (mode 0600), apply migrations */
    STORE_READ_ONLY,  /* for virtflowctl: never writes, never blocks writers */
} store_mode;

/* Length of a store timestamp plus its NUL. */
#define STORE_TIME_SIZE 32

/* The schema version this program writes and reads (PRAGMA user_version). */
int store_schema_version(void);

/* Open (READ_WRITE: create with owner-only permissions, WAL, migrate) the
 * store at `path`. Returns an owned handle (store_close) or NULL with `err`
 * set: a missing file in READ_ONLY mode, permission denied, a file that is
 * not a database, or a schema newer than this program (left unchanged) or,
 * in READ_ONLY mode, older than this program. */
store *store_open(const char *path, store_mode mode, vf_error *err)
    __attribute__((warn_unused_result));

/* Where a store is: an SQLite file or a PostgreSQL database. */
typedef struct store_location {
    const char *path;     /* SQLite file; or NULL */
    const char *url;      /* postgresql://USER@HOST:PORT/DB[?param=value...]; or NULL */
    const char *password; /* PostgreSQL: overrides one in the URL; NULL: none (or ~/.pgpass) */
    const char *ca_file;  /* PostgreSQL TLS trust anchors: sslmode verify-full, or require
                           * when !tls_verify; NULL: the URL's sslmode (libpq: prefer) */
    bool tls_verify;
    /* PostgreSQL: every command after the migrations is bounded by this
     * (db_set_timeout): the server's statement_timeout, and a client-side
     * deadline a little later for a server that does not answer at all.
     * 0: no bound. The SQLite store ignores it (its busy timeout, 5 s). */
    int statement_timeout_ms;
} store_location;

/* store.statement_timeout_ms's default, and store_open's bound. */
#define STORE_STATEMENT_TIMEOUT_MS 30000

/* Called while a command waits for the PostgreSQL server, at least every
 * half second (see db_set_wait_hook): the worker keeps its broker heartbeats
 * going from it. It must not use this store handle. NULL removes it; SQLite
 * never calls it. */
void store_set_wait_hook(store *s, void (*fn)(void *user), void *user);

/* Open the store at `where` (exactly one of path and url). A path opens as
 * store_open does. A URL connects to PostgreSQL; READ_WRITE applies the
 * migrations of schema/pg/ (several processes may start at once: they take
 * turns), READ_ONLY makes every transaction read-only. Errors as store_open,
 * and VF_EUNAVAILABLE when the server cannot be reached. Messages show the URL
 * without its password. */
store *store_open_at(const store_location *where, store_mode mode, vf_error *err)
    __attribute__((warn_unused_result));

/* Whether `location` is a PostgreSQL URL (postgresql:// or postgres://),
 * which store_open also accepts in place of a path. */
bool store_is_url(const char *location);

/* Copy `url` into out (size bytes, NUL-terminated) with a password in
 * user:password@ or in a password= parameter replaced by ***. */
void store_url_for_messages(const char *url, char *out, size_t size);

/* Close the handle; a transaction still open is rolled back. NULL is a no-op. */
void store_close(store *s);

/* Format the current UTC time as a store timestamp into buf. */
void store_now(char buf[STORE_TIME_SIZE]);

/* Format `unix_ms` (milliseconds since the epoch, UTC) as a store
 * timestamp. Returns 0, or -1 if the time cannot be represented. */
int store_format_time(int64_t unix_ms, char buf[STORE_TIME_SIZE]);

/* ---- transactions (group commit) ---- */

/* Start a write transaction. It takes the write lock at once (BEGIN
 * IMMEDIATE), waiting up to the busy timeout, so the statements inside
 * cannot fail later for lack of the lock. Nested calls are an error.
 * PostgreSQL has no such lock: writers run side by side (READ COMMITTED),
 * kept apart by claims (store_claims.h), conditional writes and the unique
 * indexes; nothing holds the whole store. */
int store_begin(store *s, vf_error *err) __attribute__((warn_unused_result));

/* Commit: when this returns 0 the transaction is on disk. On failure the
 * transaction is rolled back; none of it happened. */
int store_commit(store *s, vf_error *err) __attribute__((warn_unused_result));

/* Discard the open transaction; no-op (returns 0) if none is open, for
 * instance because SQLite already rolled it back after an error. */
int store_rollback(store *s, vf_error *err);

/* Whether the store takes writes again after a failed commit: one small
 * write (the store_probe row) in a transaction of its own, committed.
 * Returns 0, or -1 with err (as store_begin/store_commit fail). */
int store_probe_write(store *s, vf_error *err) __attribute__((warn_unused_result));

/* True between store_begin and store_commit/store_rollback. */
bool store_in_transaction(const store *s);

/* From now on, inside a transaction on PostgreSQL, the writes a worker's
 * batch makes (store_task_insert, store_task_update, store_task_event_add,
 * store_outbox_add, store_outbox_mark_confirmed, store_reservation_add,
 * store_group_claim, store_reservations_set_group, store_task_undo) are
 * sent without waiting for their answers: each
 * returns 0 once sent, and a failure (with the code it would have had)
 * comes back from the next call that waits for the server, at the latest
 * store_commit, which then fails; every call after it fails too until
 * store_rollback. A batch of them costs one round trip instead of one each
 * (db_step_deferred). store_task_update then cannot return 1: a missing
 * task fails the transaction with VF_EINTERNAL; store_outbox_mark_confirmed
 * returns 0 for an unknown event. SQLite: nothing changes. */
void store_defer_writes(store *s);

/* Inside the worker's transactions (store_defer_writes): the rows kept for
 * the commit from now on (history, events) belong to `tag` (a task id;
 * NULL: none), so that they can be forgotten if that task's part of the
 * transaction is undone (store_forget_tagged). */
void store_tag_writes(store *s, const char *tag);
/* Forget the rows kept for the commit under `tag`. Returns 0, or -1 with
 * VF_EINTERNAL when kept rows were sent already (a read of the transaction
 * needed them): the caller then rolls the whole transaction back. */
int store_forget_tagged(store *s, const char *tag, vf_error *err)
    __attribute__((warn_unused_result));

/* How many times this handle has waited for the database server's answer
 * since it was opened (db_round_trips); 0 on SQLite. */
uint64_t store_round_trips(const store *s);

/* Checkpoints. SQLite copies the WAL back into the database file inside
 * whichever commit crosses `pages` WAL pages (1000 by default), on the
 * committing thread. A busy writer can turn that off (pages 0) and let
 * another thread call store_checkpoint on a handle of its own: a passive
 * checkpoint never blocks the writer nor waits for readers. Returns 0 or -1. */
int store_set_autocheckpoint(store *s, int pages, vf_error *err)
    __attribute__((warn_unused_result));
/* Passive checkpoint; *wal_pages and *copied (optional) tell how far it got. */
int store_checkpoint(store *s, int *wal_pages, int *copied, vf_error *err)
    __attribute__((warn_unused_result));

/* Stop waiting for the disk at COMMIT on this handle (PRAGMA synchronous=
 * NORMAL) and open the WAL file so store_sync can fsync it. From then on a
 * commit is durable against power loss only once a store_sync that started
 * after it has returned 0: acknowledge nothing on its strength before that. */
int store_defer_sync(store *s, vf_error *err) __attribute__((warn_unused_result));

/* fdatasync the WAL: every commit made on this handle before the call is then
 * durable. The one store function that may run on another thread while the
 * handle's own thread goes on using it (it touches only the WAL's file
 * descriptor). A failure is final: after a failed fsync the kernel may have
 * dropped the unwritten pages, so no later success proves anything; the
 * caller must stop acknowledging and restart. Requires store_defer_sync. */
int store_sync(store *s, vf_error *err) __attribute__((warn_unused_result));

#endif
