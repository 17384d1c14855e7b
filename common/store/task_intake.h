/* task_intake: what a client does to the store around publishing a request,
 * shared by virtflow-api and virtflowctl so both record and take back a task
 * the same way (docs/api.md "Recorded at acceptance"):
 *
 *   task_intake_record    before publishing task.schedule: the task as
 *                         `queued`, with a first history line saying who
 *                         submitted it
 *   task_intake_withdraw  the broker refused the message: the row goes again,
 *                         unless a worker has taken the task already
 *   task_intake_release_body
 *                         the body of task.release, the one builder for
 *                         every client that publishes one */
#ifndef VF_TASK_INTAKE_H
#define VF_TASK_INTAKE_H

#include "store.h"
#include "vf_error.h"

/* Record task_id (kind schedule, status queued, `request_text` as its
 * request) and its first history row `queued` with the detail
 * {"via": via, "submitter": submitter} (submitter left out when NULL), in one
 * transaction of its own. Returns 0 recorded, 1 a task of that id exists
 * already (nothing changed), -1 with err. */
int task_intake_record(store *s, const char *task_id, const char *request_text, const char *via,
                       const char *submitter, vf_error *err) __attribute__((warn_unused_result));

/* task_intake_record inside the caller's open transaction, with `now` as
 * the time of both rows: 1 recorded, 0 a task of that id exists already
 * (nothing changed; the transaction goes on), -1 with err. */
int task_intake_record_new(store *s, const char *task_id, const char *request_text, const char *via,
                           const char *submitter, const char *now, vf_error *err)
    __attribute__((warn_unused_result));

/* task_intake_record_new for a task of `kind` ("schedule" or "spare": a
 * spare.prepare or spare.release published by virtflow-api). */
int task_intake_record_as(store *s, const char *kind, const char *task_id, const char *request_text,
                          const char *via, const char *submitter, const char *now, vf_error *err)
    __attribute__((warn_unused_result));

/* Take back a row task_intake_record made, in a transaction of its own, but
 * only while it is still queued (store_task_withdraw). Returns 0 removed, 1
 * kept (a worker has the task, or there is none), -1 with err. */
int task_intake_withdraw(store *s, const char *task_id, vf_error *err)
    __attribute__((warn_unused_result));

/* The task.release body for task_id: {"task_id": ...}. Owned (free), NULL
 * on out of memory. */
char *task_intake_release_body(const char *task_id);

#endif
