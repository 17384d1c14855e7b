/* retention: the background job that keeps a store from growing without
 * limit (store.retention, docs/operations.md "Retention"). virtflow-worker
 * runs it on the shared store, virtflow-relay on its own (deliveries), under
 * the same rules.
 *
 * On a thread of its own with its own store handle (like the spare driver),
 * it prunes every interval: a minute, or a quarter of store.retention when
 * that is shorter (at least a second). Each round deletes what store.h
 * "retention" describes, older than now - store.retention, in batches of
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

/* The interval between rounds for a retention of `retention_s` seconds, in
 * milliseconds: retention/4 bounded to 1 s .. 60 s. */
int64_t retention_interval_ms(int64_t retention_s);

#endif
