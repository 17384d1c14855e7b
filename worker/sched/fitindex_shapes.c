/* fitindex_shapes: scores kept per request shape. A worker sees the same
 * few shapes (flavours) over and over, and between two decisions only the
 * hosts whose reservations changed score differently; so for a shape seen
 * twice the index keeps every group member's reason and score, with a
 * max-tree over the scores in name order, and updates one host's path when
 * its load changes. A decision is then a few descents of that tree. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fitindex_internal.h"

typedef struct shape_key {
    int pool_id;
    bool dedicated;
    bool slots_on, cpu_on, memory_on, disk_on;
    double want_cpu, want_memory;
    int64_t want_disk;
    double w_free, w_most, w_balanced, w_slots, weights;
    char node_pattern[REQUEST_ANNOTATION_LEN]; /* "" when none */
} shape_key;

typedef struct shape {
    bool in_use;
    bool built;         /* seen before: scores kept (else only remembered) */
    uint64_t last_used; /* for least-recently-used replacement */
    shape_key key;
    fitindex_query query; /* the inputs of the query that made the shape */
    uint32_t group;
    double *max;     /* per tree node of the group: the highest score of a feasible
                        host below, -inf when none; leaves hold each host's score */
    uint8_t *reason; /* per leaf position: the host's reason (sched_reason) */
    uint32_t counts[SCHED_REASON_COUNT]; /* over the group's members */
} shape;

shape *fitindex_shapes_new(void)
{
    return calloc(SHAPES, sizeof(shape));
}

void fitindex_shapes_forget(shape *shapes)
{
    for (size_t s = 0; shapes && s < SHAPES; s++) {
        free(shapes[s].max);
        free(shapes[s].reason);
        memset(&shapes[s], 0, sizeof shapes[s]);
    }
}

void fitindex_shapes_free(shape *shapes)
{
    fitindex_shapes_forget(shapes);
    free(shapes);
}

/* Host i's reason and (when feasible) score under query q, as the full pass
 * computes them. */
static sched_reason host_verdict(const fitindex_query *q, uint32_t i, double *score)
{
    const sched_hot *h = &q->hot[i];
    const sched_host_load *load = &q->load[i];
    if (q->node_regex && !sched_node_matches(q->node_regex, &q->node_match[i], q->hosts[i].name)) {
        *score = -INFINITY;
        return SCHED_REASON_NODE_REGEX;
    }
    double cpu_after = sched_cpu_after(h, load, q->want_cpu);
    double memory_after = sched_memory_after(h, load, q->want_memory);
    sched_reason r = fitindex_leaf_reason(q, i, cpu_after, memory_after);
    if (r != SCHED_REASON_NONE) {
        *score = -INFINITY;
        return r;
    }
    double sum = fitindex_score_sum(h, cpu_after, memory_after, q->w_free > 0, q->w_most > 0,
                                    q->w_balanced > 0, q->w_slots > 0, q->w_free, q->w_most,
                                    q->w_balanced, q->w_slots);
    *score = q->weights > 0 ? sum / q->weights : sum;
    return r;
}

static void shape_key_of(shape_key *key, int pool_id, bool dedicated, const fitindex_query *q)
{
    memset(key, 0, sizeof *key); /* padding too: keys are compared with memcmp */
    key->pool_id = pool_id;
    key->dedicated = dedicated;
    key->slots_on = q->slots_on;
    key->cpu_on = q->cpu_on;
    key->memory_on = q->memory_on;
    key->disk_on = q->disk_on;
    key->want_cpu = q->want_cpu;
    key->want_memory = q->want_memory;
    key->want_disk = q->want_disk;
    key->w_free = q->w_free;
    key->w_most = q->w_most;
    key->w_balanced = q->w_balanced;
    key->w_slots = q->w_slots;
    key->weights = q->weights;
    if (q->node_pattern)
        snprintf(key->node_pattern, sizeof key->node_pattern, "%s", q->node_pattern);
}

/* Score every member of the shape's group. Returns false when out of memory
 * (the shape then stays unbuilt and searches take the bounds). */
static bool shape_build(fitindex *index, shape *sh)
{
    const group *gr = &index->groups[sh->group];
    double *max = malloc(2 * gr->shape_leaves * sizeof *max);
    uint8_t *reason = malloc(gr->shape_leaves);
    if (!max || !reason) {
        free(max);
        free(reason);
        return false;
    }
    memset(sh->counts, 0, sizeof sh->counts);
    for (size_t k = 0; k < gr->shape_leaves; k++) {
        double score = -INFINITY;
        sched_reason r = SCHED_REASON_NONE;
        if (k < gr->n_members) {
            r = host_verdict(&sh->query, index->members[gr->member_start + k], &score);
            sh->counts[r]++;
        }
        reason[k] = (uint8_t)r;
        max[gr->shape_leaves + k] = score;
    }
    if (sh->query.node_regex && pattern_too_costly(sh->query.node_regex)) {
        /* The engine refuses the request; scores kept now would answer the
         * same pattern later without matching it again, so keep none. */
        free(max);
        free(reason);
        return false;
    }
    for (size_t k = gr->shape_leaves - 1; k >= 1; k--)
        max[k] = fitindex_max(max[2 * k], max[2 * k + 1]);
    max[0] = -INFINITY;
    sh->max = max;
    sh->reason = reason;
    sh->built = true;
    /* A name never changes with load: updates keep a regex mismatch as it is
     * and need not reach the regex, which the engine may free meanwhile. */
    sh->query.node_regex = NULL;
    sh->query.node_match = NULL;
    sh->query.node_pattern = NULL;
    sh->query.hosts = NULL;
    return true;
}

void fitindex_shapes_update(fitindex *index, uint32_t g, uint32_t host_index)
{
    size_t leaves = index->groups[g].shape_leaves;
    size_t position = index->host_rank[host_index];
    for (size_t s = 0; s < SHAPES; s++) {
        shape *sh = &index->shapes[s];
        if (!sh->built || sh->group != g)
            continue;
        if (sh->reason[position] == SCHED_REASON_NODE_REGEX)
            continue;
        double score;
        sched_reason r = host_verdict(&sh->query, host_index, &score);
        sh->counts[sh->reason[position]]--;
        sh->counts[r]++;
        sh->reason[position] = (uint8_t)r;
        size_t leaf = leaves + position;
        sh->max[leaf] = score;
        for (size_t k = leaf >> 1; k >= 1; k >>= 1)
            sh->max[k] = fitindex_max(sh->max[2 * k], sh->max[2 * k + 1]);
    }
}

/* The first leaf position >= from, below node k (covering [lo, hi)), whose
 * score is above t; -1 when none. */
static long first_above(const double *max, size_t leaves, size_t k, size_t lo, size_t hi,
                        size_t from, double t)
{
    if (hi <= from || !(max[k] > t))
        return -1;
    if (k >= leaves)
        return (long)(k - leaves);
    size_t mid = lo + (hi - lo) / 2;
    long found = first_above(max, leaves, 2 * k, lo, mid, from, t);
    return found >= 0 ? found : first_above(max, leaves, 2 * k + 1, mid, hi, from, t);
}

/* The highest score among leaf positions [0, end). */
static double max_before(const double *max, size_t leaves, size_t end)
{
    double best = -INFINITY;
    size_t lo = leaves, hi = leaves + end; /* [lo, hi) in node numbers */
    while (lo < hi) {
        if (lo & 1)
            best = fitindex_max(best, max[lo++]);
        if (hi & 1)
            best = fitindex_max(best, max[--hi]);
        lo >>= 1;
        hi >>= 1;
    }
    return best;
}

/* The full pass's choice from the kept scores: the first feasible host in
 * name order, then each next host (in name order) scoring above the best's
 * score + epsilon. */
void fitindex_shape_search(const fitindex *index, const shape *sh, fitindex_query *q)
{
    const group *gr = &index->groups[sh->group];
    for (int r = 0; r < SCHED_REASON_COUNT; r++)
        q->counts[r] += sh->counts[r];
    double top = sh->max[1];
    if (!(top > -INFINITY))
        return; /* nobody fits */
    /* Usually the first host with the top score wins outright: whatever the
     * best before it, its threshold is at most the highest score before it +
     * epsilon, and when that is below the top score the first top host takes
     * over and nobody after it scores higher. Only near-ties (within epsilon
     * of the top) need the chain walked host by host. */
    long first_top = first_above(sh->max, gr->shape_leaves, 1, 0, gr->shape_leaves, 0,
                                 nextafter(top, -INFINITY));
    double before = max_before(sh->max, gr->shape_leaves, (size_t)first_top);
    if (before + q->score_epsilon < top) {
        q->visited++;
        q->found = true;
        q->best = index->members[gr->member_start + (size_t)first_top];
        q->best_score = top;
        return;
    }
    long pos = first_above(sh->max, gr->shape_leaves, 1, 0, gr->shape_leaves, 0, -INFINITY);
    while (pos >= 0) {
        q->visited++;
        double score = sh->max[gr->shape_leaves + (size_t)pos];
        q->found = true;
        q->best = index->members[gr->member_start + (size_t)pos];
        q->best_score = score;
        pos = first_above(sh->max, gr->shape_leaves, 1, 0, gr->shape_leaves, (size_t)pos + 1,
                          score + q->score_epsilon);
    }
}

/* The shape for this query: kept (built on its second search), or NULL when
 * it is new (then remembered, in place of the least recently used). */
shape *fitindex_shape_for(fitindex *index, int pool_id, bool dedicated, const fitindex_query *q)
{
    shape_key key;
    shape_key_of(&key, pool_id, dedicated, q);
    index->clock++;
    shape *victim = &index->shapes[0];
    for (size_t s = 0; s < SHAPES; s++) {
        shape *sh = &index->shapes[s];
        if (sh->in_use && memcmp(&sh->key, &key, sizeof key) == 0) {
            sh->last_used = index->clock;
            if (!sh->built && !shape_build(index, sh))
                return NULL;
            return sh;
        }
        if (!sh->in_use || (victim->in_use && sh->last_used < victim->last_used))
            victim = sh;
    }
    free(victim->max);
    free(victim->reason);
    memset(victim, 0, sizeof *victim);
    victim->in_use = true;
    victim->last_used = index->clock;
    victim->key = key;
    victim->query = *q;
    memset(victim->query.counts, 0, sizeof victim->query.counts);
    victim->group = (uint32_t)pool_id * 2 + (dedicated ? 1 : 0);
    /* The bounds cannot serve a node regex: build at once (one pass). */
    if (q->node_regex && shape_build(index, victim))
        return victim;
    return NULL;
}
