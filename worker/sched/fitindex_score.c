/* fitindex_score: the best host of a group for a request, by branch and
 * bound over the group's scoring tree, without scoring every host.
 *
 * The bound. With u the committed fractions of a host before the request,
 * s = u_cpu + u_memory, d = u_cpu - u_memory, and for a request of c vCPUs
 * and m MiB on a host of C vCPUs and M MiB, K = c / C - m / M, the scores
 * before clamping are
 *   FreeResources   100 - 50 s - 50 (c / C + m / M)
 *   MostAllocated   50 s + 50 (c / C + m / M)
 *   Balanced        100 - 100 |d + K|
 *   VMSlots         the host's own (no request term)
 * so the weighted sum is
 *   100 (w_free + w_balanced) + G - b |d + K| + a (c / C + m / M)
 * with b = 100 w_balanced, a = 50 (w_most - w_free) and
 * G = w_slots VMSlots + a s, which does not depend on the request. Now
 * G - b |d + K| is at most G, and the smaller of G - b d - b K and
 * G + b d + b K, so over a subtree it is at most the smallest of the most
 * G, (the most G - b d) - b K and (the most G + b d) + b K, which each node
 * keeps (max_g, max_minus, max_plus). When every host below is on one side
 * of the request's balance point (all d + K >= 0, or all <= 0), that is
 * the subtree's highest sum exactly; it is loose only for a subtree that
 * straddles the point. Hence the scoring tree's order: a row per capacity
 * (one K for a request), sorted by d, so that on each level one subtree
 * per capacity straddles. Over several capacities K and the request terms
 * are bounded by their range of 1 / capacity.
 *
 * Clamping a score to 0..100 only lowers it, except a score below zero:
 * FreeResources of a host the request fills on both resources (a fraction
 * sum past 2), Balanced of one whose fractions differ by more than 1,
 * MostAllocated of one with a negative fraction. What clamping may add is
 * bounded from the least and most committed fractions of any host and, while
 * the CPU or memory filter is on, a feasible host's fraction being at most
 * 1 + epsilon / capacity; it is 0 on any ordinary fleet. The margin covers rounding: the terms are
 * near 100 per weight, and their rounding a few units in the last place; the margin is 1e-13 of
 * them.
 *
 * The search walks the more promising child first and skips a subtree that
 * cannot beat the best found by more than a quarter of the engine's
 * epsilon. Choosing among near-ties is as the full pass does (choose). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fitindex_internal.h"

typedef struct search {
    fitindex_query *q;
    /* The group's capacities (a row of slots under a heap each), the heap
     * over them, the slots' members and the members' hosts. */
    const fitrow *rows;
    size_t n_classes;
    const fitnode *nodes; /* every row's heap nodes */
    const fittop *tops;
    const uint32_t *slots;   /* every row's: the member in each slot */
    const uint32_t *members; /* the group's, name order */
    bool all_fit;            /* every member passes every capacity filter */
    bool free_on, most_on, balanced_on, slots_score_on;
    /* The bound's terms: b, a and the constant (above), and what is added
     * to every bound: what clamping may add, and the rounding margin. */
    double b, a, constant, added;
    /* What FreeResources' clamping needs (clamping, free_up). */
    bool free_can_clamp;
    double most_sum, shares_hi;
    double weights; /* the scores' divisor: q->weights, 1 when none */
    size_t budget;  /* node visits before the bounds are deemed too loose */
    size_t visited; /* so far (q->visited at the start, and at the end again):
                       kept here, the walk's hottest test reads no pointer */
    bool gave_up;
    /* The highest score found (the true highest is at most delta above
     * it), and the feasible hosts found within near of it. */
    double best;
    double delta, near;
    double skip_sum; /* (best + delta) * weights: a bound at most this is skipped */
    double pruned;   /* the highest bound of a subtree left unscored */
    uint32_t near_hosts[32];
    double near_scores[32];
    size_t n_near;
    bool near_overflow;
} search;

/* A capacity row's terms for this request: its K and request term. */
typedef struct rowterms {
    const fitrow *row;
    double bk;    /* b K */
    double base;  /* constant + request term + added */
    bool all_fit; /* every host of the row passes every capacity filter */
} rowterms;

static rowterms terms_of(const search *s, const fitrow *row)
{
    const fitindex_query *q = s->q;
    double k = q->want_cpu * row->cpu_inv - q->want_memory * row->memory_inv;
    double shares = q->want_cpu * row->cpu_inv + q->want_memory * row->memory_inv;
    bool all_fit = s->all_fit ||
                   fitindex_classify(q, &s->nodes[row->node_start + 1].room) == SCHED_REASON_NONE;
    return (rowterms){row, s->b * k, s->constant + s->a * shares + s->added, all_fit};
}

/* Bounds are weighted sums, no feasible host below scoring more than the
 * bound / weights (the full pass's score); the thresholds they meet are
 * multiplied instead (the margin covers the rounding). */
static inline double free_up(const search *s, const fitnode *n);

static inline double row_bound(const search *s, const rowterms *t, const fitnode *n)
{
    double core = fitindex_min(n->max_minus - t->bk, n->max_plus + t->bk);
    return t->base + fitindex_min(core, n->max_g) + free_up(s, n);
}

static double top_bound(const search *s, const fittop *t)
{
    const fitindex_query *q = s->q;
    double k_lo = q->want_cpu * t->lo_cpu_inv - q->want_memory * t->hi_memory_inv;
    double k_hi = q->want_cpu * t->hi_cpu_inv - q->want_memory * t->lo_memory_inv;
    double core = fitindex_min(t->n.max_minus - s->b * k_lo, t->n.max_plus + s->b * k_hi);
    double shares = s->a >= 0
                        ? s->a * (q->want_cpu * t->hi_cpu_inv + q->want_memory * t->hi_memory_inv)
                        : s->a * (q->want_cpu * t->lo_cpu_inv + q->want_memory * t->lo_memory_inv);
    return s->constant + shares + s->added + fitindex_min(core, t->n.max_g) + free_up(s, &t->n);
}

static inline bool over_budget(search *s)
{
    if (!s->gave_up && ++s->visited > s->budget)
        s->gave_up = true;
    return s->gave_up;
}

/* Host i's score when it is feasible (the full pass's), else -INFINITY. */
static double host_score(const search *s, uint32_t i)
{
    const fitindex_query *q = s->q;
    const sched_hot *h = &q->hot[i];
    double cpu_after = sched_cpu_after(h, &q->load[i], q->want_cpu);
    double memory_after = sched_memory_after(h, &q->load[i], q->want_memory);
    if (!s->all_fit && fitindex_leaf_reason(q, i, cpu_after, memory_after) != SCHED_REASON_NONE)
        return -INFINITY;
    double sum =
        fitindex_score_sum(h, cpu_after, memory_after, s->free_on, s->most_on, s->balanced_on,
                           s->slots_score_on, q->w_free, q->w_most, q->w_balanced, q->w_slots);
    return q->weights > 0 ? sum / q->weights : sum;
}

/* Whether no host of `n` passes every capacity filter. */
static bool none_fit(const search *s, const fitnode *n)
{
    if (s->all_fit)
        return false;
    int r = fitindex_classify(s->q, &n->room);
    return r != SCHED_REASON_NONE && r != FITINDEX_MIXED;
}

/* A feasible host and its score, found by the walk. */
static void found(search *s, uint32_t i, double score)
{
    fitindex_query *q = s->q;
    if (!q->found || score > s->best) {
        q->found = true;
        s->best = score;
        s->skip_sum = (score + s->delta) * s->weights;
    }
    if (score < s->best - s->near)
        return;
    if (s->n_near == sizeof s->near_hosts / sizeof s->near_hosts[0]) {
        s->near_overflow = true;
        return;
    }
    s->near_hosts[s->n_near] = i;
    s->near_scores[s->n_near++] = score;
}

/* Whether the walk goes below a subtree whose summary is `n` and bound `b`:
 * not when nobody there fits, nor when it cannot score above the best
 * found + delta (then it is noted in s->pruned). */
static inline bool worth(search *s, const fitnode *n, double b, bool all_fit)
{
    if (n->first == UINT32_MAX || over_budget(s) || (!all_fit && none_fit(s, n)))
        return false;
    if (s->q->found && b <= s->skip_sum) {
        s->pruned = fitindex_max(s->pruned, b);
        return false;
    }
    return true;
}

/* The member in the slot under leaf `leaf` of row `row`. */
static uint32_t host_at(const search *s, const fitrow *row, size_t leaf)
{
    return s->members[s->slots[row->slot_start + fitrow_slot(row, leaf)]];
}

/* The highest score below node k of a capacity row (`b`: its bound), the
 * more promising child first. */
static void walk_row(search *s, const rowterms *t, size_t k, double b)
{
    const fitrow *row = t->row;
    const fitnode *nodes = &s->nodes[row->node_start];
    if (!worth(s, &nodes[k], b, t->all_fit))
        return;
    if (k >= row->n_slots) {
        uint32_t i = host_at(s, row, k);
        double score = host_score(s, i);
        if (score > -INFINITY)
            found(s, i, score);
        return;
    }
    double left = row_bound(s, t, &nodes[2 * k]), right = row_bound(s, t, &nodes[2 * k + 1]);
    size_t first = left >= right ? 2 * k : 2 * k + 1;
    walk_row(s, t, first, first == 2 * k ? left : right);
    walk_row(s, t, first ^ 1, first == 2 * k ? right : left);
}

/* The same over the heap of capacities: node k (bound b). */
static void walk_top(search *s, size_t k, double b)
{
    if (k >= s->n_classes) {
        rowterms t = terms_of(s, &s->rows[fitheap_at(s->n_classes, k)]);
        walk_row(s, &t, 1, b);
        return;
    }
    if (!worth(s, &s->tops[k].n, b, s->all_fit))
        return;
    double left = top_bound(s, &s->tops[2 * k]), right = top_bound(s, &s->tops[2 * k + 1]);
    size_t first = left >= right ? 2 * k : 2 * k + 1;
    walk_top(s, first, first == 2 * k ? left : right);
    walk_top(s, first ^ 1, first == 2 * k ? right : left);
}

/* Whether the search for ties skips a subtree (bound b). */
static bool skip_for_ties(search *s, const fitnode *n, double b, double t, uint32_t host)
{
    return n->first >= host || over_budget(s) || none_fit(s, n) || b < t * s->weights;
}

/* For ties: the first feasible host in name order scoring at least t,
 * into *host and *score (*host: UINT32_MAX while none), below node k of a
 * capacity row. */
static void first_in_row(search *s, const rowterms *rt, size_t k, double t, uint32_t *host,
                         double *score)
{
    const fitrow *row = rt->row;
    const fitnode *n = &s->nodes[row->node_start];
    if (skip_for_ties(s, &n[k], row_bound(s, rt, &n[k]), t, *host))
        return;
    if (k >= row->n_slots) {
        uint32_t i = host_at(s, row, k);
        double v = host_score(s, i);
        if (v >= t) {
            *host = i;
            *score = v;
        }
        return;
    }
    size_t a = n[2 * k + 1].first < n[2 * k].first ? 2 * k + 1 : 2 * k;
    first_in_row(s, rt, a, t, host, score);
    first_in_row(s, rt, a ^ 1, t, host, score);
}

static void first_at_least(search *s, size_t k, double t, uint32_t *host, double *score)
{
    if (k >= s->n_classes) {
        rowterms rt = terms_of(s, &s->rows[fitheap_at(s->n_classes, k)]);
        first_in_row(s, &rt, 1, t, host, score);
        return;
    }
    if (skip_for_ties(s, &s->tops[k].n, top_bound(s, &s->tops[k]), t, *host))
        return;
    size_t a = s->tops[2 * k + 1].n.first < s->tops[2 * k].n.first ? 2 * k + 1 : 2 * k;
    first_at_least(s, a, t, host, score);
    first_at_least(s, a ^ 1, t, host, score);
}

/* The full pass keeps the first feasible host in name order, then each
 * next one scoring above the kept one's score + epsilon. With M the highest
 * score, the first host g scoring at least M - 1.5 epsilon is that choice
 * when it scores at least M - 0.5 epsilon: every host before it scores
 * below its score - epsilon, and none after above its score + epsilon. M
 * is known within delta (a quarter epsilon), and a small margin keeps the
 * comparisons clear of rounding. Returns false when g scores lower (hosts
 * within an epsilon of each other in a chain: the full pass decides). */
static bool choose(search *s)
{
    fitindex_query *q = s->q;
    double eps = q->score_epsilon;
    double t = s->best - 1.5 * eps;
    uint32_t host = UINT32_MAX;
    double score = -INFINITY;
    if (s->pruned < t * s->weights && !s->near_overflow) {
        /* Every host scoring t or more was scored by the walk. */
        for (size_t k = 0; k < s->n_near; k++)
            if (s->near_scores[k] >= t && s->near_hosts[k] < host) {
                host = s->near_hosts[k];
                score = s->near_scores[k];
            }
    } else {
        first_at_least(s, 1, t, &host, &score);
        if (s->gave_up)
            return false;
    }
    if (host == UINT32_MAX || !(score >= s->best - 0.5 * eps + 1e-12))
        return false;
    q->best = host;
    q->best_score = score;
    return true;
}

/* What clamping may add to a feasible host's weighted sum (the header
 * says when it can): Balanced and MostAllocated over every host, with the
 * request's terms bounded over `root`; FreeResources per subtree
 * (free_up), from its most committed sum, when s->free_can_clamp. */
static double clamping(const fitindex *index, search *s, const fittop *root)
{
    const fitindex_query *q = s->q;
    /* The fractions after the request, at most and at least, over every
     * host (a millionth of a millionth covers rounding); a feasible one's
     * at most 1 + epsilon / capacity while its filter is on. */
    double most_cpu = index->most_cpu_used + q->want_cpu * root->hi_cpu_inv + 1e-12;
    double most_memory = index->most_memory_used + q->want_memory * root->hi_memory_inv + 1e-12;
    if (q->cpu_on)
        most_cpu = fitindex_min(most_cpu, 1 + SCHED_FIT_EPSILON * root->hi_cpu_inv + 1e-12);
    if (q->memory_on)
        most_memory =
            fitindex_min(most_memory, 1 + SCHED_FIT_EPSILON * root->hi_memory_inv + 1e-12);
    s->most_sum = most_cpu + most_memory;
    s->shares_hi = q->want_cpu * root->hi_cpu_inv + q->want_memory * root->hi_memory_inv + 1e-12;
    s->free_can_clamp =
        s->free_on && fitindex_min(index->most_used + s->shares_hi, s->most_sum) > 2.0;
    double least_cpu = index->least_cpu_used + q->want_cpu * root->lo_cpu_inv - 1e-12;
    double least_memory = index->least_memory_used + q->want_memory * root->lo_memory_inv - 1e-12;
    double up = 0;
    if (s->most_on)
        up += q->w_most * fitindex_max(0, -50.0 * (least_cpu + least_memory));
    if (s->balanced_on) {
        double widest = fitindex_max(most_cpu - least_memory, most_memory - least_cpu);
        up += q->w_balanced * fitindex_max(0, 100.0 * (widest - 1.0));
    }
    return up;
}

/* What clamping FreeResources may add below node `n` (0 unless a host
 * there may be past full on both resources). */
static inline double free_up(const search *s, const fitnode *n)
{
    if (!s->free_can_clamp)
        return 0;
    double sum = fitindex_min((double)n->most_used + s->shares_hi, s->most_sum);
    return s->q->w_free * fitindex_max(0, 50.0 * sum - 100.0);
}

/* The rounding margin on a weighted sum: 1e-13 of the largest terms. */
static double margin_of(const fitindex *index, const search *s, const fittop *root)
{
    const fitindex_query *q = s->q;
    double shares = q->want_cpu * root->hi_cpu_inv + q->want_memory * root->hi_memory_inv;
    return 1e-13 * (1.0 + s->constant + index->magnitude + (s->b + fabs(s->a)) * shares);
}

bool fitindex_best(fitindex *index, const group *gr, fitindex_query *q, bool all_fit)
{
    const fitindex_weights *w = &index->weights;
    if (q->w_free != w->w_free || q->w_most != w->w_most || q->w_balanced != w->w_balanced ||
        q->w_slots != w->w_slots)
        return false; /* the bounds assume the build's weights */
    search s = {
        .q = q,
        .rows = &index->classes[gr->class_start],
        .n_classes = gr->n_classes,
        .nodes = index->score_nodes,
        .tops = &index->tops[gr->top_start],
        .slots = index->score_member,
        .members = &index->members[gr->member_start],
        .all_fit = all_fit,
        .free_on = q->w_free > 0,
        .most_on = q->w_most > 0,
        .balanced_on = q->w_balanced > 0,
        .slots_score_on = q->w_slots > 0,
        .b = 100.0 * q->w_balanced,
        .a = 50.0 * (q->w_most - q->w_free),
        .constant = 100.0 * (q->w_free + q->w_balanced),
        .weights = q->weights > 0 ? q->weights : 1,
        .budget = fitindex_budget(gr, 16),
        .visited = q->visited,
        .delta = 0.25 * q->score_epsilon,
        .near = 1.5 * q->score_epsilon,
        .pruned = -INFINITY,
    };
    const fittop *root = &s.tops[1];
    s.added = clamping(index, &s, root) + margin_of(index, &s, root);
    walk_top(&s, 1, top_bound(&s, root));
    bool settled = s.gave_up || !q->found ? !s.gave_up : choose(&s);
    q->visited = s.visited;
    return settled;
}
