/* store_reservations: reservations: the capacity and vmid a placement holds. Part of the store:
 * what store.h says about durability, timestamps, strings, errors, threads and listing callbacks
 * holds here too. */
#ifndef VF_STORE_RESERVATIONS_H
#define VF_STORE_RESERVATIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

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
    const char *bound_at;    /* ended because an inventory fetched at this time showed its VM */
    bool has_priority;       /* false: never preempted (a spare's, or recorded before schema 12) */
    int32_t priority;        /* the placement's priority, when has_priority */
    /* The custom resources it holds, a JSON object ({"gpu": 2}); NULL: none.
     * Held as vCPUs are while the reservation is, and, once it is bound to
     * its VM, until resources_ended_at (schema/021: the VM gone, the task
     * released). */
    const char *resources;
    const char *resources_ended_at;
    bool vmid_only; /* holds its vmid and nothing else (what a preemption leaves) */
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
/* store_reservation_add, recording the placement's priority too (`priority`
 * NULL: none, as store_reservation_add): only a reservation with one may be
 * preempted (docs/scheduling.md "Preemption"). */
int store_reservation_add_priority(store *s, const char *task_id, const char *node, double cpu,
                                   int64_t memory_mib, int64_t disk_gib, int64_t vmid,
                                   const int32_t *priority, const char *created_at,
                                   const char *expires_at, vf_error *err)
    __attribute__((warn_unused_result));
/* store_reservation_add_priority holding custom resources too: `resources`
 * a JSON object ({"gpu": 2}; NULL: none). The worker's placements are
 * recorded by their claims (store_claims.h) instead. */
int store_reservation_add_resources(store *s, const char *task_id, const char *node, double cpu,
                                    int64_t memory_mib, int64_t disk_gib, int64_t vmid,
                                    const int32_t *priority, const char *resources,
                                    const char *created_at, const char *expires_at, vf_error *err)
    __attribute__((warn_unused_result));

/* Call fn for every live reservation (not released, expires_at > now),
 * oldest first. `now` is the reservation clock (store_reservation_clock). */
int store_reservations_live(store *s, const char *now, store_reservation_fn fn, void *ctx,
                            vf_error *err) __attribute__((warn_unused_result));

/* Call fn, oldest first, for every reservation a reader deciding from an
 * inventory snapshot fetched at `view_at` must count: the live ones, and
 * those ended because an inventory showed their VM (bound_at set) that
 * either was fetched after `view_at` or has not expired yet (schema/009),
 * or that still hold custom resources (schema/021: bound, resources set,
 * resources_ended_at NULL). The reader skips the capacity of those whose
 * VM its own snapshot shows, and counts the custom resources of the last
 * set unless its inventory counts them itself. `now` is the reservation
 * clock (store_reservation_clock); pass it as `view_at` too when there is
 * no snapshot yet. */
int store_reservations_counted(store *s, const char *now, const char *view_at,
                               store_reservation_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* Release the live reservations of a task (spare.release, failure) or of a
 * vmid on `node` (the inventory fetched at `shown_at` shows that VM on that
 * host; the same vmid elsewhere ends nothing; the end is stamped bound_at
 * and keeps counting for readers with an older view: see
 * store_reservations_live). Return the number released, or -1. Releasing a
 * task also ends the custom resources its bound reservations hold (its VMs
 * are given back): those count as released too. */
int store_reservation_release_task(store *s, const char *task_id, const char *at, vf_error *err)
    __attribute__((warn_unused_result));
/* A task about to be decided again after its message came back (the
 * worker that had it died or handed it back): end its live reservations,
 * which no answer ever went out for (a claim recorded by a batch whose
 * commit never came, store_claims.h), at `at`; not the vmid a preemption
 * left it (vmid_only), nor one recorded at `at` or later: the claims of
 * this very decision (created at `at`), which on PostgreSQL are recorded
 * before this statement runs (it is deferred to the commit). In the
 * transaction that records the new decision: if another worker records the
 * task first, that transaction fails and nothing is ended. Returns 0 or
 * -1. */
int store_reservation_release_unanswered(store *s, const char *task_id, const char *at,
                                         vf_error *err) __attribute__((warn_unused_result));

/* Preemption: end the live, unbound reservations of task `task_id` on
 * `node` at `at`, but only those placed at a priority below `below` (a
 * reservation without a priority is never ended here) and no later than
 * `placed_before` (the grace: docs/scheduling.md "Preemption"). Return the
 * number ended, or -1: none when the reservation changed since the caller
 * decided (bound, released, expired). */
int store_reservation_preempt(store *s, const char *task_id, const char *node, int32_t below,
                              const char *placed_before, const char *at, vf_error *err)
    __attribute__((warn_unused_result));
/* What a preempted placement leaves: a reservation of task `task_id` on
 * `node` holding vmid `vmid` alone (vmid_only: no capacity, no slot) from
 * `at` until `expires_at` (when the preempted one would have ended), so
 * that no other task is given the vmid its client may be creating. Its VM
 * appearing binds it, as any reservation. Returns 0 or -1 (VF_ECONFLICT:
 * another live reservation holds the vmid). */
int store_reservation_keep_vmid(store *s, const char *task_id, const char *node, int64_t vmid,
                                const char *at, const char *expires_at, vf_error *err)
    __attribute__((warn_unused_result));
int store_reservation_release_vmid(store *s, int64_t vmid, const char *node, const char *at,
                                   const char *shown_at, vf_error *err)
    __attribute__((warn_unused_result));

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

/* Call fn for the unreleased reservation holding vmid `vmid` (one at most:
 * the unique index), expired or not: what a claim of that vmid found
 * holding it (STORE_CLAIM_VMID_HELD). Columns as store_reservations_live.
 * Returns 0 or -1 with err. */
int store_reservation_holding_vmid(store *s, int64_t vmid, store_reservation_fn fn, void *ctx,
                                   vf_error *err) __attribute__((warn_unused_result));

/* The largest reservation id in the store (0: none) into *id: where a
 * reader following the reservations recorded since (store_changes_since)
 * starts. Returns 0 or -1. */
int store_reservations_latest_id(store *s, int64_t *id, vf_error *err)
    __attribute__((warn_unused_result));

/* ---- custom resources of bound reservations (schema/021) ---- */

/* A bound reservation still holding custom resources. */
typedef struct store_held_resources {
    int64_t id;
    const char *task_id;
    const char *node;
    int64_t vmid; /* -1: none */
    const char *bound_at;
} store_held_resources;

/* Call fn for every bound reservation whose custom resources still count
 * (resources set, resources_ended_at NULL), oldest first. Returns 0 or -1. */
int store_reservations_holding_resources(store *s,
                                         int (*fn)(const store_held_resources *r, void *ctx),
                                         void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* End the custom resources of bound reservation `id` at `at`: an inventory
 * fetched at `at`, after the binding, no longer shows its VM. Returns 1
 * when it ended them, 0 when they had ended already, -1. */
int store_reservation_resources_end(store *s, int64_t id, const char *at, vf_error *err)
    __attribute__((warn_unused_result));

/* Mark reservations whose expires_at <= now as released at `now`. Returns
 * the number of rows changed, or -1. (Expired reservations are already
 * ignored by store_reservations_live; this records when they ended.) */
int store_reservations_expire(store *s, const char *now, vf_error *err)
    __attribute__((warn_unused_result));

#endif
