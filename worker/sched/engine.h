/* engine: the placement pipeline (docs/contracts.md "Scheduling").
 *
 *   pre-filter  resolve the pool, compile the node and vmid annotations
 *               (an invalid one makes the request invalid, never ignored)
 *   filter      each enabled filter plugin removes hosts, recording why
 *   score       each enabled score plugin rates the survivors 0..100
 *   normalize   clamp to 0..100, weight, and average into one score
 *   select      highest score; ties to the lowest name, or a random pick
 *               among the top `subset_size`, or a pick among the
 *               near-best by a hash of the task id or of the worker's id,
 *               within `near_best_max_loss` points (near_best.h)
 *   vmid        lowest vmid allowed by the range/regex annotations that no
 *               VM, container, template or live reservation uses
 *
 * The engine works over a borrowed hostset snapshot plus its own overlay of
 * live reservations, so decision N+1 sees decision N's resources and vmid
 * taken once the caller has reserved N. It does no I/O and keeps no clock:
 * expiry times are given by the caller. Not thread-safe: one engine per
 * thread, or a lock around it. */
#ifndef VF_ENGINE_H
#define VF_ENGINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "hostset.h"
#include "near_best.h"
#include "request.h"
#include "sched_params.h"
#include "sched_reservation.h"
#include "spread.h"
#include "vf_error.h"

/* Why a host was rejected; the first failing filter wins. */
typedef enum {
    SCHED_REASON_NONE = 0,
    SCHED_REASON_POOL,                /* pool mismatch */
    SCHED_REASON_NOT_DEDICATED,       /* dedicated request, shared host */
    SCHED_REASON_DEDICATED_HOST,      /* shared request, host kept for dedicated ones */
    SCHED_REASON_OFFLINE,             /* node offline */
    SCHED_REASON_MAINTENANCE,         /* node in maintenance */
    SCHED_REASON_STATUS_UNKNOWN,      /* node status unknown */
    SCHED_REASON_NODE_REGEX,          /* node regex mismatch */
    SCHED_REASON_VM_SLOTS,            /* no free VM slots */
    SCHED_REASON_CPU,                 /* insufficient cpu */
    SCHED_REASON_MEMORY,              /* insufficient memory */
    SCHED_REASON_DISK,                /* insufficient disk */
    SCHED_REASON_ANTI_AFFINITY,       /* excluded by the caller (spares spread over hosts) */
    SCHED_REASON_NODE_NAME,           /* node name mismatch (the request named another host) */
    SCHED_REASON_GROUP_AFFINITY,      /* the request's group (affinity) has its members elsewhere */
    SCHED_REASON_GROUP_ANTI_AFFINITY, /* the host holds a member of the request's group */
    SCHED_REASON_GROUP_FULL,          /* the host holds group.max_per_host members already */
    SCHED_REASON_TRAIT_MISSING,       /* lacks a trait of required_traits */
    SCHED_REASON_TRAIT_FORBIDDEN,     /* carries a trait of forbidden_traits */
    SCHED_REASON_RESOURCES,           /* too little of a custom resource left */
    SCHED_REASON_SPREAD,              /* one more member here breaks the spread's max_skew */
    SCHED_REASON_SPREAD_LABEL,        /* the host lacks the spread's key (no domain) */
    SCHED_REASON_COUNT
} sched_reason;

/* The user-facing words for a reason ("insufficient memory"); the spread's
 * two read "topology spread" and "missing topology label" here, and name
 * the key in a decision's words (sched_decision_reason_text). */
const char *sched_reason_text(sched_reason reason);

#define SCHED_MAX_SCORES 8

/* The score a soft group policy adds (sched_decide_options.group_members). */
#define SCHED_GROUP_SCORE_NAME "ServerGroup"

typedef struct sched_score_part {
    const char *plugin; /* static name, e.g. "FreeResources" */
    double score;       /* 0..100 */
    double weight;
} sched_score_part;

typedef struct sched_decision {
    bool placed;
    size_t n_hosts;    /* hosts considered */
    size_t n_feasible; /* hosts that passed every filter */
    /* When placed: */
    const host *node; /* borrowed from the hostset; valid while it lives */
    uint32_t vmid;
    double score; /* 0..100, weighted average of parts */
    sched_score_part parts[SCHED_MAX_SCORES];
    size_t n_parts;
    /* When not placed, and for the explanation: */
    uint32_t reason_counts[SCHED_REASON_COUNT];
    const uint8_t *host_reasons; /* per host index (sched_reason); borrowed from the engine,
                                    valid until its next decide or set_hosts. When placed,
                                    NULL unless asked for (sched_decide_options.host_reasons):
                                    the free-capacity index (fitindex.h) counts hosts per
                                    reason without visiting each, and reason_counts are
                                    always exact. When not placed, set unless the caller
                                    allowed otherwise (lazy_host_reasons) and the index
                                    decided: then sched_decision_host_reason says one
                                    host's, until the engine's next decide or change. */
    char message[512];           /* "placed on bm-003 ..." or "0/12 nodes are available: ..." */
    /* The key of the request's spread ("" none): the spread's reasons read
     * "spread over rack" and "missing label rack". */
    char spread_key[LABEL_KEY_LEN];
} sched_decision;

/* The words for `reason` in `decision`: sched_reason_text's, with the
 * spread's key named for its two reasons ("spread over rack"). Returns
 * `buf` (size bytes) or a static text. */
const char *sched_decision_reason_text(const sched_decision *decision, sched_reason reason,
                                       char *buf, size_t size);

typedef struct sched_engine sched_engine;

#define SCHED_PROFILE_NAME_LEN 64 /* 1..63 characters + NUL */
#define SCHED_PROFILE_DEFAULT "default"

/* Returns an owned engine, or NULL with err: VF_ECONFIG for an unknown plugin
 * name ("scheduler.plugins.filters.Foo (line 12): unknown plugin; known: ..."),
 * VF_ENOMEM. */
sched_engine *sched_engine_new(const sched_params *params, vf_error *err)
    __attribute__((warn_unused_result));
void sched_engine_free(sched_engine *engine);

/* Scheduling profiles (scheduler.profiles): add profile `name` with its own
 * params to `engine` (the "default" profile), which owns it. A profile
 * decides over the engine's snapshot and reservations: set_hosts, reserve,
 * release*, expire on `engine` apply to every profile, so call them on
 * `engine`, never on a profile. Built once at start-up. Returns 0, or -1
 * with err: VF_ECONFIG (bad or repeated name, unknown plugin, naming
 * scheduler.profiles.NAME), VF_ENOMEM. */
int sched_engine_add_profile(sched_engine *engine, const char *name, const sched_params *params,
                             vf_error *err) __attribute__((warn_unused_result));
/* The engine of a loaded config: the scheduler section (profile "default")
 * with every scheduler.profiles entry added, as the worker builds it;
 * `worker` (NULL: none, a dry run) is near_best_worker. Owned, or NULL with
 * err as sched_engine_new and sched_engine_add_profile. */
sched_engine *sched_engine_from_config(const vf_config *config, const char *worker, vf_error *err)
    __attribute__((warn_unused_result));
/* The engine deciding for profile `name` ("" or NULL or "default": `engine`
 * itself), borrowed from `engine`; NULL when there is no such profile. */
sched_engine *sched_engine_profile(sched_engine *engine, const char *name);
/* "default", or the profile's name. */
const char *sched_engine_profile_name(const sched_engine *engine);

/* Decide with other parameters from now on (a reload of the scheduler
 * section), keeping the snapshot and the reservations held. Returns 0, or -1
 * with err as sched_engine_new, the engine unchanged (VF_ENOMEM while
 * re-laying the snapshot: decisions stay right, the index may be off). */
int sched_engine_set_params(sched_engine *engine, const sched_params *params, vf_error *err)
    __attribute__((warn_unused_result));

/* Decide over `hosts` from now on (borrowed: it must outlive the engine's use
 * of it, i.e. until the next set_hosts or free). Live reservations are
 * re-applied to the new snapshot; those whose vmid the snapshot shows as a
 * guest of their own node have materialised and are dropped (the vmid on
 * another host, or only in the used list, ends nothing), each reported to `on_materialised`
 * (may be NULL) so the caller can end them in its store. */
int sched_engine_set_hosts(sched_engine *engine, const hostset *hosts,
                           void (*on_materialised)(const sched_reservation *, void *), void *user,
                           vf_error *err) __attribute__((warn_unused_result));

/* Run the pipeline for `req`. Returns 0 with `out` filled (placed or not:
 * an unschedulable request is a decision, not an error), or -1 with err
 * VF_EINVAL when an annotation is malformed. Does not reserve. */
int sched_engine_decide(sched_engine *engine, const sched_request *req, sched_decision *out,
                        vf_error *err) __attribute__((warn_unused_result));

/* Per-decision options of sched_engine_decide_with; zero-initialise. */
typedef struct sched_decide_options {
    /* Host indexes (of the current snapshot) this decision must not choose,
     * e.g. hosts already holding a sibling spare (anti-affinity). Borrowed for
     * the call; n_excluded entries, out-of-range indexes are ignored. Excluded
     * hosts that pass every filter are rejected as SCHED_REASON_ANTI_AFFINITY
     * ("anti-affinity"); a host failing a filter keeps that filter's reason. */
    const size_t *excluded;
    size_t n_excluded;
    /* Fill the decision's host_reasons even when it is placed (a pass over
     * every host: virtflowctl place lists them; the worker does not). */
    bool host_reasons;
    /* A decision that places nothing may leave host_reasons NULL when the
     * free-capacity index decided it (its reason_counts still exact): the
     * pass over every host that fills them was most of an unschedulable
     * request's cost. What reads per-host reasons then asks the engine:
     * sched_decision_host_reason, sched_suggest, sched_preempt_choose,
     * sched_rejections_json. */
    bool lazy_host_reasons;
    /* A placed decision without its message and score breakdown (parts):
     * the same host, vmid and score, for callers that read nothing else (a
     * replay: formatting them was a quarter of its time). A decision that
     * places nothing still explains itself. */
    bool terse;
    /* For a request naming a group (request.h): how many of the group's
     * members each host of the current snapshot holds now, per host index
     * (borrowed for the call; NULL: none anywhere). The hard policies and
     * max_per_host are a filter: affinity rejects every host but those
     * holding members (SCHED_REASON_GROUP_AFFINITY; any host while there is
     * none), anti-affinity those holding max_per_host (1 unless given:
     * SCHED_REASON_GROUP_ANTI_AFFINITY), max_per_host with another policy
     * those holding that many (SCHED_REASON_GROUP_FULL). The soft policies
     * are the score ServerGroup (docs/scheduling.md "Groups"). Ignored for a
     * request without a group. */
    const uint32_t *group_members;
} sched_decide_options;

/* sched_engine_decide with options (NULL: none). Same returns. */
int sched_engine_decide_with(sched_engine *engine, const sched_request *req,
                             const sched_decide_options *options, sched_decision *out,
                             vf_error *err) __attribute__((warn_unused_result));

/* How the free-capacity index (fitindex.h) has served this engine's
 * decisions since it was made: for tests and benchmarks, which check that
 * a case takes the path it means to (the decisions are the same either
 * way). Profiles count their own. */
typedef struct sched_index_stats {
    uint64_t searches;  /* decisions the index was asked to take */
    uint64_t by_kept;   /* answered from scores kept for a repeated shape */
    uint64_t by_bounds; /* answered by the bound search */
    uint64_t gave_up;   /* left to the full pass */
} sched_index_stats;
void sched_engine_index_stats(const sched_engine *engine, sched_index_stats *out);

/* Host index `i`'s reason in `decision`, which the engine made for `req`
 * and is still current (no decide, reserve, release or set_hosts since):
 * from decision->host_reasons when set, else worked out for that host. */
sched_reason sched_decision_host_reason(const sched_engine *engine, const sched_request *req,
                                        const sched_decision *decision, size_t i);

/* Index of a placed decision's host in the current snapshot. */
size_t sched_decision_host_index(const sched_engine *engine, const sched_decision *decision);

/* Whether the current snapshot shows guest `vmid` on host `node`: its
 * resources are then in that host's figures, and a reservation for it must
 * not be held as well (see sched_engine_set_hosts). */
bool sched_engine_shows_guest(const sched_engine *engine, uint32_t vmid, const char *node);

/* Whether other workers decide over the same store now (the caller follows
 * their leases): while on, and when sched_params.vmid_stride > 1 with a
 * worker id, decisions take the lowest free vmid of the worker's own class
 * first (vmid_pick_strided); off (the default), the lowest free vmid, as a
 * worker alone on its store always does. */
void sched_engine_set_vmid_spread(sched_engine *engine, bool on);
/* Whether sched_engine_set_vmid_spread can change anything (a stride > 1
 * and a worker id): the caller need not follow the others otherwise. */
bool sched_engine_vmid_spreads(const sched_engine *engine);

/* Free vCPUs and MiB over the online hosts of the snapshot, after what the
 * inventory shows allocated and what the engine holds (a host's free room
 * counts from 0: an overcommitted one adds none). Grows when a hold ends or
 * a snapshot brings room; the worker rechecks waiting tasks then. */
void sched_engine_room(const sched_engine *engine, double *cpu, double *memory);

/* Hold resources and vmid until released or expired. The node may be absent
 * from the snapshot (its vmid is still held). Returns 0 or -1 (VF_ENOMEM). */
int sched_engine_reserve(sched_engine *engine, const sched_reservation *res, vf_error *err)
    __attribute__((warn_unused_result));
/* The second a hold ends in the engine for a reservation that ends at
 * `expires_ms` (Unix ms) in the store: rounded up, so that the engine, which
 * expires holds by whole seconds of the inventory's fetch time, never frees
 * a hold before the store does (a decision made on room the store still
 * holds would be refused there and decided again, and the room would look
 * as if it never grew). */
int64_t sched_hold_expiry_s(int64_t expires_ms);
/* The reservation a placed decision implies for `req`. */
void sched_reservation_from_decision(sched_reservation *out, const sched_decision *decision,
                                     const sched_request *req, const char *task_id,
                                     int64_t expires);
/* End every reservation of `task_id`. Returns how many ended. */
size_t sched_engine_release(sched_engine *engine, const char *task_id);
/* End every reservation held on `node` (the caller reloads that host's
 * reservations from the store). Returns how many ended. */
size_t sched_engine_release_node(sched_engine *engine, const char *node);
/* End every reservation (the caller reloads them all). Returns how many. */
size_t sched_engine_release_all(sched_engine *engine);
/* End every reservation with 0 < expires <= now. Returns how many ended. */
size_t sched_engine_expire(sched_engine *engine, int64_t now);
size_t sched_engine_reservation_count(const sched_engine *engine);
/* The reservations the engine holds (holds.h), borrowed: valid until the
 * next reserve, release, expire or set_hosts. Preemption reads them. */
struct holds;
const struct holds *sched_engine_holds(const sched_engine *engine);

/* Reserved totals the overlay adds to host index `i` of the current snapshot. */
typedef struct sched_host_load {
    double cpu;     /* vCPUs reserved */
    int64_t memory; /* MiB reserved */
    int64_t disk;   /* GiB reserved */
    int32_t vms;    /* reserved VM slots */
} sched_host_load;
const sched_host_load *sched_engine_host_load(const sched_engine *engine, size_t host_index);

/* How much of custom resource `name` host index `i` has left: its total in
 * the inventory less what live reservations hold there (0 when the host has
 * none of it; negative when it lost some under reservations). */
int64_t sched_engine_resource_free(const sched_engine *engine, size_t host_index, const char *name);

/* Capacity arithmetic shared by filters, scores and virtflowctl nodes: the
 * host reserve is kept free of the physical figure, then overcommit applies. */
static inline double sched_cpu_capacity(const sched_params *params, const host *h) /* vCPUs */
{
    double cores = h->cpu - params->reserve_cpu;
    return cores > 0 ? cores * params->overcommit_cpu : 0.0;
}
static inline double sched_memory_capacity(const sched_params *params, const host *h) /* MiB */
{
    int64_t mib = h->memory - params->reserve_memory;
    return mib > 0 ? (double)mib * params->overcommit_memory : 0.0;
}

/* What is left on a host for each resource: the one definition of free
 * capacity (filters' arithmetic, virtflowctl nodes, suggestions, the
 * worker's free-capacity and headroom metrics). Negative when the host is
 * overcommitted; callers summing free room clamp at 0. */
typedef struct sched_room {
    double cpu;    /* vCPUs: capacity - allocated - reserved */
    double memory; /* MiB: capacity - allocated - reserved */
    int64_t disk;  /* GiB: storage - reserved */
    int64_t slots; /* guest slots: max - current - reserved */
} sched_room;

/* `load` (may be NULL: nothing held) is what live reservations hold on `h`. */
static inline sched_room sched_host_room(const sched_params *params, const host *h,
                                         const sched_host_load *load)
{
    static const sched_host_load none = {0, 0, 0, 0};
    if (!load)
        load = &none;
    sched_room r = {
        .cpu = sched_cpu_capacity(params, h) - h->allocated_cpu - load->cpu,
        .memory =
            sched_memory_capacity(params, h) - (double)h->allocated_memory - (double)load->memory,
        .disk = h->storage - load->disk,
        .slots = (int64_t)h->max_vms - h->current_vms - load->vms,
    };
    return r;
}
const sched_params *sched_engine_params(const sched_engine *engine);
/* The snapshot decisions are made over (NULL before the first set_hosts),
 * and whether filter `filter_id` (a sched_filter_id, plugins.h) is on. */
const hostset *sched_engine_snapshot(const sched_engine *engine);
/* The domains and counts of the last decision's spread (spread.h), or NULL
 * when that decision had none; borrowed, valid until the next decide or
 * set_hosts. Its has_room is filled for a decision that placed nothing. */
const spread_view *sched_engine_spread(const sched_engine *engine);
bool sched_engine_filter_on(const sched_engine *engine, int filter_id);

/* The decision as the result object a task records (docs/contracts.md):
 * placed:  {"status":"completed","node":{name,ip,pool},"vmid","score","scores":{..},
 *           "feasible":n,"hosts":n,"explanation":"..."}
 * not:     {"status":"failed","reason":"unschedulable","error":"0/12 nodes ...",
 *           "rejections":{"bm-001":"pool mismatch",...}} (per-host reasons).
 * Owned; NULL on OOM. `hosts` must be the snapshot the decision was made on. */
json_t *sched_decision_to_json(const sched_decision *decision, const hostset *hosts);

/* Shrink a failed decision's "rejections" (as sched_decision_to_json made
 * them) for a task's history, which keeps one row per attempt: add
 * "rejection_counts" {reason: hosts} covering every host, keep at most
 * `max_hosts` hosts in "rejections" (one per reason first, then in host
 * order), and record how many were left out in "rejections_omitted" (only
 * when some were). A result without rejections is left as it is. */
void sched_rejections_sample(json_t *result, size_t max_hosts);

/* The rejections of a failed decision as a task's history keeps them, into
 * `result` (sched_decision_to_json's for the same decision): for a decision
 * with per-host reasons, sched_rejections_sample(result, max_hosts); for one
 * the index decided without them (sched_decide_options.lazy_host_reasons),
 * the same "rejection_counts", "rejections" and "rejections_omitted" worked
 * out from the index, without a line per host in between. A placed
 * decision adds nothing. Returns 0, or -1 when out of memory. */
int sched_rejections_add(const sched_engine *engine, const sched_request *req,
                         const sched_decision *decision, json_t *result, size_t max_hosts)
    __attribute__((warn_unused_result));

/* The hosts a task's history keeps per failed attempt (task and spare
 * handlers alike): on a large inventory one line per host, every attempt,
 * for as long as the task is kept, was most of the store. */
#define SCHED_HISTORY_HOSTS 20

#endif
