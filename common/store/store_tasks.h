/* store_tasks: the tasks table and its history (task_events). Part of the store: what store.h says
 * about durability, timestamps, strings, errors, threads and listing callbacks holds here too. */
#ifndef VF_STORE_TASKS_H
#define VF_STORE_TASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* ---- tasks ---- */

/* One tasks row; every string is an owned copy (store_task_clear frees
 * them), NULL when the column is NULL. */
typedef struct store_task {
    char *id;
    char *kind;   /* "schedule" or "spare" */
    char *status; /* docs/contracts.md "Task states" */
    char *reason; /* "invalid", "unschedulable", "exhausted" or NULL */
    int attempts;
    char *request; /* JSON text */
    char *result;  /* JSON text */
    char *error;
    char *node;
    int64_t vmid; /* -1: none */
    char *created_at;
    char *updated_at;
    /* An operator's mark on a retrying task (schema/015_task_actions.sql):
     * "cancel", "retry_now", "drop_copy" or NULL; its detail JSON text or NULL. */
    char *action;
    char *action_detail;
} store_task;

/* Free the strings of *t and zero it; t may be NULL or already cleared. */
void store_task_clear(store_task *t);

/* Input of store_task_insert and store_task_update: borrowed strings, NULL
 * stored as SQL NULL. */
typedef struct store_task_fields {
    const char *id;
    const char *kind; /* insert only */
    const char *status;
    const char *reason;
    int attempts;
    const char *request; /* insert only: JSON text */
    const char *result;  /* JSON text */
    const char *error;
    const char *node;
    int64_t vmid;   /* -1: none */
    const char *at; /* insert: created_at = updated_at; update: updated_at */
    /* Update only: change the row only if its attempts are still
     * `expected_attempts` (the row as read; every attempt recorded raises
     * them), so that two workers that read the same row cannot both record
     * an outcome. */
    bool check_attempts;
    int expected_attempts;
} store_task_fields;

/* Read task `id` into *out (cleared first by the caller or zeroed).
 * Returns 0 found, 1 not found (*out untouched), -1 error. */
int store_task_get(store *s, const char *id, store_task *out, vf_error *err)
    __attribute__((warn_unused_result));

/* Inside a transaction, on PostgreSQL: read the tasks `ids` (n of them;
 * duplicates are fine) in one statement, so that store_task_get answers for
 * them from what it read, without a round trip, until the transaction ends;
 * a task written through this handle since is read from the server again.
 * For a worker's batch, whose messages each begin with store_task_get. A
 * task another writer inserts meanwhile is then seen only by the unique
 * index, as it would be by a read made a moment earlier. SQLite, or outside
 * a transaction: does nothing (returns 0). Returns 0 or -1 with err. */
int store_tasks_prefetch(store *s, const char *const *ids, size_t n, vf_error *err)
    __attribute__((warn_unused_result));

/* Record a new task. A task with the same id already recorded is a
 * VF_EINVAL error (a redelivery must be recognised with store_task_get). */
int store_task_insert(store *s, const store_task_fields *t, vf_error *err)
    __attribute__((warn_unused_result));

/* Record a new task unless one with its id is recorded already (kept as
 * it is): 1 recorded, 0 there already, -1 with err. Not deferred: it
 * answers at once, and a transaction goes on after a 0 (on PostgreSQL too,
 * where a refused insert would fail the transaction). */
int store_task_insert_new(store *s, const store_task_fields *t, vf_error *err)
    __attribute__((warn_unused_result));

/* Overwrite status, reason, attempts, result, error, node, vmid and
 * updated_at of task t->id (kind, request, created_at never change).
 * Returns 0, 1 if no such task (or, with check_attempts, none with those
 * attempts), -1 error. Deferred (store_defer_writes), a missing row fails
 * the commit instead: VF_ECONFLICT with check_attempts (another worker
 * recorded the task meanwhile: decide again), else VF_EINTERNAL. */
int store_task_update(store *s, const store_task_fields *t, vf_error *err)
    __attribute__((warn_unused_result));

/* Remove task `id` and its history, but only while its status is still
 * `queued` (what virtflow-api does when the broker refused the request it
 * had recorded: no row may stay for a message that does not exist). A task a
 * worker has already taken is left alone. Call it inside store_begin ...
 * store_commit so both deletions happen together. Returns 0 removed, 1 no
 * queued task of that id (none, or taken), -1 error. */
int store_task_withdraw(store *s, const char *id, vf_error *err)
    __attribute__((warn_unused_result));

/* Append one history row to task `task_id` (which must exist). `detail` is
 * JSON text or NULL. */
int store_task_event_add(store *s, const char *task_id, const char *at, const char *status,
                         const char *detail, vf_error *err) __attribute__((warn_unused_result));

/* One task_events row, borrowed during a callback. */
typedef struct store_task_event {
    int64_t id; /* increases with insertion order */
    const char *task_id;
    const char *at;
    const char *status;
    const char *detail; /* JSON text or NULL */
} store_task_event;

typedef int (*store_task_event_fn)(const store_task_event *event, void *ctx);

/* Call fn for each history row of task_id, oldest first. A task without
 * history (or unknown) calls fn zero times. */
int store_task_events(store *s, const char *task_id, store_task_event_fn fn, void *ctx,
                      vf_error *err) __attribute__((warn_unused_result));

/* Call fn for the history rows of task_id whose id is above `after_id`
 * (0: all), oldest first, at most `limit` (0: all): what a watcher of the
 * task has not seen yet (GET /v1/tasks/{id}/events). */
int store_task_events_after(store *s, const char *task_id, int64_t after_id, int limit,
                            store_task_event_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* Filters of store_task_list; NULL / 0 means "any". */
typedef struct store_task_filter {
    const char *status;
    const char *reason;
    const char *kind;
    const char *node;
    const char *since;     /* created_at >= since */
    const char *vm_name;   /* the request's vm_name, exactly */
    const char *submitter; /* virtflow-api's key name, or the AMQP user who published it */
    const char *error;     /* the error text contains this, ignoring ASCII case */
    int limit;             /* at most this many rows; 0: no limit */
} store_task_filter;

/* Borrowed during the callback: the strings die when it returns. */
typedef int (*store_task_fn)(const store_task *task, void *ctx);

/* Call fn for each task matching `filter` (NULL: all), newest first. */
int store_task_list(store *s, const store_task_filter *filter, store_task_fn fn, void *ctx,
                    vf_error *err) __attribute__((warn_unused_result));

/* Call fn for up to `limit` tasks of `kind` in status retrying, the longest
 * unchanged (oldest updated_at) first: those waiting for room. */
int store_tasks_waiting(store *s, const char *kind, int limit, store_task_fn fn, void *ctx,
                        vf_error *err) __attribute__((warn_unused_result));

/* Call fn for up to `limit` schedule and spare tasks still `queued` whose row has
 * not changed since before `before` (updated_at < before), the oldest
 * first: those the API's requeue sweep looks at (api_sweep.h). */
int store_tasks_stale_queued(store *s, const char *before, int limit, store_task_fn fn, void *ctx,
                             vf_error *err) __attribute__((warn_unused_result));

/* Set updated_at = `at` on task `id`, only while it is still queued and
 * its updated_at is still `seen` (as read): a requeue recorded once.
 * Returns 0 changed, 1 not (a worker took it, or another sweep did), -1. */
int store_task_requeue_touch(store *s, const char *id, const char *seen, const char *at,
                             vf_error *err) __attribute__((warn_unused_result));

/* End task `id` failed with `reason` and `error` at `at`, only while it is
 * still queued and its updated_at still `seen`. Returns 0 changed, 1 not,
 * -1 with err. */
int store_task_give_up(store *s, const char *id, const char *seen, const char *at,
                       const char *reason, const char *error, vf_error *err)
    __attribute__((warn_unused_result));

/* Set task `id`'s operator mark to `action` (NULL: none) with `detail`
 * (JSON text or NULL), only while its mark is still `expected` (NULL: none)
 * and, when `status` is not NULL, its status is `status`: a mark changes
 * once, whoever else looks at it meanwhile. Returns 0 changed, 1 not (the
 * row moved on, or no such task), -1 with err. Deferred
 * (store_defer_writes), always 0: the worker's transitions are decided
 * from the row as read in its transaction. */
int store_task_set_action(store *s, const char *id, const char *expected, const char *status,
                          const char *action, const char *detail, vf_error *err)
    __attribute__((warn_unused_result));

#endif
