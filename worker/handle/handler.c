/* handler: see handler.h. */
#include "handler.h"

#include <stdlib.h>
#include <string.h>

#include "broker_names.h"
#include "release_handler.h"
#include "spare_handler.h"
#include "task_handler.h"

/* The routing keys the worker's queues are bound to, as a table; the last
 * row takes the rest (task.schedule, task.schedule.priority). */
static const handler_entry handlers[] = {
    {BROKER_KEY_SPARE_PREPARE, "spare", spare_handler_handle, false},
    {BROKER_KEY_SPARE_RELEASE, "spare", spare_handler_handle, false},
    {BROKER_KEY_TASK_RELEASE, "release", release_handler_handle, false},
    {NULL, "schedule", task_handler_handle, true},
};

const handler_entry *handler_for(const char *routing_key)
{
    size_t last = sizeof handlers / sizeof handlers[0] - 1;
    for (size_t i = 0; routing_key && i < last; i++)
        if (strcmp(routing_key, handlers[i].routing_key) == 0)
            return &handlers[i];
    return &handlers[last];
}

void task_outcome_close(task_outcome *outcome)
{
    if (!outcome)
        return;
    free(outcome->event_id);
    free(outcome->event_key);
    free(outcome->event_body);
    free(outcome->reply_body);
    free(outcome->reply_to);
    free(outcome->correlation_id);
    for (size_t i = 0; i < outcome->n_replies; i++) {
        free(outcome->replies[i].to);
        free(outcome->replies[i].correlation_id);
        free(outcome->replies[i].body);
    }
    free(outcome->replies);
    for (size_t i = 0; i < outcome->n_more; i++) {
        free(outcome->more[i].id);
        free(outcome->more[i].key);
        free(outcome->more[i].body);
    }
    free(outcome->more);
    free(outcome->error);
    memset(outcome, 0, sizeof *outcome);
}
