/* fitindex: see fitindex.h. Building the trees, their upkeep, the counts
 * per reason; the best host is fitindex_score.c, scores kept per shape
 * fitindex_shapes.c. */
#include "fitindex.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fitindex_internal.h"
#include "grow.h"

fitindex *fitindex_new(void)
{
    fitindex *index = calloc(1, sizeof(fitindex));
    if (index && !(index->shapes = fitindex_shapes_new())) {
        free(index);
        return NULL;
    }
    return index;
}

void fitindex_free(fitindex *index)
{
    if (!index)
        return;
    fitindex_shapes_free(index->shapes);
    free(index->groups);
    free(index->members);
    free(index->host_group);
    free(index->host_rank);
    free(index->pool_classes);
    free(index->pool_sizes);
    free(index->count_key);
    free(index->count_member);
    free(index->member_count);
    free(index->count_nodes);
    free(index->score_key);
    free(index->score_member);
    free(index->member_score);
    free(index->member_class);
    free(index->member_room);
    free(index->score_nodes);
    free(index->classes);
    free(index->tops);
    free(index->dirty[0]);
    free(index->dirty[1]);
    free(index->dirty_flag);
    free(index);
}

void fitindex_clear(fitindex *index)
{
    index->ready = false;
    fitindex_shapes_forget(index->shapes);
}

bool fitindex_ready(const fitindex *index)
{
    return index->ready;
}

/* ---- building ---- */

static int size_pools(fitindex *index, size_t n_pools)
{
    if (n_pools <= index->cap_pools && index->groups)
        return 0;
    size_t want = n_pools ? n_pools : 1;
    if (resize_array((void **)&index->groups, want * 2, sizeof *index->groups) < 0 ||
        resize_array((void **)&index->pool_classes, want * 8, sizeof *index->pool_classes) < 0 ||
        resize_array((void **)&index->pool_sizes, want, sizeof *index->pool_sizes) < 0)
        return -1;
    index->cap_pools = want;
    return 0;
}

/* The per-host and per-member arrays, for n hosts (members are hosts). */
static int size_hosts(fitindex *index, size_t n)
{
    if (n <= index->cap_hosts)
        return 0;
    struct {
        void **array;
        size_t size;
    } arrays[] = {
        {(void **)&index->host_group, sizeof *index->host_group},
        {(void **)&index->host_rank, sizeof *index->host_rank},
        {(void **)&index->members, sizeof *index->members},
        {(void **)&index->member_count, sizeof *index->member_count},
        {(void **)&index->member_score, sizeof *index->member_score},
        {(void **)&index->member_class, sizeof *index->member_class},
        {(void **)&index->member_room, sizeof *index->member_room},
        {(void **)&index->dirty[0], sizeof *index->dirty[0]},
        {(void **)&index->dirty[1], sizeof *index->dirty[1]},
        {(void **)&index->dirty_flag, sizeof *index->dirty_flag},
    };
    for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++)
        if (resize_array(arrays[a].array, n, arrays[a].size) < 0)
            return -1;
    index->cap_hosts = n;
    return 0;
}

/* Count the hosts per class and the members per group; lay out the groups.
 * Returns the largest group's size. */
static size_t count_classes(fitindex *index, const sched_hot *hot, size_t n_hosts, size_t n_pools)
{
    size_t n_groups = n_pools * 2;
    memset(index->groups, 0, n_groups * sizeof *index->groups);
    memset(index->pool_classes, 0, n_pools * 8 * sizeof *index->pool_classes);
    memset(index->pool_sizes, 0, n_pools * sizeof *index->pool_sizes);
    for (size_t i = 0; i < n_hosts; i++) {
        const sched_hot *h = &hot[i];
        if (h->pool_id >= n_pools)
            continue;
        uint8_t status = h->status < N_STATUSES ? h->status : HOST_UNKNOWN;
        index->pool_classes[h->pool_id * 8 + (h->dedicated ? 4 : 0) + status]++;
        index->pool_sizes[h->pool_id]++;
        if (status == HOST_ONLINE)
            index->groups[h->pool_id * 2 + (h->dedicated ? 1 : 0)].n_members++;
    }
    size_t members = 0, largest = 0;
    for (size_t g = 0; g < n_groups; g++) {
        group *gr = &index->groups[g];
        gr->member_start = members;
        members += gr->n_members;
        largest = gr->n_members > largest ? gr->n_members : largest;
        size_t leaves = 1;
        while (leaves < gr->n_members)
            leaves <<= 1;
        gr->shape_leaves = leaves;
    }
    return largest;
}

/* The members of each group in name order, and each host's place there. */
static void place_members(fitindex *index, const sched_hot *hot, size_t n_hosts, size_t n_pools)
{
    for (size_t g = 0; g < n_pools * 2; g++)
        index->groups[g].n_members = 0;
    for (size_t i = 0; i < n_hosts; i++) {
        const sched_hot *h = &hot[i];
        index->host_group[i] = UINT32_MAX;
        if (h->pool_id >= n_pools || h->status != HOST_ONLINE)
            continue;
        uint32_t g = h->pool_id * 2 + (h->dedicated ? 1 : 0);
        group *gr = &index->groups[g];
        index->members[gr->member_start + gr->n_members] = (uint32_t)i;
        index->host_group[i] = g;
        index->host_rank[i] = (uint32_t)gr->n_members++;
    }
}

int fitindex_build(fitindex *index, const sched_hot *hot, const sched_host_load *load,
                   size_t n_hosts, size_t n_pools, const fitindex_weights *weights, vf_error *err)
{
    fitindex_clear(index);
    index->weights = *weights;
    index->hot = hot;
    index->load = load;
    if (size_pools(index, n_pools) < 0 || size_hosts(index, n_hosts) < 0)
        goto oom;
    size_t largest = count_classes(index, hot, n_hosts, n_pools);
    place_members(index, hot, n_hosts, n_pools);
    if (n_hosts)
        memset(index->dirty_flag, 0, n_hosts);
    index->n_dirty[0] = index->n_dirty[1] = 0;
    if (fitindex_trees_build(index, n_pools * 2, largest) < 0)
        goto oom;
    index->n_hosts = n_hosts;
    index->n_pools = n_pools;
    index->ready = true;
    return 0;
oom:
    vf_error_set(err, VF_ENOMEM, "out of memory indexing %zu hosts", n_hosts);
    return -1;
}

void fitindex_update(fitindex *index, const sched_hot *hot, const sched_host_load *load,
                     size_t host_index)
{
    (void)hot;
    (void)load; /* the build's: the engine's arrays, which stay put until the next */
    if (!index->ready || host_index >= index->n_hosts)
        return;
    uint32_t g = index->host_group[host_index];
    if (g == UINT32_MAX)
        return;
    for (int tree = 0; tree < 2; tree++) {
        if (index->dirty_flag[host_index] & (1u << tree))
            continue;
        index->dirty_flag[host_index] |= (uint8_t)(1u << tree);
        index->dirty[tree][index->n_dirty[tree]++] = (uint32_t)host_index;
    }
    fitindex_shapes_update(index, g, (uint32_t)host_index);
}

uint32_t fitindex_class_count(const fitindex *index, int pool_id, bool dedicated,
                              host_status status)
{
    if (!index->ready || pool_id < 0 || (size_t)pool_id >= index->n_pools ||
        (unsigned)status >= N_STATUSES)
        return 0;
    return index->pool_classes[(size_t)pool_id * 8 + (dedicated ? 4 : 0) + (size_t)status];
}

uint32_t fitindex_pool_size(const fitindex *index, int pool_id)
{
    if (!index->ready || pool_id < 0 || (size_t)pool_id >= index->n_pools)
        return 0;
    return index->pool_sizes[pool_id];
}

/* ---- counting ---- */

int fitindex_classify(const fitindex_query *q, const fitroom *r)
{
    if (q->slots_on) {
        if (r->max_slots_left < 1)
            return SCHED_REASON_VM_SLOTS;
        if (r->min_slots_left < 1)
            return FITINDEX_MIXED;
    }
    if (q->cpu_on) {
        if (q->want_cpu > r->max_cpu_room)
            return SCHED_REASON_CPU;
        if (!(q->want_cpu <= r->min_cpu_room))
            return FITINDEX_MIXED;
    }
    if (q->memory_on) {
        if (q->want_memory > r->max_memory_room)
            return SCHED_REASON_MEMORY;
        if (!(q->want_memory <= r->min_memory_room))
            return FITINDEX_MIXED;
    }
    if (q->disk_on) {
        if (q->want_disk >= INT32_MAX)
            return FITINDEX_MIXED; /* the rooms saturate there */
        if (r->max_disk_left < q->want_disk)
            return SCHED_REASON_DISK;
        if (r->min_disk_left < q->want_disk)
            return FITINDEX_MIXED;
    }
    return SCHED_REASON_NONE;
}

sched_reason fitindex_leaf_reason(const fitindex_query *q, uint32_t i, double cpu_after,
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

sched_reason fitindex_reason(const fitindex_query *q, uint32_t i)
{
    return fitindex_leaf_reason(q, i, sched_cpu_after(&q->hot[i], &q->load[i], q->want_cpu),
                                sched_memory_after(&q->hot[i], &q->load[i], q->want_memory));
}

/* The counting walk's inputs. */
typedef struct tally {
    fitindex_query *q;
    const fitcount *nodes; /* the group's counting heap */
    const uint32_t *slots; /* its row: the member in each slot */
    const fitrow *row;
    const uint32_t *members; /* the group's, name order */
    size_t budget;
} tally;

/* Count every host below node t to its reason: a subtree whose hosts all
 * pass, or all fail the same filter first, at once. False when over
 * budget. */
static bool count_below(tally *tl, size_t t)
{
    fitindex_query *q = tl->q;
    const fitcount *n = &tl->nodes[t];
    if (n->count == 0)
        return true;
    if (++q->visited > tl->budget)
        return false;
    int r = fitindex_classify(q, &n->room);
    if (r != FITINDEX_MIXED) {
        q->counts[r] += n->count;
        return true;
    }
    if (t < tl->row->n_slots)
        return count_below(tl, 2 * t) && count_below(tl, 2 * t + 1);
    uint32_t i = tl->members[tl->slots[fitrow_slot(tl->row, t)]];
    double cpu_after = sched_cpu_after(&q->hot[i], &q->load[i], q->want_cpu);
    double memory_after = sched_memory_after(&q->hot[i], &q->load[i], q->want_memory);
    q->counts[fitindex_leaf_reason(q, i, cpu_after, memory_after)]++;
    return true;
}

/* Counts, then the best host. Returns false when either gave up. */
static bool bound_search(fitindex *index, const group *gr, fitindex_query *q)
{
    if (gr->n_members == 0)
        return true;
    /* The group's room, from the scoring root: a request that every
     * member passes, or every member fails alike, needs no counting walk. */
    fitindex_trees_refresh(index, FITINDEX_SCORING);
    int all = fitindex_classify(q, &index->tops[gr->top_start + 1].n.room);
    if (all != FITINDEX_MIXED) {
        q->counts[all] += (uint32_t)gr->n_members;
        return all != SCHED_REASON_NONE ||
               fitindex_best(index, gr, q, true); /* nobody fits: the counts say why */
    }
    fitindex_trees_refresh(index, FITINDEX_COUNTING);
    tally t = {q,
               &index->count_nodes[gr->counting.node_start],
               &index->count_member[gr->counting.slot_start],
               &gr->counting,
               &index->members[gr->member_start],
               fitindex_budget(gr, 2)};
    if (!count_below(&t, 1))
        return false;
    if (q->counts[SCHED_REASON_NONE] == 0)
        return true; /* nobody fits: the counts say why */
    q->visited = 0;
    return fitindex_best(index, gr, q, q->counts[SCHED_REASON_NONE] == gr->n_members);
}

void fitindex_search(fitindex *index, int pool_id, bool dedicated, fitindex_query *q)
{
    q->found = false;
    q->complete = false;
    q->visited = 0;
    if (!index->ready || pool_id < 0 || (size_t)pool_id >= index->n_pools)
        return;
    index->stats.searches++;
    shape *sh = fitindex_shape_for(index, pool_id, dedicated, q);
    if (sh) {
        fitindex_shape_search(index, sh, q);
        q->complete = true;
        index->stats.by_kept++;
        return;
    }
    index->stats.gave_up++; /* unless the bounds answer, below */
    if (q->node_regex)
        return; /* the engine takes the full pass */
    if (index->skips_left > 0) {
        index->skips_left--;
        return;
    }
    const group *gr = &index->groups[(size_t)pool_id * 2 + (dedicated ? 1 : 0)];
    uint32_t before[SCHED_REASON_COUNT];
    memcpy(before, q->counts, sizeof before);
    if (bound_search(index, gr, q)) {
        q->complete = true;
        index->give_ups = 0;
        index->stats.gave_up--;
        index->stats.by_bounds++;
        return;
    }
    q->found = false;
    memcpy(q->counts, before, sizeof before);
    if (++index->give_ups >= 4) {
        index->give_ups = 0;
        index->skips_left = 16;
    }
}

fitindex_stats fitindex_get_stats(const fitindex *index)
{
    return index->stats;
}
