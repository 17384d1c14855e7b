/* amqp_topology: the one place that declares the broker topology of
 * docs/contracts.md "Broker topology" (broker_names.h's names).
 *
 * Every program declares the whole topology at each connect; declarations are
 * idempotent only while every program passes the very same arguments (else
 * the broker closes the channel with 406 PRECONDITION_FAILED), which is why the
 * queue arguments are built by a single function here.
 *
 * The names themselves (exchanges, queues, routing keys, headers, the dead
 * queue's bounds) are broker_names.h's: code that only names a queue or a key
 * includes that, not this.
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

#include "broker_names.h"
#include "config.h"
#include "vf_error.h"

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
