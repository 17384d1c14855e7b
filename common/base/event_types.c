#include "event_types.h"

#include <stddef.h>
#include <string.h>

static const struct {
    const char *name;
    bool final;
    bool operational;
} types[EVENT_TYPE_COUNT] = {
    [EVENT_TASK_COMPLETED] = {"task.completed", true, false},
    [EVENT_TASK_FAILED] = {"task.failed", true, false},
    [EVENT_SPARE_READY] = {"spare.ready", true, false},
    [EVENT_SPARE_FAILED] = {"spare.failed", true, false},
    [EVENT_SPARE_RELEASED] = {"spare.released", true, false},
    [EVENT_TASK_CANCELLED] = {"task.cancelled", true, false},
    [EVENT_TASK_RETRYING] = {"task.retrying", false, false},
    [EVENT_SPARE_PROVISIONING] = {"spare.provisioning", false, false},
    [EVENT_SPARE_WAITING_READY] = {"spare.waiting_ready", false, false},
    [EVENT_TASK_RELEASED] = {"task.released", false, false},
    [EVENT_TASK_PREEMPTED] = {"task.preempted", false, false},
    [EVENT_TASK_CONFLICT] = {"task.conflict", false, false},
    [EVENT_RECEIVER_DISABLED] = {"receiver.disabled", false, true},
    [EVENT_RECEIVER_RECOVERED] = {"receiver.recovered", false, true},
    [EVENT_DELIVERY_EXHAUSTED] = {"delivery.exhausted", false, true},
};

const char *event_types_name(event_type type)
{
    return (unsigned)type < EVENT_TYPE_COUNT ? types[type].name : NULL;
}

bool event_types_is_final(event_type type)
{
    return (unsigned)type < EVENT_TYPE_COUNT && types[type].final;
}

bool event_types_is_operational(event_type type)
{
    return (unsigned)type < EVENT_TYPE_COUNT && types[type].operational;
}

int event_types_find(const char *name)
{
    for (int i = 0; name && i < EVENT_TYPE_COUNT; i++)
        if (types[i].name && strcmp(types[i].name, name) == 0)
            return i;
    return -1;
}
