/* preempt: PostFilter for virtflow (kube-scheduler's DefaultPreemption).
 * When a request fits on no host, find the host where ending reservations
 * of lower priority would make it fit, and which ones (docs/scheduling.md
 * "Preemption").
 *
 * Only reservations still waiting for their VM are candidates (a VM that
 * exists is never touched): held with a priority (sched_reservation
 * .has_priority: never a spare's, never one an inventory has shown bound),
 * placed no later than the caller's grace allows (its answer went out when
 * it was placed; its client may be creating the VM: docs/scheduling.md
 * "Preemption"), on a host the request was refused for capacity alone
 * (free slots, vCPUs, memory, disk: every filter before those passed), and
 * placed at a priority strictly below the request's. On each such host
 * every candidate is taken away; if the request then fits, candidates are
 * given back one by one, the most important first (highest priority, then
 * newest), whenever the request still fits without them; what is left are
 * the victims: the lowest and the oldest. When that leaves several, a
 * second set is tried: the candidates covering most of what is short
 * first, until it fits, then the same giving back; the fewer victims win
 * (then as below). Among the hosts, the one with the fewest victims wins,
 * then the lowest highest victim priority, then the oldest victims (the
 * smallest newest-victim creation time), then the first host in name
 * order.
 *
 * The host is found without walking every hold: the engine's holds are
 * indexed by host (holds.h), each host's preemptible ones summarised (how
 * many, the lowest priority, the oldest, what they hold in all and at
 * most one). That bounds the best verdict a host could give (victims at
 * least what is short over the largest hold, priority at least the lowest,
 * newest victim at least the oldest); the hosts are examined best bound
 * first, and the search stops at the first whose bound cannot beat the best
 * found. Pure: no I/O, no clock; the engine is only read. */
#ifndef VF_PREEMPT_H
#define VF_PREEMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "request.h"
#include "vf_error.h"

typedef struct sched_victim {
    char task_id[REQUEST_TASK_ID_LEN];
    int32_t priority;
    int64_t created; /* Unix ms */
    uint32_t vmid;   /* 0: none */
    int64_t expires; /* Unix seconds the hold would have ended at; 0: never */
    double cpu;      /* vCPUs */
    int64_t memory;  /* MiB */
    int64_t disk;    /* GiB */
} sched_victim;

/* A value type: zero it (or let sched_preempt_choose fill it), then
 * sched_preemption_close. */
typedef struct sched_preemption {
    bool found;
    size_t host_index;     /* in the engine's current snapshot */
    const host *node;      /* borrowed from the snapshot */
    sched_victim *victims; /* owned; in the order they were chosen: lowest priority, oldest first */
    size_t n_victims;
    int32_t max_priority;  /* the highest priority among the victims */
    size_t hosts_examined; /* hosts whose victims were worked out */
} sched_preemption;

void sched_preemption_close(sched_preemption *p);

/* Whether a request may preempt: only through a priority class whose
 * preemption is `lower` (scheduler.priority_classes), named by the request
 * or, when it gives neither class nor priority, scheduler.default_priority_class.
 * A bare `priority` never preempts. */
bool sched_preempt_allowed(const sched_request *req, const vf_config *config);

/* Choose for `req` (of priority `priority`), which `decision` (over the
 * engine's current snapshot, its host_reasons set or left to the index:
 * sched_decide_options.lazy_host_reasons) placed nowhere, a host
 * and the victims whose end makes it fit, among holds placed at or before
 * `not_after_ms` (Unix ms: now less the grace). Returns 0 with out->found true or
 * false (false as well when the decision found feasible hosts: then the
 * trouble was not capacity), or -1 with VF_ENOMEM, *out zeroed either way
 * first. `engine` is the profile that decided (its filters and capacity
 * arithmetic count). */
int sched_preempt_choose(const sched_engine *engine, const sched_request *req, int32_t priority,
                         int64_t not_after_ms, const sched_decision *decision,
                         sched_preemption *out, vf_error *err) __attribute__((warn_unused_result));

/* End victim `v`'s hold on `node` in `engine` as the worker does: its
 * room is free, and its vmid stays held alone (SCHED_HOLD_VMID_ONLY) until
 * the hold would have expired, so the preemptor takes another vmid (none
 * kept when it had no vmid or no expiry). The worker's preemption, explain
 * --replay and simulate share it, so all three decide the same. Returns 0,
 * or -1 with VF_ENOMEM. */
int sched_preempt_end_victim(sched_engine *engine, const sched_victim *v, const char *node,
                             vf_error *err) __attribute__((warn_unused_result));

/* sched_preempt_choose examining every host where a candidate stands, in
 * place of those whose bound could still win: the same choice, slower. For
 * tests, which compare the two. */
int sched_preempt_choose_every(const sched_engine *engine, const sched_request *req,
                               int32_t priority, int64_t not_after_ms,
                               const sched_decision *decision, sched_preemption *out, vf_error *err)
    __attribute__((warn_unused_result));

#endif
