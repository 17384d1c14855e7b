/* refused_request: a task's request the worker wrote to the outbox to be
 * decided again (a preempted task's: preemption.c) that the broker refuses to
 * take (amqp_refusals.h; a broker set up from older definitions). Published
 * again it would close the channel at every outbox sweep, for ever, and the
 * events behind it would wait: instead the task, which waits for that
 * request, ends failed with the reason, and the row is settled. */
#ifndef VF_REFUSED_REQUEST_H
#define VF_REFUSED_REQUEST_H

#include <stdint.h>

#include "store.h"
#include "vf_error.h"

/* Inside the caller's open transaction: the outbox row `outbox_id` (its
 * `body` a task.schedule request naming its task) is marked confirmed, so it
 * never goes out; the task it names, when it still waits for it (retrying),
 * ends `failed`, reason `exhausted`, its error `why` (what the broker
 * refused and what to grant), with a `failed` history row and a task.failed
 * event in the outbox (published by the next sweep). Returns 1 the task
 * failed, 0 only the row settled (no such task, or it has moved on), -1 with
 * err. */
int refused_request_settle(store *s, const char *outbox_id, const char *body, const char *why,
                           int64_t now_ms, vf_error *err) __attribute__((warn_unused_result));

#endif
