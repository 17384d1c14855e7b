/* event_types: the one table of the event types virtflow publishes
 * (docs/contracts.md "Events"), each on routing key event.<type>. The code
 * that emits events names them by this enum, so no other string can go out;
 * schema/event.json's enum lists the same types, and
 * tests/unit/test_event_types.c checks the two against each other. */
#ifndef VF_EVENT_TYPES_H
#define VF_EVENT_TYPES_H

#include <stdbool.h>

typedef enum {
    /* final: the task's outcome */
    EVENT_TASK_COMPLETED,
    EVENT_TASK_FAILED,
    EVENT_SPARE_READY,
    EVENT_SPARE_FAILED,
    EVENT_SPARE_RELEASED,
    EVENT_TASK_CANCELLED, /* an operator's cancel (virtflowctl task cancel) */
    /* progress: a watcher may ignore them */
    EVENT_TASK_RETRYING,
    EVENT_SPARE_PROVISIONING,
    EVENT_SPARE_WAITING_READY,
    /* after the end: a completed task's reservation given back (task.release) */
    EVENT_TASK_RELEASED,
    /* a completed task's unbound reservation taken by a higher-priority
     * request: the task is decided again (docs/scheduling.md "Preemption") */
    EVENT_TASK_PREEMPTED,
    /* about a refused message, not a change of the task: another request
     * came under a task id already recorded (task_conflict.h); the task it
     * names is left as it was */
    EVENT_TASK_CONFLICT,
    /* operational: about the relay's receivers, not a task (published by
     * virtflow-relay; docs/webhooks.md "Pace and circuit breaker") */
    EVENT_RECEIVER_DISABLED,
    EVENT_RECEIVER_RECOVERED,
    EVENT_DELIVERY_EXHAUSTED,
    EVENT_TYPE_COUNT
} event_type;

/* The type as events carry it ("task.completed"), a static string; NULL for a
 * value outside the table. */
const char *event_types_name(event_type type);

/* True for the types that end a task (the final events), false for progress
 * events and values outside the table. */
bool event_types_is_final(event_type type);

/* True for the operational types (receiver.*, delivery.*): about the
 * relay, not a task. A receiver gets them only when one of its patterns
 * names them ("receiver.*", "delivery.exhausted"), never through "*". */
bool event_types_is_operational(event_type type);

/* The type called `name`, or -1 when the table has none (NULL included). */
int event_types_find(const char *name);

#endif
