/* service_checkpoint: the worker's checkpointer, a thread that copies the
 * WAL back into the database (SQLite checkpoints) on a store handle of its
 * own and renews this worker's leases. It owns its thread, its lock and its
 * stopper; the service only starts and stops it. */
#ifndef VF_SERVICE_CHECKPOINT_H
#define VF_SERVICE_CHECKPOINT_H

#include "config.h"
#include "vf_error.h"

typedef struct checkpointer checkpointer;

/* Starts the thread, which opens its own store handle from `config`
 * (borrowed, must outlive the checkpointer) and renews the leases of
 * `owner` (copied). Returns an owned checkpointer, or NULL with err set. */
checkpointer *service_checkpoint_start(const vf_config *config, const char *owner, vf_error *err);

/* Stops the thread, waits for it, frees everything. NULL is a no-op. */
void service_checkpoint_stop(checkpointer *cp);

#endif
