/* engine: the handle, its snapshot and the live reservations: what is free
 * on each host (the overlay of holds on the inventory's figures, kept in the
 * free-capacity index) and which vmids are taken. A decision is made in
 * engine_decide.c, profiles are engine_profiles.c (engine_internal.h). */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine_internal.h"
#include "grow.h"
#include "near_best.h"

_Static_assert(SCHED_SCORE_COUNT <= SCHED_MAX_SCORES, "a decision lists every score");

const char *sched_reason_text(sched_reason reason)
{
    static const char *const text[SCHED_REASON_COUNT] = {
        [SCHED_REASON_NONE] = "available",
        [SCHED_REASON_POOL] = "pool mismatch",
        [SCHED_REASON_NOT_DEDICATED] = "not a dedicated host",
        [SCHED_REASON_DEDICATED_HOST] = "dedicated host",
        [SCHED_REASON_OFFLINE] = "node offline",
        [SCHED_REASON_MAINTENANCE] = "node in maintenance",
        [SCHED_REASON_STATUS_UNKNOWN] = "node status unknown",
        [SCHED_REASON_NODE_REGEX] = "node regex mismatch",
        [SCHED_REASON_VM_SLOTS] = "no free VM slots",
        [SCHED_REASON_CPU] = "insufficient cpu",
        [SCHED_REASON_MEMORY] = "insufficient memory",
        [SCHED_REASON_DISK] = "insufficient disk",
        [SCHED_REASON_ANTI_AFFINITY] = "anti-affinity",
        [SCHED_REASON_NODE_NAME] = "node name mismatch",
        [SCHED_REASON_GROUP_AFFINITY] = "group affinity",
        [SCHED_REASON_GROUP_ANTI_AFFINITY] = "group anti-affinity",
        [SCHED_REASON_GROUP_FULL] = "group max_per_host",
        [SCHED_REASON_TRAIT_MISSING] = "missing required trait",
        [SCHED_REASON_TRAIT_FORBIDDEN] = "forbidden trait",
        [SCHED_REASON_RESOURCES] = "insufficient custom resource",
        [SCHED_REASON_SPREAD] = "topology spread",
        [SCHED_REASON_SPREAD_LABEL] = "missing topology label",
    };
    return reason < SCHED_REASON_COUNT ? text[reason] : "unknown";
}

const char *sched_decision_reason_text(const sched_decision *decision, sched_reason reason,
                                       char *buf, size_t size)
{
    if (!decision->spread_key[0] ||
        (reason != SCHED_REASON_SPREAD && reason != SCHED_REASON_SPREAD_LABEL))
        return sched_reason_text(reason);
    snprintf(buf, size, reason == SCHED_REASON_SPREAD ? "spread over %s" : "missing label %s",
             decision->spread_key);
    return buf;
}

sched_engine *sched_engine_new(const sched_params *params, vf_error *err)
{
    if (!(params->overcommit_cpu > 0) || !(params->overcommit_memory > 0) ||
        params->subset_size < 1 || params->near_best_width < 0 ||
        params->near_best_width > NEAR_BEST_MAX_WIDTH || !(params->near_best_max_loss >= 0)) {
        vf_error_set(err, VF_ECONFIG,
                     "scheduler: overcommit must be > 0, subset_size >= 1, near_best_hosts "
                     "1..64 and near_best_max_loss >= 0");
        return NULL;
    }
    sched_engine *engine = calloc(1, sizeof *engine);
    if (!engine) {
        vf_error_set(err, VF_ENOMEM, "out of memory creating the scheduler");
        return NULL;
    }
    engine->params = *params;
    engine->params.plugins = NULL; /* borrowed only for the call */
    engine->params.n_plugins = 0;
    holds_init(&engine->holds);
    regex_cache_init(&engine->regex);
    vmid_hints_set_class(&engine->vmids, params->vmid_stride, params->near_best_worker);
    if (plugin_config_apply(&engine->plugins, &engine->params, params, err) < 0) {
        sched_engine_free(engine);
        return NULL;
    }
    if (!(engine->params.overcommit_cpu > 0) || !(engine->params.overcommit_memory > 0)) {
        vf_error_set(err, VF_ECONFIG, "scheduler: overcommit ratios must be > 0");
        sched_engine_free(engine);
        return NULL;
    }
    /* After the plugins: Random's args may set the seed. */
    uint64_t seed = engine->params.seed;
    if (seed == 0) {
        uint64_t now_us = (uint64_t)clock_mono_us();
        seed = now_us ^ (now_us << 32) ^ (uint64_t)(uintptr_t)engine;
    }
    engine->rng = seed | 1;
    snprintf(engine->profile_name, sizeof engine->profile_name, "%s", SCHED_PROFILE_DEFAULT);
    engine->index = fitindex_new();
    if (!engine->index) {
        vf_error_set(err, VF_ENOMEM, "out of memory creating the scheduler");
        sched_engine_free(engine);
        return NULL;
    }
    return engine;
}

int sched_engine_set_params(sched_engine *engine, const sched_params *params, vf_error *err)
{
    /* Built and checked as a new engine would be, so a rejected change
     * leaves this one as it was. */
    sched_engine *next = sched_engine_new(params, err);
    if (!next)
        return -1;
    engine->params = next->params;
    engine->plugins = next->plugins;
    engine->rng = next->rng;
    /* scheduler.vmid_stride may have changed: the class, and its hints from
     * the bottom (set_hosts below, or here without a snapshot). */
    vmid_hints_set_class(&engine->vmids, params->vmid_stride, params->near_best_worker);
    vmid_hints_advance(&engine->vmids, engine->hosts, &engine->holds.reserved_vmids);
    sched_engine_free(next);
    /* regex_match may have changed what a cached pattern means. */
    regex_cache_close(&engine->regex);
    if (!engine->hosts)
        return 0;
    /* Capacities (overcommit, reserves) and the free-capacity index follow
     * the parameters: lay the same snapshot and the same reservations again.
     * None can materialise here: the snapshot showed none of their guests
     * when it was laid, and reservations made since took ids it lacked. */
    return sched_engine_set_hosts(engine, engine->hosts, NULL, NULL, err);
}

void sched_engine_free(sched_engine *engine)
{
    if (!engine)
        return;
    for (size_t i = 0; i < engine->n_profiles; i++)
        sched_engine_free(engine->profiles[i]);
    free(engine->profiles);
    regex_cache_close(&engine->regex);
    free(engine->load);
    free(engine->hot);
    free(engine->reasons);
    free(engine->candidates);
    free(engine->total);
    free(engine->group_score);
    spread_view_free(&engine->spread);
    free(engine->spread_score);
    free(engine->resources_held);
    fitindex_free(engine->index);
    holds_close(&engine->holds);
    free(engine);
}

const spread_view *sched_engine_spread(const sched_engine *engine)
{
    return engine->spread.hosts == engine->hosts && engine->spread.key[0] ? &engine->spread : NULL;
}

const sched_params *sched_engine_params(const sched_engine *engine)
{
    return &engine->params;
}

const hostset *sched_engine_snapshot(const sched_engine *engine)
{
    return engine->hosts;
}

bool sched_engine_filter_on(const sched_engine *engine, int filter_id)
{
    return filter_id >= 0 && filter_id < SCHED_FILTER_COUNT && engine->plugins.filter_on[filter_id];
}

void sched_engine_set_vmid_spread(sched_engine *engine, bool on)
{
    engine->vmids.spread = on;
    for (size_t i = 0; i < engine->n_profiles; i++)
        engine->profiles[i]->vmids.spread = on;
}

bool sched_engine_vmid_spreads(const sched_engine *engine)
{
    return engine->vmids.stride > 1;
}

uint32_t sched_engine_vmid_stride(const sched_engine *engine)
{
    return engine->vmids.stride;
}

uint32_t sched_engine_vmid_slot(const sched_engine *engine)
{
    return engine->vmids.slot;
}

void sched_engine_set_vmid_slot(sched_engine *engine, uint32_t slot)
{
    vmid_hints_set_slot(&engine->vmids, slot);
    vmid_hints_advance(&engine->vmids, engine->hosts, &engine->holds.reserved_vmids);
    for (size_t i = 0; i < engine->n_profiles; i++)
        sched_engine_set_vmid_slot(engine->profiles[i], slot);
}

static void apply_load(sched_engine *engine, const hold *h, int sign)
{
    if (h->host_index < 0)
        return;
    sched_host_load *load = &engine->load[h->host_index];
    load->cpu += sign * h->cpu;
    load->memory += sign * h->memory;
    load->disk += sign * h->disk;
    if (h->kind == SCHED_HOLD_FULL)
        load->vms += sign;
    if (h->resources) {
        const host *on = &engine->hosts->hosts[h->host_index];
        for (size_t r = 0; r < h->resources->n; r++) {
            int at = host_traits_find(on->traits, h->resources->items[r].name);
            if (at >= 0)
                engine->resources_held[h->host_index][at] += sign * h->resources->items[r].amount;
        }
    }
    sched_hot *hot = &engine->hot[h->host_index];
    hot->vm_slots_score = sched_score_clamp(sched_score_vm_slots(hot, load, engine->params.pack));
    fitindex_update(engine->index, engine->hot, engine->load, (size_t)h->host_index);
}

static int32_t index_of(const sched_engine *engine, const char *node)
{
    if (!engine->hosts)
        return -1;
    const host *found = hostset_find(engine->hosts, node);
    return found ? (int32_t)(found - engine->hosts->hosts) : -1;
}

/* sched_engine_set_hosts: the holds whose guest the new snapshot shows. */
struct materialised {
    const hostset *hosts;
    void (*report)(const sched_reservation *, void *);
    void *user;
};

static bool has_materialised(const hold *h, const void *arg)
{
    const struct materialised *m = arg;
    return h->vmid && hostset_guest_on(m->hosts, h->vmid, hold_node(h));
}

static void report_materialised(const hold *h, void *arg)
{
    const struct materialised *m = arg;
    if (!m->report)
        return;
    sched_reservation res;
    hold_to_reservation(h, &res);
    m->report(&res, m->user);
}

/* A hold whose VM the snapshot shows and that holds custom resources its
 * host does not count: from now on it holds those alone, while the VM
 * exists (docs/guarantees.md "The ledger"). Reported as materialised (its
 * reservation is bound in the store all the same). */
static void keep_resources_of_materialised(sched_engine *engine, const struct materialised *m)
{
    for (size_t i = 0; i < engine->holds.n_held; i++) {
        hold *h = &engine->holds.held[i];
        if (!h->resources || h->kind != SCHED_HOLD_FULL || !has_materialised(h, m) ||
            hostset_counts_resources(m->hosts, hold_node(h)))
            continue;
        report_materialised(h, (void *)m);
        vmidset_remove(&engine->holds.reserved_vmids, h->vmid);
        h->vmid = 0;
        h->cpu = 0;
        h->memory = 0;
        h->disk = 0;
        h->expires = 0;
        h->preemptible = false;
        h->kind = SCHED_HOLD_RESOURCES_ONLY;
    }
}

/* The custom resources the inventory says each host's guests hold, where
 * it says: the room the Resources filter sees starts below them. */
static void count_allocated_resources(sched_engine *engine, const hostset *hosts)
{
    for (size_t i = 0; i < hosts->n_hosts; i++) {
        const host_traits *ht = hosts->hosts[i].traits;
        if (!ht || !ht->counts_allocated)
            continue;
        for (size_t r = 0; r < ht->allocated.n; r++) {
            int at = host_traits_find(ht, ht->allocated.items[r].name);
            if (at >= 0)
                engine->resources_held[i][at] += ht->allocated.items[r].amount;
        }
    }
}

int sched_engine_set_hosts(sched_engine *engine, const hostset *hosts,
                           void (*on_materialised)(const sched_reservation *, void *), void *user,
                           vf_error *err)
{
    size_t n = hosts->n_hosts ? hosts->n_hosts : 1;
    /* The index points into the per-host arrays, which may move below. */
    fitindex_clear(engine->index);
    if (n > engine->capacity) {
        if (resize_array((void **)&engine->load, n, sizeof *engine->load) < 0 ||
            resize_array((void **)&engine->hot, n, sizeof *engine->hot) < 0 ||
            resize_array((void **)&engine->reasons, n, sizeof *engine->reasons) < 0 ||
            resize_array((void **)&engine->candidates, n, sizeof *engine->candidates) < 0 ||
            resize_array((void **)&engine->total, n, sizeof *engine->total) < 0 ||
            resize_array((void **)&engine->resources_held, n, sizeof *engine->resources_held) < 0) {
            vf_error_set(err, VF_ENOMEM, "out of memory sizing the scheduler for %zu hosts", n);
            return -1;
        }
        engine->capacity = n;
    }
    engine->hosts = hosts; /* the index is rebuilt below, once reservations are re-applied */
    for (size_t i = 0; i < hosts->n_hosts; i++) {
        const host *h = &hosts->hosts[i];
        engine->hot[i] = (sched_hot){
            .cpu_capacity = sched_cpu_capacity(&engine->params, h),
            .memory_capacity = sched_memory_capacity(&engine->params, h),
            .allocated_cpu = h->allocated_cpu,
            .allocated_memory = (double)h->allocated_memory,
            .storage = h->storage,
            .max_vms = h->max_vms,
            .current_vms = h->current_vms,
            .pool_id = h->pool_id,
            .status = (uint8_t)h->status,
            .dedicated = h->dedicated,
        };
        static const sched_host_load no_load = {0};
        engine->hot[i].vm_slots_score =
            sched_score_clamp(sched_score_vm_slots(&engine->hot[i], &no_load, engine->params.pack));
    }
    regex_cache_forget_matches(&engine->regex);
    spread_view_reset(&engine->spread); /* its names were the old snapshot's */
    memset(engine->load, 0, n * sizeof *engine->load);
    memset(engine->resources_held, 0, n * sizeof *engine->resources_held);
    count_allocated_resources(engine, hosts);
    memset(engine->reasons, 0, n);

    /* The inventory now shows the guest on its own host: its resources are
     * in that host's figures, so holding them too would count them twice.
     * The same vmid elsewhere ends nothing: the id stays taken either way,
     * and this host's capacity is still promised. */
    struct materialised report = {hosts, on_materialised, user};
    keep_resources_of_materialised(engine, &report);
    holds_drop_where(&engine->holds, has_materialised, &report, report_materialised, &report);
    for (size_t i = 0; i < engine->holds.n_held; i++) {
        hold *h = &engine->holds.held[i];
        h->host_index = index_of(engine, hold_node(h));
        apply_load(engine, h, +1);
    }
    if (holds_index_hosts(&engine->holds, hosts->n_hosts, err) < 0)
        return -1;
    vmid_hints_reset(&engine->vmids);
    vmid_hints_advance(&engine->vmids, hosts, &engine->holds.reserved_vmids);
    /* Without the index every decision takes the full pass: the same
     * decisions, only slower, so running short of memory here is no error. */
    vf_error ignored;
    vf_error_init(&ignored);
    const double *w = engine->plugins.score_weight;
    fitindex_weights weights = {w[SCHED_SCORE_FREE], w[SCHED_SCORE_MOST_ALLOCATED],
                                w[SCHED_SCORE_BALANCED], w[SCHED_SCORE_VM_SLOTS]};
    if (fitindex_build(engine->index, engine->hot, engine->load, hosts->n_hosts, hosts->n_pools,
                       &weights, &ignored) < 0)
        fitindex_clear(engine->index);
    /* The profiles drop the same materialised reservations: reported once. */
    for (size_t i = 0; i < engine->n_profiles; i++)
        if (sched_engine_set_hosts(engine->profiles[i], hosts, NULL, NULL, err) < 0)
            return -1;
    return 0;
}

void sched_engine_room(const sched_engine *engine, double *cpu, double *memory)
{
    *cpu = 0;
    *memory = 0;
    size_t n = engine->hosts ? engine->hosts->n_hosts : 0;
    for (size_t i = 0; i < n; i++) {
        const sched_hot *h = &engine->hot[i];
        if (h->status != HOST_ONLINE)
            continue;
        double free_cpu = h->cpu_capacity - h->allocated_cpu - engine->load[i].cpu;
        double free_memory =
            h->memory_capacity - h->allocated_memory - (double)engine->load[i].memory;
        *cpu += free_cpu > 0 ? free_cpu : 0;
        *memory += free_memory > 0 ? free_memory : 0;
    }
}

void sched_engine_claim_limits(const sched_engine *engine, const host *h, const sched_request *req,
                               sched_claim_limits *out)
{
    memset(out, 0, sizeof *out);
    const bool *on = engine->plugins.filter_on;
    out->cpu = on[SCHED_FILTER_CPU];
    out->memory = on[SCHED_FILTER_MEMORY];
    out->disk = on[SCHED_FILTER_DISK] && req->disk != 0;
    out->slots = on[SCHED_FILTER_VM_SLOTS];
    out->resources = on[SCHED_FILTER_RESOURCES] && req->resources.n;
    out->cpu_left = sched_cpu_capacity(&engine->params, h) - h->allocated_cpu;
    out->memory_left = sched_memory_capacity(&engine->params, h) - (double)h->allocated_memory;
    out->disk_left = h->storage;
    out->slots_left = (int64_t)h->max_vms - h->current_vms;
    const host_traits *ht = h->traits;
    out->counts_resources = ht && ht->counts_allocated;
    for (size_t r = 0; out->resources && r < req->resources.n; r++) {
        const resource_amount *want = &req->resources.items[r];
        if (want->amount == 0)
            continue; /* the filter asks nothing of the host for it */
        resource_amount *left = &out->resources_left.items[out->resources_left.n++];
        snprintf(left->name, sizeof left->name, "%s", want->name);
        left->amount = host_traits_amount(ht, want->name);
        if (out->counts_resources)
            left->amount -= resource_amounts_get(&ht->allocated, want->name);
    }
}

bool sched_engine_counts_resources(const sched_engine *engine, const char *node)
{
    return engine->hosts && hostset_counts_resources(engine->hosts, node);
}

bool sched_engine_shows_guest(const sched_engine *engine, uint32_t vmid, const char *node)
{
    return vmid && engine->hosts && hostset_guest_on(engine->hosts, vmid, node);
}

int sched_engine_reserve(sched_engine *engine, const sched_reservation *res, vf_error *err)
{
    hold *h = holds_add(&engine->holds, res, err);
    if (!h)
        return -1;
    holds_set_host(&engine->holds, h, index_of(engine, hold_node(h)));
    apply_load(engine, h, +1);
    /* Step the hints past this id only: the walk over the ids taken above
     * it waits for the next decision (sched_engine_decide_with), by which
     * time a release has often lowered the hint to a free id. Walking at
     * once cost a pass over every live reservation's id per placement once
     * releases kept pace with placements (a replay's steady state). */
    vmid_hints_taken(&engine->vmids, res->vmid);
    for (size_t i = 0; i < engine->n_profiles; i++)
        if (sched_engine_reserve(engine->profiles[i], res, err) < 0)
            return -1;
    return 0;
}

int64_t sched_hold_expiry_s(int64_t expires_ms)
{
    return expires_ms / 1000 + (expires_ms % 1000 > 0);
}

void sched_reservation_from_decision(sched_reservation *out, const sched_decision *decision,
                                     const sched_request *req, const char *task_id, int64_t expires)
{
    memset(out, 0, sizeof *out);
    /* As snprintf's "%s" would, without parsing a format on every decision. */
    if (task_id)
        memcpy(out->task_id, task_id, strnlen(task_id, sizeof out->task_id - 1));
    if (decision->node)
        memcpy(out->node, decision->node->name, sizeof out->node);
    out->cpu = req->cpu;
    out->memory = req->memory;
    out->disk = req->disk;
    out->vmid = decision->vmid;
    out->expires = expires;
    out->resources = req->resources;
}

/* What ending a hold undoes: its load on its host, and the vmid hints it
 * kept above its id. */
static void unhold(const hold *h, void *arg)
{
    sched_engine *engine = arg;
    apply_load(engine, h, -1);
    vmid_hints_freed(&engine->vmids, h->vmid);
}

/* Drop held reservations for which `ends` is true. */
static size_t release_where(sched_engine *engine, bool (*ends)(const hold *, const void *),
                            const void *arg)
{
    size_t ended = holds_drop_where(&engine->holds, ends, arg, unhold, engine);
    for (size_t i = 0; i < engine->n_profiles; i++)
        release_where(engine->profiles[i], ends, arg);
    return ended;
}

static bool has_expired(const hold *h, const void *now)
{
    return h->expires > 0 && h->expires <= *(const int64_t *)now;
}

size_t sched_engine_release(sched_engine *engine, const char *task_id)
{
    /* By the index: a release costs the same among 100,000 holds as among 10. */
    size_t ended = holds_drop_task(&engine->holds, task_id, unhold, engine);
    for (size_t i = 0; i < engine->n_profiles; i++)
        sched_engine_release(engine->profiles[i], task_id);
    return ended;
}

static bool node_matches(const hold *h, const void *node)
{
    return strcmp(hold_node(h), node) == 0;
}

typedef struct task_on_node {
    const char *task_id;
    const char *node;
} task_on_node;

static bool resources_of(const hold *h, const void *arg)
{
    const task_on_node *which = arg;
    return h->kind == SCHED_HOLD_RESOURCES_ONLY && strcmp(hold_task(h), which->task_id) == 0 &&
           strcmp(hold_node(h), which->node) == 0;
}

void sched_engine_unpreemptible(sched_engine *engine, const char *task_id)
{
    for (size_t i = 0; i < engine->holds.n_held; i++)
        if (strcmp(hold_task(&engine->holds.held[i]), task_id) == 0)
            holds_unpreemptible(&engine->holds, &engine->holds.held[i]);
    for (size_t i = 0; i < engine->n_profiles; i++)
        sched_engine_unpreemptible(engine->profiles[i], task_id);
}

size_t sched_engine_end_resources(sched_engine *engine, const char *task_id, const char *node)
{
    task_on_node which = {task_id, node};
    return release_where(engine, resources_of, &which);
}

size_t sched_engine_release_node(sched_engine *engine, const char *node)
{
    return release_where(engine, node_matches, node);
}

static bool any(const hold *h, const void *unused)
{
    (void)h;
    (void)unused;
    return true;
}

size_t sched_engine_release_all(sched_engine *engine)
{
    return release_where(engine, any, NULL);
}

size_t sched_engine_expire(sched_engine *engine, int64_t now)
{
    /* Called once per batch: skip the scan while nothing can have expired. */
    if (engine->holds.earliest_expiry == 0 || now < engine->holds.earliest_expiry)
        return 0;
    size_t ended = release_where(engine, has_expired, &now); /* the profiles' too */
    for (size_t i = 0; i < engine->n_profiles; i++)
        engine->profiles[i]->holds.earliest_expiry = 0;
    holds_recompute_expiry(&engine->holds);
    return ended;
}

size_t sched_engine_reservation_count(const sched_engine *engine)
{
    return engine->holds.n_held;
}

const struct holds *sched_engine_holds(const sched_engine *engine)
{
    return &engine->holds;
}

const sched_host_load *sched_engine_host_load(const sched_engine *engine, size_t host_index)
{
    if (!engine->hosts || host_index >= engine->hosts->n_hosts)
        return NULL;
    return &engine->load[host_index];
}

int64_t sched_engine_resource_free(const sched_engine *engine, size_t host_index, const char *name)
{
    if (!engine->hosts || host_index >= engine->hosts->n_hosts)
        return 0;
    const host_traits *has = engine->hosts->hosts[host_index].traits;
    int at = host_traits_find(has, name);
    return at < 0 ? 0 : has->resources.items[at].amount - engine->resources_held[host_index][at];
}

void sched_engine_index_stats(const sched_engine *engine, sched_index_stats *out)
{
    fitindex_stats s = fitindex_get_stats(engine->index);
    *out = (sched_index_stats){s.searches, s.by_kept, s.by_bounds, s.gave_up};
}

size_t sched_decision_host_index(const sched_engine *engine, const sched_decision *decision)
{
    return (size_t)(decision->node - engine->hosts->hosts);
}
