/* engine_pass: the full pass, every filter and score over every host at
 * once (plugins.h says why one pass rather than one per plugin). A decision
 * takes it when the free-capacity index cannot (fitindex.h), and to explain
 * a failure host by host. */
#include "engine_internal.h"

/* Filter and score every host in one pass (plugins.h). Writes each host's
 * reason: the first enabled filter that fails, in sched_filter_id order; for
 * a host that passes them all, the reason the caller marked it with
 * (`excluded_marked`: the caller zeroed reasons and wrote
 * SCHED_REASON_ANTI_AFFINITY for the excluded hosts, a group reason for
 * those the group's hard policy rejects, beforehand), else SCHED_REASON_NONE;
 * with `group_on`, engine->group_score adds ServerGroup's score, weighted
 * as every other score together (engine_group_weight); with `spread_on`,
 * engine->spread_score adds TopologySpread's, at its weight; and
 * counts them into `counts` (zeroed by the caller). Each feasible host's index
 * goes to engine->candidates (name order) and its score to engine->total: the
 * clamped scores weighted and summed in sched_score_id order from 0, then
 * divided by the summed weights, exactly as a per-score accumulation would.
 * With subset_size 1 only the best's score is needed: *best gets its
 * candidate position (the first highest, ties within SCORE_EPSILON to the
 * lower name) and total holds its score. Returns how many are feasible.
 *
 * Fused on purpose, and so longer than a function should be: the filters
 * and scores of one host share the figures they read (its committed vCPUs
 * and MiB after the request), which stay in registers; split into a call
 * per step the pass costs more per host. bench_engine's "group member"
 * case (a soft group policy, which the index does not take) times this
 * loop at every fleet size; docs/benchmarks.md, "The engine at fleet scale". */
static inline __attribute__((always_inline)) size_t
filter_and_score(sched_engine *engine, const sched_request *req, const plan *pl,
                 bool excluded_marked, uint32_t counts[SCHED_REASON_COUNT], size_t *best,
                 bool free_on, bool most_on, bool balanced_on, bool vm_slots_on,
                 bool target_load_on, bool group_on, bool spread_on, bool extras)
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
    const double w_group = group_on ? engine_group_weight(engine) : 0;
    const double *group_score = engine->group_score;
    const double w_spread = spread_on ? engine_spread_weight(engine) : 0;
    const double *spread_score = engine->spread_score;
    const double weights = engine->plugins.weights + w_spread + w_group;
    const bool every_total = engine->params.subset_size > 1 || engine_near_best_on(&engine->params);
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
        if (spread_on)
            sum += w_spread * spread_score[i];
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
size_t engine_full_pass(sched_engine *engine, const sched_request *req, const plan *pl,
                        bool excluded_marked, bool group_on, bool spread_on,
                        uint32_t counts[SCHED_REASON_COUNT], size_t *best)
{
    const double *w = engine->plugins.score_weight;
    bool free_on = w[SCHED_SCORE_FREE] > 0, most_on = w[SCHED_SCORE_MOST_ALLOCATED] > 0;
    bool balanced_on = w[SCHED_SCORE_BALANCED] > 0, slots_on = w[SCHED_SCORE_VM_SLOTS] > 0;
    bool target_load_on = w[SCHED_SCORE_TARGET_LOAD] > 0;
    /* A soft group policy or spread takes a pass of its own, so the common
     * path's loops carry no test of theirs; traits and resources likewise. */
    bool extras = pl->traits_on || pl->resources_on;
    if (spread_on)
        return filter_and_score(engine, req, pl, excluded_marked, counts, best, free_on, most_on,
                                balanced_on, slots_on, target_load_on, group_on, true, extras);
    if (group_on)
        return filter_and_score(engine, req, pl, excluded_marked, counts, best, free_on, most_on,
                                balanced_on, slots_on, target_load_on, true, false, extras);
    if (free_on && !most_on && balanced_on && slots_on && !target_load_on && !extras)
        return filter_and_score(engine, req, pl, excluded_marked, counts, best, true, false, true,
                                true, false, false, false, false);
    return filter_and_score(engine, req, pl, excluded_marked, counts, best, free_on, most_on,
                            balanced_on, slots_on, target_load_on, false, false, extras);
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
    case SCHED_SCORE_TOPOLOGY_SPREAD:
        v = engine->spread_score[index]; /* the value the decision summed */
        break;
    case SCHED_SCORE_COUNT:
        break;
    }
    return sched_score_clamp(v);
}

void engine_breakdown(const sched_engine *engine, const sched_request *req, size_t index,
                      bool group_on, bool spread_on, sched_decision *out)
{
    const sched_hot *h = &engine->hot[index];
    const sched_host_load *load = &engine->load[index];
    double cpu_fraction = sched_cpu_fraction(h, sched_cpu_after(h, load, req->cpu));
    double memory_fraction =
        sched_memory_fraction(h, sched_memory_after(h, load, (double)req->memory));
    /* TopologySpread, the last id, only when this decision summed it. */
    int scores = spread_on ? SCHED_SCORE_COUNT : SCHED_SCORE_TOPOLOGY_SPREAD;
    for (int s = 0; s < scores; s++) {
        if (!(engine->plugins.score_weight[s] > 0))
            continue;
        double v = score_part(engine, (sched_score_id)s, index, req, cpu_fraction, memory_fraction);
        out->parts[out->n_parts++] =
            (sched_score_part){engine->plugins.score_name[s], v, engine->plugins.score_weight[s]};
    }
    if (group_on)
        out->parts[out->n_parts++] = (sched_score_part){
            SCHED_GROUP_SCORE_NAME, engine->group_score[index], engine_group_weight(engine)};
}
