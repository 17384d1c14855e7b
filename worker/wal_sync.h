/* wal_sync: a thread that makes the worker's commits durable, so the main
 * loop can decide and commit the next batch while the disk syncs the last.
 *
 * The worker's store handle defers its fsync (store_defer_sync): a COMMIT
 * returns once the WAL is written, which already survives a process crash.
 * The main loop then asks for a sync (wal_sync_request) and must not ack a
 * message or publish an event of that batch before wal_sync_wait for the
 * same ticket returns 0. One fsync covers every request made before it
 * started, so requests that pile up while the disk is busy share one.
 *
 * A failed sync is final (see store_sync): every later wait fails with the
 * same error, and the caller must stop acknowledging anything. */
#ifndef VF_WAL_SYNC_H
#define VF_WAL_SYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "metrics.h"
#include "store.h"
#include "vf_error.h"

typedef struct wal_sync wal_sync;

/* Start the thread for `s`, on which store_defer_sync has succeeded. `s`
 * stays the caller's and must outlive wal_sync_stop. NULL with err set. */
wal_sync *wal_sync_start(store *s, vf_error *err) __attribute__((warn_unused_result));

/* A ticket covering every commit made on the store before this call. */
uint64_t wal_sync_request(wal_sync *w);

/* Observe every fsync's duration (seconds) into `histogram` from now on;
 * call before the first request. NULL: none. */
void wal_sync_observe(wal_sync *w, metrics_series *histogram);

/* Block until the sync for `ticket` is done: 0, or -1 with err when a sync
 * has failed (now or earlier). */
int wal_sync_wait(wal_sync *w, uint64_t ticket, vf_error *err) __attribute__((warn_unused_result));

/* True once the sync for `ticket` is done and succeeded; never blocks. (A
 * failure shows in wal_sync_wait.) */
bool wal_sync_done(wal_sync *w, uint64_t ticket);

/* Finish the sync in progress, if any, and join the thread. NULL is a no-op. */
void wal_sync_stop(wal_sync *w);

#endif
