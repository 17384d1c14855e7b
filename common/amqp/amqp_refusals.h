/* amqp_refusals: the publish paths a broker refused. A broker whose users
 * and permissions predate a routing key (docs/upgrading.md, "Brokers set up
 * from an older deploy/rabbitmq/definitions.json") answers a publish of it
 * with 403 ACCESS_REFUSED, which closes the channel and with it everything in
 * flight. Published again at every reconnect, such a message would take the
 * link down for ever (a preempted task's request: 7 reconnects in 25 s, the
 * events behind it stuck). So a program notes the refusal once, from the
 * broker's close (amqp_link_broker_close), warns once, and asks
 * amqp_refusals_blocks before each publish of that path until it restarts;
 * what the path carried is then handled otherwise (the caller's choice).
 *
 * A path is an exchange and a routing key (a topic permission names both),
 * or a whole exchange (a resource permission: "access to exchange ...
 * refused"). Thread-safe: several threads of one program may share one. */
#ifndef VF_AMQP_REFUSALS_H
#define VF_AMQP_REFUSALS_H

#include <stdbool.h>
#include <stddef.h>

#include "amqp_link.h"

/* Longest exchange or routing key kept (the broker's are at most 255). */
#define AMQP_REFUSALS_NAME 256

typedef struct amqp_refusals amqp_refusals;

amqp_refusals *amqp_refusals_new(void) __attribute__((warn_unused_result));
void amqp_refusals_free(amqp_refusals *r); /* NULL is a no-op */

/* The path a broker's close text refuses: "ACCESS_REFUSED - [write] access
 * to topic 'KEY' in exchange 'EXCHANGE' ..." (key set) or "ACCESS_REFUSED -
 * access to exchange 'EXCHANGE' ..." (key ""); the default exchange
 * (amq.default) is "". False for any other text. */
bool amqp_refusals_parse(const char *text, char exchange[AMQP_REFUSALS_NAME],
                         char key[AMQP_REFUSALS_NAME]);

/* After `link` failed: when the broker closed it with 403 for a path not
 * noted yet, note it, copy it into exchange and key, and return true (the
 * caller warns, once). False otherwise (another failure, or known). */
bool amqp_refusals_note(amqp_refusals *r, const amqp_link *link, char exchange[AMQP_REFUSALS_NAME],
                        char key[AMQP_REFUSALS_NAME]);

/* Note a path as refused (what amqp_refusals_note does once parsed).
 * Returns true when it is new. */
bool amqp_refusals_add(amqp_refusals *r, const char *exchange, const char *key);

/* Whether publishing `key` on `exchange` was refused (the key itself, or
 * the whole exchange). NULL r: never. */
bool amqp_refusals_blocks(amqp_refusals *r, const char *exchange, const char *key);

#endif
