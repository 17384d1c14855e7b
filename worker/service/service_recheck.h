/* service_recheck: the worker's rechecker. When the engine's free room
 * grows (a new snapshot, a hold that ended, a release, a reload), the tasks
 * waiting for room in a delay tier are sent again at once instead of waiting
 * out their tier. It owns what that takes (whether a recheck is due, when
 * the last round ran, the room last seen);
 * the service calls these functions and never touches its fields. */
#ifndef VF_SERVICE_RECHECK_H
#define VF_SERVICE_RECHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "amqp_link.h"
#include "config.h"
#include "engine.h"
#include "service_publish.h"
#include "store.h"
#include "vf_error.h"

typedef struct service_rechecker service_rechecker;

/* Borrows config (retry.recheck_on_room and the lanes, as at start),
 * engine, store, link and publisher, which must outlive it. No recheck is
 * due until room is seen to grow. Returns an owned rechecker, or NULL with
 * err set (out of memory). */
service_rechecker *service_recheck_new(const vf_config *config, sched_engine *engine, store *store,
                                       amqp_link *link, service_publisher *publisher,
                                       vf_error *err);

/* Seam for tests: replace the monotonic clock (milliseconds) that spaces
 * the recheck rounds. NULL restores it. */
void service_recheck_set_clock(service_rechecker *r, int64_t (*mono_ms)(void *context),
                               void *context);

/* NULL is a no-op. */
void service_recheck_free(service_rechecker *r);

/* Look at the engine's free room (after a snapshot switch, an expiry or a
 * reload): when it grew, the waiting tasks are due a recheck. */
void service_recheck_room_changed(service_rechecker *r);

/* A committed task.release gave room back: the waiting tasks are due a
 * recheck. */
void service_recheck_room_returned(service_rechecker *r);

/* Whether room grew since the waiting tasks were last sent again: the next
 * service_recheck_waiting sends them (unless rechecks are off). */
bool service_recheck_due(const service_rechecker *r);

/* When due and at most once a second, send up to retry.recheck_on_room
 * waiting task.schedule tasks again. Returns 0, or -1 when a publish failed
 * (the broker link). A store error only skips the round (logged). */
int service_recheck_waiting(service_rechecker *r, vf_error *err);

/* A broker that refuses the worker's task.schedule publish (403
 * ACCESS_REFUSED on the topic, permissions that predate rechecks,
 * docs/upgrading.md) is noted by the service once (amqp_refusals.h), after
 * which the publisher publishes no recheck of that key: the task waits out
 * its tier, and the link is not lost again each time room grows. */

#endif
