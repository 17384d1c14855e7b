/* delivery_view: webhook deliveries as virtflowctl (deliveries --json) and
 * virtflow-api (GET /v1/deliveries) show them, one definition for both. */
#ifndef VF_DELIVERY_VIEW_H
#define VF_DELIVERY_VIEW_H

#include <jansson.h>

#include "store_deliveries.h"

/* The states the store keeps (schema/001_init.sql), NULL-ended: what the
 * status filter accepts. */
extern const char *const delivery_view_statuses[];

/* A deliveries row as JSON: event_id, receiver, status, attempts,
 * next_attempt_at, last_code, last_error, delivered_at, created_at, and from
 * the event it carries its type and the task it is about (task_id, null
 * when the event names none). Owned; NULL on out of memory. */
json_t *delivery_view_json(const store_delivery *d);

#endif
