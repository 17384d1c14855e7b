/* store: the SQLite file that holds tasks, their history, reservations, the
 * event outbox and webhook deliveries (DESIGN.md "SQLite store"), or the
 * same tables in a PostgreSQL database (store_open_at with a URL; README
 * "PostgreSQL store"). Everything below holds for both unless it says
 * otherwise; the SQL goes through common/db.h.
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
 * non-zero to stop early; stopping is not an error. */
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
} store_location;

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
 * kept apart by store_host_claim's row locks and the unique indexes; each
 * holds the store's advisory lock in shared mode (see store_begin_exclusive). */
int store_begin(store *s, vf_error *err) __attribute__((warn_unused_result));

/* store_begin, and no other store_begin transaction runs beside this one:
 * for deciding a batch again after a conflict, so that the second decision
 * works from a picture nobody changes under it (a claim may still meet a
 * change made outside any transaction, such as a release). SQLite: the same
 * as store_begin, whose write lock is exclusive already. PostgreSQL: waits
 * for the transactions open now to end, and holds off new ones until the
 * commit (the advisory lock in exclusive mode). */
int store_begin_exclusive(store *s, vf_error *err) __attribute__((warn_unused_result));

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

/* ---- tasks ---- */

/* One tasks row; every string is an owned copy (store_task_clear frees
 * them), NULL when the column is NULL. */
typedef struct store_task {
    char *id;
    char *kind;   /* "schedule" or "spare" */
    char *status; /* DESIGN.md "Task states" */
    char *reason; /* "invalid", "unschedulable", "exhausted" or NULL */
    int attempts;
    char *request; /* JSON text */
    char *result;  /* JSON text */
    char *error;
    char *node;
    int64_t vmid; /* -1: none */
    char *created_at;
    char *updated_at;
} store_task;

/* Free the strings of *t and zero it; t may be NULL or already cleared. */
void store_task_clear(store_task *t);

/* Input of store_task_insert and store_task_update: borrowed strings, NULL
 * stored as SQL NULL. */
typedef struct store_task_fields {
    const char *id;
    const char *kind; /* insert only */
    const char *status;
    const char *reason;
    int attempts;
    const char *request; /* insert only: JSON text */
    const char *result;  /* JSON text */
    const char *error;
    const char *node;
    int64_t vmid;   /* -1: none */
    const char *at; /* insert: created_at = updated_at; update: updated_at */
} store_task_fields;

/* Read task `id` into *out (cleared first by the caller or zeroed).
 * Returns 0 found, 1 not found (*out untouched), -1 error. */
int store_task_get(store *s, const char *id, store_task *out, vf_error *err)
    __attribute__((warn_unused_result));

/* Record a new task. A task with the same id already recorded is a
 * VF_EINVAL error (a redelivery must be recognised with store_task_get). */
int store_task_insert(store *s, const store_task_fields *t, vf_error *err)
    __attribute__((warn_unused_result));

/* Overwrite status, reason, attempts, result, error, node, vmid and
 * updated_at of task t->id (kind, request, created_at never change).
 * Returns 0, 1 if no such task, -1 error. */
int store_task_update(store *s, const store_task_fields *t, vf_error *err)
    __attribute__((warn_unused_result));

/* Append one history row to task `task_id` (which must exist). `detail` is
 * JSON text or NULL. */
int store_task_event_add(store *s, const char *task_id, const char *at, const char *status,
                         const char *detail, vf_error *err) __attribute__((warn_unused_result));

/* One task_events row, borrowed during a callback. */
typedef struct store_task_event {
    int64_t id; /* increases with insertion order */
    const char *task_id;
    const char *at;
    const char *status;
    const char *detail; /* JSON text or NULL */
} store_task_event;

typedef int (*store_task_event_fn)(const store_task_event *event, void *ctx);

/* Call fn for each history row of task_id, oldest first. A task without
 * history (or unknown) calls fn zero times. */
int store_task_events(store *s, const char *task_id, store_task_event_fn fn, void *ctx,
                      vf_error *err) __attribute__((warn_unused_result));

/* Filters of store_task_list; NULL / 0 means "any". */
typedef struct store_task_filter {
    const char *status;
    const char *reason;
    const char *kind;
    const char *node;
    const char *since; /* created_at >= since */
    int limit;         /* at most this many rows; 0: no limit */
} store_task_filter;

/* Borrowed during the callback: the strings die when it returns. */
typedef int (*store_task_fn)(const store_task *task, void *ctx);

/* Call fn for each task matching `filter` (NULL: all), newest first. */
int store_task_list(store *s, const store_task_filter *filter, store_task_fn fn, void *ctx,
                    vf_error *err) __attribute__((warn_unused_result));

/* ---- reservations ---- */

typedef struct store_reservation {
    int64_t id;
    const char *task_id;
    const char *node;
    double cpu;     /* vCPUs */
    int64_t memory; /* MiB */
    int64_t disk;   /* GiB */
    int64_t vmid;   /* -1: none */
    const char *created_at;
    const char *expires_at;
    const char *released_at; /* NULL while held */
} store_reservation;

typedef int (*store_reservation_fn)(const store_reservation *reservation, void *ctx);

/* Reserve capacity and a vmid (-1: none) on `node` for task_id (which must
 * exist) until expires_at. A vmid is held by one unreleased reservation at
 * most: one still held by another task is a VF_ECONFLICT error (the caller's
 * view is stale: reload and decide again); one held by a reservation already
 * expired at created_at is released first. */
int store_reservation_add(store *s, const char *task_id, const char *node, double cpu,
                          int64_t memory_mib, int64_t disk_gib, int64_t vmid,
                          const char *created_at, const char *expires_at, vf_error *err)
    __attribute__((warn_unused_result));

/* Call fn for every live reservation (not released, expires_at > now),
 * oldest first. `now` is the reservation clock (store_reservation_clock). */
int store_reservations_live(store *s, const char *now, store_reservation_fn fn, void *ctx,
                            vf_error *err) __attribute__((warn_unused_result));

/* Release the live reservations of a task (spare.release, failure) or of a
 * vmid on `node` (the inventory now shows that VM on that host; the same
 * vmid elsewhere ends nothing). Return the number released, or -1. */
int store_reservation_release_task(store *s, const char *task_id, const char *at, vf_error *err)
    __attribute__((warn_unused_result));
int store_reservation_release_vmid(store *s, int64_t vmid, const char *node, const char *at,
                                   vf_error *err) __attribute__((warn_unused_result));

/* The reservation clock (schema/003): expiry is judged against the time of
 * the last successful inventory fetch, so it stands still while the
 * inventory is stale. store_inventory_fresh_set records a fetch time (the
 * latest of all writers is kept); store_reservation_clock writes into `out`
 * the time to pass as `now` to store_reservations_live and
 * store_reservations_expire: the recorded time, or the wall clock when none
 * was ever recorded (or the recorded one is ahead of it). Return 0 or -1. */
int store_inventory_fresh_set(store *s, const char *at, vf_error *err)
    __attribute__((warn_unused_result));
int store_reservation_clock(store *s, char out[STORE_TIME_SIZE], vf_error *err)
    __attribute__((warn_unused_result));

/* Mark reservations whose expires_at <= now as released at `now`. Returns
 * the number of rows changed, or -1. (Expired reservations are already
 * ignored by store_reservations_live; this records when they ended.) */
int store_reservations_expire(store *s, const char *now, vf_error *err)
    __attribute__((warn_unused_result));

/* ---- host generations: several workers on one store ----
 *
 * Every host has a generation in the store that each transaction changing
 * its reservations bumps (a claim before adding, a trigger on release), as
 * OpenStack Placement does for resource providers. A worker decides over reservations
 * it loaded at known generations, and commits a reservation only while the
 * host is still at the generation it decided from (store_host_claim): a
 * decision made from a stale view cannot commit. A host never changed is at
 * generation 0. changed_seq orders the changes store-wide, so a worker reads
 * only the hosts changed since it last looked. */

typedef struct store_host_generation {
    const char *node;
    int64_t generation;
    int64_t changed_seq;
} store_host_generation;

typedef int (*store_host_generation_fn)(const store_host_generation *host, void *ctx);

/* Call fn for each host changed after `since` (changed_seq > since), in
 * change order. Returns 0 or -1. */
int store_hosts_changed(store *s, int64_t since, store_host_generation_fn fn, void *ctx,
                        vf_error *err) __attribute__((warn_unused_result));

/* Inside a write transaction, before recording reservations on `node`: move
 * the host from generation `expected` to expected + 1. Returns 0, or -1 with
 * VF_ECONFLICT when another writer moved it first (roll back, reload the
 * host, decide again), or another error. Once claimed, the host is the
 * transaction's until it ends: further reservations on it in the same
 * transaction need no claim. Reservations recorded without a claim are not
 * seen by other workers until they reload the host for another reason.
 * `changed_seq` is the host's new place in the store-wide change order: one
 * above the latest (store_hosts_latest_seq) read in the same transaction,
 * shared by every claim of the transaction. */
int store_host_claim(store *s, const char *node, int64_t expected, int64_t changed_seq,
                     vf_error *err) __attribute__((warn_unused_result));

/* Whether one writer at a time holds the whole store from store_begin to the
 * commit (SQLite), so that a transaction which caught up with the others'
 * changes and then claimed hosts knows every change up to its own. False on
 * PostgreSQL, where writers run side by side. */
bool store_writers_serialized(const store *s);

/* The largest changed_seq in the store (0: none) into *seq. Returns 0 or -1. */
int store_hosts_latest_seq(store *s, int64_t *seq, vf_error *err)
    __attribute__((warn_unused_result));

/* Call fn for every live reservation (not released, expires_at > now) on
 * `node`, oldest first. */
int store_reservations_live_node(store *s, const char *node, const char *now,
                                 store_reservation_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* ---- leases: work that one worker drives at a time ----
 *
 * Work that outlives a message (the spare driver, the outbox sweep, marking
 * expired reservations) is driven by the worker holding its lease, so several
 * workers on one store never drive it twice, and another takes it over when
 * the holder stops renewing (it died). */

/* A name for this process among the store's users: "host:pid:random". */
#define STORE_OWNER_SIZE 160
void store_owner_name(char out[STORE_OWNER_SIZE]);

/* Take or renew lease `name` for `owner` until `until`, unless another owner
 * holds it unexpired at `now`. Returns 1 if `owner` holds it now, 0 if
 * another does, -1 on error. */
int store_lease_acquire(store *s, const char *name, const char *owner, const char *now,
                        const char *until, vf_error *err) __attribute__((warn_unused_result));

/* Give lease `name` up if `owner` holds it (a clean stop), so another worker
 * need not wait for it to expire. Returns 0 or -1. */
int store_lease_release(store *s, const char *name, const char *owner, vf_error *err);

/* Extend every lease `owner` holds to `until`: a live worker keeps its leases
 * while a long step runs. Returns the number renewed, or -1. */
int store_leases_renew(store *s, const char *owner, const char *until, vf_error *err)
    __attribute__((warn_unused_result));

/* The owner of lease `name` into holder (size bytes). Returns 1 and fills
 * holder, 0 when nobody holds it, -1 on error. */
int store_lease_holder(store *s, const char *name, char *holder, size_t size, vf_error *err)
    __attribute__((warn_unused_result));

/* Call fn with the owner of every lease whose name starts with `prefix` and
 * that has not expired at `now`. Returns 0 or -1. */
int store_leases_live(store *s, const char *prefix, const char *now,
                      int (*fn)(const char *owner, void *ctx), void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* Give lease `name` from `previous` (known to be dead) to `owner` until
 * `until`. Returns 1 if taken, 0 if `previous` no longer held it, -1. */
int store_lease_take_over(store *s, const char *name, const char *previous, const char *owner,
                          const char *now, const char *until, vf_error *err)
    __attribute__((warn_unused_result));

/* ---- outbox ---- */

typedef struct store_outbox_event {
    const char *id; /* event id, AMQP message_id */
    const char *routing_key;
    const char *body; /* JSON text */
    const char *created_at;
    const char *published_at; /* NULL until the first publish attempt */
    int attempts;             /* publish attempts so far */
} store_outbox_event;

typedef int (*store_outbox_fn)(const store_outbox_event *event, void *ctx);

/* Queue an event for publishing; a duplicate id is a VF_EINVAL error. */
int store_outbox_add(store *s, const char *event_id, const char *routing_key, const char *body,
                     const char *created_at, vf_error *err) __attribute__((warn_unused_result));

/* Call fn for up to `limit` (0: all) events not yet confirmed, oldest first;
 * only those created before `created_before` unless it is NULL (several
 * workers share the outbox: a younger event may be on its way from another). */
int store_outbox_pending(store *s, const char *created_before, int limit, store_outbox_fn fn,
                         void *ctx, vf_error *err) __attribute__((warn_unused_result));

/* Record a publish attempt (published_at = at, attempts + 1). Returns 0,
 * 1 if no such event, -1 error. */
int store_outbox_mark_published(store *s, const char *event_id, const char *at, vf_error *err)
    __attribute__((warn_unused_result));

/* Record the broker's confirm; the event is no longer pending. Returns 0,
 * 1 if no such event, -1 error. */
int store_outbox_mark_confirmed(store *s, const char *event_id, const char *at, vf_error *err)
    __attribute__((warn_unused_result));

/* Number of events not yet confirmed into *count. */
int store_outbox_count_pending(store *s, int64_t *count, vf_error *err)
    __attribute__((warn_unused_result));

/* Delete up to `limit` (0: all) events confirmed before `before`, oldest
 * confirm first. Returns the number deleted, or -1. */
int store_outbox_prune(store *s, const char *before, int limit, vf_error *err)
    __attribute__((warn_unused_result));

/* ---- spares (spare.prepare / spare.release) ---- */

/* One spares row. In listings every string is borrowed (valid during the
 * callback); as input to store_spare_add / store_spare_update, borrowed for
 * the call. NULL strings are SQL NULL. */
typedef struct store_spare {
    int64_t id;          /* assigned by store_spare_add */
    const char *task_id; /* the spare.prepare task */
    const char *upgrade_id;
    const char *cluster;
    int index; /* 1..count */
    const char *name;
    const char *node;
    const char *ip;
    int64_t vmid;
    double cpu;           /* vCPUs */
    int64_t memory;       /* MiB */
    int64_t disk;         /* GiB */
    const char *state;    /* provisioning, waiting_ready, ready, failed, releasing, released */
    int attempts;         /* provisioner attempts of the current step */
    const char *next_at;  /* the driver's next step is due; NULL: nothing to do */
    const char *ready_by; /* Ready deadline */
    int ready_timeout_s;
    const char *release_task_id;
    int64_t pipeline_id; /* -1: none */
    const char *pipeline_url;
    const char *last_error;
    const char *created_at;
    const char *updated_at;
} store_spare;

typedef int (*store_spare_fn)(const store_spare *spare, void *ctx);

/* Record a spare (task_id must exist). Returns 0 or -1. */
int store_spare_add(store *s, const store_spare *spare, vf_error *err)
    __attribute__((warn_unused_result));

/* Overwrite state, attempts, next_at, ready_by, release_task_id, pipeline_id,
 * pipeline_url, last_error and updated_at of spare->id, but only while its
 * updated_at still equals `seen_updated_at` (the value the caller read): two
 * threads changing one spare cannot overwrite each other unseen. Returns 0,
 * 1 if no such spare or it changed meanwhile (re-read it), -1. */
int store_spare_update(store *s, const store_spare *spare, const char *seen_updated_at,
                       vf_error *err) __attribute__((warn_unused_result));

typedef enum {
    STORE_SPARES_OF_TASK,    /* key: prepare task id, by index */
    STORE_SPARES_OF_UPGRADE, /* key: upgrade id, oldest task first, by index */
    STORE_SPARES_OF_RELEASE, /* key: release task id */
    STORE_SPARES_DUE,        /* key: now; next_at <= now, earliest first */
    STORE_SPARES_ALL,        /* key ignored; oldest first */
} store_spare_query;

/* Call fn for each spare the query selects (at most `limit`, 0: all). */
int store_spare_list(store *s, store_spare_query query, const char *key, int limit,
                     store_spare_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* ---- deliveries (virtflow-relay) ---- */

/* One deliveries row. The body is a copy of the event JSON. */
typedef struct store_delivery {
    const char *event_id;
    const char *receiver;
    const char *status; /* "pending", "delivering", "delivered", "failed" */
    int attempts;
    const char *next_attempt_at; /* NULL: nothing scheduled */
    int last_code;               /* HTTP status of the last attempt; 0: none */
    const char *last_error;
    const char *delivered_at;
    const char *created_at;
    const char *body; /* JSON text */
} store_delivery;

typedef int (*store_delivery_fn)(const store_delivery *delivery, void *ctx);

/* Record that event_id must be delivered to receiver, due at once (`now`).
 * Idempotent: returns 0 if added, 1 if that pair was already recorded (the
 * existing row is left as it is), -1 on error. */
int store_delivery_add(store *s, const char *event_id, const char *receiver, const char *body,
                       const char *now, vf_error *err) __attribute__((warn_unused_result));

/* Call fn for up to `limit` (0: all) pending deliveries with
 * next_attempt_at <= now, earliest due first. Reads the whole table (the
 * index is by receiver): the relay scans per receiver, below. */
int store_deliveries_due(store *s, const char *now, int limit, store_delivery_fn fn, void *ctx,
                         vf_error *err) __attribute__((warn_unused_result));

/* store_deliveries_due for one receiver only, so that a receiver with a
 * backlog cannot fill every slot of a scan and starve the others. Its cost
 * follows this receiver's rows, not the other receivers' backlog. */
int store_deliveries_due_receiver(store *s, const char *receiver, const char *now, int limit,
                                  store_delivery_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* After a crash: every delivery left 'delivering' (its outcome unknown) goes
 * back to 'pending', due at `now`; attempts are kept. A relay calls this when
 * it takes the store's "deliveries" lease, before any delivery of its own is
 * in flight (the lease holder is the one relay sending).
 * Returns the number of rows changed, or -1. */
int store_deliveries_requeue(store *s, const char *now, vf_error *err)
    __attribute__((warn_unused_result));

/* Operator redelivery: the 'failed' or 'delivered' deliveries of event_id (to
 * `receiver` only when not NULL) go back to 'pending', due at `now`, with
 * attempts reset to 0 so the whole schedule applies again; last_code and
 * last_error are kept for the record until the next attempt. Pending and
 * delivering rows are left alone. Returns the number of rows changed (0: none
 * matched), or -1. */
int store_delivery_redeliver(store *s, const char *event_id, const char *receiver, const char *now,
                             vf_error *err) __attribute__((warn_unused_result));

/* Input of store_delivery_update: borrowed; NULL strings stored as NULL. */
typedef struct store_delivery_change {
    const char *event_id;
    const char *receiver;
    const char *status;
    int attempts;
    const char *next_attempt_at;
    int last_code; /* 0: none */
    const char *last_error;
    const char *delivered_at;
} store_delivery_change;

/* Overwrite the state of one delivery. Returns 0, 1 if no such delivery, -1. */
int store_delivery_update(store *s, const store_delivery_change *change, vf_error *err)
    __attribute__((warn_unused_result));

typedef struct store_delivery_filter {
    const char *status;
    const char *receiver;
    const char *event_id;
    int limit; /* 0: no limit */
} store_delivery_filter;

/* Call fn for each delivery matching `filter` (NULL: all), newest first. */
int store_delivery_list(store *s, const store_delivery_filter *filter, store_delivery_fn fn,
                        void *ctx, vf_error *err) __attribute__((warn_unused_result));

/* Per receiver: deliveries not final yet ('pending' or 'delivering') and
 * the created_at of the oldest of them (NULL when none), for the relay's
 * backlog metrics. Borrowed during the callback. */
typedef int (*store_backlog_fn)(const char *receiver, int64_t count, const char *oldest_at,
                                void *ctx);
int store_deliveries_backlog(store *s, store_backlog_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* ---- operator read-outs (store_stats.c) ---- */

/* One group of rows, borrowed during the callback. */
typedef struct store_count {
    const char *table;     /* "tasks", "deliveries" or "outbox" (unconfirmed events) */
    const char *status;    /* the group's status ("pending" for the outbox) */
    const char *reason;    /* tasks: the failure reason or NULL */
    int64_t count;         /* rows in the group */
    const char *oldest_at; /* the oldest row's created_at */
    const char *oldest_id; /* and its id (task id, or event id) */
} store_count;

typedef int (*store_count_fn)(const store_count *count, void *ctx);

/* Call fn once per group: tasks by (status, reason), deliveries by status,
 * and the outbox's unconfirmed events (only when there are some). One read
 * transaction, so the groups are consistent with each other. */
int store_counts(store *s, store_count_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* Call fn for every reservation task_id ever held, live or released, oldest
 * first (store_reservations_live only sees the live ones). */
int store_task_reservations(store *s, const char *task_id, store_reservation_fn fn, void *ctx,
                            vf_error *err) __attribute__((warn_unused_result));

/* ---- console read-outs (store_console.c) ---- */

/* store_task_list one page at a time: the tasks matching `filter` that come
 * after the cursor in newest-first order, i.e. (created_at, id) below
 * (before_created_at, before_id), at most filter->limit of them. Both cursor
 * strings NULL: the first page. The next page's cursor is the last row's
 * created_at and id, so a page costs the same however deep it is. */
int store_task_page(store *s, const store_task_filter *filter, const char *before_created_at,
                    const char *before_id, store_task_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* Tasks created in one hour with one status and reason, borrowed during the
 * callback. */
typedef struct store_task_hour {
    const char *hour; /* "YYYY-MM-DDTHH", UTC */
    const char *status;
    const char *reason; /* NULL unless failed */
    int64_t count;
} store_task_hour;

typedef int (*store_task_hour_fn)(const store_task_hour *hour, void *ctx);

/* Call fn per (hour, status, reason) of the tasks created since `since`,
 * oldest hour first. */
int store_task_hours(store *s, const char *since, store_task_hour_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* ---- retention (store_prune.c) ----
 *
 * What is deleted once older than a cutoff (store.retention before now):
 *   - final tasks (completed, failed, released) whose updated_at < cutoff,
 *     that hold no unreleased reservation and whose spares (as the prepare
 *     or the release task) are all finished (released or failed), together
 *     with their task_events, reservations and spares rows;
 *   - released reservations with released_at < cutoff (of any task);
 *   - outbox events confirmed before the cutoff (never unconfirmed ones);
 *   - finished deliveries (delivered, failed) created before the cutoff.
 * Deleting is idempotent: two workers pruning one store delete each row
 * once, and a row already gone is simply not counted again. A task pruned
 * is forgotten: a message redelivered or redriven for it afterwards is a new
 * task. */

/* Rows per table. */
typedef struct store_prune_counts {
    int64_t tasks;
    int64_t task_events;
    int64_t reservations;
    int64_t spares;
    int64_t outbox;
    int64_t deliveries;
} store_prune_counts;

/* Rows per table and transaction (tasks: tasks, with their rows): small
 * enough that a worker waiting for the write lock waits for one short
 * transaction, never for a whole prune. */
#define STORE_PRUNE_BATCH 200

/* One round of pruning, each table in its own short write transaction of
 * at most `limit` rows (tasks: `limit` tasks with their rows). Adds what was
 * deleted to *deleted. Returns 1 when some table had `limit` rows to delete
 * (call again, after letting other writers in), 0 when nothing older than
 * the cutoff is left, -1 on error (VF_EUNAVAILABLE: busy, try later); the
 * transactions that committed before an error stay done. */
int store_prune_batch(store *s, const char *cutoff, int limit, store_prune_counts *deleted,
                      vf_error *err) __attribute__((warn_unused_result));

/* Count what pruning at `cutoff` would delete now (a dry run), in one read
 * transaction; works on a READ_ONLY handle. Fills *counts. */
int store_prune_count(store *s, const char *cutoff, store_prune_counts *counts, vf_error *err)
    __attribute__((warn_unused_result));

/* Give up to `pages` free pages back to the file system (PRAGMA
 * incremental_vacuum), a short write transaction of its own. *freed
 * (optional) gets the number of pages released. Does nothing (returns 0,
 * *freed 0) on a store without auto_vacuum = INCREMENTAL. */
int store_vacuum_step(store *s, int pages, int64_t *freed, vf_error *err)
    __attribute__((warn_unused_result));

/* Copy the whole WAL back into the database and truncate the WAL file to
 * zero bytes (a TRUNCATE checkpoint). Under a steady stream of commits the
 * passive checkpoints never catch up with the last frame, so SQLite never
 * starts the WAL over and the -wal file grows for as long as the load lasts.
 * This holds off other writers while it copies what the passive checkpoints
 * left (milliseconds when they keep up) and waits up to the busy timeout for
 * readers; a store still busy after that is not an error: *truncated
 * (optional) says whether it happened. */
int store_wal_truncate(store *s, bool *truncated, vf_error *err)
    __attribute__((warn_unused_result));

/* The file's auto_vacuum mode into *incremental: true for INCREMENTAL (set
 * on stores created by this version), false for NONE or FULL (older stores:
 * freed pages are reused, but the file never shrinks until a VACUUM). */
int store_auto_vacuum_incremental(store *s, bool *incremental, vf_error *err)
    __attribute__((warn_unused_result));

#endif
