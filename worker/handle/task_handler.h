/* task_handler: what happens to one task.schedule message, decided and
 * recorded inside the caller's open store transaction (group commit).
 *
 *   not readable (too large, not a JSON object)  -> park in virtflow.dead
 *   task id already final                        -> ack, schedule nothing
 *   invalid request                              -> failed/invalid + task.failed
 *   placed                                       -> completed + reservation + task.completed
 *   no host of a fresh inventory could ever hold it (never_fits.h), unless
 *   scheduler.unfit_requests is wait             -> failed/never_fits + task.failed
 *   no host fits, attempts left                  -> retrying + task.retrying, back through
 *                                                   a delay tier
 *   no host fits, last attempt                   -> failed/unschedulable + task.failed
 *   no inventory, attempts left                  -> retrying + task.retrying
 *   no inventory, last attempt                   -> failed/exhausted + task.failed + parked
 *
 * A recheck (x-virtflow-recheck from a trusted publisher: the worker sent a
 * waiting task again because room grew, service_recheck.c) of a task still
 * retrying is decided once more: placed -> completed as above (its delayed
 * copy, when it comes back, finds it final); still no room -> ack, nothing
 * recorded, no attempt spent (the delayed copy goes on as before). A recheck
 * of a task in any other state is acked and does nothing.
 *
 * The task row, its history rows, the reservation and the outbox event are
 * written through `store` in the caller's transaction; the engine holds the
 * reservation at once so the next message in the same batch sees it. If the
 * caller rolls back, it must release the engine reservations of every
 * outcome with `reserved` set. A reservation whose host another worker
 * changed since the engine's picture of it fails with VF_ECONFLICT: roll
 * back, catch the book up and decide the batch again. No broker I/O here: the caller publishes the
 * outcome's event, reply, retry or dead letter after the commit. */
#ifndef VF_TASK_HANDLER_H
#define VF_TASK_HANDLER_H

#include "handler.h"

/* Decide and record one message. Returns 0 with *out filled, or -1 with err
 * when the store failed (the caller rolls the whole batch back). */
int task_handler_handle(task_handler *handler, const task_message *msg, task_outcome *out,
                        vf_error *err) __attribute__((warn_unused_result));

#endif
