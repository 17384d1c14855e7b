/* store_prune: retention: pruning old rows and giving pages back. Part of the store: what store.h
 * says about durability, timestamps, strings, errors, threads and listing callbacks holds here too.
 */
#ifndef VF_STORE_PRUNE_H
#define VF_STORE_PRUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* ---- retention (store_prune.c) ----
 *
 * What is deleted once older than a cutoff (store.retention before now):
 *   - final tasks (completed, failed, released) whose updated_at < cutoff,
 *     that hold no unreleased reservation and whose spares (as the prepare
 *     or the release task) are all finished (released or failed), together
 *     with their task_events, reservations and spares rows;
 *   - released reservations with released_at < cutoff (of any task);
 *   - outbox events confirmed before the cutoff (never unconfirmed ones);
 *   - finished deliveries (delivered, failed) created before the cutoff;
 *   - inventory snapshots recorded before the cutoff, except the newest of
 *     them (still in force at the cutoff, store_inventory.h);
 *   - records of dead letters last parked before the cutoff (parked or
 *     redriven: virtflow.dead itself keeps a message 14 days at most).
 * Deleting is idempotent: two workers pruning one store delete each row
 * once, and a row already gone is simply not counted again. A task pruned
 * is forgotten: a message redelivered or redriven for it afterwards is a new
 * task.
 *
 * Two kinds of rows may need to outlive the cutoff, and get cutoffs of their
 * own (store_prune_cutoffs, retention.h computes them from the
 * configuration): a reservation an inventory ended (bound_at set) is still
 * counted by a worker whose snapshot is older (store_reservations_counted),
 * so it, and the final task it belongs to, is deleted only once bound and
 * expired before `bound`; and a final task whose delayed copy may still come
 * back from a retry tier must still be there to be recognised, so final
 * tasks are deleted only once last written before `tasks`. */

/* Rows per table. */
typedef struct store_prune_counts {
    int64_t tasks;
    int64_t task_events;
    int64_t reservations;
    int64_t spares;
    int64_t outbox;
    int64_t deliveries;
    int64_t inventory_snapshots;
    int64_t dead_letters;
} store_prune_counts;

/* Rows per table and transaction (tasks: tasks, with their rows): small
 * enough that a worker waiting for the write lock waits for one short
 * transaction, never for a whole prune. */
#define STORE_PRUNE_BATCH 200

/* The cutoffs of one prune; store times, each at or before `rows`. */
typedef struct store_prune_cutoffs {
    const char *rows;  /* everything not below: released reservations, events, deliveries,
                          snapshots, dead-letter records */
    const char *tasks; /* final tasks (with their rows) last written before this */
    const char *bound; /* reservations ended by an inventory, and the tasks holding them: only
                          once bound and expired before this */
} store_prune_cutoffs;

/* One round of pruning, each table in its own short write transaction of
 * at most `limit` rows (tasks: `limit` tasks with their rows). Adds what was
 * deleted to *deleted. Returns 1 when some table had `limit` rows to delete
 * (call again, after letting other writers in), 0 when nothing older than
 * the cutoff is left, -1 on error (VF_EUNAVAILABLE: busy, try later); the
 * transactions that committed before an error stay done. */
int store_prune_batch_at(store *s, const store_prune_cutoffs *cutoffs, int limit,
                         store_prune_counts *deleted, vf_error *err)
    __attribute__((warn_unused_result));

/* store_prune_batch_at with one cutoff for every kind of row. */
int store_prune_batch(store *s, const char *cutoff, int limit, store_prune_counts *deleted,
                      vf_error *err) __attribute__((warn_unused_result));

/* Count what pruning at `cutoff` would delete now (a dry run), in one read
 * transaction; works on a READ_ONLY handle. Fills *counts. */
int store_prune_count_at(store *s, const store_prune_cutoffs *cutoffs, store_prune_counts *counts,
                         vf_error *err) __attribute__((warn_unused_result));
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

/* Whether another connection committed to the store since the previous
 * call: the pauses of a long prune are for other writers, and pointless when
 * there are none. *version carries the state between calls (-1 before the
 * first, which only takes note and reports false). SQLite: PRAGMA
 * data_version, which changes with every other connection's commit and not
 * with this handle's own. PostgreSQL: always false; its deletes take row
 * locks only, which no other writer of old final rows waits for. */
int store_others_wrote(store *s, int64_t *version, bool *wrote, vf_error *err)
    __attribute__((warn_unused_result));

/* The file's auto_vacuum mode into *incremental: true for INCREMENTAL (set
 * on stores created by this version), false for NONE or FULL (older stores:
 * freed pages are reused, but the file never shrinks until a VACUUM). */
int store_auto_vacuum_incremental(store *s, bool *incremental, vf_error *err)
    __attribute__((warn_unused_result));

#endif
