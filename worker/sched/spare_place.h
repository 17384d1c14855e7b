/* spare_place: where the anti-affine spares of one spare.prepare go, the
 * worker's rule (worker/handle/spare_handler.c) and the replay's
 * (replay.c, virtflowctl simulate) in one place. No I/O.
 *
 * The spares are decided one after the other by the request's profile, each
 * kept off the hosts the earlier ones took (SCHED_REASON_ANTI_AFFINITY);
 * when no such host is left and the rule is not strict
 * (spare.anti_affinity_strict: false), the spare may share a host. All of
 * them are placed, or none: each placement is held at once (the next spare
 * sees it) and a failure releases what the task id holds. */
#ifndef VF_SPARE_PLACE_H
#define VF_SPARE_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "vf_error.h"

#define SCHED_SPARE_MAX_COUNT 64         /* spare.prepare's count: 1..64 */
#define SCHED_SPARE_READY_TIMEOUT_S 1800 /* spare.prepare's ready_timeout_s when it has none */

typedef struct sched_spare_placement {
    size_t host_index; /* in the engine's current snapshot */
    const host *node;  /* borrowed from the snapshot */
    uint32_t vmid;
    double score;
} sched_spare_placement;

/* Place `count` (1..SCHED_SPARE_MAX_COUNT) spares of `req`, decided by
 * `decider` (the request's profile of `holder`, or `holder` itself), each
 * held through `holder` (which passes it on to its profiles) under `task_id`
 * until Unix second `expires`. placed[0..count) are filled.
 * Returns 1 when all are placed (holder holds them all), 0 when not (holder
 * holds none of them; `last` is the decision that failed and says why), -1
 * with err when an engine refused the request (VF_EINVAL: a malformed
 * annotation) or memory ran out (VF_ENOMEM); none held then either. */
int sched_spares_place(sched_engine *holder, sched_engine *decider, const sched_request *req,
                       int count, bool strict, const char *task_id, int64_t expires,
                       sched_spare_placement *placed, sched_decision *last, vf_error *err)
    __attribute__((warn_unused_result));

#endif
