/* store_claims: placements claimed by fit (schema/021). Part of the store:
 * what store.h says about durability, timestamps, strings, errors, threads
 * and listing callbacks holds here too.
 *
 * A worker decides over its own picture of the store's reservations, which
 * may be stale when several workers share the store. A claim records a
 * placement's reservation only if the placement still fits in what the
 * store holds now, counted for the claimer's view of its inventory as the
 * claimer's own picture would count it (store_reservations_counted: held,
 * bound but not shown by that inventory, custom resources of bound VMs),
 * and its vmid is held by no live reservation. Nothing else about the host
 * matters: a claim beside another worker's on the same host conflicts only
 * when the two do not both fit.
 *
 * On PostgreSQL a claim is one statement in a transaction of its own
 * (virtflow_claim, schema/pg/021): it locks each of its hosts for the
 * statement alone (transaction-level advisory locks, taken in one order),
 * counts, inserts what fits and commits. Nothing it takes outlives that one
 * round trip, so a worker that stops or pauses afterwards holds nothing the
 * others wait for. On SQLite the caller's write transaction holds the
 * store's one write lock: the claim runs inside it, exact. */
#ifndef VF_STORE_CLAIMS_H
#define VF_STORE_CLAIMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* One placement to record. Limits are what the claimer's inventory leaves
 * on the host for reservations (its capacity after reserves and overcommit,
 * less what its guests have: the same figures as the engine's filters), for
 * each filter that is on; a placement is checked only against those. */
typedef struct store_claim {
    const char *task_id;
    const char *node;
    double cpu;            /* vCPUs */
    int64_t memory;        /* MiB */
    int64_t disk;          /* GiB */
    int64_t vmid;          /* -1: none */
    const char *resources; /* JSON object of custom resources ({"gpu": 2}); NULL: none */
    bool has_priority;     /* false: never preempted (spares, counts, group members) */
    int32_t priority;
    const char *created_at;
    const char *expires_at;
    const char *group; /* the group it is a member of; NULL: none */
    bool vmid_only;    /* holds the vmid alone: no capacity, no slot */
    bool check_cpu, check_memory, check_disk, check_slots;
    double limit_cpu;    /* vCPUs */
    double limit_memory; /* MiB */
    int64_t limit_disk;  /* GiB */
    int64_t limit_slots; /* guests */
    /* JSON object of what is left of each custom resource the placement
     * asks for, by its name in lower case ({"gpu": 2}; a name the host
     * lacks: 0; one not listed: not checked); NULL: none checked. */
    const char *limit_resources;
} store_claim;

/* What the claimer's inventory says about a host the claims are on. */
typedef struct store_claim_host {
    const char *node;
    /* vmids of bound reservations on it whose VMs that inventory shows: its
     * figures count them, so the claim does not count them again */
    const int64_t *shown;
    size_t n_shown;
    bool counts_resources; /* the inventory counts its guests' custom resources itself */
} store_claim_host;

typedef enum {
    STORE_CLAIM_RECORDED = 0, /* the reservation is in the store (reservation_id) */
    STORE_CLAIM_NO_ROOM = 1,  /* the host has no room for it any more */
    STORE_CLAIM_VMID_HELD = 2 /* a live reservation holds its vmid */
} store_claim_verdict;

typedef struct store_claim_result {
    store_claim_verdict verdict;
    int64_t reservation_id; /* when recorded */
} store_claim_result;

/* The claimer's view: its reservation clock (store_reservation_clock) and
 * the fetch time of the inventory it decided over (the clock itself when it
 * has none yet), as store_reservations_counted takes them; and `now`, the
 * wall clock, before which an expired reservation's vmid is freed. */
typedef struct store_claim_view {
    const char *clock;
    const char *view_at;
    const char *now;
} store_claim_view;

/* Figures of one call, for the metrics and the benchmarks. */
typedef struct store_claim_stats {
    double lock_wait_ms; /* PostgreSQL: time the claim waited for other claims' host locks */
} store_claim_stats;

/* Record what fits of the n claims, counted on each host in their order
 * (each must fit beside the store's and every earlier one's), and say for
 * each what happened in results[i]. `hosts` lists every node the claims are
 * on. PostgreSQL: in a transaction of its own on `s`, which must have none
 * open: one round trip, committed when this returns 0. SQLite: inside the
 * caller's open write transaction on `s` (the caller's commit makes them
 * durable); with `all_or_none`, nothing is recorded unless every claim is
 * (results say which did not fit; reservation_id stays 0). PostgreSQL
 * refuses all_or_none here (store_claims_defer does that). Returns 0, or -1
 * with err (a store error: nothing is known to be recorded on SQLite; on
 * PostgreSQL a lost connection leaves the outcome unknown). */
int store_claims_record(store *s, const store_claim_host *hosts, size_t n_hosts,
                        const store_claim *claims, size_t n, const store_claim_view *view,
                        bool all_or_none, store_claim_result *results, store_claim_stats *stats,
                        vf_error *err) __attribute__((warn_unused_result));

/* Inside the caller's open transaction, the claims recorded all or none,
 * with that transaction: PostgreSQL (deferred writes) sends them to run
 * just before its COMMIT, so their host locks last as long as the server
 * takes to commit; a claim that does not fit fails the transaction, the
 * commit reporting VF_ECONFLICT. SQLite: store_claims_record all or none,
 * now, -1 with VF_ECONFLICT when one does not fit. Returns 0 or -1. */
int store_claims_defer(store *s, const store_claim_host *hosts, size_t n_hosts,
                       const store_claim *claims, size_t n, const store_claim_view *view,
                       vf_error *err) __attribute__((warn_unused_result));

/* Release the reservations `ids` recorded by claims whose transaction did
 * not commit (it was rolled back for certain), at `at`. Returns the number
 * released, or -1. */
int store_claims_withdraw(store *s, const int64_t *ids, size_t n, const char *at, vf_error *err)
    __attribute__((warn_unused_result));

#endif
