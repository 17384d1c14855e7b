/* fitindex_trees: a group's two trees (fitindex_internal.h): what each node
 * keeps of the hosts below it, the orders, laying them out and keeping them
 * current as hosts' loads change.
 *
 * Each tree is a heap over a row of leaf slots in key order. A host's key
 * moves with its load (a reservation lowers its room and shifts its
 * balance); left where it was, it would widen the bounds of every subtree
 * above it, and a search would have to look into each. So the row keeps a
 * free slot after every few hosts, and a host whose key moved goes to the
 * free slot nearest its new place (its old slot is free then): the subtrees
 * stay tight without rebuilding. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fitindex_internal.h"
#include "grow.h"

/* One free slot after every SPARE_EVERY hosts, and how far from its place
 * a host looks for one (each way) before it stays where it is. */
#define SPARE_EVERY 8
#define SPARE_REACH 32

/* ---- what a node keeps ---- */

/* The committed vCPUs and MiB before a request: the sums the filters and
 * scores make (sched_cpu_after). */
static inline double cpu_committed(const sched_hot *h, const sched_host_load *load)
{
    return h->allocated_cpu + load->cpu;
}

static inline double memory_committed(const sched_hot *h, const sched_host_load *load)
{
    return h->allocated_memory + (double)load->memory;
}

/* The most a request may ask of a resource and pass its filter
 * (plugins.h: committed + want <= capacity + SCHED_FIT_EPSILON, in floating
 * point): a request passes exactly when it asks at most this, since adding
 * is monotone. Found from capacity + epsilon - committed, then stepped by
 * units in the last place to where the test itself turns, so that a
 * request that exactly fills a host counts as fitting it without a visit. */
static uint64_t ordered_bits(double x);
static double from_ordered(uint64_t key);

/* Whether `committed + want` passes the filter's test against `limit`. */
static inline bool passes(double committed, double want, double limit)
{
    return committed + want <= limit;
}

static double fit_threshold(double capacity, double committed)
{
    double limit = capacity + SCHED_FIT_EPSILON;
    double x = limit - committed;
    if (!isfinite(x) || !isfinite(committed))
        return x;
    /* Nearly always x itself, or a unit or two off. */
    for (int tries = 0; tries < 4 && passes(committed, x, limit); tries++) {
        double up = from_ordered(ordered_bits(x) + 1);
        if (!passes(committed, up, limit))
            return x;
        x = up;
    }
    /* In the doubles' order: from x, steps doubling each way until the test
     * turns, then halving back to where it turns. */
    const uint64_t top = ordered_bits(INFINITY), bottom = ordered_bits(-INFINITY);
    uint64_t lo, hi, at = ordered_bits(x), step = 1;
    if (passes(committed, x, limit)) {
        lo = at;
        while (step <= top - lo && passes(committed, from_ordered(lo + step), limit)) {
            lo += step;
            step *= 2;
        }
        hi = step <= top - lo ? lo + step : top;
    } else {
        hi = at;
        while (step <= hi - bottom && !passes(committed, from_ordered(hi - step), limit)) {
            hi -= step;
            step *= 2;
        }
        lo = step <= hi - bottom ? hi - step : bottom;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (passes(committed, from_ordered(mid), limit))
            lo = mid;
        else
            hi = mid;
    }
    return from_ordered(lo);
}

/* Rounded down (`toward` -INFINITY) or up into a float. */
static float outward(double x, float toward)
{
    float f = (float)x;
    if (toward < 0 ? !((double)f > x) : !((double)f < x))
        return f;
    /* One unit in the last place toward `toward`, in the bits: up in
     * magnitude when moving away from zero, down when toward it. */
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (f == 0)
        bits = toward < 0 ? 0x80000001u : 0x00000001u;
    else if ((f > 0) == (toward > 0))
        bits++;
    else
        bits--;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Into 32 bits, saturating (fitindex_classify treats the top as unbounded). */
static int32_t saturated(int64_t x)
{
    return x < INT32_MIN ? INT32_MIN : x > INT32_MAX ? INT32_MAX : (int32_t)x;
}

static void room_leaf(fitroom *r, const sched_hot *h, const sched_host_load *load)
{
    r->min_slots_left = r->max_slots_left = h->max_vms - (h->current_vms + load->vms);
    r->min_disk_left = r->max_disk_left = saturated(h->storage - load->disk);
    double cpu = fit_threshold(h->cpu_capacity, cpu_committed(h, load));
    double memory = fit_threshold(h->memory_capacity, memory_committed(h, load));
    r->min_cpu_room = outward(cpu, -INFINITY);
    r->max_cpu_room = outward(cpu, INFINITY);
    r->min_memory_room = outward(memory, -INFINITY);
    r->max_memory_room = outward(memory, INFINITY);
}

static const fitroom no_room = {INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN,
                                INFINITY,  -INFINITY, INFINITY,  -INFINITY};

static inline int32_t min_i32(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

static inline int32_t max_i32(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

/* Plain comparisons: the figures are never NaN, and fmin/fmax calls made
 * building the index for 100,000 hosts several times slower. */
static void room_combine(fitroom *r, const fitroom *a, const fitroom *b)
{
    r->min_slots_left = min_i32(a->min_slots_left, b->min_slots_left);
    r->max_slots_left = max_i32(a->max_slots_left, b->max_slots_left);
    r->min_disk_left = min_i32(a->min_disk_left, b->min_disk_left);
    r->max_disk_left = max_i32(a->max_disk_left, b->max_disk_left);
    r->min_cpu_room = a->min_cpu_room < b->min_cpu_room ? a->min_cpu_room : b->min_cpu_room;
    r->max_cpu_room = a->max_cpu_room > b->max_cpu_room ? a->max_cpu_room : b->max_cpu_room;
    r->min_memory_room =
        a->min_memory_room < b->min_memory_room ? a->min_memory_room : b->min_memory_room;
    r->max_memory_room =
        a->max_memory_room > b->max_memory_room ? a->max_memory_room : b->max_memory_room;
}

static void count_combine(fitcount *n, const fitcount *a, const fitcount *b)
{
    n->count = a->count + b->count;
    n->first = a->first < b->first ? a->first : b->first;
    room_combine(&n->room, &a->room, &b->room);
}

/* The committed fractions before a request, as sched_cpu_fraction reads
 * them (1 whatever the request without capacity), and 1 / capacity. */
typedef struct fractions {
    double cpu_used, memory_used, cpu_inv, memory_inv;
} fractions;

static fractions fractions_of(const sched_hot *h, const sched_host_load *load)
{
    fractions f;
    f.cpu_used = h->cpu_capacity > 0 ? cpu_committed(h, load) / h->cpu_capacity : 1.0;
    f.cpu_inv = h->cpu_capacity > 0 ? 1.0 / h->cpu_capacity : 0.0;
    f.memory_used = h->memory_capacity > 0 ? memory_committed(h, load) / h->memory_capacity : 1.0;
    f.memory_inv = h->memory_capacity > 0 ? 1.0 / h->memory_capacity : 0.0;
    return f;
}

static const fitnode no_node = {
    .first = UINT32_MAX,
    .most_used = -INFINITY,
    .room = {INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, INFINITY, -INFINITY, INFINITY, -INFINITY},
    .max_minus = -INFINITY,
    .max_plus = -INFINITY,
    .max_g = -INFINITY,
};

static void score_leaf(fitindex *index, fitnode *n, uint32_t host_index, const fitroom *room)
{
    const sched_hot *h = &index->hot[host_index];
    const sched_host_load *load = &index->load[host_index];
    const fitindex_weights *w = &index->weights;
    fractions f = fractions_of(h, load);
    n->first = host_index;
    n->most_used = outward(f.cpu_used + f.memory_used, INFINITY);
    n->room = *room;
    double g = w->w_slots * h->vm_slots_score +
               50.0 * (w->w_most - w->w_free) * (f.cpu_used + f.memory_used);
    double bd = 100.0 * w->w_balanced * (f.cpu_used - f.memory_used);
    n->max_minus = g - bd;
    n->max_plus = g + bd;
    n->max_g = g;
    index->magnitude = fitindex_max(index->magnitude, fabs(g) + fabs(bd));
    index->least_cpu_used = fitindex_min(index->least_cpu_used, f.cpu_used);
    index->least_memory_used = fitindex_min(index->least_memory_used, f.memory_used);
    index->most_cpu_used = fitindex_max(index->most_cpu_used, f.cpu_used);
    index->most_memory_used = fitindex_max(index->most_memory_used, f.memory_used);
    index->most_used = fitindex_max(index->most_used, f.cpu_used + f.memory_used);
}

static void score_combine(fitnode *n, const fitnode *a, const fitnode *b)
{
    n->first = a->first < b->first ? a->first : b->first;
    n->most_used = a->most_used > b->most_used ? a->most_used : b->most_used;
    room_combine(&n->room, &a->room, &b->room);
    n->max_minus = fitindex_max(a->max_minus, b->max_minus);
    n->max_plus = fitindex_max(a->max_plus, b->max_plus);
    n->max_g = fitindex_max(a->max_g, b->max_g);
}

static void top_combine(fittop *n, const fittop *a, const fittop *b)
{
    score_combine(&n->n, &a->n, &b->n);
    n->lo_cpu_inv = fitindex_min(a->lo_cpu_inv, b->lo_cpu_inv);
    n->hi_cpu_inv = fitindex_max(a->hi_cpu_inv, b->hi_cpu_inv);
    n->lo_memory_inv = fitindex_min(a->lo_memory_inv, b->lo_memory_inv);
    n->hi_memory_inv = fitindex_max(a->hi_memory_inv, b->hi_memory_inv);
}

/* Capacity row `row`'s root as a leaf of the heap over capacities. */
static void top_leaf(fittop *t, const fitindex *index, const fitrow *row)
{
    t->n = index->score_nodes[row->node_start + 1];
    t->lo_cpu_inv = t->hi_cpu_inv = row->cpu_inv;
    t->lo_memory_inv = t->hi_memory_inv = row->memory_inv;
}

/* ---- the orders ---- */

/* A double's order as an unsigned integer's, and back. */
static uint64_t ordered_bits(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits >> 63 ? ~bits : bits | UINT64_C(1) << 63;
}

static double from_ordered(uint64_t key)
{
    uint64_t bits = key >> 63 ? key & ~(UINT64_C(1) << 63) : ~key;
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* `x` within [lo, hi] as 32 bits (outside: the nearest end). */
static uint64_t quantise(double x, double lo, double hi)
{
    double top = 4294967295.0;
    double span = hi - lo;
    double q = span > 0 ? (x - lo) / span * top : 0;
    return q > 0 ? (q < top ? (uint64_t)q : (uint64_t)top) : 0;
}

/* The counting tree's order: the hosts without a free VM slot first (a
 * request always wants one: they are a run), then by the vCPUs a host has
 * left, by its MiB and by its GiB, so the hosts a request's size splits
 * are runs too (where they differ in vCPUs; a request short of memory or
 * disk somewhere splits more). The scale is the group's at the build,
 * widened a quarter each way for rooms that change after. */
static uint64_t count_key(const group *gr, const sched_hot *h, const sched_host_load *load)
{
    double cpu = h->cpu_capacity - cpu_committed(h, load);
    double memory = h->memory_capacity - memory_committed(h, load);
    double disk = (double)(h->storage - load->disk);
    uint64_t slots = h->max_vms - (h->current_vms + load->vms) >= 1;
    return slots << 63 | quantise(cpu, gr->count_lo[0], gr->count_hi[0]) >> 17 << 48 |
           quantise(memory, gr->count_lo[1], gr->count_hi[1]) >> 8 << 24 |
           quantise(disk, gr->count_lo[2], gr->count_hi[2]) >> 8;
}

static void count_scale(group *gr, const fitindex *index)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t k = 0; k < gr->n_members; k++) {
        uint32_t i = index->members[gr->member_start + k];
        const sched_hot *h = &index->hot[i];
        const sched_host_load *load = &index->load[i];
        double v[3] = {h->cpu_capacity - cpu_committed(h, load),
                       h->memory_capacity - memory_committed(h, load),
                       (double)(h->storage - load->disk)};
        for (int d = 0; d < 3; d++) {
            lo[d] = fitindex_min(lo[d], v[d]);
            hi[d] = fitindex_max(hi[d], v[d]);
        }
    }
    for (int d = 0; d < 3; d++) {
        double wide = (hi[d] - lo[d]) / 4;
        gr->count_lo[d] = lo[d] - wide;
        gr->count_hi[d] = hi[d] + wide;
    }
}

/* The scoring tree's order within a capacity: by balance, cpu fraction
 * less memory fraction. */
static uint64_t score_key(const sched_hot *h, const sched_host_load *load)
{
    fractions f = fractions_of(h, load);
    return ordered_bits(f.cpu_used - f.memory_used);
}

typedef struct keyed {
    uint64_t key;
    uint32_t member;
} keyed;

/* LSD radix sort by key (stable), 11 bits a round; `tmp` is scratch of
 * n, `count` of 2,049. */
#define RADIX_BITS 11
#define RADIX_BUCKETS (1u << RADIX_BITS)

static void sort_keyed(keyed *a, keyed *tmp, size_t n, size_t *count)
{
    const uint64_t mask = RADIX_BUCKETS - 1;
    keyed *from = a, *to = tmp;
    for (int shift = 0; n > 1 && shift < 64; shift += RADIX_BITS) {
        memset(count, 0, (RADIX_BUCKETS + 1) * sizeof *count);
        for (size_t i = 0; i < n; i++)
            count[((from[i].key >> shift) & mask) + 1]++;
        if (count[((from[0].key >> shift) & mask) + 1] == n)
            continue; /* one digit for all: the order stands */
        for (size_t b = 0; b < RADIX_BUCKETS; b++)
            count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++)
            to[count[(from[i].key >> shift) & mask]++] = from[i];
        keyed *swap = from;
        from = to;
        to = swap;
    }
    if (from != a)
        memcpy(a, from, n * sizeof *a);
}

/* ---- rows of slots ---- */

static size_t slots_for(size_t members)
{
    return members + members / SPARE_EVERY + 1;
}

/* Lay m members (sorted, keyed) into a row's slots, a free one after every
 * SPARE_EVERY and the rest at the end, each free slot keyed as the host
 * before it. `slot_of` gets each member's slot. */
static void lay_row(const fitrow *row, uint64_t *keys, uint32_t *slot_member, uint32_t *slot_of,
                    const keyed *sorted, size_t m)
{
    size_t j = row->slot_start;
    for (size_t k = 0; k < m; k++) {
        keys[j] = sorted[k].key;
        slot_member[j] = sorted[k].member;
        slot_of[sorted[k].member] = (uint32_t)(j - row->slot_start);
        j++;
        if ((k + 1) % SPARE_EVERY == 0) {
            keys[j] = sorted[k].key;
            slot_member[j] = FITINDEX_EMPTY;
            j++;
        }
    }
    for (; j < row->slot_start + row->n_slots; j++) {
        keys[j] = m ? sorted[m - 1].key : 0;
        slot_member[j] = FITINDEX_EMPTY;
    }
}

/* The first slot of `row` whose key is at least `key`. */
static size_t lower_bound(const fitrow *row, const uint64_t *keys, uint64_t key)
{
    size_t lo = 0, hi = row->n_slots;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keys[row->slot_start + mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Slot j's key made `key` as far as its neighbours allow: the row's keys
 * stay sorted, so a binary search still finds a key's place. */
static void set_key(const fitrow *row, uint64_t *keys, size_t j, uint64_t key)
{
    uint64_t *k = &keys[row->slot_start];
    if (j > 0 && key < k[j - 1])
        key = k[j - 1];
    if (j + 1 < row->n_slots && key > k[j + 1])
        key = k[j + 1];
    k[j] = key;
}

/* Where member k (now in slot `at` of `row`) goes for its new key: `at`
 * when the key still sits between its neighbours' keys, else the free slot
 * nearest the key's place (then moved there), else `at` still. */
static size_t place(const fitrow *row, uint64_t *keys, uint32_t *slot_member, uint32_t *slot_of,
                    uint32_t k, size_t at, uint64_t key)
{
    const uint64_t *rk = &keys[row->slot_start];
    if ((at == 0 || rk[at - 1] <= key) && (at + 1 == row->n_slots || key <= rk[at + 1])) {
        set_key(row, keys, at, key);
        return at;
    }
    size_t want = lower_bound(row, keys, key);
    uint32_t *members = &slot_member[row->slot_start];
    for (size_t d = 0; d <= SPARE_REACH; d++) {
        size_t tries[2] = {want >= d + 1 ? want - d - 1 : SIZE_MAX, want + d};
        for (int t = 0; t < 2; t++) {
            size_t j = tries[t];
            if (j >= row->n_slots || members[j] != FITINDEX_EMPTY)
                continue;
            members[at] = FITINDEX_EMPTY;
            members[j] = k;
            slot_of[k] = (uint32_t)j;
            set_key(row, keys, j, key);
            return j;
        }
    }
    return at;
}

/* ---- the counting tree ---- */

static void count_leaf(fitindex *index, const group *gr, size_t slot)
{
    fitcount *n = &index->count_nodes[gr->counting.node_start + fitrow_leaf(&gr->counting, slot)];
    uint32_t k = index->count_member[gr->counting.slot_start + slot];
    if (k == FITINDEX_EMPTY) {
        n->count = 0;
        n->first = UINT32_MAX;
        n->room = no_room;
        return;
    }
    n->count = 1;
    n->first = index->members[gr->member_start + k];
    n->room = index->member_room[gr->member_start + k];
}

static bool same_room(const fitroom *a, const fitroom *b)
{
    return a->min_slots_left == b->min_slots_left && a->max_slots_left == b->max_slots_left &&
           a->min_disk_left == b->min_disk_left && a->max_disk_left == b->max_disk_left &&
           a->min_cpu_room == b->min_cpu_room && a->max_cpu_room == b->max_cpu_room &&
           a->min_memory_room == b->min_memory_room && a->max_memory_room == b->max_memory_room;
}

/* Node t of a counting heap again from its children; whether it changed. */
static bool count_again(fitcount *nodes, size_t t)
{
    fitcount was = nodes[t];
    count_combine(&nodes[t], &nodes[2 * t], &nodes[2 * t + 1]);
    return was.count != nodes[t].count || was.first != nodes[t].first ||
           !same_room(&was.room, &nodes[t].room);
}

/* After leaves a and b of a heap changed (a host moved from one to the
 * other, or a == b): the nodes above both up to where they meet, then up
 * while they change. Below the meeting node a path's node has only that
 * path's leaf below it, so once one is unchanged the rest of that path up
 * to the meeting node is too, and is not recomputed (a host's scoring
 * summary often stops changing a few levels up). `again` recomputes one
 * node and says whether it changed. Returns whether the root changed. */
static bool up_from(void *nodes, size_t a, size_t b, bool (*again)(void *, size_t))
{
    bool a_changes = true, b_changes = true;
    for (a >>= 1, b >>= 1; a != b;) {
        if (a > b) {
            a_changes = a_changes && again(nodes, a);
            a >>= 1;
        } else {
            b_changes = b_changes && again(nodes, b);
            b >>= 1;
        }
    }
    if (!a_changes && !b_changes)
        return false;
    for (; a >= 1; a >>= 1)
        if (!again(nodes, a))
            return false;
    return true;
}

static bool count_again_any(void *nodes, size_t t)
{
    return count_again(nodes, t);
}

/* ---- the scoring tree ---- */

static void score_slot_leaf(fitindex *index, const group *gr, const fitrow *row, size_t slot)
{
    fitnode *n = &index->score_nodes[row->node_start + fitrow_leaf(row, slot)];
    uint32_t k = index->score_member[row->slot_start + slot];
    if (k == FITINDEX_EMPTY)
        *n = no_node;
    else
        score_leaf(index, n, index->members[gr->member_start + k],
                   &index->member_room[gr->member_start + k]);
}

/* Capacity c's root into the heap over capacities, and the heap's path. */
/* Node t of `nodes` again from its children; whether it changed. (The
 * node has no padding: comparing its bytes compares its fields.) */
static bool score_again(void *nodes, size_t t)
{
    fitnode *n = nodes;
    fitnode was = n[t];
    score_combine(&n[t], &n[2 * t], &n[2 * t + 1]);
    return memcmp(&was, &n[t], sizeof was) != 0;
}

_Static_assert(sizeof(fitnode) ==
                   sizeof(uint32_t) + sizeof(float) + sizeof(fitroom) + 3 * sizeof(double),
               "fitnode has no padding");

static void top_up(fitindex *index, const group *gr, size_t c)
{
    fittop *tops = &index->tops[gr->top_start];
    size_t leaf = fitheap_leaf(gr->n_classes, c);
    top_leaf(&tops[leaf], index, &index->classes[gr->class_start + c]);
    for (size_t t = leaf >> 1; t >= 1; t >>= 1)
        top_combine(&tops[t], &tops[2 * t], &tops[2 * t + 1]);
}

/* ---- building ---- */

/* Scratch for laying out one group's trees (sized for the largest). */
typedef struct scratch {
    keyed *keys, *tmp;
    size_t *count; /* RADIX_BUCKETS + 1 */
} scratch;

static void build_counting(fitindex *index, group *gr, const scratch *sc)
{
    size_t n = gr->n_members, at = gr->member_start;
    count_scale(gr, index);
    for (size_t k = 0; k < n; k++) {
        uint32_t i = index->members[at + k];
        sc->keys[k] = (keyed){count_key(gr, &index->hot[i], &index->load[i]), (uint32_t)k};
    }
    sort_keyed(sc->keys, sc->tmp, n, sc->count);
    lay_row(&gr->counting, index->count_key, index->count_member, &index->member_count[at],
            sc->keys, n);
    fitcount *nodes = &index->count_nodes[gr->counting.node_start];
    for (size_t j = 0; j < gr->counting.n_slots; j++)
        count_leaf(index, gr, j);
    for (size_t t = gr->counting.n_slots - 1; t >= 1; t--)
        count_combine(&nodes[t], &nodes[2 * t], &nodes[2 * t + 1]);
}

/* A group's capacities while it is laid out: each distinct (vCPUs, MiB)
 * once (an open-addressed table), then ranked. */
typedef struct capacity {
    double cpu, memory; /* after reserve and overcommit */
    uint32_t rank;
    bool used;
} capacity;

static uint64_t hash_capacity(double cpu, double memory)
{
    uint64_t a, b;
    memcpy(&a, &cpu, sizeof a);
    memcpy(&b, &memory, sizeof b);
    /* splitmix64's finaliser over both: the low bits of a capacity's
     * double are often all zero. */
    uint64_t h = a ^ (b << 29 | b >> 35) ^ 0x9e3779b97f4a7c15ULL;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

/* The slot of (cpu, memory) in `table` (`mask` + 1 slots, a power of two). */
static capacity *capacity_slot(capacity *table, size_t mask, double cpu, double memory)
{
    size_t i = hash_capacity(cpu, memory) & mask;
    while (table[i].used && !(table[i].cpu == cpu && table[i].memory == memory))
        i = (i + 1) & mask;
    return &table[i];
}

static int by_capacity(const void *pa, const void *pb)
{
    const capacity *a = *(const capacity *const *)pa, *b = *(const capacity *const *)pb;
    double ia = a->cpu > 0 ? 1.0 / a->cpu : 0.0, ib = b->cpu > 0 ? 1.0 / b->cpu : 0.0;
    if (ia != ib)
        return ia < ib ? -1 : 1;
    ia = a->memory > 0 ? 1.0 / a->memory : 0.0;
    ib = b->memory > 0 ? 1.0 / b->memory : 0.0;
    return ia < ib ? -1 : ia > ib;
}

/* The group's distinct capacities: an open-addressed table kept at most
 * half full, and the distinct ones in the order met. */
typedef struct capacities {
    capacity *table;
    size_t mask;       /* slots - 1, a power of two less one */
    capacity **listed; /* into table, n of them */
    size_t n;
} capacities;

/* (cpu, memory)'s entry, added when new. Returns NULL when out of memory. */
static capacity *capacity_of(capacities *cs, double cpu, double memory)
{
    capacity *c = capacity_slot(cs->table, cs->mask, cpu, memory);
    if (c->used)
        return c;
    if (2 * (cs->n + 1) > cs->mask + 1) {
        /* Grow: every entry into a table twice the size. */
        size_t mask = cs->mask * 2 + 1;
        capacity *table = calloc(mask + 1, sizeof *table);
        if (!table || resize_array((void **)&cs->listed, mask + 1, sizeof *cs->listed) < 0) {
            free(table);
            return NULL;
        }
        capacity **listed = cs->listed;
        for (size_t k = 0; k < cs->n; k++) {
            capacity *to = capacity_slot(table, mask, listed[k]->cpu, listed[k]->memory);
            *to = *listed[k];
            listed[k] = to;
        }
        free(cs->table);
        cs->table = table;
        cs->mask = mask;
        c = capacity_slot(table, mask, cpu, memory);
    }
    *c = (capacity){cpu, memory, 0, true};
    cs->listed[cs->n++] = c;
    return c;
}

/* The members sorted by capacity (1 / vCPUs, then 1 / MiB: sizes alike
 * together), then balance. Returns 0, or -1 when out of memory. */
static int sort_scoring(fitindex *index, const group *gr, const scratch *sc)
{
    size_t n = gr->n_members, at = gr->member_start;
    capacities cs = {calloc(64, sizeof(capacity)), 63, malloc(64 * sizeof(capacity *)), 0};
    int rc = -1;
    if (!cs.table || !cs.listed)
        goto out;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t k = 0; k < n; k++) {
        uint32_t i = index->members[at + k];
        const sched_hot *h = &index->hot[i];
        if (!capacity_of(&cs, h->cpu_capacity, h->memory_capacity))
            goto out;
        fractions f = fractions_of(h, &index->load[i]);
        double d = f.cpu_used - f.memory_used;
        sc->keys[k] = (keyed){0, (uint32_t)k};
        memcpy(&sc->keys[k].key, &d, sizeof d); /* d until the scale is known */
        lo = fitindex_min(lo, d);
        hi = fitindex_max(hi, d);
    }
    qsort(cs.listed, cs.n, sizeof *cs.listed, by_capacity);
    for (size_t r = 0; r < cs.n; r++)
        cs.listed[r]->rank = (uint32_t)r;
    for (size_t k = 0; k < n; k++) {
        const sched_hot *h = &index->hot[index->members[at + k]];
        uint64_t rank = capacity_slot(cs.table, cs.mask, h->cpu_capacity, h->memory_capacity)->rank;
        double d;
        memcpy(&d, &sc->keys[k].key, sizeof d);
        sc->keys[k].key = rank << 32 | quantise(d, lo, hi);
    }
    sort_keyed(sc->keys, sc->tmp, n, sc->count);
    rc = 0;
out:
    free(cs.table);
    free(cs.listed);
    return rc;
}

static bool same_capacity(const sched_hot *a, const sched_hot *b)
{
    return a->cpu_capacity == b->cpu_capacity && a->memory_capacity == b->memory_capacity;
}

/* Split the sorted members (sc->keys) into capacities: a row each,
 * appended to index->classes, each member's capacity noted and its key
 * made its balance. *slots and *nodes count the scoring slots and nodes
 * taken so far. Returns 0, or -1 when out of memory. */
static int split_classes(fitindex *index, group *gr, const scratch *sc, size_t *slots,
                         size_t *nodes)
{
    size_t n = gr->n_members, at = gr->member_start;
    gr->class_start = index->n_classes;
    gr->n_classes = 0;
    for (size_t start = 0; start < n;) {
        const sched_hot *first = &index->hot[index->members[at + sc->keys[start].member]];
        size_t end = start;
        for (; end < n; end++) {
            uint32_t i = index->members[at + sc->keys[end].member];
            if (!same_capacity(&index->hot[i], first))
                break;
            sc->keys[end].key = score_key(&index->hot[i], &index->load[i]);
            index->member_class[at + sc->keys[end].member] = (uint32_t)gr->n_classes;
        }
        if (grow_array((void **)&index->classes, &index->cap_classes, index->n_classes + 1,
                       sizeof *index->classes) < 0)
            return -1;
        fitrow *row = &index->classes[index->n_classes++];
        row->slot_start = *slots;
        row->n_slots = slots_for(end - start);
        row->node_start = *nodes;
        row->cpu_inv = first->cpu_capacity > 0 ? 1.0 / first->cpu_capacity : 0.0;
        row->memory_inv = first->memory_capacity > 0 ? 1.0 / first->memory_capacity : 0.0;
        *slots += row->n_slots;
        *nodes += 2 * row->n_slots;
        gr->n_classes++;
        start = end;
    }
    return 0;
}

/* Each capacity's row laid out and summarised, then the heap over them. */
static void build_scoring(fitindex *index, group *gr, const scratch *sc)
{
    size_t at = gr->member_start;
    for (size_t c = 0, start = 0; c < gr->n_classes; c++) {
        const fitrow *row = &index->classes[gr->class_start + c];
        size_t m = 0;
        while (start + m < gr->n_members &&
               index->member_class[at + sc->keys[start + m].member] == c)
            m++;
        lay_row(row, index->score_key, index->score_member, &index->member_score[at],
                &sc->keys[start], m);
        fitnode *nodes = &index->score_nodes[row->node_start];
        for (size_t j = 0; j < row->n_slots; j++)
            score_slot_leaf(index, gr, row, j);
        for (size_t t = row->n_slots - 1; t >= 1; t--)
            score_combine(&nodes[t], &nodes[2 * t], &nodes[2 * t + 1]);
        start += m;
    }
    fittop *tops = &index->tops[gr->top_start];
    for (size_t c = 0; c < gr->n_classes; c++)
        top_leaf(&tops[fitheap_leaf(gr->n_classes, c)], index,
                 &index->classes[gr->class_start + c]);
    for (size_t t = gr->n_classes - 1; t >= 1; t--)
        top_combine(&tops[t], &tops[2 * t], &tops[2 * t + 1]);
}

static int grow(void *array, size_t *cap, size_t need, size_t size)
{
    return grow_array((void **)array, cap, need ? need : 1, size);
}

int fitindex_trees_build(fitindex *index, size_t n_groups, size_t largest)
{
    scratch sc = {
        malloc((largest ? largest : 1) * sizeof *sc.keys),
        malloc((largest ? largest : 1) * sizeof *sc.tmp),
        malloc((RADIX_BUCKETS + 1) * sizeof *sc.count),
    };
    int rc = -1;
    size_t count_slots = 0, score_slots = 0, score_nodes = 0, tops = 0;
    for (size_t g = 0; g < n_groups; g++) {
        group *gr = &index->groups[g];
        gr->counting = (fitrow){count_slots, slots_for(gr->n_members), 2 * count_slots, 0, 0};
        count_slots += gr->counting.n_slots;
    }
    if (!sc.keys || !sc.tmp || !sc.count ||
        grow(&index->count_key, &index->cap_count_key, count_slots, sizeof *index->count_key) < 0 ||
        grow(&index->count_member, &index->cap_count_member, count_slots,
             sizeof *index->count_member) < 0 ||
        grow(&index->count_nodes, &index->cap_count_nodes, 2 * count_slots,
             sizeof *index->count_nodes) < 0)
        goto out;
    index->n_classes = 0;
    index->magnitude = 0;
    index->least_cpu_used = index->least_memory_used = INFINITY;
    index->most_cpu_used = index->most_memory_used = index->most_used = -INFINITY;
    for (size_t g = 0; g < n_groups; g++) {
        group *gr = &index->groups[g];
        gr->n_classes = 0;
        if (gr->n_members == 0)
            continue;
        for (size_t k = 0; k < gr->n_members; k++) {
            uint32_t i = index->members[gr->member_start + k];
            room_leaf(&index->member_room[gr->member_start + k], &index->hot[i], &index->load[i]);
        }
        build_counting(index, gr, &sc);
        if (sort_scoring(index, gr, &sc) < 0 ||
            split_classes(index, gr, &sc, &score_slots, &score_nodes) < 0)
            goto out;
        gr->top_start = tops;
        tops += 2 * gr->n_classes;
        if (grow(&index->score_key, &index->cap_score_key, score_slots, sizeof *index->score_key) <
                0 ||
            grow(&index->score_member, &index->cap_score_member, score_slots,
                 sizeof *index->score_member) < 0 ||
            grow(&index->score_nodes, &index->cap_score_nodes, score_nodes,
                 sizeof *index->score_nodes) < 0 ||
            grow(&index->tops, &index->cap_tops, tops, sizeof *index->tops) < 0)
            goto out;
        build_scoring(index, gr, &sc);
    }
    rc = 0;
out:
    free(sc.keys);
    free(sc.tmp);
    free(sc.count);
    return rc;
}

/* ---- upkeep ---- */

/* Host `host_index` moved in its group's counting tree (or left in place),
 * and the nodes above refreshed. */
static void refresh_counting(fitindex *index, uint32_t host_index)
{
    group *gr = &index->groups[index->host_group[host_index]];
    size_t at = gr->member_start;
    uint32_t k = index->host_rank[host_index];
    const sched_hot *h = &index->hot[host_index];
    const sched_host_load *load = &index->load[host_index];
    room_leaf(&index->member_room[at + k], h, load);
    const fitrow *row = &gr->counting;
    size_t was = index->member_count[at + k];
    size_t now = place(row, index->count_key, index->count_member, &index->member_count[at], k, was,
                       count_key(gr, h, load));
    count_leaf(index, gr, was);
    if (now != was)
        count_leaf(index, gr, now);
    up_from(&index->count_nodes[row->node_start], fitrow_leaf(row, was), fitrow_leaf(row, now),
            count_again_any);
}

/* The same in its capacity's scoring row, and the heap over capacities. */
static void refresh_scoring(fitindex *index, uint32_t host_index)
{
    group *gr = &index->groups[index->host_group[host_index]];
    size_t at = gr->member_start;
    uint32_t k = index->host_rank[host_index];
    const sched_hot *h = &index->hot[host_index];
    const sched_host_load *load = &index->load[host_index];
    room_leaf(&index->member_room[at + k], h, load);
    size_t c = index->member_class[at + k];
    const fitrow *row = &index->classes[gr->class_start + c];
    size_t was = index->member_score[at + k];
    size_t now = place(row, index->score_key, index->score_member, &index->member_score[at], k, was,
                       score_key(h, load));
    score_slot_leaf(index, gr, row, was);
    if (now != was)
        score_slot_leaf(index, gr, row, now);
    if (up_from(&index->score_nodes[row->node_start], fitrow_leaf(row, was), fitrow_leaf(row, now),
                score_again))
        top_up(index, gr, c);
}

void fitindex_trees_refresh(fitindex *index, int tree)
{
    for (size_t d = 0; d < index->n_dirty[tree]; d++) {
        uint32_t i = index->dirty[tree][d];
        index->dirty_flag[i] &= (uint8_t) ~(1u << tree);
        if (tree == FITINDEX_COUNTING)
            refresh_counting(index, i);
        else
            refresh_scoring(index, i);
    }
    index->n_dirty[tree] = 0;
}
