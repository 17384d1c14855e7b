/* task_conflict: a task id belongs to its first request, on every path
 * (docs/contracts.md "Task ids"). A message or an HTTP submission that names a
 * recorded task is the same request again (a redelivery, a client's retry, the
 * worker's own retry or recheck, a preempted task's republish) only when its
 * body is the recorded one; any other body under that id is a conflict: the
 * task is left exactly as it was (row, state, reservation, submitter), and the
 * refusal is recorded beside it, where operators read the task:
 *
 *   - a history row `conflict` on that task id (task_events; the tasks row is
 *     not written, so nothing that reads the task's state sees a change);
 *   - an event task.conflict in the outbox, in the same transaction;
 *   - an answer to the refused submitter: a reply {"status": "conflict"} to its
 *     reply_to (the worker), or 409 (virtflow-api).
 *
 * The worker (task_handler, spare_handler) and virtflow-api (api_intake) both
 * judge with task_conflict_same_request and record with task_conflict_record,
 * so the two paths cannot drift apart. */
#ifndef VF_TASK_CONFLICT_H
#define VF_TASK_CONFLICT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ids.h"
#include "store.h"
#include "vf_error.h"

/* Whether `body` (a JSON object, borrowed) is the request `recorded` (the
 * task's request column, verbatim as first sent; NULL: none) under task id
 * `task_id`. The same request means the same JSON value once both name the
 * task: members in any order and any whitespace are the same, and a
 * "task_id" member is taken as `task_id` in both (a request may name its task
 * by the AMQP message_id alone, and the worker's republishes write the id
 * into the body). Everything else counts: a member added, dropped or changed,
 * and a number's type (2 and 2.0 differ, as jansson's json_equal has it).
 * AMQP properties and headers (message_id, reply_to, priority, the attempt,
 * redelivered) are not the body and never count. A recorded request that is
 * not a JSON object is no body's (such a request was never decided). */
bool task_conflict_same_request(const char *recorded, const char *task_id, const json_t *body);

/* What is known of the refused submission; borrowed. */
typedef struct task_conflict {
    const char *task_id;
    const char *kind;        /* the recorded task's kind: "schedule" or "spare" */
    const char *via;         /* "broker" or "virtflow-api" */
    const char *publisher;   /* the AMQP user_id; NULL: none (or the API path) */
    const char *submitter;   /* the API key's name; NULL: none (or the broker path) */
    const char *message_id;  /* NULL: none */
    const char *routing_key; /* NULL: none (the API path) */
    const json_t *request;   /* the refused body, a JSON object */
    int64_t now_ms;          /* Unix ms: the history row's and the event's time */
} task_conflict;

/* The answer to the refused submitter ({"task_id", "status": "conflict",
 * "error"}), and the error text alone, for the caller to send: owned, NULL on
 * out of memory. */
char *task_conflict_reply(const task_conflict *c);
void task_conflict_error(const task_conflict *c, char *out, size_t size);

/* Record the conflict inside the caller's open transaction: the history row
 * `conflict` on c->task_id and the task.conflict event in the outbox. The
 * event's id, routing key and body come back (owned) for a caller that
 * publishes it after its commit (the worker); NULL pointers: the outbox
 * sweep publishes it. Returns 0 or -1 with err. */
int task_conflict_record(store *s, const task_conflict *c, char **event_id, char **event_key,
                         char **event_body, vf_error *err) __attribute__((warn_unused_result));

#endif
