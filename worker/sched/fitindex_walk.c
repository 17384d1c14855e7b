/* fitindex_walk: the hosts of a group best first by a caller's measure
 * (fitindex.h), over the counting tree, whose order (by room left) keeps
 * hosts with the same room together: suggestions (what would make a
 * request fit) read the index this way. */
#include <math.h>

#include "fitindex_internal.h"

typedef struct walk {
    const fitindex_walker *w;
    const fitrow *row;
    const fitcount *nodes;   /* the group's counting heap */
    const uint32_t *slots;   /* its row: the member in each slot */
    const uint32_t *members; /* the group's, name order */
} walk;

static double rank_of(const walk *wk, const fitcount *n)
{
    if (n->count == 0)
        return INFINITY;
    fitindex_span span = {
        .first = n->first,
        .min_slots_left = n->room.min_slots_left,
        .max_slots_left = n->room.max_slots_left,
        .min_disk_left = n->room.min_disk_left,
        .max_disk_left = n->room.max_disk_left,
        .min_cpu_room = n->room.min_cpu_room,
        .max_cpu_room = n->room.max_cpu_room,
        .min_memory_room = n->room.min_memory_room,
        .max_memory_room = n->room.max_memory_room,
    };
    return wk->w->rank(&span, wk->w->ctx);
}

/* Node k: ranked again on entry (what `host` saw may have changed it),
 * then its host, or its children in rank order (ties: the first host's). */
static void walk_node(const walk *wk, size_t k)
{
    const fitcount *n = wk->nodes;
    if (!(rank_of(wk, &n[k]) < INFINITY))
        return;
    if (k >= wk->row->n_slots) {
        wk->w->host(wk->members[wk->slots[fitrow_slot(wk->row, k)]], wk->w->ctx);
        return;
    }
    double left = rank_of(wk, &n[2 * k]), right = rank_of(wk, &n[2 * k + 1]);
    bool left_first = left < right || (left == right && n[2 * k].first <= n[2 * k + 1].first);
    walk_node(wk, left_first ? 2 * k : 2 * k + 1);
    walk_node(wk, left_first ? 2 * k + 1 : 2 * k);
}

void fitindex_walk(fitindex *index, int pool_id, bool dedicated, const fitindex_walker *w)
{
    if (!index->ready || pool_id < 0 || (size_t)pool_id >= index->n_pools)
        return;
    const group *gr = &index->groups[(size_t)pool_id * 2 + (dedicated ? 1 : 0)];
    if (gr->n_members == 0)
        return;
    fitindex_trees_refresh(index, FITINDEX_COUNTING);
    walk wk = {w, &gr->counting, &index->count_nodes[gr->counting.node_start],
               &index->count_member[gr->counting.slot_start], &index->members[gr->member_start]};
    walk_node(&wk, 1);
}

const uint32_t *fitindex_members(const fitindex *index, int pool_id, bool dedicated, size_t *n)
{
    *n = 0;
    if (!index->ready || pool_id < 0 || (size_t)pool_id >= index->n_pools)
        return NULL;
    const group *gr = &index->groups[(size_t)pool_id * 2 + (dedicated ? 1 : 0)];
    *n = gr->n_members;
    return gr->n_members ? &index->members[gr->member_start] : NULL;
}

int fitindex_span_reason(const fitindex_query *q, const fitindex_span *span)
{
    fitroom room = {span->min_slots_left,         span->max_slots_left,
                    span->min_disk_left,          span->max_disk_left,
                    (float)span->min_cpu_room,    (float)span->max_cpu_room,
                    (float)span->min_memory_room, (float)span->max_memory_room};
    return fitindex_classify(q, &room);
}
