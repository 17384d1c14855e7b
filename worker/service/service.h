/* service: virtflow-worker's main loop.
 *
 * One thread drives the broker link, the store and the engine; a second one
 * refreshes the inventory on its interval so decisions never wait for it.
 * Messages are taken in batches of whatever the broker has sent (at most the
 * prefetch window): one store transaction records the whole batch (group
 * commit, one fsync), then the batch's events, replies, retries and dead
 * letters are published and confirmed, and only then are its messages acked.
 * A crash anywhere loses nothing: before the commit the broker still has the
 * messages; after it, the outbox still has the events, and a redelivered
 * message whose task is final is acked without being scheduled again.
 * Broker failures rebuild the connection with capped, jittered backoff; a
 * store failure (disk full, read-only, locked) rolls the batch back, closes
 * the connection so the broker redelivers, and says why.
 * SIGHUP (common/config/reload.h): between two rounds, never while a batch is being
 * decided, the engine takes the reloaded scheduler section, the inventory
 * its source settings (fetched at once on the refresh thread) and the log its
 * level; while the broker or the store is down the reload waits for the next
 * round. */
#ifndef VF_SERVICE_H
#define VF_SERVICE_H

#include <signal.h>

#include "config.h"

/* Run until *stop becomes non-zero (set from a signal handler), then stop
 * consuming, finish the messages in hand, flush the outbox and return 0.
 * Returns -1 when it cannot start (store or engine cannot be opened). */
int service_run(const vf_config *config, volatile sig_atomic_t *stop);

#endif
