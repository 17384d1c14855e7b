/* handler: see handler.h. */
#include "handler.h"

#include <stdlib.h>
#include <string.h>

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
