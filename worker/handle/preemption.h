/* preemption: what taking lower-priority reservations does to the store,
 * inside the preemptor's transaction (docs/scheduling.md "Preemption").
 *
 * The victims sched_preempt_choose picked (each placed before the grace,
 * scheduler.preemption_grace_s, had passed) are read first: a victim whose
 * task the store does not show as a completed placement was never answered
 * (a claim whose batch never committed) and is not taken: its holds stop
 * being candidates, and the caller chooses again. Then each victim's
 * reservation is ended only while it is still live, unbound, of a lower
 * priority and placed before the grace (store_reservation_preempt: a
 * picture gone stale conflicts, the batch is decided again); what it leaves
 * is a reservation of its vmid alone until it would have expired
 * (store_reservation_keep_vmid), so that neither the preemptor nor anyone
 * else is given the vmid the victim's client may be creating; the engine
 * holds the same. Its task, completed, goes back to `retrying` with the
 * attempt given back (attempts one less: the decision that placed it did
 * not stick through any fault of its own), a `preempted` history row and a
 * task.preempted event naming the preemptor; its client is told on its own
 * channel (a reply to the reply_to its task recorded); and its request goes
 * to the outbox again (task.schedule, or task.schedule.priority for the
 * lane), so it is published after the commit, or by the outbox sweep after
 * a crash: the victim is decided again like any request, and its answer
 * goes to that same reply_to. */
#ifndef VF_PREEMPTION_H
#define VF_PREEMPTION_H

#include <jansson.h>
#include <stdint.h>

#include "preempt.h"
#include "task_attempt.h"

/* preemption_take's outcome when a victim was never answered. */
#define PREEMPTION_UNANSWERED 1

/* End `p`'s victims for the task of `a` (priority `priority`), recording
 * each in the store and the outbox as above, none of them placed after
 * `placed_before` (store time); `taken` (a JSON array) gets one
 * {"task_id", "priority", "vmid"} per victim. Sets a->out->released (a
 * rollback must take the store's whole picture again). Returns 0;
 * PREEMPTION_UNANSWERED when a victim's task is not a completed placement
 * (nothing written; that victim's holds are no longer candidates: choose
 * again); or -1 with err: VF_ECONFLICT when a victim changed meanwhile (its
 * reservation bound or gone, its task recorded by another worker), or a
 * store error. */
int preemption_take(const task_attempt *a, const sched_preemption *p, int32_t priority,
                    const char *placed_before, json_t *taken, vf_error *err)
    __attribute__((warn_unused_result));

#endif
