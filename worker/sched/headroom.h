/* headroom: how much room each pool has left, and how many VMs of each
 * reference request shape (worker.headroom_shapes) could still be placed
 * there, from a snapshot and the reservations held on it. No I/O.
 *
 * Free room is sched_host_room's (engine.h), summed over a pool's online
 * hosts with each host's share clamped at 0 (an overcommitted host adds
 * none). A shape fits on an online host the way the capacity filters count
 * (VM slots, vCPUs, memory, and disk when the shape asks for some), as a
 * shared request: with scheduler.dedicated_exclusive, dedicated hosts take
 * none. Per host, k VMs of a shape fit while k of each resource fit in what
 * is left; a pool's headroom is the sum over its hosts, and its spread is
 * how many of its hosts take at least one (anti-affine spares place one per
 * host). */
#ifndef VF_HEADROOM_H
#define VF_HEADROOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "hostset.h"

typedef struct sched_headroom_count {
    int64_t vms;   /* VMs of the shape that fit, packed */
    int64_t hosts; /* hosts that take at least one (spares spread one a host) */
} sched_headroom_count;

typedef struct sched_headroom_pool {
    const char *pool;             /* borrowed from the hostset */
    double free_cpu;              /* vCPUs, online hosts, each clamped at 0 */
    double free_memory;           /* MiB, same */
    int64_t free_slots;           /* VM slots, same */
    sched_headroom_count *shapes; /* one per shape, in the order given; owned by the
                                     sched_headroom */
} sched_headroom_pool;

typedef struct sched_headroom {
    sched_headroom_pool *pools; /* every pool of the hostset, in its order; owned */
    size_t n_pools;
    size_t n_shapes;
} sched_headroom;

/* Fill `out` (closed by sched_headroom_close, even after an error) for the
 * hosts of `hosts` under `params`, with `loads[i]` held on host i (NULL:
 * nothing held), for `n_shapes` shapes (each cpu > 0 and memory > 0, as the
 * configuration checks). Returns 0, or -1 when out of memory. */
int sched_headroom_compute(sched_headroom *out, const sched_params *params, const hostset *hosts,
                           const sched_host_load *loads, const config_shape *shapes,
                           size_t n_shapes) __attribute__((warn_unused_result));
void sched_headroom_close(sched_headroom *headroom);

/* Whether `count` spares of a shape fit a pool now, from its count: on
 * distinct hosts when `strict` (spare.anti_affinity_strict, one a host),
 * else anywhere VMs of the shape fit (the worker shares hosts only then). */
bool sched_headroom_spares_fit(const sched_headroom_count *fits, int64_t count, bool strict);

/* How many VMs of `shape` fit in `room` (0 when none). */
int64_t sched_headroom_fit(const sched_room *room, const config_shape *shape);

#endif
