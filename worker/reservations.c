#include "reservations.h"

#include <stdio.h>
#include <string.h>

#include "ids.h"

typedef struct holder {
    sched_engine *engine;
    long count;
    vf_error *err;
    bool failed;
} holder;

static int hold(const store_reservation *row, void *ctx)
{
    holder *h = ctx;
    sched_reservation res;
    memset(&res, 0, sizeof res);
    snprintf(res.task_id, sizeof res.task_id, "%s", row->task_id);
    snprintf(res.node, sizeof res.node, "%s", row->node);
    res.cpu = row->cpu;
    res.memory = row->memory;
    res.disk = row->disk;
    res.vmid = row->vmid > 0 ? (uint32_t)row->vmid : 0;
    if (ids_parse_time(row->expires_at, &res.expires) < 0)
        res.expires = 0; /* unreadable expiry: hold it until released */
    if (sched_engine_reserve(h->engine, &res, h->err) < 0) {
        h->failed = true;
        return 1; /* stop: the error is in h->err */
    }
    h->count++;
    return 0;
}

long reservations_hold_live(store *s, sched_engine *engine, vf_error *err)
{
    /* Judged against the inventory clock, not the wall clock: a hold whose
     * time ran out while the inventory was stale still counts (see
     * schema/003_inventory_clock.sql). */
    char now[STORE_TIME_SIZE];
    if (store_reservation_clock(s, now, err) < 0)
        return -1;
    holder h = {engine, 0, err, false};
    if (store_reservations_live(s, now, hold, &h, err) < 0 || h.failed)
        return -1;
    return h.count;
}
