/* broker_names: the names of docs/contracts.md "Broker topology" (exchanges,
 * queues, routing keys, headers), and nothing that talks to a broker: code
 * that only names a queue or a routing key (the engine's priority lane, the
 * handlers, virtflowctl) includes this; declaring them is amqp_topology.h's.
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
 *   virtflow.nats            queue <- virtflow "event.#", only with nats.url
 *                            (virtflow-nats's input)
 *     these four (and virtflow.nats): x-queue-type (amqp.queue_type), x-dead-letter-exchange
 *     virtflow.dlx, x-single-active-consumer when amqp.single_active_consumer.
 *   virtflow.dlx             FANOUT exchange, durable: whatever is dead-lettered or
 *                            parked lands in virtflow.dead whatever its routing key
 *                            (the key is kept on the message, so redrive can use it)
 *   virtflow.dead            queue <- virtflow.dlx; x-queue-type, and bounded:
 *                            x-max-length BROKER_DEAD_MAX_LENGTH messages,
 *                            x-message-ttl BROKER_DEAD_TTL_MS, x-overflow
 *                            drop-head (the oldest go first). Where an older
 *                            virtflow declared it without these, the broker refuses
 *                            the declare (406); the queue is then used as it is and a
 *                            warning says how to bound it (docs/upgrading.md).
 *   virtflow.retry.<N>s      one per retry.delays_s entry: a FANOUT exchange and a
 *                            queue of the same name bound to it; the queue has
 *                            x-message-ttl N*1000 ms and x-dead-letter-exchange
 *                            virtflow, and no consumers.
 *
 * (amqp_topology.h says how each is declared, and how retrying through the
 * tiers works.) */
#ifndef VF_BROKER_NAMES_H
#define VF_BROKER_NAMES_H

#include <stddef.h>

#define BROKER_EXCHANGE "virtflow"
#define BROKER_DLX "virtflow.dlx"
#define BROKER_DEAD_QUEUE "virtflow.dead"
#define BROKER_SCHEDULE_QUEUE "virtflow.task.schedule"
#define BROKER_PRIORITY_QUEUE "virtflow.task.schedule.priority"
#define BROKER_SPARE_QUEUE "virtflow.spare"
#define BROKER_RELAY_QUEUE "virtflow.relay"
/* virtflow-nats's input, declared (bound to event.#) only when nats.url is
 * set: without a sink it would keep every event for ever. */
#define BROKER_NATS_QUEUE "virtflow.nats"
#define BROKER_RETRY_PREFIX "virtflow.retry."

#define BROKER_KEY_SCHEDULE "task.schedule"
/* The same request, into the priority lane (queue_order_routing_key picks). */
#define BROKER_KEY_SCHEDULE_PRIORITY "task.schedule.priority"
#define BROKER_KEY_SPARE_PREPARE "spare.prepare"
#define BROKER_KEY_SPARE_RELEASE "spare.release"
#define BROKER_KEY_TASK_RELEASE "task.release"
#define BROKER_KEY_EVENTS "event.#"

/* Message headers the programs set and read. */
#define BROKER_HEADER_ATTEMPT "x-virtflow-attempt"         /* integer, 1 = first try */
#define BROKER_HEADER_ERROR "x-virtflow-error"             /* reason, text */
#define BROKER_HEADER_ROUTING_KEY "x-virtflow-routing-key" /* original key, text */
/* A waiting task sent again because room grew: decide it once more without
 * spending an attempt (believed from trusted publishers only). Integer 1. */
#define BROKER_HEADER_RECHECK "x-virtflow-recheck"

/* virtflow.dead's bounds: enough for an outage's worth of parked messages,
 * and two weeks to look at them, without letting a flood fill the broker's
 * disk (a full disk blocks every publisher, the worker's events included). */
#define BROKER_DEAD_MAX_LENGTH 100000
#define BROKER_DEAD_TTL_MS (14LL * 24 * 3600 * 1000)

/* Longest name this module builds, NUL included. */
#define BROKER_NAME_MAX 64

/* Write "virtflow.retry.<delay_s>s" into buf. Returns 0, or -1 when delay_s <= 0
 * or the buffer is too small. */
int broker_names_retry(int delay_s, char *buf, size_t size) __attribute__((warn_unused_result));

#endif
