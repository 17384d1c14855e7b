/* fitindex: the engine's free-capacity index, so that a decision over
 * 100,000 hosts looks at a few hundred of them instead of all, whatever the
 * request's shape.
 *
 * Hosts are grouped by (pool, dedicated) among the online ones. Each group
 * has two trees over its hosts, whose nodes hold what the hosts below have
 * at least and at most (fitindex_internal.h):
 *   - a counting tree, the hosts in order of the vCPUs then MiB they have
 *     left, whose nodes hold how many hosts and the least and most room per
 *     capacity filter (VM slots, vCPUs, MiB, GiB, as exact thresholds of
 *     the filters' own tests). A whole subtree is counted to one reason
 *     when every host below passes every filter, or fails the same one
 *     first, so the per-reason counts are exact and only the hosts a
 *     request's size splits are visited;
 *   - a scoring tree: a row per capacity (vCPUs, MiB), the hosts in order
 *     of their balance (committed cpu fraction less memory fraction), under
 *     a heap over the capacities. Its nodes hold the best of the scores'
 *     linear parts, which bound the weighted score of every host below for
 *     any request, exactly for a subtree on one side of the request's
 *     balance point (fitindex_score.c derives it). A branch and bound walk
 *     finds the highest score visiting the few subtrees that straddle that
 *     point or may beat the best so far, then picks the host the full pass
 *     would (the first highest in name order, ties within the engine's
 *     epsilon to the lower name).
 * A search that cannot settle a chain of near-ties, or whose bounds keep too
 * much in play, gives up: the engine then takes its full pass, so a
 * decision is the same, bit for bit, either way. Hosts that are offline, in
 * another pool or of the other dedication are counted per class
 * (categorical filters need no per-host work).
 *
 * A reservation moves a host in both orders; each tree keeps a free slot
 * every few hosts, and a host whose key moved goes to the free slot nearest
 * its new place, so the bounds stay tight between snapshots
 * (fitindex_trees.c). A host's trees are brought up to date when the next
 * bound search needs them, not at each change.
 *
 * A request shape (pool, dedication, vCPUs, MiB, GiB) searched a second time
 * gets its scores kept (fitindex_shapes.c): every member's reason and score
 * with a max-tree over them, updated with the host's path on each load
 * change, so a decision for a flavour the worker sees over and over is a few
 * descents (O(log n)), and a node-regex request is served at all.
 *
 * Maintained by the engine: built when a snapshot is set, updated in O(log n)
 * when a host's reservations change. docs/benchmarks.md ("The bounds, for
 * any request") explains the bounds with figures. No I/O. */
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

/* The score weights searches will use (0: off), known when the index is
 * built so that each subtree keeps the best of the scores' linear part. */
typedef struct fitindex_weights {
    double w_free, w_most, w_balanced, w_slots;
} fitindex_weights;

/* Index `n_hosts` hosts (the snapshot's, name order) with their hot figures
 * and current loads, for searches weighting scores as `weights` says.
 * Returns 0, or -1 (out of memory; err filled), after which the index is
 * empty and fitindex_ready is false. */
int fitindex_build(fitindex *index, const sched_hot *hot, const sched_host_load *load,
                   size_t n_hosts, size_t n_pools, const fitindex_weights *weights, vf_error *err)
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
    bool complete; /* the counts are exact and `found` says whether any host fits */
    bool found;
    uint32_t best;     /* host index of the chosen host, when found */
    double best_score; /* its score, exactly as the full pass computes it */
    size_t visited;    /* tree nodes visited (for benchmarks) */
} fitindex_query;

/* Search the online hosts of pool `pool_id` with dedication `dedicated`:
 * adds their reasons to q->counts and finds the best. q->complete is false
 * when the search gave up (a request with a node regex on its first search,
 * bounds too loose to skip much, near-ties): the caller then takes its full
 * pass. Complete, q->found says whether any host is feasible. */
void fitindex_search(fitindex *index, int pool_id, bool dedicated, fitindex_query *q);

/* The first capacity filter host `i` fails under `q` (the filters and the
 * request; the hosts' figures), as the full pass orders them;
 * SCHED_REASON_NONE when it passes them all. */
sched_reason fitindex_reason(const fitindex_query *q, uint32_t i);

/* The online hosts of pool `pool_id` with dedication `dedicated`, in name
 * order: *n of them, borrowed until the next build; NULL (and *n 0) when
 * there are none or the index is not ready. */
const uint32_t *fitindex_members(const fitindex *index, int pool_id, bool dedicated, size_t *n);

/* What the hosts below a subtree have at least and at most, for a walk. */
typedef struct fitindex_span {
    uint32_t first; /* the lowest host index below */
    int32_t min_slots_left, max_slots_left;
    int32_t min_disk_left, max_disk_left; /* GiB (saturated at the 32-bit limits) */
    /* The most vCPUs a request may ask and pass the CPU filter: every host
     * below passes min_cpu_room or less, none more than max_cpu_room
     * (exact thresholds of the filter's own test); MiB likewise. */
    double min_cpu_room, max_cpu_room;
    double min_memory_room, max_memory_room;
} fitindex_span;

/* The capacity filter every host of `span` fails first under `q`, or
 * SCHED_REASON_NONE when every one passes them all; SCHED_REASON_COUNT when
 * they differ. */
int fitindex_span_reason(const fitindex_query *q, const fitindex_span *span);

/* A walk over the online hosts of one (pool, dedicated) group, best first
 * by the caller's measure, skipping what cannot matter to it: `rank` says
 * how promising a subtree is (lower first; +INFINITY: skip it, and its
 * answer may change as `host` sees hosts), `host` sees each host a walk
 * reaches. The order among equal ranks is the first host's. */
typedef struct fitindex_walker {
    double (*rank)(const fitindex_span *span, void *ctx);
    void (*host)(uint32_t host_index, void *ctx);
    void *ctx;
} fitindex_walker;

void fitindex_walk(fitindex *index, int pool_id, bool dedicated, const fitindex_walker *w);

/* How searches went since the index was made. */
typedef struct fitindex_stats {
    uint64_t searches;  /* fitindex_search calls on a ready index */
    uint64_t by_kept;   /* answered from kept scores */
    uint64_t by_bounds; /* answered by the bound search */
    uint64_t gave_up;   /* not answered: the caller's full pass decided */
} fitindex_stats;

fitindex_stats fitindex_get_stats(const fitindex *index);

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
