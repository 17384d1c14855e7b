/* decision_replay: decide one recorded request again as the worker decided
 * it (issue 39, virtflowctl explain --replay). No I/O: the caller rebuilds
 * the engine from the record (the scheduler section, the inventory snapshot
 * and the holds in force, store_provenance.h) and hands over the request;
 * this runs the same engine steps the worker's handlers run, in the same
 * order, and describes the outcome as the task's recorded result does, so
 * the two can be compared field by field (decision_replay_compare).
 *
 * The steps, as worker/handle/task_handler.c and spare_handler.c take them:
 *   - one VM: decide; placed nowhere and allowed to preempt: choose the
 *     victims (preempt.h), end their holds, decide again;
 *   - `count` VMs, a group's member or a spread: decide and hold each in
 *     turn, all or none, counting the group's members (a spread without a
 *     group: its own placements) per host as they are placed;
 *   - spare.prepare: sched_spares_place (every spare or none, anti-affine).
 * Every decision is made with host_reasons on, so the outcome names each
 * host's reason, placed or not (the worker asks for them only when a
 * request fails: the choice is the same). */
#ifndef VF_DECISION_REPLAY_H
#define VF_DECISION_REPLAY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "request.h"
#include "vf_error.h"

typedef struct decision_replay_input {
    const sched_request *req; /* its task_id set (a near-best pick hashes it) */
    int32_t priority;         /* queue_order_priority's */
    bool may_preempt;         /* sched_preempt_allowed, and the request is one VM */
    /* Unix ms: preemption takes only holds placed at or before this (the
     * decision's time less scheduler.preemption_grace_s, as the worker). */
    int64_t preempt_not_after_ms;
    /* Per host index of the engine's snapshot, the group's members there
     * before the decision (NULL: none, or no group). Copied. */
    const uint32_t *group_members;
    int64_t hold_expires; /* Unix s: the holds of a count's placements (they end with it) */
    int spare_count;      /* > 0: a spare.prepare of this many spares */
    bool spare_strict;    /* spare.anti_affinity_strict */
} decision_replay_input;

/* Decide in->req on `engine` (the default profile: its request's profile
 * decides, holds go through it). Returns an owned JSON object shaped as the
 * task's result ("status", "node", "vmid", "score", "scores", "feasible",
 * "hosts", "explanation"; "rejections" when placed nowhere; "placements"
 * and "count" for a count; "spares" for a spare.prepare; "preempted" when
 * it preempted) plus "host_reasons" (every host of the snapshot: its reason,
 * or "fits"), or NULL with err (VF_EINVAL: the engine refused the request,
 * as the worker's "invalid"; VF_ENOMEM; VF_ECONFIG: no such profile). The
 * engine keeps what was held (discard it after). */
json_t *decision_replay_run(sched_engine *engine, const decision_replay_input *in, vf_error *err)
    __attribute__((warn_unused_result));

/* Compare a recorded result with a replayed one, field by field over what
 * both can say: status, node, vmid, score and each plugin's part, feasible
 * and host counts, the explanation, each recorded rejection, each
 * placement's node and vmid, each spare's host and vmid, and the preempted
 * tasks. Returns an owned array of {"field", "recorded", "replayed"} (empty:
 * identical), or NULL when out of memory. */
json_t *decision_replay_compare(const json_t *recorded, const json_t *replayed);

#endif
