/* plugins: the filter, score and vmid plugins the engine runs, and the one
 * registry that lists them all (registry.c).
 *
 * Each filter and score is a small per-host rule below. The engine runs every
 * enabled rule for a host in one pass over the hosts (engine_pass.c,
 * filter_and_score): a chain of filters in the order of sched_filter_id, then
 * the weighted scores in the order of sched_score_id. One pass keeps a
 * decision over 10,000 hosts in cache and in well-predicted branches, where
 * a pass per plugin would walk the hosts a dozen times.
 *
 * Order is part of the behaviour: a rejected host is charged to the first
 * filter that fails, so categorical checks (pool, dedicated, status, name)
 * come before capacity; and scores are summed in their order, which fixes
 * the floating-point result to the last bit.
 *
 * CHECKLIST: adding a plugin, every place it touches, in order. The unit
 * tests named last fail when one of the earlier steps is missing; the docs do
 * not (keep the plugin table in docs/scheduling.md by hand).
 *   A score:
 *   1. here: its id in sched_score_id (the summing order) and its rule, a
 *      static inline function of the committed figures (0..100 before clamping);
 *   2. registry.c: its name, on/off by default, default weight, its args;
 *      plugin_config.c needs nothing more: it turns the registry's rows and
 *      the configuration's entries into weights for any score;
 *   3. engine_pass.c: filter_and_score (the sum, and its specialised call
 *      in engine_full_pass when it is on by default) and score_part (the
 *      breakdown a decision lists; explain.c prints whatever it lists);
 *   4. fitindex.h/.c: the same term in fitindex_score_sum and an upper bound for
 *      a subtree in the search (or make index_applies in engine_decide.c
 *      refuse the index while the score is on: the same decisions, only
 *      slower);
 *   5. tests/unit/test_engine.c (its cases) and test_engine_fused.c (the index
 *      and the full pass must agree, host by host);
 *   6. docs/scheduling.md: the plugin table and the pipeline's list.
 *   A filter:
 *   1. here: its id in sched_filter_id (the order rejections are charged in)
 *      and its rule; engine.h: a sched_reason, and engine.c: its text in
 *      sched_reason_text (what "0/12 nodes are available: ..." says);
 *   2. registry.c (plugin_config.c again needs nothing);
 *   3. engine_pass.c: filter_and_score's chain; engine_decide.c: prefilter
 *      when it reads the request (as NodeName and NodeRegex do), and
 *      index_applies (whether the index can still take the decision) or
 *      fitindex's counts;
 *   4. suggest.c: is_constraint / constraint_of (what would fix it), or
 *      change_on for a capacity rule; never_fits.c when a request can be
 *      told at once that no host of the snapshot could ever take it;
 *   5. the tests and docs as for a score.
 *   An argument (args: {...}) for a plugin, new to every plugin so far:
 *   1. common/config/config.h: its field and has_ flag in config_plugin (with its
 *      unit); common/config/config_keys.c: its row in the plugin args table (range,
 *      .doc), then regenerate docs/configuration.md (the config_reference
 *      target; a test fails while the committed page differs);
 *   2. plugin_config.c: apply_args (where its value goes: an engine
 *      parameter or a plugin_config field); check_args reads the key table
 *      (config_plugin_arg_set), so it needs nothing;
 *   3. registry.c: its name in the plugin's args list ("ratio, reserve");
 *   4. tests/unit/test_config.c (parsing, range) and test_engine.c (effect);
 *      the config fuzz target (tests/fuzz/fuzz_config.c) reads the key table
 *      and needs no change.
 *   A vmid plugin: sched_vmid_plugin here, registry.c, plugin_config.c's last
 *   switch (its on flag), engine_decide.c's prefilter, vmid.c, and the tests.
 *   A name the seeds or another scheduler use for an existing plugin: one
 *   row in registry.c's sched_plugin_aliases, nothing else. */
#ifndef VF_PLUGINS_H
#define VF_PLUGINS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine.h"
#include "pattern.h"

/* The figures filters and scores read, per host, packed together and with
 * capacities precomputed when the snapshot is set: a pass over 10,000 of
 * these stays in cache where the full host records (names, addresses) do not. */
typedef struct sched_hot {
    double cpu_capacity;     /* vCPUs after reserve and overcommit */
    double memory_capacity;  /* MiB after reserve and overcommit */
    double allocated_cpu;    /* vCPUs */
    double allocated_memory; /* MiB */
    int64_t storage;         /* GiB */
    int32_t max_vms;
    int32_t current_vms;
    uint32_t pool_id;
    uint8_t status; /* host_status */
    bool dedicated;
    /* The VMSlots score, clamped: it depends on the host and its reservations
     * only, so the engine keeps it current (set_hosts, every load change)
     * instead of dividing per decision. */
    double vm_slots_score;
} sched_hot;

/* Filters, in the order they run. */
typedef enum {
    SCHED_FILTER_POOL,
    SCHED_FILTER_DEDICATED,
    SCHED_FILTER_STATUS,
    SCHED_FILTER_NODE_NAME,
    SCHED_FILTER_NODE_REGEX,
    SCHED_FILTER_TRAITS,
    SCHED_FILTER_VM_SLOTS,
    SCHED_FILTER_CPU,
    SCHED_FILTER_MEMORY,
    SCHED_FILTER_DISK,
    SCHED_FILTER_RESOURCES,
    /* The request's topology spread (spread.h): last, as a group's hard
     * policy is, since it depends on where the request's group already is.
     * Its rule is spread_fits; the engine lays it on hosts as marks the
     * pass charges after every other filter (engine_spread.c). */
    SCHED_FILTER_TOPOLOGY_SPREAD,
    SCHED_FILTER_COUNT
} sched_filter_id;

/* Scores, in the order they are summed (and listed in a decision's parts). */
typedef enum {
    SCHED_SCORE_FREE,
    SCHED_SCORE_MOST_ALLOCATED,
    SCHED_SCORE_BALANCED,
    SCHED_SCORE_VM_SLOTS,
    SCHED_SCORE_TARGET_LOAD,
    /* A soft topology spread's score (spread_score), summed only for the
     * requests that ask one: its weight is left out of
     * plugin_config.weights and added by those decisions alone, so every
     * other decision scores exactly as it did. */
    SCHED_SCORE_TOPOLOGY_SPREAD,
    SCHED_SCORE_COUNT
} sched_score_id;

typedef enum { SCHED_VMID_RANGE, SCHED_VMID_REGEX, SCHED_VMID_COUNT } sched_vmid_plugin;

typedef struct sched_plugin {
    const char *name;
    config_plugin_kind kind;
    bool enabled_by_default;
    double default_weight; /* scores only */
    int id;                /* by kind: sched_filter_id, sched_score_id or sched_vmid_plugin */
    const char *args;      /* the `args:` it takes, for messages and the docs; NULL none */
} sched_plugin;

/* Names other schedulers use for a plugin here (qemu-scheduler, CAPPX). */
typedef struct sched_plugin_alias {
    const char *name;
    config_plugin_kind kind;
    const char *means; /* the registered plugin's name */
} sched_plugin_alias;

extern const sched_plugin_alias sched_plugin_aliases[];
extern const size_t sched_plugin_alias_count;

/* qemu-scheduler's Random score: here, a random pick among the top
 * `subset_size` hosts (args subset_size, default 3, and seed), so it is
 * configured as a score but never summed. */
#define SCHED_PLUGIN_RANDOM "Random"
#define SCHED_RANDOM_DEFAULT_SUBSET 3

extern const sched_plugin sched_plugins[];
extern const size_t sched_plugin_count;

/* ---- Filters: true when the host can take the request. ---- */

/* Pool: the host is in the requested pool (-1: no host is). */
static inline bool sched_pool_fits(const sched_hot *h, int pool_id)
{
    return (int)h->pool_id == pool_id;
}

/* Dedicated: a dedicated request needs a dedicated host
 * (SCHED_REASON_NOT_DEDICATED); with dedicated_exclusive a shared request
 * stays off dedicated hosts (SCHED_REASON_DEDICATED_HOST). */

/* NodeStatus: only online hosts take guests; the reason names the status. */
static inline sched_reason sched_status_reason(uint8_t status)
{
    switch ((host_status)status) {
    case HOST_ONLINE:
        return SCHED_REASON_NONE;
    case HOST_OFFLINE:
        return SCHED_REASON_OFFLINE;
    case HOST_MAINTENANCE:
        return SCHED_REASON_MAINTENANCE;
    case HOST_UNKNOWN:
        return SCHED_REASON_STATUS_UNKNOWN;
    }
    return SCHED_REASON_STATUS_UNKNOWN;
}

/* NodeName: the host the request names, by its index in the snapshot
 * (resolved once per request; -1 when no host has that name). */
static inline bool sched_node_name_fits(size_t index, long named_index)
{
    return (long)index == named_index;
}

/* NodeRegex: whole-name match (pattern.h anchors every pattern). The
 * result per host is cached in `cache` (0 unknown, 1 match, 2 mismatch)
 * across decisions that use the same pattern on the same snapshot, so regex
 * requests cost little more than plain ones. A pattern that has hit the
 * match limits matches nothing more (the engine then refuses the request),
 * so a hostile pattern costs one limit's worth, not one per host. */
static inline bool sched_node_matches(pattern *regex, uint8_t *cache, const char *name)
{
    uint8_t cached = *cache;
    if (cached == 0) {
        cached =
            !pattern_too_costly(regex) && pattern_match(regex, name, strlen(name)) == PATTERN_MATCH
                ? 1
                : 2;
        *cache = cached;
    }
    return cached == 1;
}

/* Traits: the host carries every required trait and no forbidden one
 * (traits.h; names compared without regard to case). Run only for requests
 * that list traits: the others never reach it. */
static inline sched_reason sched_traits_reason(const host *h, const sched_request *req)
{
    for (size_t t = 0; t < req->required_traits.n; t++)
        if (!host_traits_has(h->traits, req->required_traits.names[t]))
            return SCHED_REASON_TRAIT_MISSING;
    for (size_t t = 0; t < req->forbidden_traits.n; t++)
        if (host_traits_has(h->traits, req->forbidden_traits.names[t]))
            return SCHED_REASON_TRAIT_FORBIDDEN;
    return SCHED_REASON_NONE;
}

/* Resources: each custom resource the request asks for is left on the host
 * in that amount: its inventory total less what live reservations hold
 * (`held`, by the host's own resource positions). A host without the
 * resource has none of it. Only for requests that ask for one. */
static inline bool sched_resources_fit(const host *h, const int64_t held[RESOURCES_MAX],
                                       const resource_amounts *want)
{
    for (size_t r = 0; r < want->n; r++) {
        if (want->items[r].amount == 0)
            continue;
        int at = host_traits_find(h->traits, want->items[r].name);
        if (at < 0 || h->traits->resources.items[at].amount - held[at] < want->items[r].amount)
            return false;
    }
    return true;
}

/* VMSlots: a guest slot is left after live reservations. */
static inline bool sched_vm_slots_fit(const sched_hot *h, const sched_host_load *load)
{
    return h->current_vms + load->vms < h->max_vms;
}

/* A tolerance so that a request that exactly fills a host fits despite
 * floating-point rounding of the overcommitted capacity. */
#define SCHED_FIT_EPSILON 1e-9

/* Committed vCPUs and MiB once the request is placed (allocated + reserved
 * + requested): what the capacity filters and the scores compare. */
static inline double sched_cpu_after(const sched_hot *h, const sched_host_load *load,
                                     double want /* vCPUs */)
{
    return h->allocated_cpu + load->cpu + want;
}
static inline double sched_memory_after(const sched_hot *h, const sched_host_load *load,
                                        double want /* MiB */)
{
    return h->allocated_memory + (double)load->memory + want;
}

/* CPUOvercommit: committed vCPUs after placement stay within capacity. */
static inline bool sched_cpu_fits(const sched_hot *h, double cpu_after)
{
    return cpu_after <= h->cpu_capacity + SCHED_FIT_EPSILON;
}

/* MemoryOvercommit: likewise for MiB. */
static inline bool sched_memory_fits(const sched_hot *h, double memory_after)
{
    return memory_after <= h->memory_capacity + SCHED_FIT_EPSILON;
}

/* Disk: free storage after reservations covers the request (skipped when
 * the request asks for no disk). */
static inline bool sched_disk_fits(const sched_hot *h, const sched_host_load *load,
                                   int64_t want /* GiB */)
{
    return h->storage - load->disk >= want;
}

/* ---- Scores: 0..100 (before clamping) as the host would be AFTER the
 * request is placed on it, from committed figures (allocated + reserved), so
 * the result does not swing with a momentary load spike and a burst of
 * decisions spreads out instead of piling onto one host. ---- */

/* Committed / capacity after placing the request (sched_cpu_after); 0..1
 * when it fits. */
static inline double sched_cpu_fraction(const sched_hot *h, double cpu_after)
{
    return h->cpu_capacity > 0 ? cpu_after / h->cpu_capacity : 1.0;
}
static inline double sched_memory_fraction(const sched_hot *h, double memory_after)
{
    return h->memory_capacity > 0 ? memory_after / h->memory_capacity : 1.0;
}

/* FreeResources (spread): prefer the host with the most room left. */
static inline double sched_score_free(double cpu_fraction, double memory_fraction)
{
    return 100.0 * ((1.0 - cpu_fraction) + (1.0 - memory_fraction)) / 2.0;
}

/* MostAllocated (pack): prefer the fullest host that still fits (off by default). */
static inline double sched_score_most_allocated(double cpu_fraction, double memory_fraction)
{
    return 100.0 * (cpu_fraction + memory_fraction) / 2.0;
}

/* Balanced: prefer hosts whose CPU and memory fill evenly, so neither is stranded. */
static inline double sched_score_balanced(double cpu_fraction, double memory_fraction)
{
    return 100.0 * (1.0 - fabs(cpu_fraction - memory_fraction));
}

/* VMSlots: prefer hosts with more guest slots left after placement; under
 * strategy: pack, fewer, so that it prefers the fuller host as MostAllocated
 * does instead of pulling the other way (kept, clamped, in
 * sched_hot.vm_slots_score). */
static inline double sched_score_vm_slots(const sched_hot *h, const sched_host_load *load,
                                          bool pack)
{
    int32_t used = h->current_vms + load->vms + 1;
    if (h->max_vms <= 0)
        return 0.0;
    return 100.0 * (pack ? used : h->max_vms - used) / h->max_vms;
}

/* TargetLoadPacking (Trimaran's, off by default): on MEASURED utilisation,
 * the one score that does not read committed figures. A host's predicted use
 * of a resource, in percent, is its measured use (usage_cpu, usage_mem)
 * plus what its live reservations and the request would add at their full
 * size (vCPUs of its cores, MiB of its memory): reservations end when their
 * guest shows up in the inventory, whose next measurement then counts it.
 * Per resource, with target T percent: the score rises from T (idle) to 100
 * at T, then falls to 0 at 100 % and beyond, so the busiest host still below
 * the target wins, an idle host comes next, and an overloaded one last. The
 * host's score is the mean over the resources it has a measurement of;
 * `missing` (args.missing_score, default 50, the middle of the scale) when it
 * has none, so an unmeasured host is neither preferred nor avoided. */
#define SCHED_TARGET_LOAD_DEFAULT_PERCENT 40.0
#define SCHED_TARGET_LOAD_DEFAULT_MISSING 50.0

/* One resource: predicted use in percent (>= 0), target 0 < T < 100. */
static inline double sched_target_load_curve(double predicted, double target)
{
    if (predicted <= target)
        return (100.0 - target) * predicted / target + target;
    if (predicted >= 100.0)
        return 0.0;
    return target * (100.0 - predicted) / (100.0 - target);
}

static inline double sched_score_target_load(const host *h, const sched_host_load *load,
                                             double want_cpu /* vCPUs */,
                                             double want_memory /* MiB */, double target,
                                             double missing)
{
    double sum = 0;
    int known = 0;
    if (h->has_usage_cpu && h->cpu > 0) {
        double predicted = 100.0 * (h->usage_cpu + (load->cpu + want_cpu) / h->cpu);
        sum += sched_target_load_curve(predicted, target);
        known++;
    }
    if (h->has_usage_mem && h->memory > 0) {
        double predicted =
            100.0 * (h->usage_mem + ((double)load->memory + want_memory) / (double)h->memory);
        sum += sched_target_load_curve(predicted, target);
        known++;
    }
    return known ? sum / known : missing;
}

/* Normalisation: a score plugin's value counts only within 0..100. */
static inline double sched_score_clamp(double v)
{
    return v < 0 ? 0 : v > 100 ? 100 : v;
}

#endif
