/* relay_events: the relay's own events (receiver.disabled,
 * receiver.recovered, delivery.exhausted: docs/webhooks.md "Pace and
 * circuit breaker") on their way out, with the guarantees of the worker's:
 * written to the outbox in the transaction that records what caused them,
 * published on the broker once that commit is on disk, marked confirmed
 * when the broker confirms; one left unconfirmed (the relay died, the broker
 * was away) is published again from the outbox by the sweep. Consumers
 * deduplicate on the event id, as for every event. They come back through
 * virtflow.relay and are delivered, signed, like the others.
 *
 * One thread: the relay's loop. */
#ifndef VF_RELAY_EVENTS_H
#define VF_RELAY_EVENTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "amqp_link.h"
#include "event_types.h"
#include "store.h"
#include "vf_error.h"

/* Operational events left unconfirmed this long after they were written
 * are published again. */
#define RELAY_EVENTS_SWEEP_MS 5000

typedef struct relay_events relay_events;

relay_events *relay_events_new(void);
void relay_events_free(relay_events *ev); /* NULL ok */

/* An event of `type` made now (data stolen), to be written with the turn.
 * Out of memory: logged, the event is lost (the state it reports is in the
 * store and the log). */
void relay_events_add(relay_events *ev, event_type type, json_t *data);

/* Events made and not yet written. */
size_t relay_events_waiting(const relay_events *ev);

/* Inside the turn's transaction: the waiting events into the outbox.
 * 0, or -1 with err (the events stay waiting for the next turn). */
int relay_events_write(relay_events *ev, store *s, const char *now, vf_error *err)
    __attribute__((warn_unused_result));

/* After the turn committed: publish what it wrote (with confirms, on
 * `link` when connected) and forget them. */
void relay_events_publish(relay_events *ev, amqp_link *link);

/* The turn is dropped (the lease moved on): forget the waiting events. */
void relay_events_drop(relay_events *ev);

/* The link's confirm callback, for the tags this module published: true
 * when `tag` was one of them (the outcome is noted for _settle). */
bool relay_events_confirmed(relay_events *ev, uint64_t tag, bool ok);

/* The link reconnected: confirms owed on the old connection never come. */
void relay_events_link_reset(relay_events *ev);

/* Mark confirmed in the outbox what the broker confirmed. */
void relay_events_settle(relay_events *ev, store *s);

/* Publish again the relay's events written more than RELAY_EVENTS_SWEEP_MS
 * ago and never confirmed; at most once per RELAY_EVENTS_SWEEP_MS. Only the
 * relay sending (the lease holder) calls it. */
void relay_events_sweep(relay_events *ev, store *s, amqp_link *link);

#endif
