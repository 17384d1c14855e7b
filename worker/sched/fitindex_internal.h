/* fitindex_internal: what the index's files share: fitindex.c (building and
 * upkeep, the counting walk), fitindex_trees.c (the trees: what a node
 * keeps, the orders, laying out and moving hosts), fitindex_score.c (the
 * bound search for the best host), fitindex_shapes.c (scores kept per
 * request shape). Not for use outside them. */
#ifndef VF_FITINDEX_INTERNAL_H
#define VF_FITINDEX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fitindex.h"

#define N_STATUSES 4

/* A slot without a host. */
#define FITINDEX_EMPTY UINT32_MAX

/* The least and most room the hosts below have left, per capacity filter:
 * a request fits every one of them, or none, or it depends. Rooms are
 * rounded outward (the least down, the most up) into 32 bits: a bound
 * that is a little looser only sends a walk one level further. */
typedef struct fitroom {
    int32_t min_slots_left, max_slots_left; /* max_vms - current - reserved */
    int32_t min_disk_left, max_disk_left;   /* GiB: storage - reserved */
    /* The most vCPUs a request may add and pass the filter (fitindex_trees.c,
     * fit_threshold): every host passes a request of min_cpu_room or less,
     * none one of more than max_cpu_room; MiB likewise. */
    float min_cpu_room, max_cpu_room;
    float min_memory_room, max_memory_room;
} fitroom;

/* A node of a counting tree, for the hosts below it. */
typedef struct fitcount {
    uint32_t count; /* hosts below */
    uint32_t first; /* the lowest host index below; UINT32_MAX: none */
    fitroom room;
} fitcount;

/* A node of a capacity's scoring row, for the hosts below it: one cache
 * line (fitindex_score.c says what the bound made of it is). With u the
 * committed fractions before a request ((allocated + reserved) / capacity,
 * 1 without capacity), d = u_cpu - u_memory, b = 100 w_balanced and
 * G = w_slots VMSlots + 50 (w_most - w_free) (u_cpu + u_memory), for the
 * weights of the build: */
typedef struct fitnode {
    uint32_t first;  /* the lowest host index below (the first in name order);
                        UINT32_MAX: no host below */
    float most_used; /* the most u_cpu + u_memory (rounded up): whether clamping
                        FreeResources can add to a host's score */
    fitroom room;
    double max_minus, max_plus, max_g; /* the most G - b d, G + b d and G */
} fitnode;

/* A node of the heap over a group's capacities: the capacities below, and
 * their range of 1 / capacity (0 without capacity). */
typedef struct fittop {
    fitnode n;
    double lo_cpu_inv, hi_cpu_inv, lo_memory_inv, hi_memory_inv;
} fittop;

/* One ordered row of leaf slots under a heap: slot j is a leaf of nodes
 * 1 .. 2 n_slots - 1 (node t has children 2t and 2t + 1; fitrow_leaf says
 * which). The slots hold the hosts in key order with a free one every few,
 * so a host whose key moves finds a slot near its new place
 * (fitindex_trees.c). */
typedef struct fitrow {
    size_t slot_start; /* into the tree's slot_key and slot_member */
    size_t n_slots;
    size_t node_start;          /* into the tree's nodes: node t is node_start + t */
    double cpu_inv, memory_inv; /* a scoring row's capacity: 1 / capacity, 0 without */
} fitrow;

/* A heap's leaves n .. 2n - 1 read left to right are n' .. 2n - 1, then
 * n .. n' - 1, with n' the power of two >= n (the deepest level first):
 * the at-th in a row's order is the leaf at that place, so that every
 * subtree holds a run of the order (the plain leaf n + at would pair the
 * last with the first). */
static inline size_t fitheap_leaf(size_t n, size_t at)
{
    size_t top = 1;
    while (top < n)
        top <<= 1;
    size_t deep = 2 * n - top;
    return at < deep ? top + at : n + (at - deep);
}

static inline size_t fitheap_at(size_t n, size_t leaf)
{
    size_t top = 1;
    while (top < n)
        top <<= 1;
    size_t deep = 2 * n - top;
    return leaf >= top ? leaf - top : leaf - n + deep;
}

static inline size_t fitrow_leaf(const fitrow *row, size_t slot)
{
    return fitheap_leaf(row->n_slots, slot);
}

static inline size_t fitrow_slot(const fitrow *row, size_t leaf)
{
    return fitheap_at(row->n_slots, leaf);
}

/* The online hosts of one (pool, dedicated) pair. Member k is
 * members[member_start + k] (name order). The counting tree is one row
 * ordered by room; the scoring tree is a row per capacity (classes),
 * ordered by balance, under a heap over the capacities (tops: node t of
 * 1 .. 2 n_classes - 1, capacity c the leaf fitheap_leaf(n_classes, c)). */
typedef struct group {
    size_t n_members;
    size_t member_start; /* into members and every per-member array */
    size_t shape_leaves; /* power of two >= n_members: a kept shape's tree */
    fitrow counting;
    double count_lo[3], count_hi[3]; /* the counting key's scale: vCPU, MiB and GiB room */
    size_t class_start, n_classes;   /* into classes */
    size_t top_start;                /* into tops: 2 n_classes nodes */
} group;

typedef struct shape shape;

/* Scores kept per request shape (fitindex_shapes.c). */
#define SHAPES 8

struct fitindex {
    bool ready;
    size_t n_hosts, n_pools;
    const sched_hot *hot;        /* the engine's, as of the build */
    const sched_host_load *load; /* likewise */
    group *groups;               /* per pool * 2 + dedicated */
    uint32_t *members;           /* host indexes per group, name order */
    uint32_t *host_group;        /* per host: its group, or UINT32_MAX when not indexed */
    uint32_t *host_rank;         /* per host: its position among the group's members */
    uint32_t *pool_classes;      /* per pool * 8 + dedicated * 4 + status: host counts */
    uint32_t *pool_sizes;        /* per pool */
    size_t cap_hosts, cap_pools;
    /* The counting trees: every group's row of slots and heap. */
    uint64_t *count_key;    /* per slot */
    uint32_t *count_member; /* per slot: the member there, FITINDEX_EMPTY */
    uint32_t *member_count; /* per member: its slot (within the group's row) */
    fitcount *count_nodes;  /* per row: 2 n_slots */
    /* The scoring trees: a row per capacity. */
    uint64_t *score_key;
    uint32_t *score_member;
    uint32_t *member_score; /* per member: its slot (within its capacity's row) */
    uint32_t *member_class; /* per member: its capacity, within the group */
    fitroom *member_room;   /* per member: its room (both trees' leaves) */
    fitnode *score_nodes;
    fitrow *classes; /* every group's capacities */
    fittop *tops;    /* per group: the heap over its capacities */
    size_t cap_count_key, cap_count_member, cap_count_nodes;
    size_t cap_score_key, cap_score_member, cap_score_nodes;
    size_t n_classes, cap_classes, cap_tops;
    /* Hosts whose load changed since their trees were refreshed: the
     * trees are brought up to date before a bound search needs them
     * (fitindex_trees_refresh), so a run of decisions served by kept scores
     * pays nothing for them. */
    uint32_t *dirty[2];  /* per tree (FITINDEX_COUNTING, FITINDEX_SCORING): host indexes */
    uint8_t *dirty_flag; /* per host: 1 << tree, for each tree it is listed for */
    size_t n_dirty[2];
    fitindex_weights weights; /* of the build: the scoring trees assume them */
    /* Over every host since the build: the most |G| + |b d| (fitnode), how
     * large the terms of a bound are, for its rounding margin; and the least
     * committed fractions and the most of their sum, which say whether
     * clamping a score can add to it (fitindex_score.c). */
    double magnitude, least_cpu_used, least_memory_used, most_cpu_used, most_memory_used, most_used;
    shape *shapes;  /* SHAPES of them */
    uint64_t clock; /* counts searches, for shape replacement */
    /* When bound searches keep giving up, the next ones are not tried for a
     * while: each costs up to half a full pass before the full pass runs
     * anyway. */
    uint32_t give_ups;   /* in a row */
    uint32_t skips_left; /* bound searches not to try */
    fitindex_stats stats;
};

static inline double fitindex_min(double a, double b)
{
    return a < b ? a : b;
}

static inline double fitindex_max(double a, double b)
{
    return a > b ? a : b;
}

/* Every host of `room` fails capacity filter `reason` first, or passes
 * them all (SCHED_REASON_NONE), or they differ (FITINDEX_MIXED); the
 * enabled filters in the full pass's order. */
#define FITINDEX_MIXED SCHED_REASON_COUNT
int fitindex_classify(const fitindex_query *q, const fitroom *room);

/* The first failing capacity filter of host `i`, as the full pass orders them. */
sched_reason fitindex_leaf_reason(const fitindex_query *q, uint32_t i, double cpu_after,
                                  double memory_after);

/* fitindex_trees.c: lay out every group's trees (the members placed; the
 * largest group has `largest`). Returns 0, or -1 when out of memory. */
int fitindex_trees_build(fitindex *index, size_t n_groups, size_t largest);
/* Bring tree `tree` (each group's of that kind) up to date with the hosts
 * whose load changed since. The scoring trees are needed by every bound
 * search; the counting trees only when a request splits the group (the
 * scoring root's room says whether), so a host reserved over and over is
 * moved in them once. */
#define FITINDEX_COUNTING 0
#define FITINDEX_SCORING 1
void fitindex_trees_refresh(fitindex *index, int tree);

/* Node visits a walk over group `gr` may make before its bounds are deemed
 * too loose: a visit of the scoring walk costs several times what the full
 * pass spends on a host, a counting visit less; so a fraction of the hosts
 * (one in `per_host`), but the whole tree of a small group. */
static inline size_t fitindex_budget(const group *gr, size_t per_host)
{
    size_t whole = 2 * gr->counting.n_slots;
    size_t part = gr->n_members / per_host + 64;
    return whole < 1024 && whole > part ? whole : part;
}

/* fitindex_score.c: the best host of group `gr` for `q`, every member
 * feasible when `all_fit` (else each is checked). Sets q->found, best,
 * best_score. Returns false when it gave up (bounds too loose within its
 * budget, or near-ties the full pass must settle). */
bool fitindex_best(fitindex *index, const group *gr, fitindex_query *q, bool all_fit);

/* fitindex_shapes.c */
shape *fitindex_shapes_new(void);
void fitindex_shapes_free(shape *shapes);
void fitindex_shapes_forget(shape *shapes);
/* The kept shape for this query (built on its second search), or NULL when
 * it is new (then remembered) or out of memory. */
shape *fitindex_shape_for(fitindex *index, int pool_id, bool dedicated, const fitindex_query *q);
/* The full pass's choice and counts from a kept shape. */
void fitindex_shape_search(const fitindex *index, const shape *sh, fitindex_query *q);
/* Host `host_index` of group `g` changed: refresh every shape kept over it. */
void fitindex_shapes_update(fitindex *index, uint32_t g, uint32_t host_index);

#endif
