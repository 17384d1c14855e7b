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

void sched_headroom_close(sched_headroom *headroom)
{
    for (size_t p = 0; p < headroom->n_pools; p++)
        free(headroom->pools[p].shapes);
    free(headroom->pools);
    memset(headroom, 0, sizeof *headroom);
}

/* The entry of `pool`, added when new; `last` caches the previous host's
 * (hosts of a pool tend to come together). NULL when out of memory. */
static sched_headroom_pool *pool_entry(sched_headroom *out, size_t *capacity, const char *pool,
                                       size_t *last)
{
    if (*last < out->n_pools && strcmp(out->pools[*last].pool, pool) == 0)
        return &out->pools[*last];
    for (size_t p = 0; p < out->n_pools; p++)
        if (strcmp(out->pools[p].pool, pool) == 0) {
            *last = p;
            return &out->pools[p];
        }
    if (out->n_pools == *capacity) {
        size_t grown_capacity = *capacity ? *capacity * 2 : 8;
        sched_headroom_pool *grown = realloc(out->pools, grown_capacity * sizeof *grown);
        if (!grown)
            return NULL;
        out->pools = grown;
        *capacity = grown_capacity;
    }
    sched_headroom_pool *entry = &out->pools[out->n_pools];
    memset(entry, 0, sizeof *entry);
    entry->pool = pool;
    if (!(entry->shapes = calloc(out->n_shapes ? out->n_shapes : 1, sizeof *entry->shapes)))
        return NULL;
    *last = out->n_pools++;
    return entry;
}

int sched_headroom_compute(sched_headroom *out, const sched_params *params, const hostset *hosts,
                           const sched_host_load *loads, const config_shape *shapes,
                           size_t n_shapes)
{
    memset(out, 0, sizeof *out);
    out->n_shapes = n_shapes;
    size_t capacity = 0, last = 0;
    for (size_t i = 0; i < hosts->n_hosts; i++) {
        const host *h = &hosts->hosts[i];
        sched_headroom_pool *pool = pool_entry(out, &capacity, h->pool, &last);
        if (!pool)
            return -1;
        if (h->status != HOST_ONLINE)
            continue; /* nothing is placed there */
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
