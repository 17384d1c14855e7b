/* task_attempt: what handling any request message shares (task.schedule,
 * spare.prepare, spare.release): reading and recognising the message,
 * writing the task row and its history, putting an event in the outbox,
 * recording a retry, and parking what cannot be read. Everything is written
 * through the handler's store inside the caller's batch transaction. */
#ifndef VF_TASK_ATTEMPT_H
#define VF_TASK_ATTEMPT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "event_types.h"
#include "handler.h"
#include "store_tasks.h"

typedef struct task_attempt {
    task_handler *h;
    const task_message *msg;
    task_outcome *out;
    const char *kind; /* the task row's kind: "schedule" or "spare" */
    int64_t now_ms;
    char now[STORE_TIME_SIZE];
    bool is_new;         /* no row yet: the first write inserts it */
    int attempt;         /* 1 for the first */
    store_task existing; /* owned: the row as found; zeroed when new */
    json_t *body;        /* owned: the message, a JSON object */
    json_t *event_extra; /* borrowed, may be NULL: fields added to task.retrying */
    /* NULL, or why the task waits when that is not a decision's verdict
     * (e.g. "unknown_scheduler"): the retry's history and task.retrying
     * carry it as "reason". */
    const char *retry_reason;
    uint64_t holds_before; /* the engine's hold-set digest when the attempt opened (provenance.h) */
} task_attempt;

/* The attempt a message stands for: its x-virtflow-attempt clamped to
 * 1..retry.max_attempts when its user_id is a trusted publisher
 * (config_trusts_publisher: the worker's own retries), else 1. A redelivered
 * copy of an attempt already recorded counts one more (task_attempt_open). */
int task_attempt_number(const vf_config *config, const task_message *msg);

/* Read a message's body and the task id it names, as task_attempt_open
 * will, for a caller that reads a whole batch's tasks at once
 * (store_tasks_prefetch) and then hands the body on in msg->parsed.
 * Returns the body (owned) with the id in task_id, or NULL when the body is
 * not a readable JSON object or names no task (task_attempt_open then
 * parks it, or makes a fresh id). */
json_t *task_attempt_read(const task_message *msg, char task_id[REQUEST_TASK_ID_LEN]);

/* Read the message and find its task. Returns 1 when it is to be handled
 * (a->body, a->existing, a->is_new, a->attempt set); 0 when its outcome is
 * already decided (parked in out: unreadable, or the id names a task of
 * another kind); -1 with err on a store error. Call task_attempt_close
 * whatever it returns. */
int task_attempt_open(task_attempt *a, task_handler *h, const task_message *msg, task_outcome *out,
                      const char *kind, vf_error *err) __attribute__((warn_unused_result));
void task_attempt_close(task_attempt *a);

/* The task's submitter on the broker path (task_owner.h's publisher): the
 * publisher of its first "processing" history row, into *user (owned; NULL
 * when that row named none, or there is none). Returns 0, or -1 with err set. */
int task_attempt_first_publisher(const task_attempt *a, char **user, vf_error *err)
    __attribute__((warn_unused_result));

/* Whether the attempt's outcome has a client to answer: the message's
 * reply_to, or the one the task recorded (task_outcome.reply_to). */
bool task_attempt_wants_reply(const task_attempt *a);

/* A task recorded already (a->existing) whose request is not this message's
 * body (task_conflict.h): the conflict is recorded (history row, event in
 * the outcome, a reply for reply_to) and the task left as it was. Returns 1
 * recorded (the message is then only acked), 0 the same request (or a new
 * task), -1 with err. */
int task_attempt_conflict(task_attempt *a, vf_error *err) __attribute__((warn_unused_result));

/* Insert (new) or update the task row in `status`, then add this attempt's
 * "processing" history row, which records how the message arrived. */
int task_attempt_write(const task_attempt *a, const char *status, const char *reason,
                       const char *result_text, const char *error, const char *node, int64_t vmid,
                       vf_error *err) __attribute__((warn_unused_result));

/* One history row; `detail` is stolen (NULL for none). */
int task_attempt_history(const task_attempt *a, const char *status, json_t *detail, vf_error *err)
    __attribute__((warn_unused_result));
int task_attempt_history_text(const task_attempt *a, const char *status, const char *detail,
                              vf_error *err) __attribute__((warn_unused_result));

/* An outbox row of `type` with `data` (stolen), kept in the outcome for the
 * caller to publish after the commit. */
int task_attempt_event(const task_attempt *a, event_type type, json_t *data, vf_error *err)
    __attribute__((warn_unused_result));

/* Another outbox row in this transaction, published after the commit
 * with the outcome (task_outcome.more): `body` (stolen, JSON text) under
 * message id `id` (NULL: a new event id) with routing key `key`. Returns 0,
 * or -1 (the body freed). */
int task_attempt_outbox(const task_attempt *a, const char *id, const char *key, char *body,
                        vf_error *err) __attribute__((warn_unused_result));
/* An event of `type` with `data` (stolen) as another outbox row
 * (task_attempt_outbox): about another task than this one. */
int task_attempt_event_more(const task_attempt *a, event_type type, json_t *data, vf_error *err)
    __attribute__((warn_unused_result));

/* Not done and attempts remain: row "retrying", history with `detail`
 * (stolen, may be NULL), the progress event task.retrying (with
 * a->event_extra's fields), and the outcome asks for the next delay tier. */
int task_attempt_retry(const task_attempt *a, const char *error, json_t *detail, vf_error *err)
    __attribute__((warn_unused_result));

/* The delay tier (retry.delays_s) after failed attempt number `attempt`. */
int task_attempt_delay_s(const vf_config *config, int attempt);

/* `result` with the task id in it, as text (owned); `result` is kept. */
char *task_attempt_result_text(const task_attempt *a, json_t *result);

/* The message goes to virtflow.dead with this reason. */
void task_outcome_park(task_outcome *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
