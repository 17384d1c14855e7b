/* retention: the background job that keeps a store from growing without
 * limit (store.retention, docs/operations.md "Retention"). virtflow-worker
 * runs it on the shared store, virtflow-relay on its own (deliveries), under
 * the same rules.
 *
 * On a thread of its own with its own store handle (like the spare driver),
 * it prunes every interval: a minute, or a quarter of store.retention when
 * that is shorter (at least a second). Each round deletes what store.h
 * "retention" describes, older than now - store.retention (final tasks and
 * reservations an inventory ended possibly older still: retention_cutoffs_at),
 * in batches of
 * STORE_PRUNE_BATCH rows per table and transaction with a pause between
 * them, so the main loop waits for the write lock a few milliseconds at
 * most; then it gives freed pages back to the file system a few hundred at
 * a time (incremental vacuum). A busy store skips the round. Of several
 * workers on one store, the holder of the "retention" lease (leases.h)
 * prunes (a relay sharing a worker's store takes its turn under the same
 * lease); every delete is idempotent anyway. */
#ifndef VF_RETENTION_H
#define VF_RETENTION_H

#include <stdint.h>

#include "config.h"
#include "store.h"
#include "store_prune.h"
#include "vf_error.h"

typedef struct retention retention;

/* Open a store handle and start the thread. `config` is borrowed for the
 * job's life; `owner` names this program in the store's leases. Returns an
 * owned job, or NULL with err. */
retention *retention_start(const vf_config *config, const char *owner, vf_error *err)
    __attribute__((warn_unused_result));

/* Stop the thread (a batch in progress finishes first) and free. NULL is a
 * no-op. */
void retention_stop(retention *job);

/* The cutoffs of one prune (store_prune_cutoffs), as text. */
typedef struct retention_cutoffs {
    char rows[STORE_TIME_SIZE];
    char tasks[STORE_TIME_SIZE];
    char bound[STORE_TIME_SIZE];
} retention_cutoffs;

/* The cutoffs of a prune at `now_ms` (Unix ms) of what is older than
 * `older_than_s` (store.retention; virtflowctl prune --older-than): the rows
 * at now - older_than_s, final tasks and reservations an inventory ended no
 * later than the configuration's windows allow (config_final_task_keep_s,
 * config_bound_reservation_keep_s: "keys that must agree"), whatever
 * older_than_s says. Returns 0, or -1 when the rows' cutoff would be before
 * 1970 (nothing can be that old: do not prune). */
int retention_cutoffs_at(const vf_config *config, int64_t older_than_s, int64_t now_ms,
                         retention_cutoffs *out) __attribute__((warn_unused_result));

/* The cutoffs for store_prune_batch_at and store_prune_count_at: pointers
 * into `c`, valid while it lives. */
store_prune_cutoffs retention_cutoffs_view(const retention_cutoffs *c);

/* The interval between rounds for a retention of `retention_s` seconds, in
 * milliseconds: retention/4 bounded to 1 s .. 60 s. */
int64_t retention_interval_ms(int64_t retention_s);

#endif
