/* store_outbox: the event outbox: events not yet confirmed by the broker. Part of the store: what
 * store.h says about durability, timestamps, strings, errors, threads and listing callbacks holds
 * here too. */
#ifndef VF_STORE_OUTBOX_H
#define VF_STORE_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* ---- outbox ---- */

typedef struct store_outbox_event {
    const char *id; /* event id, AMQP message_id */
    const char *routing_key;
    const char *body; /* JSON text */
    const char *created_at;
    const char *published_at; /* NULL until the first publish attempt */
    int attempts;             /* publish attempts so far */
} store_outbox_event;

typedef int (*store_outbox_fn)(const store_outbox_event *event, void *ctx);

/* Queue an event for publishing; a duplicate id is a VF_EINVAL error. */
int store_outbox_add(store *s, const char *event_id, const char *routing_key, const char *body,
                     const char *created_at, vf_error *err) __attribute__((warn_unused_result));

/* Call fn for up to `limit` (0: all) events not yet confirmed, oldest first;
 * only those created before `created_before` unless it is NULL (several
 * workers share the outbox: a younger event may be on its way from another). */
int store_outbox_pending(store *s, const char *created_before, int limit, store_outbox_fn fn,
                         void *ctx, vf_error *err) __attribute__((warn_unused_result));

/* A watcher of the event stream takes an event only once its id is this
 * old (ms): event ids are made before their transaction commits, by several
 * writers, so one committed a little after a later one was made is not
 * passed by (clocks of the writers kept within it: NTP). */
#define STORE_OUTBOX_SETTLE_MS 1000

/* The bound of the event ids made in millisecond `unix_ms`: "evt_", the
 * UUIDv7's 12 hex digits of milliseconds (ids.h), then 20 `fill` (0: below
 * every id of that ms, f: above). */
void store_outbox_id_bound(int64_t unix_ms, char fill, char out[48]);

/* Call fn for up to `limit` (0: all) events (routing key event.*) whose id
 * sorts after `after_id` and before `before_id`, in id order, confirmed or
 * not: the event stream GET /v1/events reads (ids are time-ordered: ids.h). */
int store_outbox_events_between(store *s, const char *after_id, const char *before_id, int limit,
                                store_outbox_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* Record a publish attempt (published_at = at, attempts + 1). Returns 0,
 * 1 if no such event, -1 error. */
int store_outbox_mark_published(store *s, const char *event_id, const char *at, vf_error *err)
    __attribute__((warn_unused_result));

/* Record the broker's confirm; the event is no longer pending. Returns 0,
 * 1 if no such event, -1 error. */
int store_outbox_mark_confirmed(store *s, const char *event_id, const char *at, vf_error *err)
    __attribute__((warn_unused_result));

/* Mark confirmed every event of `event_ids` (n of them) in one statement;
 * unknown ids are skipped. Returns 0 or -1 with err. */
int store_outbox_mark_confirmed_many(store *s, const char *const *event_ids, size_t n,
                                     const char *at, vf_error *err)
    __attribute__((warn_unused_result));

/* Number of events not yet confirmed into *count. */
int store_outbox_count_pending(store *s, int64_t *count, vf_error *err)
    __attribute__((warn_unused_result));

/* Delete up to `limit` (0: all) events confirmed before `before`, oldest
 * confirm first. Returns the number deleted, or -1. */
int store_outbox_prune(store *s, const char *before, int limit, vf_error *err)
    __attribute__((warn_unused_result));

#endif
