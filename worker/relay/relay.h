/* relay: consume events from virtflow.relay, record one delivery per matching
 * receiver in SQLite, then deliver them as signed webhooks (docs/contracts.md
 * "Webhooks").
 *
 * Ownership of an event passes from the broker to the store: a message is
 * acked only after the deliveries it causes are committed (several messages
 * per transaction), and from then on the relay alone retries them, on
 * relay.schedule_s with jitter and any Retry-After, recording every attempt.
 *
 * One thread. The loop alternates between the broker (amqp_link_next, not
 * waiting while requests are running) and libcurl's multi interface
 * (curl_multi_poll, waiting at most a few tens of ms), and commits in one
 * transaction per turn: the events received, the outcomes of finished
 * requests, and the claim ('pending' -> 'delivering') of the next due
 * deliveries, which are started only once that commit is on disk. So neither
 * a slow receiver nor a dead broker holds up anything else: each receiver has
 * its own max_in_flight slots and its own due scan.
 *
 * Trust: an event counts only when its AMQP user_id (checked by the broker)
 * is in relay.trusted_publishers (config_trusts_publisher). Anything else is
 * never recorded or signed: it is logged on one escaped line, republished to
 * virtflow.dlx with x-virtflow-error saying why, and acked once the broker
 * confirms that copy (rejected, so the broker parks it, if it does not).
 *
 * Restart: deliveries found 'delivering' at start were interrupted (crash or
 * kill -9) and are made due again; their receivers may see them twice, which
 * webhook-id deduplication absorbs. One relay per store file.
 *
 * Reload (SIGHUP, common/config/reload.h): the file is read and checked at once;
 * the new receivers (secrets read again) take over once the requests running
 * have ended (no new one starts meanwhile), so no request, outcome or claim
 * ever names a receiver of the other list. relay.schedule_s and log.level
 * follow at the same moment; other keys take a restart.
 *
 * Retention: store.retention applies to the relay's store as to the worker's
 * (common/store/retention.h): finished deliveries older than it are deleted by a
 * thread of the relay's own, pending and delivering ones never. */
#ifndef VF_RELAY_H
#define VF_RELAY_H

#include <signal.h>

#include "config.h"
#include "vf_error.h"

typedef struct relay relay;

/* Prepare everything that can fail for a bad configuration, before touching
 * the network: receivers (secrets, URLs), the store (opened read-write,
 * interrupted deliveries requeued) and the broker link (not yet connected).
 * `config` is borrowed and must outlive the relay. Returns NULL with err:
 * VF_ECONFIG naming the key, or the store's error. */
relay *relay_new(const vf_config *config, vf_error *err) __attribute__((warn_unused_result));

/* Run until *stop becomes non-zero, then stop consuming, wait for requests
 * in flight (at most the largest receiver timeout, capped at 30 s), record
 * their outcomes, put back to 'pending' those that did not finish, and
 * return 0. Broker failures are retried with backoff, store failures by
 * redoing the turn; -1 (err set) only for failures that cannot heal. */
int relay_run(relay *r, volatile sig_atomic_t *stop, vf_error *err);

/* NULL is a no-op. */
void relay_free(relay *r);

#endif
