/* replay: what-if replay of recorded history under two configurations
 * (issue 25 item 2, virtflowctl simulate). No I/O: the caller reads the store
 * and hands over, in recorded order, the inventory snapshots (as hostsets),
 * the requests with their decision times, and the releases; each is applied
 * to both engines, each with its own reservations, and every decision of
 * configuration B is compared with A's for the same request.
 *
 * What is counted:
 *   - moved: placed under both, on different hosts;
 *   - newly_unschedulable: placed under A, not under B; newly_schedulable:
 *     the other way round;
 *   - per host and configuration, the peak committed CPU (vCPUs) and memory
 *     (MiB): what the inventory shows allocated plus what that replay holds,
 *     highest after any decision;
 *   - hosts_used: hosts that held at least one of the replay's placements;
 *   - spare.prepare requests (replay_decide_spares), apart: placed as the
 *     worker places them (spare_place.h: every spare or none, anti-affine),
 *     spares_moved counts the spares of B on hosts A's spares of the same
 *     request did not take (anti-affine spares are a set: their order is no
 *     move), and a request placed under one configuration only is newly
 *     (un)schedulable. Their spares count in the peaks and hosts_used.
 * Identical configurations give identical engines and so identical decisions:
 * every difference is then exactly zero.
 *
 * Counterfactual limits: the inventory is the one recorded, so it shows the
 * VMs where they really went; a reservation of B for a VM that really went
 * elsewhere never materialises and ends only by release or expiry
 * (scheduler.reservation_ttl_s of B's configuration, against the replayed
 * decision time). */
#ifndef VF_REPLAY_H
#define VF_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "hostset.h"
#include "config.h"
#include "request.h"
#include "vf_error.h"

typedef struct replay replay;

/* Per host, per configuration (0: A, 1: B). */
typedef struct replay_host_peak {
    char name[HOST_NAME_LEN];
    double cpu[2];             /* vCPUs committed at the peak */
    int64_t memory[2];         /* MiB committed at the peak */
    double cpu_capacity[2];    /* vCPUs the configuration may commit (overcommit, reserve) */
    double memory_capacity[2]; /* MiB likewise; both as of the host's latest snapshot */
    uint32_t placements[2];    /* placements this host received */
} replay_host_peak;

typedef struct replay_totals {
    uint64_t decisions;
    uint64_t moved;
    uint64_t newly_unschedulable;
    uint64_t newly_schedulable;
    uint64_t placed[2];
    uint64_t errors; /* requests an engine refused (malformed annotations), under either */
    size_t hosts_used[2];
    /* spare.prepare requests, counted apart from the above */
    uint64_t spare_prepares;
    uint64_t spares_placed[2]; /* spare.prepare requests with every spare placed */
    uint64_t spares_moved;     /* spares of B on a host none of A's spares took */
    uint64_t spares_newly_unschedulable;
    uint64_t spares_newly_schedulable;
} replay_totals;

/* Two engines (borrowed; build them with sched_engine_from_config(config,
 * NULL, ...) so they decide as a single worker would) and the reservation
 * lifetime of each configuration in seconds. Returns an owned replay or NULL
 * (VF_ENOMEM). */
replay *replay_new(sched_engine *a, sched_engine *b, int ttl_a_s, int ttl_b_s, vf_error *err)
    __attribute__((warn_unused_result));
void replay_free(replay *r);

/* From now on decide over `hosts` (borrowed until the next call or
 * replay_free), fetched at Unix ms `at_ms`: reservations whose VMs it shows
 * end, and those expired by then. Returns 0 or -1 with err. */
int replay_inventory(replay *r, const hostset *hosts, int64_t at_ms, vf_error *err)
    __attribute__((warn_unused_result));

/* Decide `req` (its task_id names the reservation; under a policy,
 * replay_policy, borrowed until replay_free) at Unix ms `at_ms` under both, reserve what each
 * placed, and count. Returns 0 or -1 with err (out of memory); a request an engine refuses is
 * counted in errors, not an error. */
int replay_decide(replay *r, const sched_request *req, int64_t at_ms, vf_error *err)
    __attribute__((warn_unused_result));

/* How configuration c (0: A, 1: B) places spares: spare.anti_affinity_strict
 * and the hold's lifetime before the request's ready_timeout_s is added
 * (scheduler.reservation_ttl_s + spare.provisioner.timeout_s *
 * (retry.max_attempts + 1), as the worker's). Until called: strict, and
 * the ttl given to replay_new. */
void replay_spare_policy(replay *r, int c, bool strict, int64_t ttl_s);

/* Decide the spare.prepare `req` (count spares, 1..64; its task_id names
 * the holds) at Unix ms `at_ms` under both, as the worker does, hold what
 * each placed and count. Returns 0 or -1 with err (out of memory); a
 * request an engine refuses is counted in errors. */
int replay_decide_spares(replay *r, const sched_request *req, int count, int ready_timeout_s,
                         int64_t at_ms, vf_error *err) __attribute__((warn_unused_result));

/* The task's reservations end under both (task.release, spare.release) at
 * Unix ms `at_ms`. */
void replay_release(replay *r, const char *task_id, int64_t at_ms);

/* ---- the worker's policy (issue 39) ----
 *
 * With replay_policy given for a configuration, a request is decided as the
 * worker decides it under that configuration, not once as one VM:
 *   - `count` VMs and a group's members all or none, the group's rules
 *     judged against the members the replay placed (and released);
 *   - a request placed nowhere whose priority class may preempt
 *     (preemption: lower) takes the holds of lower priority the engine
 *     chooses (preempt.h); their requests wait to be decided again, as the
 *     worker publishes them again;
 *   - a request placed nowhere waits and is decided again whenever room grows
 *     (a release, a new snapshot, holds expired: the worker's rechecks) until
 *     its last attempt's time (the sum of retry.delays_s over
 *     retry.max_attempts - 1 attempts after its creation): then it fails.
 * A request's outcome under each configuration is final once placed or
 * failed; the counts (replay_result) and the changes (replay_changes) take
 * it then. Requests must stay valid until replay_free (they may be decided
 * again later). replay_finish ends the history: what still waits fails. */
void replay_policy(replay *r, int c, const vf_config *config);

/* The history ends at Unix ms `at_ms`: requests still waiting fail. Returns
 * 0 or -1 with err (out of memory). */
int replay_finish(replay *r, int64_t at_ms, vf_error *err) __attribute__((warn_unused_result));

/* One request whose final outcome differs between the configurations. */
typedef struct replay_change {
    char task_id[REQUEST_TASK_ID_LEN];
    char outcome[2][HOST_NAME_LEN + 16]; /* "bm-003", "bm-003 +2" (a count), "unschedulable" */
    char why[200];                       /* the candidate's reason, from its decision */
} replay_change;

/* The changes so far, in the order their outcomes became final; borrowed
 * until the next call. */
const replay_change *replay_changes(replay *r, size_t *n);

/* The counts so far. */
void replay_result(const replay *r, replay_totals *totals);
/* Capacity stranded under configuration c (0: A, 1: B) now: on each online
 * host of the current snapshot with room left, the free vCPUs and MiB when
 * that room cannot hold the median request replayed so far (the median of
 * the vCPUs and of the MiB requested, each on its own). Zero before any
 * request or snapshot. */
typedef struct replay_stranded {
    double median_cpu;
    double median_memory;
    double cpu;    /* vCPUs in pieces smaller than the median request */
    double memory; /* MiB likewise */
    size_t hosts;  /* hosts holding such a piece */
} replay_stranded;
int replay_stranded_now(replay *r, int c, replay_stranded *out, vf_error *err)
    __attribute__((warn_unused_result));

/* The hosts seen in any snapshot, by name; borrowed until the next call. */
const replay_host_peak *replay_peaks(replay *r, size_t *n);

#endif
