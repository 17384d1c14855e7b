/* engine_internal: what the engine's own files share (engine.h is the
 * contract callers see). The engine is one handle in five files, each one
 * responsibility:
 *   engine.c           the handle, its snapshot and the live reservations
 *                      (what is free on each host, and the vmid hints)
 *   engine_profiles.c  scheduling profiles: engines that share the snapshot
 *                      and reservations and decide by other rules
 *   engine_decide.c    one decision, step by step (pre-filter, constraints,
 *                      feasible hosts, select, vmid, the explanation)
 *   engine_pass.c      the fused filter-and-score pass over every host
 *   engine_spread.c    a request's topology spread in one decision: the
 *                      eligible domains, the marks or scores (spread.h)
 * and the modules it keeps: fitindex.h (the free-capacity index),
 * holds.h, vmid_hints.h, regex_cache.h. Not for use outside worker/sched. */
#ifndef VF_ENGINE_INTERNAL_H
#define VF_ENGINE_INTERNAL_H

#include "engine.h"
#include "fitindex.h"
#include "holds.h"
#include "pattern.h"
#include "plugin_config.h"
#include "plugins.h"
#include "regex_cache.h"
#include "spread.h"
#include "vmid_hints.h"

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
    /* A request's topology spread: the domains of its key over the snapshot
     * and the last decision's counts (spread.h, engine_spread.c); the
     * suggestions read them after the decision. */
    spread_view spread;
    double *spread_score;   /* per host: TopologySpread's score, for a soft spread */
    size_t spread_capacity; /* its length */
    fitindex *index;        /* over hot and load; not ready: decide by the full pass */

    holds holds;       /* the live reservations and their vmids: holds.h */
    vmid_hints vmids;  /* where the next vmid search starts: vmid_hints.h */
    regex_cache regex; /* compiled annotation patterns: regex_cache.h */
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

/* Scores within this distance count as equal, so float noise never decides. */
#define SCORE_EPSILON 1e-9

/* Whether decisions pick among the near-best (near_best.h). */
static inline bool engine_near_best_on(const sched_params *p)
{
    return p->near_best_by == NEAR_BEST_BY_WORKER ? p->near_best_worker[0] != '\0'
                                                  : p->near_best_width > 1;
}

/* ServerGroup counts as much as the other scores together: a soft policy
 * is followed while it costs no more than every other preference. */
static inline double engine_group_weight(const sched_engine *engine)
{
    return engine->plugins.weights > 0 ? engine->plugins.weights : 1;
}

/* TopologySpread's weight (a soft spread adds it to the decision's). */
static inline double engine_spread_weight(const sched_engine *engine)
{
    return engine->plugins.score_weight[SCHED_SCORE_TOPOLOGY_SPREAD];
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

/* engine_decide.c: the free-capacity index's query for `req` (index_applies
 * holds): the capacity filters and scores as the full pass runs them, with
 * `pl`'s node regex (NULL: none). */
void engine_index_query(const sched_engine *engine, const sched_request *req, const plan *pl,
                        fitindex_query *q);
/* Whether a decision for `req` that places nothing was made by the index
 * without per-host reasons (lazy_host_reasons): every host of the request's
 * (pool, dedication) group was rejected for capacity, every other one by a
 * categorical filter (pool, dedicated, status). */
bool engine_decided_lazily(const sched_engine *engine, const sched_decision *decision);
/* For a failure decided lazily: the first host (in name order) rejected
 * for `reason`, SIZE_MAX when none is. */
size_t engine_first_with_reason(const sched_engine *engine, const sched_request *req,
                                sched_reason reason);
/* The pool the request names, as the index groups hosts (-1: none). */
int engine_pool_of(const sched_engine *engine, const sched_request *req);

/* engine_pass.c: filter and score every host in one pass. Writes each
 * host's reason into engine->reasons and counts them into `counts` (zeroed
 * by the caller); `excluded_marked`: the caller zeroed reasons and marked
 * the hosts it excludes (anti-affinity, a group's hard policy, a hard
 * spread) beforehand; `group_on`: engine->group_score adds ServerGroup's
 * score; `spread_on`: engine->spread_score adds TopologySpread's. Each feasible
 * host's index goes to engine->candidates (name order) and its score to
 * engine->total (with subset_size 1 and no near-best pick, only the
 * best's); *best is the best's candidate position. Returns how many are
 * feasible. */
size_t engine_full_pass(sched_engine *engine, const sched_request *req, const plan *pl,
                        bool excluded_marked, bool group_on, bool spread_on,
                        uint32_t counts[SCHED_REASON_COUNT], size_t *best);
/* A placed decision's breakdown: each enabled score's clamped value on
 * host `index` (the values the pass summed), weighted, in sched_score_id
 * order (TopologySpread's with `spread_on` only), then ServerGroup's with
 * `group_on`, appended to out->parts. */
void engine_breakdown(const sched_engine *engine, const sched_request *req, size_t index,
                      bool group_on, bool spread_on, sched_decision *out);

/* engine_spread.c: a request's topology spread in one decision (spread.h).
 * Whether the request's spread applies (a key, and its filter or score
 * on): inline, so a request without a spread pays one test for it. */
static inline bool engine_spread_applies(const sched_engine *engine, const sched_request *req)
{
    if (!req->spread.key[0])
        return false;
    return req->spread.soft ? engine_spread_weight(engine) > 0
                            : engine->plugins.filter_on[SCHED_FILTER_TOPOLOGY_SPREAD];
}
/* Before the pass: the domains of the key, the eligible ones (pl: the
 * request's plan), the counts of `members` (per host; NULL none) and the
 * minimum; then, for a hard spread, marks on the hosts still unmarked in
 * engine->reasons (the caller zeroed them: SCHED_REASON_SPREAD_LABEL,
 * SCHED_REASON_SPREAD), for a soft one engine->spread_score. Returns 1
 * when it marked or scored, 0 when the request has no spread that
 * applies, -1 with VF_ENOMEM. */
int engine_spread_prepare(sched_engine *engine, const sched_request *req, const plan *pl,
                          const uint32_t *members, vf_error *err)
    __attribute__((warn_unused_result));
/* After the pass of a decision with a hard spread prepared (placed or
 * not): which domains had a host that passed every other filter (the
 * suggestions name the domains that lack room); and, when nothing was
 * placed, " (rack r3 lacks room)" or " (1 domain of rack, min_domains 3:
 * rack r1)" appended to out->message. */
void engine_spread_explain(sched_engine *engine, const sched_request *req, sched_decision *out);

#endif
