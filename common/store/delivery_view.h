/* delivery_view: webhook deliveries as virtflowctl (deliveries --json) and
 * virtflow-api (GET /v1/deliveries) show them, one definition for both. */
#ifndef VF_DELIVERY_VIEW_H
#define VF_DELIVERY_VIEW_H

#include <jansson.h>

#include "config.h"
#include "store_deliveries.h"
#include "store_receivers.h"

/* The states the store keeps (schema/001_init.sql), NULL-ended: what the
 * status filter accepts. */
extern const char *const delivery_view_statuses[];

/* A deliveries row as JSON: event_id, receiver, status, attempts,
 * next_attempt_at, last_code, last_error, delivered_at, created_at, and from
 * the event it carries its type and the task it is about (task_id, null
 * when the event names none). Owned; NULL on out of memory. */
json_t *delivery_view_json(const store_delivery *d);

/* A bulk redelivery and its progress, as virtflowctl deliveries redeliver
 * --json and GET /v1/deliveries/redeliveries/{id} show it: id, receiver,
 * status (the filter: failed or exhausted), rate_per_s (null: the
 * receiver's pace), matched, created_at, progress {pending,
 * delivering, delivered, failed} and done (nothing of it left pending or
 * delivering). Owned; NULL on out of memory. */
json_t *delivery_view_redelivery_json(const store_redelivery *r);

/* A bulk redelivery as an operator asks for it, one definition for
 * virtflowctl and virtflow-api (docs/webhooks.md "Bulk redelivery"). */
typedef struct delivery_view_redeliver_ask {
    const char *id;       /* rdl_...; NULL: a new one */
    const char *receiver; /* required: a name of relay.receivers */
    const char *since;    /* required: "2h", "30m", "1d" ago or an RFC 3339 UTC time */
    const char *status;   /* NULL or "failed" (every delivery whose last attempt failed),
                             "exhausted" (only those with no attempt left) */
    double rate_per_s;    /* > 0: due one after the other at this pace; 0: all due now
                             (the receiver's rate_per_s still paces the relay) */
    const char *requested_by;
} delivery_view_redeliver_ask;

/* Check `ask` against `config` (the receiver must be configured) and start
 * it (store_redelivery_start). Returns 0 started, 1 the same request again
 * under its id (nothing reset twice), 2 its id names another request, or -1
 * with err: VF_EINVAL for a bad ask (the message says which field), else
 * the store's error. *out is the redelivery for 0 and 1. */
int delivery_view_redeliver(store *s, const vf_config *config,
                            const delivery_view_redeliver_ask *ask, store_redelivery *out,
                            vf_error *err) __attribute__((warn_unused_result));

#endif
