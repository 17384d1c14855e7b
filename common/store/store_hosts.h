/* store_hosts: host generations and leases: several workers on one store. Part of the store: what
 * store.h says about durability, timestamps, strings, errors, threads and listing callbacks holds
 * here too. */
#ifndef VF_STORE_HOSTS_H
#define VF_STORE_HOSTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "store_reservations.h"

/* ---- host generations: following what other writers released ----
 *
 * Every host has a generation in the store that each release of one of its
 * reservations bumps (a trigger, whoever releases: a worker, the spare
 * driver, virtflowctl, an operator's sqlite3), and changed_seq orders those
 * changes store-wide, so a worker reads only the hosts changed since it
 * last looked. New reservations are followed by their ids
 * (store_changes_since). Neither decides whether a reservation may be
 * recorded: a claim does, by fit (store_claims.h). A host never changed is
 * at generation 0. */

typedef struct store_host_generation {
    const char *node;
    int64_t generation;
    int64_t changed_seq;
} store_host_generation;

typedef int (*store_host_generation_fn)(const store_host_generation *host, void *ctx);

/* What other writers did since a reader last looked, in one statement (one
 * round trip on PostgreSQL): `clock` (NULL: not wanted) receives the
 * reservation clock as store_reservation_clock gives it, and *latest_id
 * (NULL: not wanted) the largest reservation id; host_fn is called for each
 * host whose generation moved past `since_seq` (a reservation on it was
 * released or bound, or its custom resources ended), in change order; then
 * reservation_fn for every reservation recorded after `since_id` (claims,
 * store_claims.h) but the n_skip `skip_ids` (the reader's own), oldest
 * first, whatever its state now. Either callback returning non-zero stops
 * the calls. Returns 0 or -1. */
int store_changes_since(store *s, int64_t since_seq, int64_t since_id, const int64_t *skip_ids,
                        size_t n_skip, char *clock, int64_t *latest_id,
                        store_host_generation_fn host_fn, store_reservation_fn reservation_fn,
                        void *ctx, vf_error *err) __attribute__((warn_unused_result));

/* Whether one writer at a time holds the whole store from store_begin to the
 * commit (SQLite), so that claims are checked inside the writer's own
 * transaction, exact. False on PostgreSQL, where writers run side by side
 * and claims run in transactions of their own (store_claims.h). */
bool store_writers_serialized(const store *s);

/* Call fn for every reservation on the n `nodes` that a reader deciding
 * from a snapshot fetched at `view_at` must count (the sets of
 * store_reservations_counted), oldest first: one statement for all of them
 * (one round trip on PostgreSQL), the names passed as one JSON array. n 0
 * reads nothing. Returns 0 or -1 with err. */
int store_reservations_counted_nodes(store *s, const char *const *nodes, size_t n, const char *now,
                                     const char *view_at, store_reservation_fn fn, void *ctx,
                                     vf_error *err) __attribute__((warn_unused_result));

/* ---- leases: work that one worker drives at a time ----
 *
 * Work that outlives a message (the spare driver, the outbox sweep, marking
 * expired reservations) is driven by the worker holding its lease, so several
 * workers on one store never drive it twice, and another takes it over when
 * the holder stops renewing (it died, or is paused).
 *
 * A lease carries an epoch, a fencing token: 1 when first taken, one more at
 * every take-over by another owner (an expired lease taken, a dead holder
 * replaced), the same while its owner renews it. A holder records the
 * outcome of a step only under store_lease_fence with the epoch the step
 * started under, so a holder paused past its lease cannot record anything
 * once another took the lease over. */

/* A name for this process among the store's users: "host:pid:random", where
 * host is the host name followed by "@" + the inode of this process's PID
 * namespace + "." + the kernel's boot id when /proc tells them (leases.h:
 * what they prove). */
#define STORE_OWNER_SIZE 256 /* host (63) + scope (79) + pid + id, with room */
void store_owner_name(char out[STORE_OWNER_SIZE]);

/* Take or renew lease `name` for `owner` until `until`, unless another owner
 * holds it unexpired at `now`. Returns 1 if `owner` holds it now, 0 if
 * another does, -1 on error. */
int store_lease_acquire(store *s, const char *name, const char *owner, const char *now,
                        const char *until, vf_error *err) __attribute__((warn_unused_result));

/* Give lease `name` up if `owner` holds it (a clean stop), so another worker
 * need not wait for it to expire: the row is expired, not deleted, and keeps
 * its epoch. Returns 0 or -1. */
int store_lease_release(store *s, const char *name, const char *owner, vf_error *err);

/* Delete lease `name` if `owner` holds it: for leases named after their
 * owner (a worker's presence), which nobody takes over. Returns 0 or -1. */
int store_lease_forget(store *s, const char *name, const char *owner, vf_error *err);

/* Extend every lease `owner` holds to `until`: a live worker keeps its leases
 * while a long step runs. Returns the number renewed, or -1. */
int store_leases_renew(store *s, const char *owner, const char *until, vf_error *err)
    __attribute__((warn_unused_result));

/* The owner of lease `name` into holder (size bytes) and its epoch into
 * *epoch (may be NULL). Returns 1 and fills them, 0 when nobody holds it,
 * -1 on error. */
int store_lease_holder(store *s, const char *name, char *holder, size_t size, int64_t *epoch,
                       vf_error *err) __attribute__((warn_unused_result));

/* Call fn with the owner of every lease whose name starts with `prefix` and
 * that has not expired at `now`. Returns 0 or -1. */
int store_leases_live(store *s, const char *prefix, const char *now,
                      int (*fn)(const char *owner, void *ctx), void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* Give lease `name` from `previous` (known to be dead) to `owner` until
 * `until`, at the next epoch. Returns 1 if taken, 0 if `previous` no longer
 * held it, -1. */
int store_lease_take_over(store *s, const char *name, const char *previous, const char *owner,
                          const char *now, const char *until, vf_error *err)
    __attribute__((warn_unused_result));

/* Inside a write transaction, before recording a step: whether `owner` still
 * holds lease `name` at `epoch` (expired or not: nobody else took it).
 * Returns 1 yes (and the lease cannot move until the transaction ends), 0
 * fenced (another owner or a later epoch: record nothing, roll back), -1 on
 * error. */
int store_lease_fence(store *s, const char *name, const char *owner, int64_t epoch, vf_error *err)
    __attribute__((warn_unused_result));

#endif
