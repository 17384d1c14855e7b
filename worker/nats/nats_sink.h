/* nats_sink: every virtflow event also on a NATS JetStream stream
 * (docs/webhooks.md "Events on NATS JetStream"), with the guarantees of the
 * broker path.
 *
 * Events leave the outbox on the broker (confirmed), as for the relay. The
 * sink consumes its own durable queue, virtflow.nats (bound to event.#,
 * declared by every program while nats.url is set), and publishes each event
 * to subject NATS.SUBJECT_PREFIX.<type> with the event id as the message id
 * (Nats-Msg-Id). Up to amqp.prefetch deliveries are in flight at once
 * (published asynchronously, in delivery order); the broker is acked
 * (multiple) up to the first one JetStream has not acknowledged yet
 * (stored), so a delivery is acked only after its own publish ack and every
 * earlier one's, while the next ones are published meanwhile. So
 *
 *   - nothing is lost: a delivery is acked only after its publish ack; a
 *     sink killed (kill -9) or a nats-server gone before that leaves it
 *     unacked, and the broker hands it out again;
 *   - none twice within the stream's duplicate window: what is published
 *     again carries the same Nats-Msg-Id, which JetStream drops (the stream
 *     is created with nats.duplicate_window_s when missing).
 *
 * A publish JetStream does not acknowledge (an error, no answer within
 * NATS_SINK_ACK_WAIT_MS, a broken connection) throws the broker connection
 * away, so every unacked delivery comes again, and the sink starts over
 * after a backoff. Events from publishers outside relay.trusted_publishers
 * are rejected (parked in virtflow.dead), never published. One thread. */
#ifndef VF_NATS_SINK_H
#define VF_NATS_SINK_H

#include <signal.h>

#include "config.h"
#include "vf_error.h"

/* How long the oldest publish in flight may wait for JetStream's ack before
 * the window is given up. */
#define NATS_SINK_ACK_WAIT_MS 5000

typedef struct nats_sink nats_sink;

/* NULL with err VF_ECONFIG when nats.url is not set (or the configuration
 * cannot be used), else a sink not yet connected. `config` is borrowed. */
nats_sink *nats_sink_new(const vf_config *config, vf_error *err)
    __attribute__((warn_unused_result));

/* Run until *stop: connect (and reconnect, with backoff) to both sides,
 * move events. Returns 0 once stopped (what is in flight acknowledged and
 * acked, or left unacked after NATS_SINK_ACK_WAIT_MS), -1 with err for what
 * cannot heal. */
int nats_sink_run(nats_sink *sink, volatile sig_atomic_t *stop, vf_error *err);

void nats_sink_free(nats_sink *sink); /* NULL ok */

#endif
