#include "fitindex.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_STATUSES 4

/* What a subtree's hosts have at least (room) or at most (bounds). */
typedef struct fitnode {
    uint32_t count;         /* hosts below */
    int32_t min_slots_left; /* max_vms - current - reserved */
    int64_t min_disk_left;  /* GiB: storage - reserved */
    double min_cpu_room;    /* vCPUs a request may add and surely fit (loosened) */
    double min_memory_room; /* MiB, likewise */
    /* Committed fraction before the request: (allocated + reserved) / capacity,
     * and 1 / capacity, so a request's fraction is used + want * inv. */
    double lo_cpu_used, hi_cpu_used, lo_cpu_inv, hi_cpu_inv;
    double lo_memory_used, hi_memory_used, lo_memory_inv, hi_memory_inv;
    double max_slots_score; /* clamped VMSlots score */
} fitnode;

typedef struct group {
    size_t leaves;       /* power of two >= members */
    size_t node_offset;  /* into nodes: node k of this group is nodes[node_offset + k] */
    size_t member_start; /* into members */
    size_t n_members;
} group;

/* Scores kept per request shape. A worker sees the same few shapes (flavours)
 * over and over, and between two decisions only the hosts whose reservations
 * changed score differently; so for a shape seen twice the index keeps every
 * group member's reason and score, with a max-tree over the scores, and
 * updates one host's path when its load changes. A decision is then a few
 * descents of that tree. */
#define SHAPES 8

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

struct fitindex {
    bool ready;
    size_t n_hosts, n_pools;
    group *groups;        /* per pool * 2 + dedicated */
    fitnode *nodes;       /* every group's tree, 1-based within its group */
    uint32_t *members;    /* host indexes per group, name order */
    uint32_t *host_group; /* per host: its group, or UINT32_MAX when not indexed */
    uint32_t *host_leaf;  /* per host: its leaf's position within the group's tree */
    uint32_t *classes;    /* per pool * 8 + dedicated * 4 + status: host counts */
    uint32_t *pool_sizes; /* per pool */
    size_t cap_hosts, cap_nodes, cap_pools;
    shape shapes[SHAPES];
    uint64_t clock; /* counts searches, for shape replacement */
    /* When bound searches keep giving up (many shapes, a fleet filled
     * evenly), the next ones are not tried for a while: each costs a tenth
     * of a full pass before the full pass runs anyway. */
    uint32_t give_ups;   /* in a row */
    uint32_t skips_left; /* bound searches not to try */
};

/* Far above rounding (a few units in the last place, ~1e-15 relative) and far
 * below any difference a request or score makes. */
#define LOOSEN 1e-9

fitindex *fitindex_new(void)
{
    return calloc(1, sizeof(fitindex));
}

static void forget_shapes(fitindex *index)
{
    for (size_t s = 0; s < SHAPES; s++) {
        free(index->shapes[s].max);
        free(index->shapes[s].reason);
        memset(&index->shapes[s], 0, sizeof index->shapes[s]);
    }
}

void fitindex_free(fitindex *index)
{
    if (!index)
        return;
    forget_shapes(index);
    free(index->groups);
    free(index->nodes);
    free(index->members);
    free(index->host_group);
    free(index->host_leaf);
    free(index->classes);
    free(index->pool_sizes);
    free(index);
}

void fitindex_clear(fitindex *index)
{
    index->ready = false;
    forget_shapes(index);
}

bool fitindex_ready(const fitindex *index)
{
    return index->ready;
}

static const fitnode empty_node = {
    .count = 0,
    .min_slots_left = INT32_MAX,
    .min_disk_left = INT64_MAX,
    .min_cpu_room = INFINITY,
    .min_memory_room = INFINITY,
    .lo_cpu_used = INFINITY,
    .hi_cpu_used = -INFINITY,
    .lo_cpu_inv = INFINITY,
    .hi_cpu_inv = -INFINITY,
    .lo_memory_used = INFINITY,
    .hi_memory_used = -INFINITY,
    .lo_memory_inv = INFINITY,
    .hi_memory_inv = -INFINITY,
    .max_slots_score = -INFINITY,
};

/* Room a request may take and surely pass `after <= capacity + epsilon`
 * (plugins.h), less a margin covering the rounding of the real test. */
static double room(double capacity, double committed)
{
    double margin = LOOSEN * (1.0 + fabs(capacity) + fabs(committed));
    return (capacity + SCHED_FIT_EPSILON) - committed - margin;
}

static void leaf_of(fitnode *n, const sched_hot *h, const sched_host_load *load)
{
    double cpu_committed = h->allocated_cpu + load->cpu;
    double memory_committed = h->allocated_memory + (double)load->memory;
    n->count = 1;
    n->min_slots_left = h->max_vms - (h->current_vms + load->vms);
    n->min_disk_left = h->storage - load->disk;
    n->min_cpu_room = room(h->cpu_capacity, cpu_committed);
    n->min_memory_room = room(h->memory_capacity, memory_committed);
    /* sched_cpu_fraction: 1 whatever the request when there is no capacity. */
    double cpu_used = h->cpu_capacity > 0 ? cpu_committed / h->cpu_capacity : 1.0;
    double cpu_inv = h->cpu_capacity > 0 ? 1.0 / h->cpu_capacity : 0.0;
    double memory_used = h->memory_capacity > 0 ? memory_committed / h->memory_capacity : 1.0;
    double memory_inv = h->memory_capacity > 0 ? 1.0 / h->memory_capacity : 0.0;
    n->lo_cpu_used = n->hi_cpu_used = cpu_used;
    n->lo_cpu_inv = n->hi_cpu_inv = cpu_inv;
    n->lo_memory_used = n->hi_memory_used = memory_used;
    n->lo_memory_inv = n->hi_memory_inv = memory_inv;
    n->max_slots_score = h->vm_slots_score;
}

/* Plain comparisons: the figures are never NaN, and fmin/fmax calls made
 * building the index for 100,000 hosts several times slower. */
static inline double min_of(double a, double b)
{
    return a < b ? a : b;
}

static inline double max_of(double a, double b)
{
    return a > b ? a : b;
}

static void combine(fitnode *n, const fitnode *a, const fitnode *b)
{
    n->count = a->count + b->count;
    n->min_slots_left =
        a->min_slots_left < b->min_slots_left ? a->min_slots_left : b->min_slots_left;
    n->min_disk_left = a->min_disk_left < b->min_disk_left ? a->min_disk_left : b->min_disk_left;
    n->min_cpu_room = min_of(a->min_cpu_room, b->min_cpu_room);
    n->min_memory_room = min_of(a->min_memory_room, b->min_memory_room);
    n->lo_cpu_used = min_of(a->lo_cpu_used, b->lo_cpu_used);
    n->hi_cpu_used = max_of(a->hi_cpu_used, b->hi_cpu_used);
    n->lo_cpu_inv = min_of(a->lo_cpu_inv, b->lo_cpu_inv);
    n->hi_cpu_inv = max_of(a->hi_cpu_inv, b->hi_cpu_inv);
    n->lo_memory_used = min_of(a->lo_memory_used, b->lo_memory_used);
    n->hi_memory_used = max_of(a->hi_memory_used, b->hi_memory_used);
    n->lo_memory_inv = min_of(a->lo_memory_inv, b->lo_memory_inv);
    n->hi_memory_inv = max_of(a->hi_memory_inv, b->hi_memory_inv);
    n->max_slots_score = max_of(a->max_slots_score, b->max_slots_score);
}

static size_t pow2_at_least(size_t n)
{
    size_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

int fitindex_build(fitindex *index, const sched_hot *hot, const sched_host_load *load,
                   size_t n_hosts, size_t n_pools, vf_error *err)
{
    fitindex_clear(index);
    size_t n_groups = n_pools * 2;
    /* Per-pool arrays are small; sized exactly each build. */
    if (n_pools > index->cap_pools || !index->groups) {
        size_t want = n_pools ? n_pools : 1;
        group *groups = realloc(index->groups, want * 2 * sizeof *groups);
        if (groups)
            index->groups = groups;
        uint32_t *classes = realloc(index->classes, want * 8 * sizeof *classes);
        if (classes)
            index->classes = classes;
        uint32_t *sizes = realloc(index->pool_sizes, want * sizeof *sizes);
        if (sizes)
            index->pool_sizes = sizes;
        if (!groups || !classes || !sizes)
            goto oom;
        index->cap_pools = want;
    }
    if (n_hosts > index->cap_hosts) {
        uint32_t *host_group = realloc(index->host_group, n_hosts * sizeof *host_group);
        if (host_group)
            index->host_group = host_group;
        uint32_t *host_leaf = realloc(index->host_leaf, n_hosts * sizeof *host_leaf);
        if (host_leaf)
            index->host_leaf = host_leaf;
        uint32_t *members = realloc(index->members, n_hosts * sizeof *members);
        if (members)
            index->members = members;
        if (!host_group || !host_leaf || !members)
            goto oom;
        index->cap_hosts = n_hosts;
    }

    memset(index->groups, 0, n_groups * sizeof *index->groups);
    memset(index->classes, 0, n_pools * 8 * sizeof *index->classes);
    memset(index->pool_sizes, 0, n_pools * sizeof *index->pool_sizes);
    for (size_t i = 0; i < n_hosts; i++) {
        const sched_hot *h = &hot[i];
        index->host_group[i] = UINT32_MAX;
        if (h->pool_id >= n_pools)
            continue;
        uint8_t status = h->status < N_STATUSES ? h->status : HOST_UNKNOWN;
        index->classes[h->pool_id * 8 + (h->dedicated ? 4 : 0) + status]++;
        index->pool_sizes[h->pool_id]++;
        if (status == HOST_ONLINE)
            index->groups[h->pool_id * 2 + (h->dedicated ? 1 : 0)].n_members++;
    }
    size_t members = 0, nodes = 0;
    for (size_t g = 0; g < n_groups; g++) {
        group *gr = &index->groups[g];
        gr->member_start = members;
        members += gr->n_members;
        gr->leaves = pow2_at_least(gr->n_members ? gr->n_members : 1);
        gr->node_offset = nodes;
        nodes += 2 * gr->leaves;
        gr->n_members = 0; /* refilled below */
    }
    if (nodes > index->cap_nodes) {
        fitnode *grown = realloc(index->nodes, nodes * sizeof *grown);
        if (!grown)
            goto oom;
        index->nodes = grown;
        index->cap_nodes = nodes;
    }
    for (size_t i = 0; i < n_hosts; i++) {
        const sched_hot *h = &hot[i];
        if (h->pool_id >= n_pools || h->status != HOST_ONLINE)
            continue;
        uint32_t g = h->pool_id * 2 + (h->dedicated ? 1 : 0);
        group *gr = &index->groups[g];
        index->members[gr->member_start + gr->n_members] = (uint32_t)i;
        index->host_group[i] = g;
        index->host_leaf[i] = (uint32_t)(gr->leaves + gr->n_members);
        gr->n_members++;
    }
    for (size_t g = 0; g < n_groups; g++) {
        const group *gr = &index->groups[g];
        fitnode *tree = &index->nodes[gr->node_offset];
        for (size_t k = 0; k < gr->leaves; k++) {
            if (k < gr->n_members) {
                uint32_t i = index->members[gr->member_start + k];
                leaf_of(&tree[gr->leaves + k], &hot[i], &load[i]);
            } else {
                tree[gr->leaves + k] = empty_node;
            }
        }
        for (size_t k = gr->leaves - 1; k >= 1; k--)
            combine(&tree[k], &tree[2 * k], &tree[2 * k + 1]);
        tree[0] = empty_node;
    }
    index->n_hosts = n_hosts;
    index->n_pools = n_pools;
    index->ready = true;
    return 0;
oom:
    vf_error_set(err, VF_ENOMEM, "out of memory indexing %zu hosts", n_hosts);
    return -1;
}

static void shapes_update(fitindex *index, uint32_t group, size_t leaf, uint32_t host_index);

void fitindex_update(fitindex *index, const sched_hot *hot, const sched_host_load *load,
                     size_t host_index)
{
    if (!index->ready || host_index >= index->n_hosts)
        return;
    uint32_t g = index->host_group[host_index];
    if (g == UINT32_MAX)
        return;
    const group *gr = &index->groups[g];
    fitnode *tree = &index->nodes[gr->node_offset];
    size_t k = index->host_leaf[host_index];
    leaf_of(&tree[k], &hot[host_index], &load[host_index]);
    shapes_update(index, g, k, (uint32_t)host_index);
    for (k >>= 1; k >= 1; k >>= 1)
        combine(&tree[k], &tree[2 * k], &tree[2 * k + 1]);
}

uint32_t fitindex_class_count(const fitindex *index, int pool_id, bool dedicated,
                              host_status status)
{
    if (!index->ready || pool_id < 0 || (size_t)pool_id >= index->n_pools ||
        (unsigned)status >= N_STATUSES)
        return 0;
    return index->classes[(size_t)pool_id * 8 + (dedicated ? 4 : 0) + (size_t)status];
}

uint32_t fitindex_pool_size(const fitindex *index, int pool_id)
{
    if (!index->ready || pool_id < 0 || (size_t)pool_id >= index->n_pools)
        return 0;
    return index->pool_sizes[pool_id];
}

/* A search's fixed inputs and state, for the recursion. */
typedef struct search {
    fitindex_query *q;
    const fitnode *tree;
    const uint32_t *members; /* the group's, by leaf position */
    size_t leaves;
    bool free_on, most_on, balanced_on, slots_score_on;
    double threshold; /* the best's score + epsilon: what a better host must beat */
    double best_sum;
    size_t budget; /* node visits before the bounds are deemed too loose */
    bool gave_up;
} search;

/* Whether every host below surely passes every enabled capacity filter. */
static bool all_fit(const search *s, const fitnode *n)
{
    const fitindex_query *q = s->q;
    return (!q->slots_on || n->min_slots_left >= 1) &&
           (!q->cpu_on || q->want_cpu <= n->min_cpu_room) &&
           (!q->memory_on || q->want_memory <= n->min_memory_room) &&
           (!q->disk_on || n->min_disk_left >= q->want_disk);
}

static double loosen_down(double v)
{
    return v - LOOSEN * (1.0 + fabs(v));
}

static double loosen_up(double v)
{
    return v + LOOSEN * (1.0 + fabs(v));
}

/* No host below scores more than this (the full pass's score, weights
 * divided). */
static double score_bound(const search *s, const fitnode *n)
{
    const fitindex_query *q = s->q;
    double lo_cf = loosen_down(n->lo_cpu_used + q->want_cpu * n->lo_cpu_inv);
    double hi_cf = loosen_up(n->hi_cpu_used + q->want_cpu * n->hi_cpu_inv);
    double lo_mf = loosen_down(n->lo_memory_used + q->want_memory * n->lo_memory_inv);
    double hi_mf = loosen_up(n->hi_memory_used + q->want_memory * n->hi_memory_inv);
    double sum = 0;
    if (s->free_on)
        sum += q->w_free * sched_score_clamp(sched_score_free(lo_cf, lo_mf));
    if (s->most_on)
        sum += q->w_most * sched_score_clamp(sched_score_most_allocated(hi_cf, hi_mf));
    if (s->balanced_on) {
        double gap = fmax(0.0, fmax(lo_cf - hi_mf, lo_mf - hi_cf));
        sum += q->w_balanced * sched_score_clamp(100.0 * (1.0 - gap));
    }
    if (s->slots_score_on)
        sum += q->w_slots * n->max_slots_score;
    double bound = q->weights > 0 ? sum / q->weights : sum;
    return bound + LOOSEN * (1.0 + fabs(bound));
}

/* The first failing capacity filter of host `i`, as the full pass orders them. */
static sched_reason leaf_reason(const fitindex_query *q, uint32_t i, double cpu_after,
                                double memory_after)
{
    const sched_hot *h = &q->hot[i];
    const sched_host_load *load = &q->load[i];
    if (q->slots_on && !sched_vm_slots_fit(h, load))
        return SCHED_REASON_VM_SLOTS;
    if (q->cpu_on && !sched_cpu_fits(h, cpu_after))
        return SCHED_REASON_CPU;
    if (q->memory_on && !sched_memory_fits(h, memory_after))
        return SCHED_REASON_MEMORY;
    if (q->disk_on && !sched_disk_fits(h, load, q->want_disk))
        return SCHED_REASON_DISK;
    return SCHED_REASON_NONE;
}

/* Visit node k in name order. `counted`: an ancestor already counted every
 * host below as feasible. */
static void visit(search *s, size_t k, bool counted)
{
    const fitnode *n = &s->tree[k];
    fitindex_query *q = s->q;
    if (s->gave_up || ++q->visited > s->budget) {
        s->gave_up = true;
        return;
    }
    if (n->count == 0)
        return;
    if (!counted && all_fit(s, n)) {
        q->counts[SCHED_REASON_NONE] += n->count;
        counted = true;
    }
    /* Hosts that cannot beat the best change nothing, in the full pass
     * either; counted ones need no visit at all. */
    if (counted && q->found && score_bound(s, n) <= s->threshold)
        return;
    if (k < s->leaves) {
        visit(s, 2 * k, counted);
        visit(s, 2 * k + 1, counted);
        return;
    }
    uint32_t i = s->members[k - s->leaves];
    const sched_hot *h = &q->hot[i];
    const sched_host_load *load = &q->load[i];
    double cpu_after = sched_cpu_after(h, load, q->want_cpu);
    double memory_after = sched_memory_after(h, load, q->want_memory);
    if (!counted) {
        sched_reason r = leaf_reason(q, i, cpu_after, memory_after);
        q->counts[r]++;
        if (r != SCHED_REASON_NONE)
            return;
    }
    double sum =
        fitindex_score_sum(h, cpu_after, memory_after, s->free_on, s->most_on, s->balanced_on,
                           s->slots_score_on, q->w_free, q->w_most, q->w_balanced, q->w_slots);
    if (q->found && sum <= s->best_sum)
        return; /* cannot score above the best's score, let alone its threshold */
    double score = q->weights > 0 ? sum / q->weights : sum;
    if (!q->found || score > s->threshold) {
        q->found = true;
        q->best = i;
        q->best_score = score;
        s->best_sum = sum;
        s->threshold = score + q->score_epsilon;
    }
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
    sched_reason r = leaf_reason(q, i, cpu_after, memory_after);
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
    double *max = malloc(2 * gr->leaves * sizeof *max);
    uint8_t *reason = malloc(gr->leaves);
    if (!max || !reason) {
        free(max);
        free(reason);
        return false;
    }
    memset(sh->counts, 0, sizeof sh->counts);
    for (size_t k = 0; k < gr->leaves; k++) {
        double score = -INFINITY;
        sched_reason r = SCHED_REASON_NONE;
        if (k < gr->n_members) {
            r = host_verdict(&sh->query, index->members[gr->member_start + k], &score);
            sh->counts[r]++;
        }
        reason[k] = (uint8_t)r;
        max[gr->leaves + k] = score;
    }
    if (sh->query.node_regex && pattern_too_costly(sh->query.node_regex)) {
        /* The engine refuses the request; scores kept now would answer the
         * same pattern later without matching it again, so keep none. */
        free(max);
        free(reason);
        return false;
    }
    for (size_t k = gr->leaves - 1; k >= 1; k--)
        max[k] = max_of(max[2 * k], max[2 * k + 1]);
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

static void shapes_update(fitindex *index, uint32_t group, size_t leaf, uint32_t host_index)
{
    for (size_t s = 0; s < SHAPES; s++) {
        shape *sh = &index->shapes[s];
        if (!sh->built || sh->group != group)
            continue;
        size_t leaves = index->groups[group].leaves;
        if (sh->reason[leaf - leaves] == SCHED_REASON_NODE_REGEX)
            continue;
        double score;
        sched_reason r = host_verdict(&sh->query, host_index, &score);
        sh->counts[sh->reason[leaf - leaves]]--;
        sh->counts[r]++;
        sh->reason[leaf - leaves] = (uint8_t)r;
        sh->max[leaf] = score;
        for (size_t k = leaf >> 1; k >= 1; k >>= 1)
            sh->max[k] = max_of(sh->max[2 * k], sh->max[2 * k + 1]);
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
            best = max_of(best, max[lo++]);
        if (hi & 1)
            best = max_of(best, max[--hi]);
        lo >>= 1;
        hi >>= 1;
    }
    return best;
}

/* The full pass's choice from the kept scores: the first feasible host in
 * name order, then each next host (in name order) scoring above the best's
 * score + epsilon. */
static void shape_search(const fitindex *index, const shape *sh, fitindex_query *q)
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
    long first_top =
        first_above(sh->max, gr->leaves, 1, 0, gr->leaves, 0, nextafter(top, -INFINITY));
    double before = max_before(sh->max, gr->leaves, (size_t)first_top);
    if (before + q->score_epsilon < top) {
        q->visited++;
        q->found = true;
        q->best = index->members[gr->member_start + (size_t)first_top];
        q->best_score = top;
        return;
    }
    long pos = first_above(sh->max, gr->leaves, 1, 0, gr->leaves, 0, -INFINITY);
    while (pos >= 0) {
        q->visited++;
        double score = sh->max[gr->leaves + (size_t)pos];
        q->found = true;
        q->best = index->members[gr->member_start + (size_t)pos];
        q->best_score = score;
        pos = first_above(sh->max, gr->leaves, 1, 0, gr->leaves, (size_t)pos + 1,
                          score + q->score_epsilon);
    }
}

/* The shape for this query: kept (built on its second search), or NULL when
 * it is new (then remembered, in place of the least recently used). */
static shape *shape_for(fitindex *index, int pool_id, bool dedicated, const fitindex_query *q)
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

void fitindex_search(fitindex *index, int pool_id, bool dedicated, fitindex_query *q)
{
    q->found = false;
    q->visited = 0;
    if (!index->ready || pool_id < 0 || (size_t)pool_id >= index->n_pools)
        return;
    shape *sh = shape_for(index, pool_id, dedicated, q);
    if (sh) {
        shape_search(index, sh, q);
        return;
    }
    if (q->node_regex)
        return; /* not found: the engine takes the full pass */
    if (index->skips_left > 0) {
        index->skips_left--;
        return;
    }
    const group *gr = &index->groups[(size_t)pool_id * 2 + (dedicated ? 1 : 0)];
    search s = {
        .q = q,
        .tree = &index->nodes[gr->node_offset],
        .members = &index->members[gr->member_start],
        .leaves = gr->leaves,
        .free_on = q->w_free > 0,
        .most_on = q->w_most > 0,
        .balanced_on = q->w_balanced > 0,
        .slots_score_on = q->w_slots > 0,
        /* A node visit costs several times what the full pass spends on a
         * host: when many hosts score close to the best (a fleet evenly
         * filled), give up early and let the engine take the full pass. */
        .budget = gr->n_members / 16 + 64,
    };
    visit(&s, 1, false);
    if (s.gave_up) {
        q->found = false;
        memset(q->counts, 0, sizeof q->counts);
        if (++index->give_ups >= 4) {
            index->give_ups = 0;
            index->skips_left = 64;
        }
    } else {
        index->give_ups = 0;
    }
}
