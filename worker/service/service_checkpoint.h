/* service_checkpoint: the worker's checkpointer, a thread that copies the
 * WAL back into the database (SQLite checkpoints) on a store handle of its
 * own, renews this worker's leases and writes its heartbeat (presence.h). It owns its thread, its
 * lock and its stopper; the service only starts and stops it. */
#ifndef VF_SERVICE_CHECKPOINT_H
#define VF_SERVICE_CHECKPOINT_H

#include <stddef.h>

#include "config.h"
#include "vf_error.h"

typedef struct checkpointer checkpointer;

/* Starts the thread, which opens its own store handle from `config`
 * (borrowed, must outlive the checkpointer) and renews the leases of
 * `owner` (copied). Returns an owned checkpointer, or NULL with err set. */
checkpointer *service_checkpoint_start(const vf_config *config, const char *owner, vf_error *err);

/* What the worker holds now (messages received and not yet acked), for
 * its next heartbeat (presence.h); from any thread. NULL is a no-op. */
void service_checkpoint_in_hand(checkpointer *cp, size_t messages);

/* Stops the thread (its last act: the heartbeat row is deleted), waits for
 * it, frees everything. NULL is a no-op. */
void service_checkpoint_stop(checkpointer *cp);

#endif
