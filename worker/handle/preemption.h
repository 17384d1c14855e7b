/* preemption: what taking lower-priority reservations does to the store,
 * inside the preemptor's transaction (docs/scheduling.md "Preemption").
 *
 * For each victim sched_preempt_choose picked: its host is claimed at the
 * generation the engine decided from (reservation_book_preempt: a picture
 * gone stale conflicts, the batch is decided again), its reservation ended
 * only while it is still live, unbound and of a lower priority, and the
 * engine stops holding it. Its task, completed, goes back to `retrying`
 * with the attempt given back (attempts one less: the decision that placed
 * it did not stick through any fault of its own), a `preempted` history row
 * and a task.preempted event naming the preemptor, and its request goes to
 * the outbox again (task.schedule, or task.schedule.priority for the lane),
 * so it is published after the commit, or by the outbox sweep after a
 * crash: the victim is decided again like any request. */
#ifndef VF_PREEMPTION_H
#define VF_PREEMPTION_H

#include <jansson.h>
#include <stdint.h>

#include "preempt.h"
#include "task_attempt.h"

/* End `p`'s victims for the task of `a` (priority `priority`), recording
 * each in the store and the outbox as above; `taken` (a JSON array) gets
 * one {"task_id", "priority", "vmid"} per victim. Sets a->out->released (a
 * rollback must take the store's whole picture again). Returns 0, or -1
 * with err: VF_ECONFLICT when a victim changed meanwhile (its reservation
 * bound or gone, its task no longer completed), or a store error. */
int preemption_take(const task_attempt *a, const sched_preemption *p, int32_t priority,
                    json_t *taken, vf_error *err) __attribute__((warn_unused_result));

#endif
