/* store_deliveries: webhook deliveries (virtflow-relay). Part of the store: what store.h says about
 * durability, timestamps, strings, errors, threads and listing callbacks holds
 * here too. */
#ifndef VF_STORE_DELIVERIES_H
#define VF_STORE_DELIVERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* ---- deliveries (virtflow-relay) ---- */

/* One deliveries row. The body is a copy of the event JSON. */
typedef struct store_delivery {
    const char *event_id;
    const char *receiver;
    const char *status; /* "pending", "delivering", "delivered", "failed" */
    int attempts;
    const char *next_attempt_at; /* NULL: nothing scheduled */
    int last_code;               /* HTTP status of the last attempt; 0: none */
    const char *last_error;
    const char *delivered_at;
    const char *created_at;
    const char *body; /* JSON text */
} store_delivery;

typedef int (*store_delivery_fn)(const store_delivery *delivery, void *ctx);

/* Record that event_id must be delivered to receiver, due at once (`now`).
 * Idempotent: returns 0 if added, 1 if that pair was already recorded (the
 * existing row is left as it is), -1 on error. */
int store_delivery_add(store *s, const char *event_id, const char *receiver, const char *body,
                       const char *now, vf_error *err) __attribute__((warn_unused_result));

/* Call fn for up to `limit` (0: all) pending deliveries with
 * next_attempt_at <= now, earliest due first. Reads the whole table (the
 * index is by receiver): the relay scans per receiver, below. */
int store_deliveries_due(store *s, const char *now, int limit, store_delivery_fn fn, void *ctx,
                         vf_error *err) __attribute__((warn_unused_result));

/* store_deliveries_due for one receiver only, so that a receiver with a
 * backlog cannot fill every slot of a scan and starve the others. Its cost
 * follows this receiver's rows, not the other receivers' backlog. */
int store_deliveries_due_receiver(store *s, const char *receiver, const char *now, int limit,
                                  store_delivery_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* After a crash: every delivery left 'delivering' (its outcome unknown) goes
 * back to 'pending', due at `now`; attempts are kept. A relay calls this when
 * it takes the store's "deliveries" lease, before any delivery of its own is
 * in flight (the lease holder is the one relay sending).
 * Returns the number of rows changed, or -1. */
int store_deliveries_requeue(store *s, const char *now, vf_error *err)
    __attribute__((warn_unused_result));

/* Operator redelivery: the 'failed' or 'delivered' deliveries of event_id (to
 * `receiver` only when not NULL) go back to 'pending', due at `now`, with
 * attempts reset to 0 so the whole schedule applies again; last_code and
 * last_error are kept for the record until the next attempt. Pending and
 * delivering rows are left alone. Returns the number of rows changed (0: none
 * matched), or -1. */
int store_delivery_redeliver(store *s, const char *event_id, const char *receiver, const char *now,
                             vf_error *err) __attribute__((warn_unused_result));

/* Input of store_delivery_update: borrowed; NULL strings stored as NULL. */
typedef struct store_delivery_change {
    const char *event_id;
    const char *receiver;
    const char *status;
    int attempts;
    const char *next_attempt_at;
    int last_code; /* 0: none */
    const char *last_error;
    const char *delivered_at;
} store_delivery_change;

/* Overwrite the state of one delivery. Returns 0, 1 if no such delivery, -1. */
int store_delivery_update(store *s, const store_delivery_change *change, vf_error *err)
    __attribute__((warn_unused_result));

typedef struct store_delivery_filter {
    const char *status;
    const char *receiver;
    const char *event_id;
    const char *type; /* the event's "type" ("task.failed"), read from the body */
    /* A keyset cursor: only the rows after this one in the listing's order
     * (the last row of the page before); all three or none. */
    const char *before_created_at, *before_event_id, *before_receiver;
    int limit; /* 0: no limit */
} store_delivery_filter;

/* Call fn for each delivery matching `filter` (NULL: all), newest first
 * (created_at, then event_id, then receiver, each descending), so a page
 * costs what the first does however deep the cursor is. */
int store_delivery_list(store *s, const store_delivery_filter *filter, store_delivery_fn fn,
                        void *ctx, vf_error *err) __attribute__((warn_unused_result));

/* Per receiver: deliveries not final yet ('pending' or 'delivering') and
 * the created_at of the oldest of them (NULL when none), for the relay's
 * backlog metrics. Borrowed during the callback. */
typedef int (*store_backlog_fn)(const char *receiver, int64_t count, const char *oldest_at,
                                void *ctx);
int store_deliveries_backlog(store *s, store_backlog_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

#endif
