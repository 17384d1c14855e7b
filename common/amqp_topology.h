/* amqp_topology: the broker names of docs/contracts.md "Broker topology", and the one
 * place that declares them.
 *
 * Every program declares the whole topology at each connect; declarations are
 * idempotent only while every program passes the very same arguments (else
 * the broker closes the channel with 406 PRECONDITION_FAILED), which is why the
 * queue arguments are built by a single function here.
 *
 * Names and shape:
 *   virtflow                 topic exchange, durable: requests and events
 *   virtflow.task.schedule   queue <- virtflow "task.schedule"
 *   virtflow.task.schedule.priority
 *                            queue <- virtflow "task.schedule.priority": the
 *                            priority lane, consumed beside the first and drawn
 *                            on first (docs/scheduling.md "Priorities and queue
 *                            order"); existing brokers get it at the next start
 *   virtflow.spare           queue <- virtflow "spare.prepare", "spare.release"
 *   virtflow.relay           queue <- virtflow "event.#"
 *     these four: x-queue-type (amqp.queue_type), x-dead-letter-exchange
 *     virtflow.dlx, x-single-active-consumer when amqp.single_active_consumer.
 *   virtflow.dlx             FANOUT exchange, durable: whatever is dead-lettered or
 *                            parked lands in virtflow.dead whatever its routing key
 *                            (the key is kept on the message, so redrive can use it)
 *   virtflow.dead            queue <- virtflow.dlx; x-queue-type, and bounded:
 *                            x-max-length AMQP_TOPOLOGY_DEAD_MAX_LENGTH messages,
 *                            x-message-ttl AMQP_TOPOLOGY_DEAD_TTL_MS, x-overflow
 *                            drop-head (the oldest go first). Where an older
 *                            virtflow declared it without these, the broker refuses
 *                            the declare (406); the queue is then used as it is and a
 *                            warning says how to bound it (docs/upgrading.md).
 *   virtflow.retry.<N>s      one per retry.delays_s entry: a FANOUT exchange and a
 *                            queue of the same name bound to it; the queue has
 *                            x-message-ttl N*1000 ms and x-dead-letter-exchange
 *                            virtflow, and no consumers.
 *
 * Retrying: publish the message to exchange virtflow.retry.<N>s WITH ITS
 * ORIGINAL ROUTING KEY (e.g. "task.schedule"). The fanout ignores the key and
 * puts the message in the tier queue; the key stays on the message; when the
 * TTL expires the broker dead-letters it to virtflow with that same key (no
 * x-dead-letter-routing-key is set), so it comes back to its own work queue.
 * (Publishing through the default exchange would make the tier queue's name
 * the routing key, and the expired message would then route nowhere.) */
#ifndef VF_AMQP_TOPOLOGY_H
#define VF_AMQP_TOPOLOGY_H

#include <amqp.h>
#include <stddef.h>

#include "config.h"
#include "vf_error.h"

#define AMQP_TOPOLOGY_EXCHANGE "virtflow"
#define AMQP_TOPOLOGY_DLX "virtflow.dlx"
#define AMQP_TOPOLOGY_DEAD_QUEUE "virtflow.dead"
#define AMQP_TOPOLOGY_SCHEDULE_QUEUE "virtflow.task.schedule"
#define AMQP_TOPOLOGY_PRIORITY_QUEUE "virtflow.task.schedule.priority"
#define AMQP_TOPOLOGY_SPARE_QUEUE "virtflow.spare"
#define AMQP_TOPOLOGY_RELAY_QUEUE "virtflow.relay"
#define AMQP_TOPOLOGY_RETRY_PREFIX "virtflow.retry."

#define AMQP_TOPOLOGY_KEY_SCHEDULE "task.schedule"
/* The same request, into the priority lane (queue_order_routing_key picks). */
#define AMQP_TOPOLOGY_KEY_SCHEDULE_PRIORITY "task.schedule.priority"
#define AMQP_TOPOLOGY_KEY_SPARE_PREPARE "spare.prepare"
#define AMQP_TOPOLOGY_KEY_SPARE_RELEASE "spare.release"
#define AMQP_TOPOLOGY_KEY_TASK_RELEASE "task.release"
#define AMQP_TOPOLOGY_KEY_EVENTS "event.#"

/* Message headers the programs set and read. */
#define AMQP_TOPOLOGY_HEADER_ATTEMPT "x-virtflow-attempt"         /* integer, 1 = first try */
#define AMQP_TOPOLOGY_HEADER_ERROR "x-virtflow-error"             /* reason, text */
#define AMQP_TOPOLOGY_HEADER_ROUTING_KEY "x-virtflow-routing-key" /* original key, text */
/* A waiting task sent again because room grew: decide it once more without
 * spending an attempt (believed from trusted publishers only). Integer 1. */
#define AMQP_TOPOLOGY_HEADER_RECHECK "x-virtflow-recheck"

/* virtflow.dead's bounds: enough for an outage's worth of parked messages,
 * and two weeks to look at them, without letting a flood fill the broker's
 * disk (a full disk blocks every publisher, the worker's events included). */
#define AMQP_TOPOLOGY_DEAD_MAX_LENGTH 100000
#define AMQP_TOPOLOGY_DEAD_TTL_MS (14LL * 24 * 3600 * 1000)

/* Longest name this module builds, NUL included. */
#define AMQP_TOPOLOGY_NAME_MAX 64

/* Write "virtflow.retry.<delay_s>s" into buf. Returns 0, or -1 when delay_s <= 0
 * or the buffer is too small. */
int amqp_topology_retry_name(int delay_s, char *buf, size_t size)
    __attribute__((warn_unused_result));

/* Declare every exchange, queue and binding above on an open channel.
 * Returns 0, or -1 with err (VF_EUNAVAILABLE, the broker's reply text quoted).
 * After a failure the broker has usually closed the channel or connection:
 * the caller throws the connection away and rebuilds it. */
int amqp_topology_declare(amqp_connection_state_t conn, amqp_channel_t channel,
                          const vf_config *config, vf_error *err)
    __attribute__((warn_unused_result));

/* Turn a rabbitmq-c RPC reply into 0, or -1 with err naming `what` and the
 * broker's or the library's reason. Shared with amqp_link. */
int amqp_topology_check_reply(amqp_rpc_reply_t reply, const char *what, vf_error *err)
    __attribute__((warn_unused_result));

#endif
