/* store_processes: the programs working on this store, each as it last said
 * (schema/018_processes.sql), and the leases they hold: what `virtflowctl
 * workers` and the console's Workers page show, as Flower's workers tab and
 * Sidekiq's processes do. Part of the store: what store.h says about
 * durability, timestamps, strings, errors, threads and listing callbacks
 * holds here too. */
#ifndef VF_STORE_PROCESSES_H
#define VF_STORE_PROCESSES_H

#include <stdint.h>

#include "store.h"

/* A row not written for this long belongs to a process long gone: the next
 * heartbeat of any process deletes it. */
#define STORE_PROCESS_FORGET_S (24 * 3600)

/* One row; borrowed strings. */
typedef struct store_process {
    const char *owner;   /* store_owner_name: the name its leases carry */
    const char *program; /* "virtflow-worker", "virtflow-relay" */
    const char *host;    /* its host name */
    int64_t pid;
    const char *version; /* "0.1.0 (commit 6ac72b14fd73)" */
    const char *started_at;
    const char *beat_at; /* its last heartbeat */
    /* What it holds at that heartbeat: messages received and not yet acked
     * (worker), deliveries being sent (relay). */
    int64_t in_hand;
} store_process;

/* Write p's row (a new one or the same owner's again), and delete the rows
 * of processes silent for STORE_PROCESS_FORGET_S.
 * Returns 0 or -1. */
int store_process_beat(store *s, const store_process *p, vf_error *err)
    __attribute__((warn_unused_result));

/* Delete owner's row: a clean stop. Returns 0 or -1. */
int store_process_forget(store *s, const char *owner, vf_error *err)
    __attribute__((warn_unused_result));

typedef int (*store_process_fn)(const store_process *p, void *ctx);

/* Call fn for each row whose beat_at is at or after `since` (NULL: every
 * row), by program, then host, then started_at. Returns 0 or -1. */
int store_processes_list(store *s, const char *since, store_process_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* One lease; borrowed strings. */
typedef struct store_lease_row {
    const char *name; /* "spares", "housekeeping", "deliveries", "worker:<owner>" ... */
    const char *owner;
    int64_t epoch;
    const char *acquired_at; /* when this owner took it */
    const char *expires_at;  /* renewed every LEASE_RENEW_S while its owner lives */
} store_lease_row;

typedef int (*store_lease_fn)(const store_lease_row *lease, void *ctx);

/* Call fn for each lease not expired at `now`, by owner then name.
 * Returns 0 or -1. */
int store_leases_list(store *s, const char *now, store_lease_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

#endif
