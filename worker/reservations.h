/* reservations: the store's live reservations, held in an engine. The worker
 * does this at start and virtflowctl place before its dry run, so both
 * decide over the same picture. */
#ifndef VF_RESERVATIONS_H
#define VF_RESERVATIONS_H

#include "engine.h"
#include "store.h"

/* Hold every live reservation of `s` (not released, not expired by the
 * reservation clock, store_reservation_clock) in `engine`. Returns how many, or -1 with err (store
 * error, VF_ENOMEM). */
long reservations_hold_live(store *s, sched_engine *engine, vf_error *err)
    __attribute__((warn_unused_result));

#endif
