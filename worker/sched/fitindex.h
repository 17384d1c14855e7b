/* fitindex: the engine's free-capacity index, so that a decision over 10,000
 * hosts visits a few dozen of them instead of all.
 *
 * Hosts are grouped by (pool, dedicated) among the online ones; each group is
 * a tree over its hosts in name order whose nodes hold, for the hosts below:
 * how many there are, the least room left in VM slots, vCPUs, MiB and GiB,
 * and bounds on the committed fractions and the VMSlots score. A search for
 * one request then
 *   - counts a whole subtree as feasible when even its tightest host fits
 *     (so the per-reason counts stay exact without visiting those hosts),
 *   - descends only where some host may fail, to charge it to its reason,
 *   - skips a subtree whose best possible score cannot beat the best so far,
 *     walking the hosts in name order as the full pass does, so the chosen
 *     host (first highest, ties within the engine's epsilon to the lower
 *     name) is the same host with the same score, bit for bit.
 * Bounds are loosened by far more than floating-point rounding can move a
 * figure, so a skip is never wrong; a bound that is too loose only costs a
 * visit. Hosts that are offline, in another pool or of the other dedication
 * are counted per class (categorical filters need no per-host work).
 *
 * A request shape (pool, dedication, vCPUs, MiB, GiB) searched a second time
 * gets its scores kept: every member's reason and score with a max-tree over
 * them, updated with the host's path on each load change, so a decision for a
 * flavour the worker sees over and over is a few descents (O(log n)).
 *
 * Maintained by the engine: built when a snapshot is set, updated in O(log n)
 * when a host's reservations change. No I/O. */
#ifndef VF_FITINDEX_H
#define VF_FITINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugins.h"

typedef struct fitindex fitindex;

/* An empty index (nothing built), or NULL when out of memory. */
fitindex *fitindex_new(void);
void fitindex_free(fitindex *index);

/* Index `n_hosts` hosts (the snapshot's, name order) with their hot figures
 * and current loads. Returns 0, or -1 (out of memory; err filled), after
 * which the index is empty and fitindex_ready is false. */
int fitindex_build(fitindex *index, const sched_hot *hot, const sched_host_load *load,
                   size_t n_hosts, size_t n_pools, vf_error *err)
    __attribute__((warn_unused_result));
/* Forget the snapshot (fitindex_ready is false until the next build). */
void fitindex_clear(fitindex *index);
bool fitindex_ready(const fitindex *index);

/* Host `host_index`'s load or hot figures changed: refresh its path. */
void fitindex_update(fitindex *index, const sched_hot *hot, const sched_host_load *load,
                     size_t host_index);

/* Hosts of pool `pool_id` with this dedication and status. */
uint32_t fitindex_class_count(const fitindex *index, int pool_id, bool dedicated,
                              host_status status);
/* Hosts of pool `pool_id`, any dedication or status. */
uint32_t fitindex_pool_size(const fitindex *index, int pool_id);

/* One search: the request and the enabled capacity filters and scores, as
 * the engine's full pass reads them. */
typedef struct fitindex_query {
    const sched_hot *hot;
    const sched_host_load *load;
    bool slots_on, cpu_on, memory_on, disk_on;  /* disk_on: enabled and disk wanted */
    double want_cpu;                            /* vCPUs, >= 0 */
    double want_memory;                         /* MiB, >= 0 */
    int64_t want_disk;                          /* GiB, >= 0 */
    double w_free, w_most, w_balanced, w_slots; /* 0: off */
    double weights;                             /* their sum, in score id order */
    double score_epsilon;                       /* the tie distance */
    /* A node-regex annotation (NULL: none): its pattern text, the compiled
     * regex and its per-host match cache (sched_node_matches), and the
     * hosts' names. Only kept scores serve such a request (built on its first
     * search); the bounds do not know names. */
    pattern *node_regex;
    uint8_t *node_match;
    const char *node_pattern;
    const host *hosts;
    /* Out: */
    uint32_t counts[SCHED_REASON_COUNT]; /* added to: VM slots, cpu, memory, disk, none */
    bool found;
    uint32_t best;     /* host index of the chosen host, when found */
    double best_score; /* its score, exactly as the full pass computes it */
    size_t visited;    /* tree nodes visited (for benchmarks) */
} fitindex_query;

/* Search the online hosts of pool `pool_id` with dedication `dedicated`:
 * adds their reasons to q->counts and finds the best. q->found is false when
 * no host is feasible, and also when the search gave up (a request with a
 * node regex on its first search, or bounds too loose to skip much): the
 * caller then takes its full pass. */
void fitindex_search(fitindex *index, int pool_id, bool dedicated, fitindex_query *q);

/* The weighted score sum of a feasible host, as the full pass computes it
 * (scores summed in sched_score_id order, clamped, each times its weight). */
static inline double fitindex_score_sum(const sched_hot *h, double cpu_after, double memory_after,
                                        bool free_on, bool most_on, bool balanced_on,
                                        bool vm_slots_on, double w_free, double w_most,
                                        double w_balanced, double w_slots)
{
    double cpu_fraction = sched_cpu_fraction(h, cpu_after);
    double memory_fraction = sched_memory_fraction(h, memory_after);
    double sum = 0;
    if (free_on)
        sum += w_free * sched_score_clamp(sched_score_free(cpu_fraction, memory_fraction));
    if (most_on)
        sum +=
            w_most * sched_score_clamp(sched_score_most_allocated(cpu_fraction, memory_fraction));
    if (balanced_on)
        sum += w_balanced * sched_score_clamp(sched_score_balanced(cpu_fraction, memory_fraction));
    if (vm_slots_on)
        sum += w_slots * h->vm_slots_score;
    return sum;
}

#endif
