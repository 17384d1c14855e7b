/* task_view: tasks as virtflowctl (tasks --json, task --json) and
 * virtflow-api (/v1/tasks) show them, one definition for both: a task row as
 * JSON, one task with its history and reservations, the filters' choices
 * and the "since" syntax. */
#ifndef VF_TASK_VIEW_H
#define VF_TASK_VIEW_H

#include <jansson.h>

#include "store.h"
#include "store_spares.h"
#include "store_tasks.h"

/* The values the store writes (docs/contracts.md "Task states"), NULL-ended:
 * what the status, reason and kind filters accept. */
extern const char *const task_view_statuses[];
extern const char *const task_view_reasons[];
extern const char *const task_view_kinds[];

/* Whether `status` is final: completed, failed, released. */
bool task_view_is_final(const char *status);

/* Whether `status` is where a task rests until someone acts: final, or a
 * spare.prepare's `ready` (its spares stay until spare.release). What a
 * client waiting for a task (GET /v1/tasks/{id}?wait=) waits for. */
bool task_view_is_settled(const char *status);

/* JSON text held in the store, parsed; a JSON null when the text is NULL,
 * the text as a JSON string when it is not JSON. Owned. */
json_t *task_view_stored_json(const char *text);

/* A task row as JSON: id, kind, status, reason, attempts, node, vmid, error,
 * created_at, updated_at, request and result (parsed). Owned. */
json_t *task_view_json(const store_task *task);

/* One history row as a watcher gets it (GET /v1/tasks/{id}/events,
 * virtflowctl task ID --watch --json): task_id, seq (the row's number, the
 * stream's cursor), at, status, detail (parsed). Owned; NULL on out of
 * memory. */
json_t *task_view_event_json(const store_task_event *event);

/* One spare's progress: name, index, host, ip, vmid, state (provisioning,
 * waiting_ready, ready, failed, releasing, released), attempts (of its
 * current step), ready_by, last_error, pipeline_url, release_task_id,
 * created_at, updated_at. Owned. */
json_t *task_view_spare_json(const store_spare *spare);

/* The spares of a spare task as an array of task_view_spare_json: those it
 * prepared, or those it released. Owned, or NULL with err. */
json_t *task_view_spares_json(store *s, const char *task_id, vf_error *err)
    __attribute__((warn_unused_result));

/* {"task": task_view_json, "history": [{at, status, detail}], "reservations":
 * [{node, cpu, memory, disk, vmid, created_at, expires_at, released_at}]},
 * read from `s`; a spare task's also has "spares" (task_view_spares_json).
 * Owned, or NULL with err. */
json_t *task_view_detail_json(store *s, const store_task *task, vf_error *err)
    __attribute__((warn_unused_result));

/* "30m", "1h", "2d", "45s" before now, or an RFC 3339 UTC time
 * ("2026-11-22T01:02:03Z", fractions allowed), as a store timestamp.
 * Returns 0, or -1 for text in neither form. */
/* Where a retrying task stands, from task_view_detail_json's `detail`:
 * {"attempt": N (the last one decided), "max_attempts": max_attempts (the
 * caller's retry.max_attempts), "next_attempt": N + 1, "next_attempt_at"
 * (when its delayed copy comes back: the last retrying row's time plus its
 * delay_s)}, from the newest "retrying" history row. NULL when the task is
 * not retrying or its history has no such row. Owned. */
json_t *task_view_retry(const json_t *detail, int max_attempts);

int task_view_parse_since(const char *text, char out[STORE_TIME_SIZE]);

#endif
