/* release_handler: one task.release message, decided and recorded inside the
 * caller's open store transaction, like task_handler (same context, message
 * and outcome types). A client whose VM create failed gives the capacity and
 * the vmid back at once instead of holding them for
 * scheduler.reservation_ttl_s (Unreserve, in kube-scheduler's words).
 *
 * task.release {"task_id": "<the task to release>"}
 *   not readable, no valid task_id, other keys,
 *   or a spare task (spare.release is theirs) -> park in virtflow.dead
 *   task not recorded yet, attempts left      -> retry through the delay tiers
 *                                                (the release may overtake its
 *                                                task.schedule on another worker)
 *   task not recorded, last attempt           -> park in virtflow.dead
 *   publisher neither the task's submitter
 *   (the AMQP user_id of its first attempt)
 *   nor trusted (relay.trusted_publishers)    -> refused: history row
 *                                                "release_refused", reply, ack
 *   live reservation                          -> ended (store and engine), history
 *                                                row "released", task.released
 *                                                event, reply; the task stays
 *                                                completed
 *   nothing held (released, expired, the VM
 *   already seen, never placed, a repeat)     -> reply "nothing held", ack:
 *                                                idempotent, no event
 *
 * The engine stops holding the reservation at once; on rollback the caller
 * must take the whole picture from the store again (outcome.released). */
#ifndef VF_RELEASE_HANDLER_H
#define VF_RELEASE_HANDLER_H

#include "handler.h"

/* Decide and record one message. Returns 0 with *out filled, or -1 with err
 * when the store failed (the caller rolls the whole batch back). */
int release_handler_handle(task_handler *handler, const task_message *msg, task_outcome *out,
                           vf_error *err) __attribute__((warn_unused_result));

#endif
