/* queue_order: QueueSort for virtflow. A request's priority (its own
 * `priority`, or the value of the scheduler.priority_classes entry its
 * `priority_class` names, or scheduler.default_priority_class's, or 0), and
 * the order in which a worker decides the messages it holds: higher priority
 * first, then as delivered. Pure: no I/O (docs/scheduling.md). */
#ifndef VIRTFLOW_QUEUE_ORDER_H
#define VIRTFLOW_QUEUE_ORDER_H

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

/* Fill order[0..n) with the indexes 0..n-1 sorted by priority[i] descending,
 * equal priorities in index (delivery) order: a stable sort, so FIFO holds
 * among equals. */
void queue_order_sort(const int32_t *priority, size_t n, size_t *order);

#endif
