/* task_owner: whom a task belongs to, as its history records it — the one
 * reading that the worker (a same body from another publisher, task.release
 * on the broker) and virtflow-api (a same body from another key, DELETE
 * /v1/tasks/{id}) both ask. Two names, from two namespaces that are never
 * compared with each other: an API key and a broker user. */
#ifndef VF_TASK_OWNER_H
#define VF_TASK_OWNER_H

#include <stdbool.h>

#include "store.h"
#include "vf_error.h"

typedef struct task_owner {
    /* The API key virtflow-api accepted the task from: its first history row's
     * "submitter" (the acceptance row, task_intake.h). NULL: it did not come
     * through virtflow-api with a key. Owned. */
    char *key;
    /* The broker user whose message a worker first processed: the
     * "publisher" of its first "processing" row. For a task accepted by
     * virtflow-api, virtflow-api's own login. NULL: none processed yet, or
     * that row named none. Owned. */
    char *publisher;
} task_owner;

/* Read task_id's owner into *owner (both NULL for a task without history).
 * Returns 0, or -1 with err (the store) and *owner empty. */
int task_owner_read(store *s, const char *task_id, task_owner *owner, vf_error *err)
    __attribute__((warn_unused_result));

void task_owner_clear(task_owner *owner);

#endif
