/* api_sweep: the requeue sweep of virtflow-api (docs/api.md "Lost queued
 * tasks"). A task is recorded `queued` before its publish; a client (the
 * API, virtflowctl submit) that dies between the two leaves a row no worker
 * will ever hear of. A thread of its own, with its own store handle and
 * broker link, looks every round for `queued` rows unchanged for
 * api.requeue_after_s and, while this replica holds the "api-requeue" lease
 * (one replica sweeps):
 *
 *   - fewer than api.requeue_max `requeued` history lines: publishes the
 *     stored request again as task.schedule (a spare task's as spare.prepare
 *     or spare.release), message id = task id (a worker
 *     decides a task once: a second copy of a decided task is a no-op), then
 *     records a `requeued` line and touches updated_at, both only while the
 *     row is still queued and unchanged;
 *   - otherwise ends the task `failed`, reason "lost", error "lost before
 *     reaching a worker", with a `failed` history line and task.failed
 *     (spare.failed, naming the upgrade, for a spare task).
 *
 * Each step waits api.requeue_after_s after the row's last write, so a task
 * fails at the earliest (requeue_max + 1) x requeue_after_s after it was
 * recorded: a message merely waiting in a backed-up queue is republished
 * (harmless) and failed only past that. */
#ifndef VF_API_SWEEP_H
#define VF_API_SWEEP_H

#include "api_broker.h"
#include "config.h"
#include "vf_error.h"

typedef struct api_sweep api_sweep;

/* Start the sweep thread (NULL, nothing started, when api.requeue_after_s
 * is 0). `config` and `broker` (the schedule its link connects by) are
 * borrowed. NULL with err->code set on failure; with
 * err->code VF_OK when there is nothing to start. */
api_sweep *api_sweep_start(const vf_config *config, api_broker *broker, vf_error *err)
    __attribute__((warn_unused_result));

/* Stop and free; NULL is a no-op. */
void api_sweep_stop(api_sweep *w);

/* One round now, on the caller's thread: what the thread does each round.
 * Returns the number of tasks requeued or failed, -1 with err. */
int api_sweep_round(api_sweep *w, vf_error *err);

#endif
