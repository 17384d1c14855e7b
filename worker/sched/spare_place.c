/* spare_place: see spare_place.h. */
#include "spare_place.h"

int sched_spares_place(sched_engine *holder, sched_engine *decider, const sched_request *req,
                       int count, bool strict, const char *task_id, int64_t expires,
                       sched_spare_placement *placed, sched_decision *last, vf_error *err)
{
    size_t excluded[SCHED_SPARE_MAX_COUNT];
    if (count < 1 || count > SCHED_SPARE_MAX_COUNT) {
        vf_error_set(err, VF_EINVAL, "count: expected 1..%d spares, got %d", SCHED_SPARE_MAX_COUNT,
                     count);
        return -1;
    }
    for (int i = 0; i < count; i++) {
        sched_decide_options options = {.excluded = excluded, .n_excluded = (size_t)i};
        if (sched_engine_decide_with(decider, req, &options, last, err) < 0)
            goto undo;
        if (!last->placed && !strict && sched_engine_decide(decider, req, last, err) < 0)
            goto undo;
        if (!last->placed) {
            sched_engine_release(holder, task_id);
            return 0;
        }
        placed[i].host_index = sched_decision_host_index(holder, last);
        placed[i].node = last->node;
        placed[i].vmid = last->vmid;
        placed[i].score = last->score;
        excluded[i] = placed[i].host_index;
        sched_reservation res;
        sched_reservation_from_decision(&res, last, req, task_id, expires);
        if (sched_engine_reserve(holder, &res, err) < 0)
            goto undo;
    }
    return 1;
undo:
    sched_engine_release(holder, task_id);
    return -1;
}
