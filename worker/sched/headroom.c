#include "headroom.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins.h"

/* Whole units of `each` in `left`, as the filters allow (the same epsilon). */
static int64_t whole_units(double left, double each)
{
    double k = floor((left + SCHED_FIT_EPSILON) / each);
    return k > 0 ? (int64_t)k : 0;
}

int64_t sched_headroom_fit(const sched_room *room, const config_shape *shape)
{
    int64_t k = room->slots > 0 ? room->slots : 0;
    int64_t by_cpu = whole_units(room->cpu, shape->cpu);
    int64_t by_memory = whole_units(room->memory, (double)shape->memory);
    if (by_cpu < k)
        k = by_cpu;
    if (by_memory < k)
        k = by_memory;
    if (shape->disk > 0) {
        int64_t by_disk = room->disk > 0 ? room->disk / shape->disk : 0;
        if (by_disk < k)
            k = by_disk;
    }
    return k;
}

bool sched_headroom_spares_fit(const sched_headroom_count *fits, int64_t count, bool strict)
{
    return (strict ? fits->hosts : fits->vms) >= count;
}

void sched_headroom_close(sched_headroom *headroom)
{
    if (headroom->pools)
        free(headroom->pools[0].shapes); /* one block for every pool's counts */
    free(headroom->pools);
    memset(headroom, 0, sizeof *headroom);
}

int sched_headroom_compute(sched_headroom *out, const sched_params *params, const hostset *hosts,
                           const sched_host_load *loads, const config_shape *shapes,
                           size_t n_shapes)
{
    memset(out, 0, sizeof *out);
    out->n_shapes = n_shapes;
    if (hosts->n_pools == 0)
        return 0;
    /* The hostset interned its pools: host i is in pools[hosts[i].pool_id]. */
    out->pools = calloc(hosts->n_pools, sizeof *out->pools);
    sched_headroom_count *counts =
        calloc(hosts->n_pools * (n_shapes ? n_shapes : 1), sizeof *counts);
    if (!out->pools || !counts) {
        free(out->pools);
        free(counts);
        out->pools = NULL;
        return -1;
    }
    out->n_pools = hosts->n_pools;
    for (size_t p = 0; p < out->n_pools; p++) {
        out->pools[p].pool = hosts->pools[p];
        out->pools[p].shapes = counts + p * (n_shapes ? n_shapes : 1);
    }
    for (size_t i = 0; i < hosts->n_hosts; i++) {
        const host *h = &hosts->hosts[i];
        if (h->status != HOST_ONLINE || h->pool_id >= out->n_pools)
            continue; /* nothing is placed there */
        sched_headroom_pool *pool = &out->pools[h->pool_id];
        sched_room room = sched_host_room(params, h, loads ? &loads[i] : NULL);
        pool->free_cpu += room.cpu > 0 ? room.cpu : 0;
        pool->free_memory += room.memory > 0 ? room.memory : 0;
        pool->free_slots += room.slots > 0 ? room.slots : 0;
        if (h->dedicated && params->dedicated_exclusive)
            continue; /* kept for dedicated requests: a shape is a shared one */
        for (size_t s = 0; s < n_shapes; s++) {
            int64_t k = sched_headroom_fit(&room, &shapes[s]);
            pool->shapes[s].vms += k;
            pool->shapes[s].hosts += k > 0;
        }
    }
    return 0;
}
