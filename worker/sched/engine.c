#include "engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "fitindex.h"
#include "holds.h"
#include "near_best.h"
#include "pattern.h"
#include "plugin_config.h"
#include "plugins.h"
#include "vmid.h"
#include "vmidset.h"

#define REGEX_CACHE_SIZE 16

typedef struct regex_entry {
    char pattern[REQUEST_ANNOTATION_LEN];
    bool in_use;
    pattern *compiled;   /* owned */
    uint8_t *node_match; /* per host of the current snapshot; NULL until used */
    uint64_t last_used;
} regex_entry;

_Static_assert(SCHED_SCORE_COUNT <= SCHED_MAX_SCORES, "a decision lists every score");

struct sched_engine {
    sched_params params;
    plugin_config plugins; /* filters on, score weights, args: plugin_config.h */

    const hostset *hosts;
    sched_host_load *load; /* per host */
    sched_hot *hot;        /* per host */
    uint8_t *reasons;      /* per host, last decision */
    uint32_t *candidates;  /* scratch: feasible host indexes, in name order */
    double *total;         /* scratch, per candidate: its weighted score */
    /* per host: custom resources live reservations hold, by the host's own
     * resource positions (host.resources); touched only by holds that hold one */
    int64_t (*resources_held)[RESOURCES_MAX];
    size_t capacity;       /* length of the per-host arrays */
    double *group_score;   /* per host: ServerGroup's score, for a soft group policy */
    size_t group_capacity; /* its length; grown when a soft group is first decided */
    fitindex *index;       /* over hot and load; not ready: decide by the full pass */

    holds holds;        /* the live reservations and their vmids: holds.h */
    uint32_t vmid_hint; /* every id in [VMID_MIN, hint) is used or reserved */
    /* Several workers on one store (sched_params.vmid_stride): this one's
     * residue class, tried first while vmid_spread is on, and its hint
     * (every id of the class below it is used or reserved). vmid_stride 1:
     * never. */
    uint32_t vmid_stride, vmid_slot, vmid_slot_hint;
    bool vmid_spread;     /* sched_engine_set_vmid_spread: other workers are alive */
    bool vmid_slot_given; /* sched_engine_set_vmid_slot chose the class, not the hash */

    regex_entry regexes[REGEX_CACHE_SIZE];
    uint64_t clock; /* counts regex lookups, for least-recently-used eviction */
    uint64_t rng;

    /* scheduler.profiles: one engine each, built once at start-up, owned.
     * They hold the same snapshot and reservations as this one: every change
     * made through this engine is made to them too (a profile changes how
     * hosts are filtered and scored, never what is free). Empty when the
     * config names no profile, so the common path pays one loop test. */
    sched_engine **profiles;
    size_t n_profiles;
    char profile_name[SCHED_PROFILE_NAME_LEN]; /* "default" for the top-level engine */
};

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
    };
    return reason < SCHED_REASON_COUNT ? text[reason] : "unknown";
}

/* Whether decisions pick among the near-best (near_best.h). */
static bool near_best_on(const sched_params *p)
{
    return p->near_best_by == NEAR_BEST_BY_WORKER ? p->near_best_worker[0] != '\0'
                                                  : p->near_best_width > 1;
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
    engine->vmid_hint = VMID_MIN;
    /* Only a worker spreads: a dry run (no worker id) takes the lowest. */
    engine->vmid_stride =
        params->vmid_stride > 1 && params->near_best_worker[0] ? params->vmid_stride : 1;
    engine->vmid_slot = (uint32_t)(near_best_hash(params->near_best_worker) % engine->vmid_stride);
    engine->vmid_slot_hint = vmid_first_in_slot(VMID_MIN, engine->vmid_stride, engine->vmid_slot);
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

static void set_vmid_slot(sched_engine *engine, uint32_t slot);

int sched_engine_add_profile(sched_engine *engine, const char *name, const sched_params *params,
                             vf_error *err)
{
    if (!name[0] || strlen(name) >= SCHED_PROFILE_NAME_LEN ||
        strcmp(name, SCHED_PROFILE_DEFAULT) == 0 || sched_engine_profile(engine, name)) {
        vf_error_set(err, VF_ECONFIG,
                     "scheduler.profiles.%.64s: a profile name is 1..%d "
                     "characters, not \"default\", and given once",
                     name, SCHED_PROFILE_NAME_LEN - 1);
        return -1;
    }
    sched_engine **grown = realloc(engine->profiles, (engine->n_profiles + 1) * sizeof *grown);
    if (!grown) {
        vf_error_set(err, VF_ENOMEM, "out of memory creating scheduler profile %s", name);
        return -1;
    }
    engine->profiles = grown;
    sched_engine *profile = sched_engine_new(params, err);
    if (!profile)
        return -1;
    snprintf(profile->profile_name, sizeof profile->profile_name, "%s", name);
    profile->vmid_spread = engine->vmid_spread;
    if (engine->vmid_slot_given)
        set_vmid_slot(profile, engine->vmid_slot);
    /* Added late (tests; the worker adds them first): catch up. */
    int rc = engine->hosts ? sched_engine_set_hosts(profile, engine->hosts, NULL, NULL, err) : 0;
    for (size_t i = 0; rc == 0 && i < engine->holds.n_held; i++) {
        sched_reservation res;
        hold_to_reservation(&engine->holds.held[i], &res);
        rc = sched_engine_reserve(profile, &res, err);
    }
    if (rc < 0) {
        sched_engine_free(profile);
        return -1;
    }
    engine->profiles[engine->n_profiles++] = profile;
    return 0;
}

sched_engine *sched_engine_from_config(const vf_config *config, const char *worker, vf_error *err)
{
    sched_params params;
    sched_params_from_config(&params, config);
    if (worker)
        snprintf(params.near_best_worker, sizeof params.near_best_worker, "%s", worker);
    sched_engine *engine = sched_engine_new(&params, err);
    for (size_t i = 0; engine && i < config->scheduler.n_profiles; i++) {
        const config_profile *profile = &config->scheduler.profiles[i];
        sched_params profile_params;
        sched_params_for_profile(&profile_params, &params, profile);
        if (sched_engine_add_profile(engine, profile->name, &profile_params, err) < 0) {
            sched_engine_free(engine);
            engine = NULL;
        }
    }
    return engine;
}

sched_engine *sched_engine_profile(sched_engine *engine, const char *name)
{
    if (!name || !name[0] || strcmp(name, engine->profile_name) == 0)
        return engine;
    for (size_t i = 0; i < engine->n_profiles; i++)
        if (strcmp(engine->profiles[i]->profile_name, name) == 0)
            return engine->profiles[i];
    return NULL;
}

const char *sched_engine_profile_name(const sched_engine *engine)
{
    return engine->profile_name;
}

static void forget_regex_matches(sched_engine *engine)
{
    for (size_t i = 0; i < REGEX_CACHE_SIZE; i++) {
        free(engine->regexes[i].node_match);
        engine->regexes[i].node_match = NULL;
    }
}

static void advance_slot_hint(sched_engine *engine);

/* The worker's vmid class is `slot` (modulo the stride), its hint from the
 * bottom of the class again. */
static void set_vmid_slot(sched_engine *engine, uint32_t slot)
{
    if (engine->vmid_stride < 2)
        return;
    engine->vmid_slot = slot % engine->vmid_stride;
    engine->vmid_slot_given = true;
    engine->vmid_slot_hint = vmid_first_in_slot(VMID_MIN, engine->vmid_stride, engine->vmid_slot);
    advance_slot_hint(engine);
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
    /* scheduler.vmid_stride may have changed: the class, and its hint from
     * the bottom (set_hosts below, or here without a snapshot). */
    bool keep = engine->vmid_slot_given && engine->vmid_stride == next->vmid_stride;
    engine->vmid_stride = next->vmid_stride;
    engine->vmid_slot = keep ? engine->vmid_slot : next->vmid_slot;
    engine->vmid_slot_given = keep;
    engine->vmid_slot_hint = vmid_first_in_slot(VMID_MIN, engine->vmid_stride, engine->vmid_slot);
    advance_slot_hint(engine);
    sched_engine_free(next);
    /* regex_match may have changed what a cached pattern means. */
    forget_regex_matches(engine);
    for (size_t i = 0; i < REGEX_CACHE_SIZE; i++) {
        pattern_free(engine->regexes[i].compiled);
        memset(&engine->regexes[i], 0, sizeof engine->regexes[i]);
    }
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
    forget_regex_matches(engine);
    for (size_t i = 0; i < REGEX_CACHE_SIZE; i++)
        pattern_free(engine->regexes[i].compiled);
    free(engine->load);
    free(engine->hot);
    free(engine->reasons);
    free(engine->candidates);
    free(engine->total);
    free(engine->group_score);
    free(engine->resources_held);
    fitindex_free(engine->index);
    holds_close(&engine->holds);
    free(engine);
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

/* Move *hint (one of the engine's, over the ids hint, hint + step, ...)
 * past every id the snapshot uses or a reservation holds. */
static void advance_from(sched_engine *engine, uint32_t *hint, uint32_t step)
{
    /* Walk the sorted used list alongside the hint, as vmid_pick does: after
     * the oldest reservation ends, the hint drops to its id and the next one
     * steps over every live reservation's id, one binary search each before. */
    const uint32_t *used = engine->hosts ? engine->hosts->used_vmids : NULL;
    size_t n_used = engine->hosts ? engine->hosts->n_used_vmids : 0;
    size_t lo = 0, hi = n_used;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (used[mid] < *hint)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (*hint <= VMID_MAX) {
        while (lo < n_used && used[lo] < *hint)
            lo++;
        bool taken =
            (lo < n_used && used[lo] == *hint) || vmidset_has(&engine->holds.reserved_vmids, *hint);
        if (!taken)
            break;
        *hint = *hint > VMID_MAX - step ? VMID_MAX + 1u : *hint + step;
    }
}

void sched_engine_set_vmid_spread(sched_engine *engine, bool on)
{
    engine->vmid_spread = on;
    for (size_t i = 0; i < engine->n_profiles; i++)
        engine->profiles[i]->vmid_spread = on;
}

bool sched_engine_vmid_spreads(const sched_engine *engine)
{
    return engine->vmid_stride > 1;
}

uint32_t sched_engine_vmid_stride(const sched_engine *engine)
{
    return engine->vmid_stride;
}

uint32_t sched_engine_vmid_slot(const sched_engine *engine)
{
    return engine->vmid_slot;
}

void sched_engine_set_vmid_slot(sched_engine *engine, uint32_t slot)
{
    set_vmid_slot(engine, slot);
    for (size_t i = 0; i < engine->n_profiles; i++)
        set_vmid_slot(engine->profiles[i], slot);
}

static void advance_hint(sched_engine *engine)
{
    advance_from(engine, &engine->vmid_hint, 1);
}

static bool in_own_slot(const sched_engine *engine, uint32_t vmid)
{
    return engine->vmid_stride > 1 && vmid % engine->vmid_stride == engine->vmid_slot;
}

static void advance_slot_hint(sched_engine *engine)
{
    if (engine->vmid_stride > 1)
        advance_from(engine, &engine->vmid_slot_hint, engine->vmid_stride);
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

/* Whether the host named `node` in `hosts` counts its guests' custom
 * resources itself (traits.h counts_allocated); a host the snapshot lacks
 * does not. */
static bool host_counts_resources(const hostset *hosts, const char *node)
{
    const host *h = hostset_find(hosts, node);
    return h && h->traits && h->traits->counts_allocated;
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
            host_counts_resources(m->hosts, hold_node(h)))
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
        sched_host_load *load = realloc(engine->load, n * sizeof *load);
        if (load)
            engine->load = load;
        sched_hot *hot = realloc(engine->hot, n * sizeof *hot);
        if (hot)
            engine->hot = hot;
        uint8_t *reasons = realloc(engine->reasons, n);
        if (reasons)
            engine->reasons = reasons;
        uint32_t *candidates = realloc(engine->candidates, n * sizeof *candidates);
        if (candidates)
            engine->candidates = candidates;
        double *total = realloc(engine->total, n * sizeof *total);
        if (total)
            engine->total = total;
        int64_t(*held)[RESOURCES_MAX] = realloc(engine->resources_held, n * sizeof *held);
        if (held)
            engine->resources_held = held;
        if (!load || !hot || !reasons || !candidates || !total || !held) {
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
    forget_regex_matches(engine);
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
    engine->vmid_hint = VMID_MIN;
    advance_hint(engine);
    engine->vmid_slot_hint = vmid_first_in_slot(VMID_MIN, engine->vmid_stride, engine->vmid_slot);
    advance_slot_hint(engine);
    /* Without the index every decision takes the full pass: the same
     * decisions, only slower, so running short of memory here is no error. */
    vf_error ignored;
    vf_error_init(&ignored);
    if (fitindex_build(engine->index, engine->hot, engine->load, hosts->n_hosts, hosts->n_pools,
                       &ignored) < 0)
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
    return engine->hosts && host_counts_resources(engine->hosts, node);
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
    h->host_index = index_of(engine, hold_node(h));
    apply_load(engine, h, +1);
    /* Step the hints past this id only: the walk over the ids taken above
     * it waits for the next decision (sched_engine_decide_with), by which
     * time a release has often lowered the hint to a free id. Walking at
     * once cost a pass over every live reservation's id per placement once
     * releases kept pace with placements (a replay's steady state). */
    if (res->vmid == engine->vmid_hint)
        engine->vmid_hint = res->vmid + 1;
    if (res->vmid == engine->vmid_slot_hint && in_own_slot(engine, res->vmid))
        engine->vmid_slot_hint = res->vmid > VMID_MAX - engine->vmid_stride
                                     ? VMID_MAX + 1u
                                     : res->vmid + engine->vmid_stride;
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
    snprintf(out->task_id, sizeof out->task_id, "%s", task_id ? task_id : "");
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
    if (h->vmid) {
        if (h->vmid < engine->vmid_hint)
            engine->vmid_hint = h->vmid;
        if (in_own_slot(engine, h->vmid) && h->vmid < engine->vmid_slot_hint)
            engine->vmid_slot_hint = h->vmid;
    }
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
            engine->holds.held[i].preemptible = false;
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

/* The error for a pattern that hit the PCRE2 limits (pattern.h). */
static void refuse_costly(const char *pattern_text, const char *what, vf_error *err)
{
    vf_error_set(err, VF_EINVAL,
                 "annotations.%s: \"%.64s\" is not a valid regex: too costly to match (it ran "
                 "past the backtracking limits; avoid nested repetition like (a+)+)",
                 what, pattern_text);
}

/* Compiled, anchored pattern for `pattern_text`, from the cache. `what` names
 * the annotation in the error. A cached pattern that once hit the match
 * limits is refused at once, so a hostile request repeated costs nothing. */
static regex_entry *regex_get(sched_engine *engine, const char *pattern_text, const char *what,
                              vf_error *err)
{
    engine->clock++;
    regex_entry *victim = &engine->regexes[0];
    for (size_t i = 0; i < REGEX_CACHE_SIZE; i++) {
        regex_entry *entry = &engine->regexes[i];
        if (entry->in_use && strcmp(entry->pattern, pattern_text) == 0) {
            entry->last_used = engine->clock;
            if (pattern_too_costly(entry->compiled)) {
                refuse_costly(pattern_text, what, err);
                return NULL;
            }
            return entry;
        }
        if (!entry->in_use || (victim->in_use && entry->last_used < victim->last_used))
            victim = entry;
    }
    vf_error why;
    vf_error_init(&why);
    pattern *compiled = pattern_new_mode(
        pattern_text, engine->params.regex_search ? PATTERN_SEARCH : PATTERN_WHOLE, &why);
    if (!compiled) {
        vf_error_set(err, why.code, "annotations.%s: \"%.64s\" is not a valid regex: %s", what,
                     pattern_text, why.text);
        return NULL;
    }
    pattern_free(victim->compiled);
    free(victim->node_match);
    victim->node_match = NULL;
    victim->compiled = compiled;
    victim->in_use = true;
    victim->last_used = engine->clock;
    snprintf(victim->pattern, sizeof victim->pattern, "%s", pattern_text);
    return victim;
}

static uint64_t next_random(sched_engine *engine)
{
    /* xorshift64*: plenty for picking among a few top hosts. */
    uint64_t x = engine->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    engine->rng = x;
    return x * 2685821657736338717ULL;
}

/* Scores within this distance count as equal, so float noise never decides. */
#define SCORE_EPSILON 1e-9

/* Index into candidates of the chosen host. Candidates are in name order,
 * so the first of equal scores is the lowest name. `best` is that first
 * highest, found by filter_and_score. */
static size_t select_host(sched_engine *engine, size_t n, size_t best)
{
    size_t k = (size_t)engine->params.subset_size;
    if (k > n)
        k = n;
    if (k <= 1)
        return best;
    /* Keep the top k (by score, then name) in a small sorted array. */
    size_t top[64];
    if (k > 64)
        k = 64;
    size_t filled = 0;
    for (size_t i = 0; i < n; i++) {
        double s = engine->total[i];
        if (filled == k && !(s > engine->total[top[k - 1]] + SCORE_EPSILON))
            continue;
        size_t pos = filled < k ? filled++ : k - 1;
        while (pos > 0 && s > engine->total[top[pos - 1]] + SCORE_EPSILON) {
            top[pos] = top[pos - 1];
            pos--;
        }
        top[pos] = i;
    }
    return top[next_random(engine) % filled];
}

static const char *candidate_name(size_t i, const void *ctx)
{
    const sched_engine *engine = ctx;
    return engine->hosts->hosts[engine->candidates[i]].name;
}

/* near_best.h over the candidates (their scores are in engine->total). */
static size_t pick_near_best(const sched_engine *engine, const sched_request *req, size_t n,
                             size_t best)
{
    const sched_params *p = &engine->params;
    bool by_worker = p->near_best_by == NEAR_BEST_BY_WORKER;
    return near_best_pick(engine->total, n, best, candidate_name, engine,
                          by_worker ? p->near_best_worker : req->task_id,
                          by_worker ? 0 : (size_t)p->near_best_width, p->near_best_max_loss);
}

/* Append ": 5 pool mismatch, 4 insufficient memory" to the message, which
 * already holds `lead_len` bytes. */
static void explain_counts(sched_decision *out, size_t lead_len)
{
    /* Reasons by descending count, like kube-scheduler's FitError. */
    size_t used = lead_len;
    bool first = true;
    bool done[SCHED_REASON_COUNT] = {false};
    for (;;) {
        int best = -1;
        for (int r = 1; r < SCHED_REASON_COUNT; r++)
            if (!done[r] && out->reason_counts[r] &&
                (best < 0 || out->reason_counts[r] > out->reason_counts[best]))
                best = r;
        if (best < 0)
            break;
        done[best] = true;
        int wrote = snprintf(out->message + used, sizeof out->message - used, "%s%u %s",
                             first ? ": " : ", ", out->reason_counts[best],
                             sched_reason_text((sched_reason)best));
        if (wrote < 0 || (size_t)wrote >= sizeof out->message - used)
            break;
        used += (size_t)wrote;
        first = false;
    }
}

/* What the pre-filter prepared for one request. */
typedef struct plan {
    int pool_id;         /* -1: no host has the requested pool */
    bool node_named;     /* the request names a host and NodeName is on */
    long node_index;     /* then: the named host's index, -1 when no host has the name */
    bool traits_on;      /* the request lists traits and the Traits filter is on */
    bool resources_on;   /* the request asks for custom resources and Resources is on */
    pattern *node_regex; /* NULL: no node annotation (or NodeRegex disabled) */
    uint8_t *node_match; /* per host: the pattern's match cache (sched_node_matches) */
} plan;

/* The pre-filter: everything about the request that does not depend on a
 * host, checked once. Fills the plan and the vmid query. */
static int prefilter(sched_engine *engine, const sched_request *req, plan *pl, vmid_query *vmids,
                     vf_error *err)
{
    pl->pool_id = hostset_pool_id(engine->hosts, req->pool);
    pl->node_regex = NULL;
    pl->node_match = NULL;
    pl->node_named = req->node_name[0] && engine->plugins.filter_on[SCHED_FILTER_NODE_NAME];
    pl->node_index = -1;
    pl->traits_on = (req->required_traits.n || req->forbidden_traits.n) &&
                    engine->plugins.filter_on[SCHED_FILTER_TRAITS];
    pl->resources_on = req->resources.n && engine->plugins.filter_on[SCHED_FILTER_RESOURCES];
    if (pl->node_named) {
        const host *named = hostset_find(engine->hosts, req->node_name);
        if (named)
            pl->node_index = (long)(named - engine->hosts->hosts);
    }
    if (req->node_regex[0] && engine->plugins.filter_on[SCHED_FILTER_NODE_REGEX]) {
        regex_entry *entry = regex_get(engine, req->node_regex, ANNOTATION_NODE_REGEX, err);
        if (!entry)
            return -1;
        if (!entry->node_match) {
            entry->node_match = calloc(engine->capacity, 1);
            if (!entry->node_match) {
                vf_error_set(err, VF_ENOMEM, "out of memory matching node names");
                return -1;
            }
        }
        pl->node_regex = entry->compiled;
        /* Ordinary patterns take a few steps per name; this allows 256 a
         * name on average, so only a pathological one runs out. */
        pattern_set_budget(entry->compiled,
                           (unsigned long long)engine->hosts->n_hosts * 256 + PATTERN_MATCH_LIMIT);
        pl->node_match = entry->node_match;
    }
    vmids->lo = VMID_MIN;
    vmids->hi = VMID_MAX;
    vmids->regex = NULL;
    if (req->vmid_range[0] && engine->plugins.vmid_range_enabled &&
        vmid_parse_range(req->vmid_range, &vmids->lo, &vmids->hi, err) < 0)
        return -1;
    if (req->vmid_regex[0] && engine->plugins.vmid_regex_enabled) {
        regex_entry *entry = regex_get(engine, req->vmid_regex, ANNOTATION_VMID_REGEX, err);
        if (!entry)
            return -1;
        vmids->regex = entry->compiled;
    }
    return 0;
}

/* ---- groups (docs/scheduling.md "Groups") ---- */

_Static_assert(SCHED_SCORE_COUNT + 1 <= SCHED_MAX_SCORES, "a decision lists ServerGroup too");

/* ServerGroup counts as much as the other scores together: a soft policy
 * is followed while it costs no more than every other preference. */
static double group_weight(const sched_engine *engine)
{
    return engine->plugins.weights > 0 ? engine->plugins.weights : 1;
}

/* The members cap a host: max_per_host, 0 = none. */
static bool group_filters(const sched_request *req)
{
    return req->group_policy == SCHED_GROUP_AFFINITY || req->group_max_per_host > 0;
}

/* The group's hard rules as marks on hosts the caller has not excluded
 * (the pass reads them as it reads exclusions). */
static void mark_group(sched_engine *engine, const sched_request *req, const uint32_t *members)
{
    size_t n = engine->hosts->n_hosts;
    uint32_t total = 0;
    for (size_t i = 0; members && i < n; i++)
        total += members[i];
    uint8_t capped = req->group_policy == SCHED_GROUP_ANTI_AFFINITY
                         ? SCHED_REASON_GROUP_ANTI_AFFINITY
                         : SCHED_REASON_GROUP_FULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t here = members ? members[i] : 0;
        if (engine->reasons[i] != SCHED_REASON_NONE)
            continue;
        if (req->group_max_per_host > 0 && here >= (uint32_t)req->group_max_per_host)
            engine->reasons[i] = capped;
        else if (req->group_policy == SCHED_GROUP_AFFINITY && total > 0 && here == 0)
            engine->reasons[i] = SCHED_REASON_GROUP_AFFINITY;
    }
}

/* ServerGroup's score per host into engine->group_score, as Nova's
 * soft-(anti-)affinity weighers: the members a host holds, over the most any
 * host holds, 0..100 (soft-anti-affinity: 100 minus that). Returns 1 when
 * scored, 0 when the group has no member yet (every host alike: no score),
 * -1 with VF_ENOMEM. */
static int score_group(sched_engine *engine, const sched_request *req, const uint32_t *members,
                       vf_error *err)
{
    size_t n = engine->hosts->n_hosts;
    uint32_t most = 0;
    for (size_t i = 0; members && i < n; i++)
        if (members[i] > most)
            most = members[i];
    if (most == 0)
        return 0;
    if (engine->group_capacity < n) {
        double *grown = realloc(engine->group_score, n * sizeof *grown);
        if (!grown) {
            vf_error_set(err, VF_ENOMEM, "out of memory scoring group %s", req->group);
            return -1;
        }
        engine->group_score = grown;
        engine->group_capacity = n;
    }
    for (size_t i = 0; i < n; i++) {
        double share = 100.0 * members[i] / most;
        engine->group_score[i] =
            req->group_policy == SCHED_GROUP_SOFT_AFFINITY ? share : 100.0 - share;
    }
    return 1;
}

int64_t sched_engine_resource_free(const sched_engine *engine, size_t host_index, const char *name)
{
    if (!engine->hosts || host_index >= engine->hosts->n_hosts)
        return 0;
    const host_traits *has = engine->hosts->hosts[host_index].traits;
    int at = host_traits_find(has, name);
    return at < 0 ? 0 : has->resources.items[at].amount - engine->resources_held[host_index][at];
}

size_t sched_decision_host_index(const sched_engine *engine, const sched_decision *decision)
{
    return (size_t)(decision->node - engine->hosts->hosts);
}

/* Filter and score every host in one pass (plugins.h). Writes each host's
 * reason: the first enabled filter that fails, in sched_filter_id order; for
 * a host that passes them all, the reason the caller marked it with
 * (`excluded_marked`: the caller zeroed reasons and wrote
 * SCHED_REASON_ANTI_AFFINITY for the excluded hosts, a group reason for
 * those the group's hard policy rejects, beforehand), else SCHED_REASON_NONE;
 * with `group_on`, engine->group_score adds ServerGroup's score, weighted
 * as every other score together (group_weight); and
 * counts them into `counts` (zeroed by the caller). Each feasible host's index
 * goes to engine->candidates (name order) and its score to engine->total: the
 * clamped scores weighted and summed in sched_score_id order from 0, then
 * divided by the summed weights, exactly as a per-score accumulation would.
 * With subset_size 1 only the best's score is needed: *best gets its
 * candidate position (the first highest, ties within SCORE_EPSILON to the
 * lower name) and total holds its score. Returns how many are feasible. */
static inline __attribute__((always_inline)) size_t
filter_and_score(sched_engine *engine, const sched_request *req, const plan *pl,
                 bool excluded_marked, uint32_t counts[SCHED_REASON_COUNT], size_t *best,
                 bool free_on, bool most_on, bool balanced_on, bool vm_slots_on,
                 bool target_load_on, bool group_on, bool extras)
{
    /* Every switch and weight in a local: reasons is a byte array, which may
     * alias anything, so otherwise each store would make the compiler reload
     * them. The switches do not change within the loop, so their branches are
     * predicted perfectly. */
    const bool *on = engine->plugins.filter_on;
    const bool pool_on = on[SCHED_FILTER_POOL];
    const bool need_dedicated = on[SCHED_FILTER_DEDICATED] && req->dedicated;
    const bool keep_dedicated =
        on[SCHED_FILTER_DEDICATED] && !req->dedicated && engine->params.dedicated_exclusive;
    const bool status_on = on[SCHED_FILTER_STATUS];
    const bool node_named = pl->node_named;
    const long node_index = pl->node_index;
    pattern *node_regex = pl->node_regex;
    uint8_t *node_match = pl->node_match;
    const bool slots_on = on[SCHED_FILTER_VM_SLOTS];
    const bool cpu_on = on[SCHED_FILTER_CPU];
    const bool memory_on = on[SCHED_FILTER_MEMORY];
    const bool disk_on = on[SCHED_FILTER_DISK] && req->disk != 0;
    /* Traits and Resources: `extras` is a constant false for requests that
     * ask for neither, so their tests leave the common loop altogether. */
    const bool traits_on = extras && pl->traits_on;
    const bool resources_on = extras && pl->resources_on;
    const int64_t(*resources_held)[RESOURCES_MAX] =
        (const int64_t(*)[RESOURCES_MAX])engine->resources_held;
    sched_reason trait_reason = SCHED_REASON_NONE;
    const int pool_id = pl->pool_id;
    const double want_cpu = req->cpu;
    const double want_memory = (double)req->memory;
    const int64_t want_disk = req->disk;
    const double w_free = engine->plugins.score_weight[SCHED_SCORE_FREE];
    const double w_most = engine->plugins.score_weight[SCHED_SCORE_MOST_ALLOCATED];
    const double w_balanced = engine->plugins.score_weight[SCHED_SCORE_BALANCED];
    const double w_slots = engine->plugins.score_weight[SCHED_SCORE_VM_SLOTS];
    const double w_target_load = engine->plugins.score_weight[SCHED_SCORE_TARGET_LOAD];
    const double target_percent = engine->plugins.target_percent;
    const double missing_score = engine->plugins.missing_score;
    const double w_group = group_on ? group_weight(engine) : 0;
    const double *group_score = engine->group_score;
    const double weights = engine->plugins.weights + w_group;
    const bool every_total = engine->params.subset_size > 1 || near_best_on(&engine->params);
    const sched_hot *hot = engine->hot;
    const sched_host_load *loads = engine->load;
    const host *hosts = engine->hosts->hosts;
    const size_t n_hosts = engine->hosts->n_hosts;
    uint8_t *reasons = engine->reasons;
    uint32_t *candidates = engine->candidates;
    double *total = engine->total;

    size_t kept = 0;
    size_t best_pos = 0;
    double best_sum = 0;       /* the best's weighted sum, before the division */
    double best_threshold = 0; /* its score + SCORE_EPSILON: what a better host must beat */
    for (size_t i = 0; i < n_hosts; i++) {
        const sched_hot *h = &hot[i];
        const sched_host_load *load = &loads[i];
        /* Shared by the capacity filters and the scores. Nothing is stored
         * before the scores are done, so these stay in registers. */
        double cpu_after = sched_cpu_after(h, load, want_cpu);
        double memory_after = sched_memory_after(h, load, want_memory);
        sched_reason r = SCHED_REASON_NONE;
        if (pool_on && !sched_pool_fits(h, pool_id))
            r = SCHED_REASON_POOL;
        else if (need_dedicated && !h->dedicated)
            r = SCHED_REASON_NOT_DEDICATED;
        else if (keep_dedicated && h->dedicated)
            r = SCHED_REASON_DEDICATED_HOST;
        else if (status_on && h->status != HOST_ONLINE)
            r = sched_status_reason(h->status);
        else if (node_named && !sched_node_name_fits(i, node_index))
            r = SCHED_REASON_NODE_NAME;
        else if (node_regex && !sched_node_matches(node_regex, &node_match[i], hosts[i].name))
            r = SCHED_REASON_NODE_REGEX;
        else if (traits_on && (trait_reason = sched_traits_reason(&hosts[i], req)))
            r = trait_reason;
        else if (slots_on && !sched_vm_slots_fit(h, load))
            r = SCHED_REASON_VM_SLOTS;
        else if (cpu_on && !sched_cpu_fits(h, cpu_after))
            r = SCHED_REASON_CPU;
        else if (memory_on && !sched_memory_fits(h, memory_after))
            r = SCHED_REASON_MEMORY;
        else if (disk_on && !sched_disk_fits(h, load, want_disk))
            r = SCHED_REASON_DISK;
        else if (resources_on &&
                 !sched_resources_fit(&hosts[i], resources_held[i], &req->resources))
            r = SCHED_REASON_RESOURCES;
        else if (excluded_marked && reasons[i] != SCHED_REASON_NONE)
            r = (sched_reason)reasons[i]; /* excluded, or the group's hard policy */
        if (r != SCHED_REASON_NONE) {
            reasons[i] = (uint8_t)r;
            counts[r]++;
            continue;
        }

        double cpu_fraction = sched_cpu_fraction(h, cpu_after);
        double memory_fraction = sched_memory_fraction(h, memory_after);
        double sum = 0;
        if (free_on)
            sum += w_free * sched_score_clamp(sched_score_free(cpu_fraction, memory_fraction));
        if (most_on)
            sum += w_most *
                   sched_score_clamp(sched_score_most_allocated(cpu_fraction, memory_fraction));
        if (balanced_on)
            sum +=
                w_balanced * sched_score_clamp(sched_score_balanced(cpu_fraction, memory_fraction));
        if (vm_slots_on)
            sum += w_slots * h->vm_slots_score;
        if (target_load_on)
            /* Reads the full host record (usage): only while the plugin is on. */
            sum += w_target_load *
                   sched_score_clamp(sched_score_target_load(&hosts[i], load, want_cpu, want_memory,
                                                             target_percent, missing_score));
        if (group_on)
            sum += w_group * group_score[i];
        /* Dividing by the weights is monotonic, so a host whose sum is no
         * larger than the best's cannot score above the best's score plus
         * SCORE_EPSILON: when only the best matters, its division (the
         * slowest step of the pass) is skipped. */
        if (every_total || kept == 0 || !(sum <= best_sum)) {
            double score = weights > 0 ? sum / weights : sum;
            total[kept] = score;
            if (kept == 0 || score > best_threshold) {
                best_pos = kept;
                best_sum = sum;
                best_threshold = score + SCORE_EPSILON;
            }
        }
        reasons[i] = SCHED_REASON_NONE;
        candidates[kept] = (uint32_t)i;
        kept++;
    }
    counts[SCHED_REASON_NONE] = (uint32_t)kept;
    *best = best_pos;
    return kept;
}

/* filter_and_score with the score switches as constants for the default
 * set, so the compiler drops their tests from the per-host loop. */
static size_t filter_and_score_any(sched_engine *engine, const sched_request *req, const plan *pl,
                                   bool excluded_marked, bool group_on,
                                   uint32_t counts[SCHED_REASON_COUNT], size_t *best)
{
    const double *w = engine->plugins.score_weight;
    bool free_on = w[SCHED_SCORE_FREE] > 0, most_on = w[SCHED_SCORE_MOST_ALLOCATED] > 0;
    bool balanced_on = w[SCHED_SCORE_BALANCED] > 0, slots_on = w[SCHED_SCORE_VM_SLOTS] > 0;
    bool target_load_on = w[SCHED_SCORE_TARGET_LOAD] > 0;
    /* A soft group policy takes a pass of its own, so the common path's
     * loops carry no group test; traits and resources likewise. */
    bool extras = pl->traits_on || pl->resources_on;
    if (group_on)
        return filter_and_score(engine, req, pl, excluded_marked, counts, best, free_on, most_on,
                                balanced_on, slots_on, target_load_on, true, extras);
    if (free_on && !most_on && balanced_on && slots_on && !target_load_on && !extras)
        return filter_and_score(engine, req, pl, excluded_marked, counts, best, true, false, true,
                                true, false, false, false);
    return filter_and_score(engine, req, pl, excluded_marked, counts, best, free_on, most_on,
                            balanced_on, slots_on, target_load_on, false, extras);
}

/* One score plugin's clamped value for one host, for a decision's breakdown. */
static double score_part(const sched_engine *engine, sched_score_id id, size_t index,
                         const sched_request *req, double cpu_fraction, double memory_fraction)
{
    const sched_hot *h = &engine->hot[index];
    double v = 0;
    switch (id) {
    case SCHED_SCORE_FREE:
        v = sched_score_free(cpu_fraction, memory_fraction);
        break;
    case SCHED_SCORE_MOST_ALLOCATED:
        v = sched_score_most_allocated(cpu_fraction, memory_fraction);
        break;
    case SCHED_SCORE_BALANCED:
        v = sched_score_balanced(cpu_fraction, memory_fraction);
        break;
    case SCHED_SCORE_VM_SLOTS:
        v = h->vm_slots_score; /* the value the decision summed */
        break;
    case SCHED_SCORE_TARGET_LOAD:
        v = sched_score_target_load(&engine->hosts->hosts[index], &engine->load[index], req->cpu,
                                    (double)req->memory, engine->plugins.target_percent,
                                    engine->plugins.missing_score);
        break;
    case SCHED_SCORE_COUNT:
        break;
    }
    return sched_score_clamp(v);
}

/* Whether the free-capacity index can take this decision: it holds the
 * online hosts per (pool, dedicated), so the request must select exactly one
 * such group with the categorical filters on, and the only per-host filters
 * left must be the node regex and capacity ones. Anything else (a named
 * node, exclusions,
 * a random pick among the top N, filters switched off) takes the full pass, as
 * does TargetLoadPacking: the index bounds scores of committed figures only,
 * not measured use. */
static bool index_applies(const sched_engine *engine, const sched_request *req, const plan *pl,
                          bool excluded_marked, bool want_host_reasons)
{
    const bool *on = engine->plugins.filter_on;
    return fitindex_ready(engine->index) && !excluded_marked && !want_host_reasons &&
           !(engine->plugins.score_weight[SCHED_SCORE_TARGET_LOAD] > 0) &&
           engine->params.subset_size == 1 && !near_best_on(&engine->params) && pl->pool_id >= 0 &&
           !pl->node_named && !pl->traits_on && !pl->resources_on && on[SCHED_FILTER_POOL] &&
           on[SCHED_FILTER_DEDICATED] && on[SCHED_FILTER_STATUS] &&
           (req->dedicated || engine->params.dedicated_exclusive) && req->cpu >= 0 &&
           req->memory >= 0 && req->disk >= 0;
}

/* The decision by the index (index_applies holds): the same counts and the
 * same best as filter_and_score, without a pass over every host (a node
 * regex: only from kept scores, matched once per host and pattern). Returns how
 * many hosts are feasible, with engine->candidates[0] and engine->total[0]
 * the best's index and score; 0 when none is (the caller then takes the full
 * pass, which also explains per host). */
static size_t decide_by_index(sched_engine *engine, const sched_request *req, const plan *pl,
                              uint32_t counts[SCHED_REASON_COUNT])
{
    fitindex *index = engine->index;
    const int pool = pl->pool_id;
    counts[SCHED_REASON_POOL] = (uint32_t)engine->hosts->n_hosts - fitindex_pool_size(index, pool);
    /* The other dedication is rejected before the status is looked at. */
    bool other = !req->dedicated;
    uint32_t others = 0;
    for (int status = HOST_ONLINE; status <= HOST_UNKNOWN; status++)
        others += fitindex_class_count(index, pool, other, (host_status)status);
    counts[req->dedicated ? SCHED_REASON_NOT_DEDICATED : SCHED_REASON_DEDICATED_HOST] = others;
    for (int status = HOST_OFFLINE; status <= HOST_UNKNOWN; status++)
        counts[sched_status_reason((uint8_t)status)] +=
            fitindex_class_count(index, pool, req->dedicated, (host_status)status);

    const double *w = engine->plugins.score_weight;
    const bool *on = engine->plugins.filter_on;
    fitindex_query q = {
        .hot = engine->hot,
        .load = engine->load,
        .slots_on = on[SCHED_FILTER_VM_SLOTS],
        .cpu_on = on[SCHED_FILTER_CPU],
        .memory_on = on[SCHED_FILTER_MEMORY],
        .disk_on = on[SCHED_FILTER_DISK] && req->disk != 0,
        .want_cpu = req->cpu,
        .want_memory = (double)req->memory,
        .want_disk = req->disk,
        .w_free = w[SCHED_SCORE_FREE],
        .w_most = w[SCHED_SCORE_MOST_ALLOCATED],
        .w_balanced = w[SCHED_SCORE_BALANCED],
        .w_slots = w[SCHED_SCORE_VM_SLOTS],
        .weights = engine->plugins.weights,
        .score_epsilon = SCORE_EPSILON,
        .node_regex = pl->node_regex,
        .node_match = pl->node_match,
        .node_pattern = pl->node_regex ? req->node_regex : NULL,
        .hosts = engine->hosts->hosts,
    };
    fitindex_search(index, pool, req->dedicated, &q);
    if (!q.found)
        return 0;
    for (int r = 0; r < SCHED_REASON_COUNT; r++)
        counts[r] += q.counts[r];
    engine->candidates[0] = q.best;
    engine->total[0] = q.best_score;
    return counts[SCHED_REASON_NONE];
}

int sched_engine_decide(sched_engine *engine, const sched_request *req, sched_decision *out,
                        vf_error *err)
{
    return sched_engine_decide_with(engine, req, NULL, out, err);
}

int sched_engine_decide_with(sched_engine *engine, const sched_request *req,
                             const sched_decide_options *options, sched_decision *out,
                             vf_error *err)
{
    if (!engine->hosts) {
        vf_error_set(err, VF_EINTERNAL, "scheduler has no inventory yet");
        return -1;
    }
    const hostset *hosts = engine->hosts;
    memset(out, 0, sizeof *out);
    out->n_hosts = hosts->n_hosts;
    out->host_reasons = engine->reasons;

    plan pl;
    vmid_query vmids;
    if (prefilter(engine, req, &pl, &vmids, err) < 0)
        return -1;

    /* Excluded hosts that pass every filter are rejected as anti-affinity; one
     * failing a filter keeps that filter's reason. The mark goes where the
     * pass reads it. */
    bool excluded_marked = options && options->n_excluded > 0;
    bool group_hard = group_filters(req);
    if (excluded_marked || group_hard) {
        memset(engine->reasons, 0, hosts->n_hosts);
        for (size_t e = 0; excluded_marked && e < options->n_excluded; e++)
            if (options->excluded[e] < hosts->n_hosts)
                engine->reasons[options->excluded[e]] = SCHED_REASON_ANTI_AFFINITY;
        if (group_hard)
            mark_group(engine, req, options ? options->group_members : NULL);
        excluded_marked = true;
    }
    bool group_on = false;
    if (req->group_policy == SCHED_GROUP_SOFT_AFFINITY ||
        req->group_policy == SCHED_GROUP_SOFT_ANTI_AFFINITY) {
        int scored = score_group(engine, req, options ? options->group_members : NULL, err);
        if (scored < 0)
            return -1;
        group_on = scored > 0;
    }
    size_t best = 0;
    bool want_host_reasons = options && options->host_reasons;
    size_t n = 0;
    if (index_applies(engine, req, &pl, excluded_marked || group_on, want_host_reasons))
        n = decide_by_index(engine, req, &pl, out->reason_counts);
    if (n > 0) {
        out->host_reasons = NULL; /* the index charged hosts to reasons in aggregate */
    } else {
        memset(out->reason_counts, 0, sizeof out->reason_counts);
        n = filter_and_score_any(engine, req, &pl, excluded_marked, group_on, out->reason_counts,
                                 &best);
    }
    out->n_feasible = n;
    if (pl.node_regex && pattern_too_costly(pl.node_regex)) {
        refuse_costly(req->node_regex, ANNOTATION_NODE_REGEX, err);
        return -1;
    }

    if (n == 0) {
        int lead =
            snprintf(out->message, sizeof out->message, "0/%zu nodes are available", out->n_hosts);
        if (out->n_hosts == 0)
            snprintf(out->message + lead, sizeof out->message - (size_t)lead,
                     ": the inventory is empty");
        else
            explain_counts(out, (size_t)lead);
        if (pl.pool_id < 0 && out->n_hosts > 0) {
            size_t len = strlen(out->message);
            snprintf(out->message + len, sizeof out->message - len, " (no host is in pool %s)",
                     req->pool);
        }
        if (pl.node_named && pl.node_index < 0 && out->n_hosts > 0) {
            size_t len = strlen(out->message);
            snprintf(out->message + len, sizeof out->message - len, " (no host is named %s)",
                     req->node_name);
        }
        return 0;
    }

    size_t chosen = engine->params.subset_size == 1 && near_best_on(&engine->params)
                        ? pick_near_best(engine, req, n, best)
                        : select_host(engine, n, best);
    uint32_t index = engine->candidates[chosen];
    const host *node = &hosts->hosts[index];

    uint32_t scanned = 0;
    if (vmids.regex)
        /* 16 steps per candidate (an ordinary vmid pattern needs under 10):
         * the whole scan then costs at most what VMID_REGEX_SCAN_LIMIT cheap
         * matches do. */
        pattern_set_budget(vmids.regex,
                           (unsigned long long)VMID_REGEX_SCAN_LIMIT * 16 + PATTERN_MATCH_LIMIT);
    /* A reservation stepped its hint past its own id only (sched_engine_reserve). */
    advance_hint(engine);
    advance_slot_hint(engine);
    uint32_t vmid = 0;
    if (engine->vmid_spread && engine->vmid_stride > 1) {
        /* Its own class first; when that has none free (a narrow range), the
         * lowest free id as with one worker. */
        vmid = vmid_pick_strided(&vmids, hosts, &engine->holds.reserved_vmids, engine->vmid_stride,
                                 engine->vmid_slot, engine->vmid_slot_hint, &scanned);
        if (vmid == 0 && !(vmids.regex && pattern_too_costly(vmids.regex))) {
            uint32_t more = 0;
            vmid =
                vmid_pick(&vmids, hosts, &engine->holds.reserved_vmids, engine->vmid_hint, &more);
            scanned += more;
        }
    } else {
        vmid = vmid_pick(&vmids, hosts, &engine->holds.reserved_vmids, engine->vmid_hint, &scanned);
    }
    if (vmids.regex && pattern_too_costly(vmids.regex)) {
        refuse_costly(req->vmid_regex, ANNOTATION_VMID_REGEX, err);
        return -1;
    }
    if (vmid == 0) {
        if (!out->host_reasons) {
            /* Not placed after all: explain per host, as a failure always does. */
            memset(out->reason_counts, 0, sizeof out->reason_counts);
            size_t ignored = 0;
            filter_and_score_any(engine, req, &pl, false, false, out->reason_counts, &ignored);
            out->host_reasons = engine->reasons;
        }
        int lead = snprintf(out->message, sizeof out->message,
                            "%zu/%zu nodes are available, but no vmid is free", n, out->n_hosts);
        size_t used = lead > 0 ? (size_t)lead : 0;
        if (req->vmid_range[0] && engine->plugins.vmid_range_enabled)
            used += (size_t)snprintf(out->message + used, sizeof out->message - used,
                                     " in range %s", req->vmid_range);
        if (vmids.regex && used < sizeof out->message)
            snprintf(out->message + used, sizeof out->message - used,
                     " matching %.64s (%u ids examined)", req->vmid_regex, scanned);
        return 0;
    }

    out->placed = true;
    out->node = node;
    out->vmid = vmid;
    out->score = engine->total[chosen];
    if (options && options->terse)
        return 0;
    /* The breakdown: each score again, for the chosen host alone. */
    const sched_hot *h = &engine->hot[index];
    const sched_host_load *load = &engine->load[index];
    double cpu_fraction = sched_cpu_fraction(h, sched_cpu_after(h, load, req->cpu));
    double memory_fraction =
        sched_memory_fraction(h, sched_memory_after(h, load, (double)req->memory));
    for (int s = 0; s < SCHED_SCORE_COUNT; s++) {
        if (!(engine->plugins.score_weight[s] > 0))
            continue;
        double v = score_part(engine, (sched_score_id)s, index, req, cpu_fraction, memory_fraction);
        out->parts[out->n_parts++] =
            (sched_score_part){engine->plugins.score_name[s], v, engine->plugins.score_weight[s]};
    }
    if (group_on)
        out->parts[out->n_parts++] = (sched_score_part){
            SCHED_GROUP_SCORE_NAME, engine->group_score[index], group_weight(engine)};
    int lead = snprintf(out->message, sizeof out->message,
                        "%s chosen with score %.2f, vmid %u; %zu/%zu nodes are available",
                        node->name, out->score, vmid, n, out->n_hosts);
    if (n < out->n_hosts && lead > 0)
        explain_counts(out, (size_t)lead);
    return 0;
}
