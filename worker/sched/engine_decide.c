/* engine_decide: one decision, step by step (engine.h lists the steps;
 * engine_internal.h the files). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "fixtext.h"
#include "grow.h"
#include "near_best.h"
#include "vmid.h"

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
    /* Reasons by descending count, like kube-scheduler's FitError (ties in
     * reason order): the few reasons with a count gathered first, then
     * ordered among themselves, so the reasons no host has cost one test. */
    uint8_t order[SCHED_REASON_COUNT];
    size_t n = 0;
    for (int r = 1; r < SCHED_REASON_COUNT; r++) {
        if (!out->reason_counts[r])
            continue;
        size_t at = n++;
        while (at > 0 && out->reason_counts[order[at - 1]] < out->reason_counts[r]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = (uint8_t)r;
    }
    fixtext text;
    fixtext_init(&text, out->message, sizeof out->message, lead_len);
    for (size_t k = 0; k < n && !fixtext_truncated(&text); k++) {
        sched_reason reason = (sched_reason)order[k];
        char words[LABEL_KEY_LEN + 32];
        fixtext_put(&text, k == 0 ? ": " : ", ", 2);
        fixtext_uint(&text, out->reason_counts[reason]);
        fixtext_put(&text, " ", 1);
        fixtext_puts(&text, sched_decision_reason_text(out, reason, words, sizeof words));
    }
}

/* The pre-filter: everything about the request that does not depend on a
 * host, checked once. Fills the plan and the vmid query. */
static int prefilter(sched_engine *engine, const sched_request *req, plan *pl, vmid_query *vmids,
                     vf_error *err)
{
    pattern_mode mode = engine->params.regex_search ? PATTERN_SEARCH : PATTERN_WHOLE;
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
        regex_entry *entry =
            regex_cache_get(&engine->regex, req->node_regex, mode, ANNOTATION_NODE_REGEX, err);
        if (!entry || !regex_cache_node_match(entry, engine->capacity, err))
            return -1;
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
        regex_entry *entry =
            regex_cache_get(&engine->regex, req->vmid_regex, mode, ANNOTATION_VMID_REGEX, err);
        if (!entry)
            return -1;
        vmids->regex = entry->compiled;
    }
    return 0;
}

/* ---- groups (docs/scheduling.md "Groups") ---- */

_Static_assert(SCHED_SCORE_COUNT + 1 <= SCHED_MAX_SCORES, "a decision lists ServerGroup too");

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
        if (resize_array((void **)&engine->group_score, n, sizeof *engine->group_score) < 0) {
            vf_error_set(err, VF_ENOMEM, "out of memory scoring group %s", req->group);
            return -1;
        }
        engine->group_capacity = n;
    }
    for (size_t i = 0; i < n; i++) {
        double share = 100.0 * members[i] / most;
        engine->group_score[i] =
            req->group_policy == SCHED_GROUP_SOFT_AFFINITY ? share : 100.0 - share;
    }
    return 1;
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
           engine->params.subset_size == 1 && !engine_near_best_on(&engine->params) &&
           pl->pool_id >= 0 && !pl->node_named && !pl->traits_on && !pl->resources_on &&
           on[SCHED_FILTER_POOL] && on[SCHED_FILTER_DEDICATED] && on[SCHED_FILTER_STATUS] &&
           (req->dedicated || engine->params.dedicated_exclusive) && req->cpu >= 0 &&
           req->memory >= 0 && req->disk >= 0;
}

void engine_index_query(const sched_engine *engine, const sched_request *req, const plan *pl,
                        fitindex_query *q)
{
    const double *w = engine->plugins.score_weight;
    const bool *on = engine->plugins.filter_on;
    *q = (fitindex_query){
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
        .node_regex = pl ? pl->node_regex : NULL,
        .node_match = pl ? pl->node_match : NULL,
        .node_pattern = pl && pl->node_regex ? req->node_regex : NULL,
        .hosts = engine->hosts->hosts,
    };
}

/* The decision by the index (index_applies holds): the same counts and the
 * same best as filter_and_score, without a pass over every host (a node
 * regex: only from kept scores, matched once per host and pattern). Returns how
 * many hosts are feasible, with engine->candidates[0] and engine->total[0]
 * the best's index and score. *complete tells whether the counts are exact
 * (else the caller takes the full pass, which also explains per host). */
static size_t decide_by_index(sched_engine *engine, const sched_request *req, const plan *pl,
                              uint32_t counts[SCHED_REASON_COUNT], bool *complete)
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

    fitindex_query q;
    engine_index_query(engine, req, pl, &q);
    fitindex_search(index, pool, req->dedicated, &q);
    *complete = q.complete;
    for (int r = 0; r < SCHED_REASON_COUNT; r++)
        counts[r] += q.counts[r];
    if (!q.found)
        return 0;
    engine->candidates[0] = q.best;
    engine->total[0] = q.best_score;
    return counts[SCHED_REASON_NONE];
}

int sched_engine_decide(sched_engine *engine, const sched_request *req, sched_decision *out,
                        vf_error *err)
{
    return sched_engine_decide_with(engine, req, NULL, out, err);
}

/* The caller's exclusions, the group's hard policy and a hard spread as
 * marks on engine->reasons, where the pass reads them: excluded hosts that
 * pass every filter are rejected as anti-affinity; one failing a filter
 * keeps that filter's reason. Returns 1 when any mark was laid, 0 when none
 * was, -1 with err. */
static int mark_constraints(sched_engine *engine, const sched_request *req, const plan *pl,
                            const sched_decide_options *options, vf_error *err)
{
    const hostset *hosts = engine->hosts;
    bool excluded = options && options->n_excluded > 0;
    bool group_hard = group_filters(req);
    bool spread_hard = engine_spread_applies(engine, req) && !req->spread.soft;
    if (!excluded && !group_hard && !spread_hard)
        return 0;
    memset(engine->reasons, 0, hosts->n_hosts);
    for (size_t e = 0; excluded && e < options->n_excluded; e++)
        if (options->excluded[e] < hosts->n_hosts)
            engine->reasons[options->excluded[e]] = SCHED_REASON_ANTI_AFFINITY;
    const uint32_t *members = options ? options->group_members : NULL;
    if (group_hard)
        mark_group(engine, req, members);
    if (spread_hard && engine_spread_prepare(engine, req, pl, members, err) < 0)
        return -1;
    return 1;
}

/* A soft spread's scores (engine_spread_prepare). Returns 1 when
 * TopologySpread scores this decision, 0 when not, -1 with err. */
static int soft_spread(sched_engine *engine, const sched_request *req, const plan *pl,
                       const sched_decide_options *options, vf_error *err)
{
    if (!req->spread.soft)
        return 0;
    return engine_spread_prepare(engine, req, pl, options ? options->group_members : NULL, err);
}

/* A soft group policy's scores (score_group). Returns 1 when ServerGroup
 * scores this decision, 0 when not, -1 with err. */
static int soft_group(sched_engine *engine, const sched_request *req,
                      const sched_decide_options *options, vf_error *err)
{
    if (req->group_policy != SCHED_GROUP_SOFT_AFFINITY &&
        req->group_policy != SCHED_GROUP_SOFT_ANTI_AFFINITY)
        return 0;
    return score_group(engine, req, options ? options->group_members : NULL, err);
}

/* The feasible hosts and the best: by the index when it applies (then
 * out->host_reasons is NULL), else by the full pass. Fills
 * out->reason_counts; engine->candidates and engine->total as
 * engine_full_pass says. Returns how many hosts are feasible. */
static size_t find_feasible(sched_engine *engine, const sched_request *req, const plan *pl,
                            bool marked, bool group_on, bool spread_on,
                            const sched_decide_options *options, sched_decision *out, size_t *best)
{
    *best = 0;
    size_t n = 0;
    bool complete = false;
    if (index_applies(engine, req, pl, marked || group_on || spread_on,
                      options && options->host_reasons))
        n = decide_by_index(engine, req, pl, out->reason_counts, &complete);
    /* Placed, or (when the caller allows) placing nothing with the counts
     * exact: the index charged hosts to reasons in aggregate. */
    if (n > 0 || (complete && !pl->node_regex && options && options->lazy_host_reasons)) {
        out->host_reasons = NULL;
        return n;
    }
    memset(out->reason_counts, 0, sizeof out->reason_counts);
    return engine_full_pass(engine, req, pl, marked, group_on, spread_on, out->reason_counts, best);
}

/* "0/12 nodes are available: 7 insufficient cpu, ..." and what no host has. */
static void explain_unplaced(sched_decision *out, const sched_request *req, const plan *pl)
{
    int lead =
        snprintf(out->message, sizeof out->message, "0/%zu nodes are available", out->n_hosts);
    if (out->n_hosts == 0)
        snprintf(out->message + lead, sizeof out->message - (size_t)lead,
                 ": the inventory is empty");
    else
        explain_counts(out, (size_t)lead);
    if (pl->pool_id < 0 && out->n_hosts > 0) {
        size_t len = strlen(out->message);
        snprintf(out->message + len, sizeof out->message - len, " (no host is in pool %s)",
                 req->pool);
    }
    if (pl->node_named && pl->node_index < 0 && out->n_hosts > 0) {
        size_t len = strlen(out->message);
        snprintf(out->message + len, sizeof out->message - len, " (no host is named %s)",
                 req->node_name);
    }
}

/* The candidate position chosen among the n feasible (`best`: the first
 * highest). */
static size_t choose(sched_engine *engine, const sched_request *req, size_t n, size_t best)
{
    return engine->params.subset_size == 1 && engine_near_best_on(&engine->params)
               ? pick_near_best(engine, req, n, best)
               : select_host(engine, n, best);
}

/* The vmid a placement takes (vmid_hints.h); 0 when none is free. */
static uint32_t pick_vmid(sched_engine *engine, const vmid_query *vmids, uint32_t *scanned)
{
    if (vmids->regex)
        /* 16 steps per candidate (an ordinary vmid pattern needs under 10):
         * the whole scan then costs at most what VMID_REGEX_SCAN_LIMIT cheap
         * matches do. */
        pattern_set_budget(vmids->regex,
                           (unsigned long long)VMID_REGEX_SCAN_LIMIT * 16 + PATTERN_MATCH_LIMIT);
    return vmid_hints_pick(&engine->vmids, vmids, engine->hosts, &engine->holds.reserved_vmids,
                           scanned);
}

/* Hosts fit but no vmid is free: not placed after all, explained per host
 * as a failure always is. */
static void explain_no_vmid(sched_engine *engine, const sched_request *req, const plan *pl,
                            const vmid_query *vmids, size_t n, uint32_t scanned,
                            sched_decision *out)
{
    if (!out->host_reasons) {
        memset(out->reason_counts, 0, sizeof out->reason_counts);
        size_t ignored = 0;
        engine_full_pass(engine, req, pl, false, false, false, out->reason_counts, &ignored);
        out->host_reasons = engine->reasons;
    }
    int lead = snprintf(out->message, sizeof out->message,
                        "%zu/%zu nodes are available, but no vmid is free", n, out->n_hosts);
    size_t used = lead > 0 ? (size_t)lead : 0;
    if (req->vmid_range[0] && engine->plugins.vmid_range_enabled)
        used += (size_t)snprintf(out->message + used, sizeof out->message - used, " in range %s",
                                 req->vmid_range);
    if (vmids->regex && used < sizeof out->message)
        snprintf(out->message + used, sizeof out->message - used,
                 " matching %.64s (%u ids examined)", req->vmid_regex, scanned);
}

/* A placement on host `index` with `vmid`: the decision's fields, and
 * unless terse its breakdown and message. */
static void fill_placed(sched_engine *engine, const sched_request *req, bool terse, bool group_on,
                        bool spread_on, uint32_t index, double score, uint32_t vmid, size_t n,
                        sched_decision *out)
{
    const host *node = &engine->hosts->hosts[index];
    out->placed = true;
    out->node = node;
    out->vmid = vmid;
    out->score = score;
    if (terse)
        return;
    engine_breakdown(engine, req, index, group_on, spread_on, out);
    /* "NAME chosen with score %.2f, vmid %u; %zu/%zu nodes are available",
     * without printf (fixtext.h). */
    fixtext text;
    fixtext_init(&text, out->message, sizeof out->message, 0);
    fixtext_puts(&text, node->name);
    fixtext_puts(&text, " chosen with score ");
    fixtext_fixed2(&text, out->score);
    fixtext_puts(&text, ", vmid ");
    fixtext_uint(&text, vmid);
    fixtext_put(&text, "; ", 2);
    fixtext_uint(&text, n);
    fixtext_put(&text, "/", 1);
    fixtext_uint(&text, out->n_hosts);
    fixtext_puts(&text, " nodes are available");
    if (n < out->n_hosts && !fixtext_truncated(&text))
        explain_counts(out, text.len);
}

int sched_engine_decide_with(sched_engine *engine, const sched_request *req,
                             const sched_decide_options *options, sched_decision *out,
                             vf_error *err)
{
    if (!engine->hosts) {
        vf_error_set(err, VF_EINTERNAL, "scheduler has no inventory yet");
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->n_hosts = engine->hosts->n_hosts;
    out->host_reasons = engine->reasons;

    plan pl;
    vmid_query vmids;
    if (prefilter(engine, req, &pl, &vmids, err) < 0)
        return -1;
    if (engine_spread_applies(engine, req))
        snprintf(out->spread_key, sizeof out->spread_key, "%s", req->spread.key);
    int marked = mark_constraints(engine, req, &pl, options, err);
    int group_on = marked < 0 ? -1 : soft_group(engine, req, options, err);
    int spread_on = group_on < 0 ? -1 : soft_spread(engine, req, &pl, options, err);
    if (spread_on < 0)
        return -1;
    size_t best;
    size_t n = find_feasible(engine, req, &pl, marked > 0, group_on > 0, spread_on > 0, options,
                             out, &best);
    out->n_feasible = n;
    if (pl.node_regex && pattern_too_costly(pl.node_regex)) {
        regex_refuse_costly(req->node_regex, ANNOTATION_NODE_REGEX, err);
        return -1;
    }
    if (n == 0) {
        explain_unplaced(out, req, &pl);
        engine_spread_explain(engine, req, out);
        return 0;
    }

    size_t chosen = choose(engine, req, n, best);
    uint32_t scanned = 0;
    uint32_t vmid = pick_vmid(engine, &vmids, &scanned);
    if (vmids.regex && pattern_too_costly(vmids.regex)) {
        regex_refuse_costly(req->vmid_regex, ANNOTATION_VMID_REGEX, err);
        return -1;
    }
    if (vmid == 0) {
        explain_no_vmid(engine, req, &pl, &vmids, n, scanned, out);
        return 0;
    }
    fill_placed(engine, req, options && options->terse, group_on > 0, spread_on > 0,
                engine->candidates[chosen], engine->total[chosen], vmid, n, out);
    if (marked > 0)
        engine_spread_explain(engine, req, out);
    return 0;
}

int engine_pool_of(const sched_engine *engine, const sched_request *req)
{
    return engine->hosts ? hostset_pool_id(engine->hosts, req->pool) : -1;
}

bool engine_decided_lazily(const sched_engine *engine, const sched_decision *decision)
{
    return !decision->placed && !decision->host_reasons && engine->hosts &&
           decision->n_hosts == engine->hosts->n_hosts;
}

/* A lazily decided failure's reason for host i: the categorical filters the
 * index counts per class, as the full pass orders them (index_applies holds:
 * Pool, Dedicated and NodeStatus are on), then the capacity filters. */
static sched_reason lazy_reason(const sched_engine *engine, const sched_request *req, size_t i)
{
    const sched_hot *h = &engine->hot[i];
    if (!sched_pool_fits(h, engine_pool_of(engine, req)))
        return SCHED_REASON_POOL;
    if (req->dedicated && !h->dedicated)
        return SCHED_REASON_NOT_DEDICATED;
    if (!req->dedicated && engine->params.dedicated_exclusive && h->dedicated)
        return SCHED_REASON_DEDICATED_HOST;
    if (h->status != HOST_ONLINE)
        return sched_status_reason(h->status);
    fitindex_query q;
    engine_index_query(engine, req, NULL, &q);
    return fitindex_reason(&q, (uint32_t)i);
}

sched_reason sched_decision_host_reason(const sched_engine *engine, const sched_request *req,
                                        const sched_decision *decision, size_t i)
{
    if (!engine->hosts || i >= engine->hosts->n_hosts || i >= decision->n_hosts)
        return SCHED_REASON_NONE;
    if (decision->host_reasons)
        return (sched_reason)decision->host_reasons[i];
    if (engine_decided_lazily(engine, decision))
        return lazy_reason(engine, req, i);
    return SCHED_REASON_NONE; /* placed: the reasons were not kept */
}

/* The first capacity-rejected member with reason `reason`, by a walk over
 * the group's counting tree by first host, skipping subtrees where every
 * host fails otherwise. */
typedef struct first_walk {
    const sched_engine *engine;
    const sched_request *req;
    fitindex_query q;
    sched_reason reason;
    size_t found; /* SIZE_MAX: none yet */
} first_walk;

static double first_rank(const fitindex_span *span, void *ctx)
{
    first_walk *w = ctx;
    int all = fitindex_span_reason(&w->q, span);
    if (span->first >= w->found || (all != SCHED_REASON_COUNT && all != (int)w->reason))
        return INFINITY;
    return span->first;
}

static void first_host(uint32_t i, void *ctx)
{
    first_walk *w = ctx;
    if (i < w->found && lazy_reason(w->engine, w->req, i) == w->reason)
        w->found = i;
}

size_t engine_first_with_reason(const sched_engine *engine, const sched_request *req,
                                sched_reason reason)
{
    const hostset *hosts = engine->hosts;
    bool capacity = reason == SCHED_REASON_VM_SLOTS || reason == SCHED_REASON_CPU ||
                    reason == SCHED_REASON_MEMORY || reason == SCHED_REASON_DISK;
    int pool = engine_pool_of(engine, req);
    if (capacity) {
        first_walk w = {engine, req, {0}, reason, SIZE_MAX};
        engine_index_query(engine, req, NULL, &w.q);
        fitindex_walker walker = {first_rank, first_host, &w};
        fitindex_walk(engine->index, pool, req->dedicated, &walker);
        return w.found;
    }
    /* The others are outside the group: in host order, skipping its
     * members (sorted). */
    size_t n_members = 0;
    const uint32_t *members = fitindex_members(engine->index, pool, req->dedicated, &n_members);
    for (size_t i = 0, m = 0; i < hosts->n_hosts; i++) {
        if (m < n_members && members[m] == i) {
            m++;
            continue;
        }
        if (lazy_reason(engine, req, i) == reason)
            return i;
    }
    return SIZE_MAX;
}
