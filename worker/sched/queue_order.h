/* queue_order: QueueSort for virtflow. A request's priority (its own
 * `priority`, or the value of the scheduler.priority_classes entry its
 * `priority_class` names, or scheduler.default_priority_class's, or 0), and
 * the order in which a worker decides the messages it holds: higher priority
 * first, then as delivered. Pure: no I/O (docs/scheduling.md). */
#ifndef VIRTFLOW_QUEUE_ORDER_H
#define VIRTFLOW_QUEUE_ORDER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "request.h"
#include "vf_error.h"

/* The request's priority into *out. -1 with err (VF_EINVAL, the reason a
 * task is invalid) when priority_class names no class, or priority and
 * priority_class are both given and disagree. */
int queue_order_priority(const sched_request *req, const vf_config *config, int32_t *out,
                         vf_error *err) __attribute__((warn_unused_result));

/* The priority of a task.schedule body as queue_order_priority reads it from
 * its `priority` and `priority_class`; 0 when body is not an object or its
 * priority is invalid (the task handler then says why). */
int32_t queue_order_body_priority(const json_t *body, const vf_config *config);

/* Whether a request of this priority belongs in the priority lane: at or
 * above scheduler.priority_lane_min. */
bool queue_order_lane(int32_t priority, const vf_config *config);

/* The routing key a task.schedule request of this priority is published
 * with: BROKER_KEY_SCHEDULE_PRIORITY ("task.schedule.priority") when
 * queue_order_lane says so, else BROKER_KEY_SCHEDULE
 * ("task.schedule"). Every publisher virtflow ships takes its key from here
 * or from queue_order_text_routing_key. A static string, never NULL. */
const char *queue_order_routing_key(int32_t priority, const vf_config *config);

/* queue_order_routing_key of a request body as text (what publishers hold),
 * its priority read as queue_order_body_priority reads it; the normal key for
 * NULL or text that is not a JSON object (it goes the normal way, and the
 * task handler says why it is invalid). */
const char *queue_order_text_routing_key(const char *body, size_t length, const vf_config *config);

/* Fill order[0..n) with the indexes 0..n-1 sorted by priority[i] descending,
 * equal priorities in index (delivery) order: a stable sort, so FIFO holds
 * among equals. */
void queue_order_sort(const int32_t *priority, size_t n, size_t *order);

#endif
