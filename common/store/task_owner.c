/* task_owner: a task's first submitter, read from its history (task_owner.h). */
#include "task_owner.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "store_tasks.h"

typedef struct reading {
    task_owner *owner;
    bool first_row_seen;
} reading;

static char *detail_string(const store_task_event *event, const char *member)
{
    json_t *detail = event->detail ? json_loads(event->detail, 0, NULL) : NULL;
    const char *value = json_string_value(json_object_get(detail, member));
    char *copy = value ? strdup(value) : NULL;
    json_decref(detail);
    return copy;
}

/* The key is on the first row only: a later row's "submitter" (a
 * conflicting request's, task_conflict.h) names someone who does not own
 * the task. The walk ends at the first "processing" row that says who
 * published it. */
static int read_row(const store_task_event *event, void *ctx)
{
    reading *r = ctx;
    if (!r->first_row_seen) {
        r->first_row_seen = true;
        r->owner->key = detail_string(event, "submitter");
    }
    if (strcmp(event->status, "processing") != 0 || !event->detail)
        return 0;
    r->owner->publisher = detail_string(event, "publisher");
    return 1;
}

int task_owner_read(store *s, const char *task_id, task_owner *owner, vf_error *err)
{
    *owner = (task_owner){NULL, NULL};
    reading r = {owner, false};
    if (store_task_events(s, task_id, read_row, &r, err) < 0) {
        task_owner_clear(owner);
        return -1;
    }
    return 0;
}

void task_owner_clear(task_owner *owner)
{
    free(owner->key);
    free(owner->publisher);
    *owner = (task_owner){NULL, NULL};
}
