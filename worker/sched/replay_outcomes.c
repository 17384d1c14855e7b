/* replay_outcomes: requests decided again under each configuration's
 * policy (replay.h, "the worker's policy"): counts and groups all or none,
 * preemption, waiting and rechecks, and each request's final outcome. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "preempt.h"
#include "queue_order.h"
#include "replay_internal.h"

void replay_outcomes_free(replay *r)
{
    free(r->outcomes);
    free(r->by_task);
    free(r->changes);
    for (int c = 0; c < 2; c++) {
        free(r->waiting[c]);
        free(r->members[c]);
    }
}

void replay_policy(replay *r, int c, const vf_config *config)
{
    r->policy[c] = config;
    r->wait_ms[c] = 0;
    for (int a = 1; config && a < config->retry.max_attempts; a++) {
        size_t tier =
            (size_t)(a - 1) < config->retry.n_delays ? (size_t)(a - 1) : config->retry.n_delays - 1;
        r->wait_ms[c] += (int64_t)config->retry.delays_s[tier] * 1000;
    }
}

/* ---- finding a request's outcome by its task id (preemption's victims) ---- */

static int index_task(replay *r, size_t position, vf_error *err)
{
    if ((r->n_outcomes + 1) * 2 > r->cap_by_task) {
        size_t cap = r->cap_by_task ? r->cap_by_task * 2 : 1024;
        uint32_t *slots = calloc(cap, sizeof *slots);
        if (!slots) {
            vf_error_set(err, VF_ENOMEM, "out of memory replaying");
            return -1;
        }
        free(r->by_task);
        r->by_task = slots;
        r->cap_by_task = cap;
        for (size_t i = 0; i < r->n_outcomes; i++)
            if (i != position)
                (void)index_task(r, i, err); /* fits: cannot grow again */
    }
    size_t i = hash_fnv1a_text(r->outcomes[position].task_id) & (r->cap_by_task - 1);
    while (r->by_task[i])
        i = (i + 1) & (r->cap_by_task - 1);
    r->by_task[i] = (uint32_t)(position + 1);
    return 0;
}

/* The newest outcome of `task_id`, or NULL. */
static replay_outcome *find_task(replay *r, const char *task_id)
{
    if (!r->cap_by_task)
        return NULL;
    replay_outcome *found = NULL;
    for (size_t i = hash_fnv1a_text(task_id) & (r->cap_by_task - 1); r->by_task[i];
         i = (i + 1) & (r->cap_by_task - 1)) {
        replay_outcome *o = &r->outcomes[r->by_task[i] - 1];
        if (strcmp(o->task_id, task_id) == 0 && (!found || o > found))
            found = o;
    }
    return found;
}

/* ---- group members ---- */

void replay_members_drop(replay *r, int c, const char *task_id)
{
    size_t kept = 0;
    for (size_t i = 0; i < r->n_members[c]; i++)
        if (strcmp(r->members[c][i].task_id, task_id) != 0)
            r->members[c][kept++] = r->members[c][i];
    r->n_members[c] = kept;
}

/* Members of `group` per host index of the current snapshot (owned), or NULL. */
static uint32_t *members_now(const replay *r, int c, const char *group)
{
    uint32_t *per_host = calloc(r->hosts->n_hosts ? r->hosts->n_hosts : 1, sizeof *per_host);
    for (size_t i = 0; per_host && i < r->n_members[c]; i++) {
        const replay_member *m = &r->members[c][i];
        const host *h = strcmp(m->group, group) == 0 ? hostset_find(r->hosts, m->node) : NULL;
        if (h)
            per_host[h - r->hosts->hosts]++;
    }
    return per_host;
}

static int add_member(replay *r, int c, const sched_request *req, const char *node)
{
    if (grow_array((void **)&r->members[c], &r->cap_members[c], r->n_members[c] + 1,
                   sizeof *r->members[c]) < 0)
        return -1;
    replay_member *m = &r->members[c][r->n_members[c]++];
    snprintf(m->task_id, sizeof m->task_id, "%s", req->task_id);
    snprintf(m->group, sizeof m->group, "%s", req->group);
    snprintf(m->node, sizeof m->node, "%s", node);
    return 0;
}

/* ---- deciding under one configuration ---- */

/* Hold one placement of `req` under c, as the worker holds it: a single VM
 * under a policy with its priority (preemptible), a count's or a group's
 * without (never preempted). */
static int hold(replay *r, int c, sched_engine *decider, const sched_request *req,
                const sched_decision *d, bool preemptible, int32_t priority, int64_t at_ms,
                vf_error *err)
{
    sched_reservation res;
    sched_reservation_from_decision(&res, d, req, req->task_id, at_ms / 1000 + r->ttl_s[c]);
    res.has_priority = preemptible;
    res.priority = priority;
    res.created = at_ms;
    if (sched_engine_reserve(r->engine[c], &res, err) < 0)
        return -1;
    replay_note_placement(r, c, sched_decision_host_index(decider, d));
    return 0;
}

/* The candidate's side of a difference: why it did not do what the current
 * configuration did (its reason at that host, or its explanation). */
static void explain_candidate(replay *r, sched_engine *decider, replay_outcome *o,
                              const sched_decision *d)
{
    if (o->state[0] != OUTCOME_PLACED) {
        snprintf(o->why, sizeof o->why, "%.199s",
                 d->placed ? "the candidate finds room the current configuration does not"
                           : d->message);
        return;
    }
    if (!d->placed) {
        snprintf(o->why, sizeof o->why, "%.199s", d->message);
        return;
    }
    if (strcmp(d->node->name, o->node[0]) == 0)
        return;
    /* The same state decides the same: again, with every host's reason. */
    sched_decision full;
    vf_error ignored;
    vf_error_init(&ignored);
    sched_decide_options options = {.host_reasons = true};
    const host *h = hostset_find(r->hosts, o->node[0]);
    if (!h || sched_engine_decide_with(decider, o->req, &options, &full, &ignored) < 0)
        return;
    uint8_t reason = full.host_reasons ? full.host_reasons[h - r->hosts->hosts] : 0;
    if (reason != SCHED_REASON_NONE)
        snprintf(o->why, sizeof o->why, "%s on %s under the candidate",
                 sched_reason_text((sched_reason)reason), o->node[0]);
    else
        snprintf(o->why, sizeof o->why, "%s scores higher under the candidate (%.2f)",
                 d->node->name, d->score);
}

/* Take lower-priority holds for a single VM placed nowhere, as the worker's
 * PostFilter does; the victims wait to be decided again. 1 placed, 0 not. */
static int preempt(replay *r, int c, sched_engine *decider, replay_outcome *o, int32_t priority,
                   sched_decision *d, int64_t at_ms, vf_error *err)
{
    /* Only holds past their grace, as the worker (preemption_grace_s). */
    const vf_config *policy = r->policy[c];
    int64_t not_after_ms =
        at_ms - (policy ? (int64_t)policy->scheduler.preemption_grace_s * 1000 : 0);
    sched_preemption p;
    if (sched_preempt_choose(decider, o->req, priority, not_after_ms, d, &p, err) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; p.found && i < p.n_victims; i++) {
        if (sched_preempt_end_victim(r->engine[c], &p.victims[i], p.node->name, err) < 0) {
            sched_preemption_close(&p);
            return -1;
        }
        replay_outcome *victim = find_task(r, p.victims[i].task_id);
        if (victim && victim->state[c] == OUTCOME_PLACED &&
            grow_array((void **)&r->waiting[c], &r->cap_waiting[c], r->n_waiting[c] + 1,
                       sizeof *r->waiting[c]) == 0) {
            victim->state[c] = OUTCOME_WAITING;
            victim->deadline_ms[c] = at_ms + r->wait_ms[c];
            r->waiting[c][r->n_waiting[c]++] = (size_t)(victim - r->outcomes);
        }
    }
    if (p.found) {
        vf_error ignored;
        vf_error_init(&ignored);
        sched_decide_options terse = {.terse = true};
        if (sched_engine_decide_with(decider, o->req, &terse, d, &ignored) == 0 && d->placed)
            rc = hold(r, c, decider, o->req, d, true, priority, at_ms, err) < 0 ? -1 : 1;
    }
    sched_preemption_close(&p);
    return rc;
}

/* Decide o's request under c now: 1 placed (held), 0 not, -1 with err
 * (out of memory); an engine's refusal is a failure (o->refused). */
static int decide_under(replay *r, int c, replay_outcome *o, int64_t at_ms, vf_error *err)
{
    const sched_request *req = o->req;
    const vf_config *policy = r->policy[c];
    sched_engine *decider =
        r->hosts ? sched_engine_profile(r->engine[c], req->scheduler_name) : NULL;
    if (!decider) {
        o->refused = o->refused || r->hosts;
        return 0;
    }
    /* As the worker's task_handler: a spread counts the placements before
     * it (the group's members, else the request's own), all or none. */
    bool several = policy && (req->count > 1 || req->group[0] || req->spread.key[0]);
    int32_t priority = 0;
    vf_error ignored;
    vf_error_init(&ignored);
    if (policy && queue_order_priority(req, policy, &priority, &ignored) < 0) {
        o->refused = true;
        return 0;
    }
    uint32_t *members =
        several && (req->group[0] || req->spread.key[0]) ? members_now(r, c, req->group) : NULL;
    sched_decision d;
    int placed = 0, n = several ? req->count : 1;
    for (; placed < n; placed++) {
        sched_decide_options options = {.terse = true, .group_members = members};
        if (sched_engine_decide_with(decider, req, &options, &d, &ignored) < 0) {
            o->refused = true;
            break;
        }
        if (c == 1 && placed == 0)
            explain_candidate(r, decider, o, &d);
        if (!d.placed)
            break;
        if (placed == 0)
            snprintf(o->node[c], sizeof o->node[c], "%s", d.node->name);
        if (members)
            members[sched_decision_host_index(decider, &d)]++;
        if (hold(r, c, decider, req, &d, policy && !several, priority, at_ms, err) < 0 ||
            (several && req->group[0] && add_member(r, c, req, d.node->name) < 0)) {
            free(members);
            vf_error_set(err, VF_ENOMEM, "out of memory replaying");
            return -1;
        }
    }
    free(members);
    if (placed == n) {
        o->placed[c] = n;
        return 1;
    }
    if (placed > 0) { /* all or none */
        (void)sched_engine_release(r->engine[c], req->task_id);
        replay_members_drop(r, c, req->task_id);
    }
    if (!o->refused && !d.placed && !several && policy && sched_preempt_allowed(req, policy)) {
        int taken = preempt(r, c, decider, o, priority, &d, at_ms, err);
        if (taken != 0) {
            o->placed[c] = taken > 0;
            if (taken > 0)
                snprintf(o->node[c], sizeof o->node[c], "%s", d.node->name);
            return taken;
        }
    }
    return 0;
}

/* Decide o under c and set its state: placed, waiting (a policy's rechecks
 * and retries) or failed. */
static int settle(replay *r, int c, replay_outcome *o, int64_t at_ms, vf_error *err)
{
    int placed = decide_under(r, c, o, at_ms, err);
    if (placed < 0)
        return -1;
    if (placed) {
        o->state[c] = OUTCOME_PLACED;
        return 0;
    }
    if (!r->policy[c] || o->refused || at_ms >= o->deadline_ms[c]) {
        o->state[c] = OUTCOME_FAILED;
        return 0;
    }
    o->state[c] = OUTCOME_WAITING;
    if (grow_array((void **)&r->waiting[c], &r->cap_waiting[c], r->n_waiting[c] + 1,
                   sizeof *r->waiting[c]) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory replaying");
        return -1;
    }
    r->waiting[c][r->n_waiting[c]++] = (size_t)(o - r->outcomes);
    return 0;
}

int replay_decide(replay *r, const sched_request *req, int64_t at_ms, vf_error *err)
{
    if (replay_note_shape(r, req, err) < 0 ||
        grow_array((void **)&r->outcomes, &r->cap_outcomes, r->n_outcomes + 1,
                   sizeof *r->outcomes) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory replaying");
        return -1;
    }
    replay_outcome *o = &r->outcomes[r->n_outcomes++];
    memset(o, 0, sizeof *o);
    o->req = req;
    snprintf(o->task_id, sizeof o->task_id, "%s", req->task_id);
    if (index_task(r, r->n_outcomes - 1, err) < 0)
        return -1;
    r->totals.decisions++;
    for (int c = 0; c < 2; c++) {
        o->deadline_ms[c] = at_ms + r->wait_ms[c];
        if (settle(r, c, &r->outcomes[r->n_outcomes - 1], at_ms, err) < 0)
            return -1;
    }
    if (r->outcomes[r->n_outcomes - 1].refused)
        r->totals.errors++;
    return 0;
}

void replay_recheck(replay *r, int64_t at_ms)
{
    for (int c = 0; c < 2; c++) {
        size_t n = r->n_waiting[c], kept = 0;
        r->n_waiting[c] = 0; /* settle may add (victims): they go after */
        size_t *list = r->waiting[c];
        r->waiting[c] = NULL;
        r->cap_waiting[c] = 0;
        vf_error err;
        vf_error_init(&err);
        for (size_t i = 0; i < n; i++) {
            replay_outcome *o = &r->outcomes[list[i]];
            if (o->state[c] != OUTCOME_WAITING)
                continue;
            if (settle(r, c, o, at_ms, &err) < 0)
                o->state[c] = OUTCOME_FAILED; /* out of memory: it fails, counted */
            kept += o->state[c] == OUTCOME_WAITING;
        }
        (void)kept;
        free(list);
    }
}

int replay_finish(replay *r, int64_t at_ms, vf_error *err)
{
    (void)err;
    replay_recheck(r, at_ms);
    for (int c = 0; c < 2; c++) {
        for (size_t i = 0; i < r->n_waiting[c]; i++)
            r->outcomes[r->waiting[c][i]].state[c] = OUTCOME_FAILED;
        r->n_waiting[c] = 0;
    }
    return 0;
}

/* ---- counting ---- */

static bool final(const replay_outcome *o)
{
    return o->state[0] != OUTCOME_WAITING && o->state[1] != OUTCOME_WAITING;
}

void replay_outcomes_count(const replay *r, replay_totals *t)
{
    for (size_t i = 0; i < r->n_outcomes; i++) {
        const replay_outcome *o = &r->outcomes[i];
        bool placed[2] = {o->state[0] == OUTCOME_PLACED, o->state[1] == OUTCOME_PLACED};
        for (int c = 0; c < 2; c++)
            t->placed[c] += placed[c];
        if (!final(o))
            continue;
        if (placed[0] && placed[1] && strcmp(o->node[0], o->node[1]) != 0)
            t->moved++;
        else if (placed[0] && !placed[1])
            t->newly_unschedulable++;
        else if (!placed[0] && placed[1])
            t->newly_schedulable++;
    }
}

static void outcome_text(const replay_outcome *o, int c, char *out, size_t size)
{
    if (o->state[c] != OUTCOME_PLACED)
        snprintf(out, size, "%s", o->state[c] == OUTCOME_WAITING ? "waiting" : "unschedulable");
    else if (o->placed[c] > 1)
        snprintf(out, size, "%s +%d", o->node[c], o->placed[c] - 1);
    else
        snprintf(out, size, "%s", o->node[c]);
}

const replay_change *replay_changes(replay *r, size_t *n)
{
    replay *w = r;
    w->n_changes = 0;
    for (size_t i = 0; i < r->n_outcomes; i++) {
        const replay_outcome *o = &r->outcomes[i];
        bool placed[2] = {o->state[0] == OUTCOME_PLACED, o->state[1] == OUTCOME_PLACED};
        if (!final(o) ||
            (placed[0] == placed[1] && (!placed[0] || strcmp(o->node[0], o->node[1]) == 0)))
            continue;
        if (grow_array((void **)&w->changes, &w->cap_changes, w->n_changes + 1,
                       sizeof *w->changes) < 0)
            break;
        replay_change *ch = &w->changes[w->n_changes++];
        snprintf(ch->task_id, sizeof ch->task_id, "%s", o->task_id);
        for (int c = 0; c < 2; c++)
            outcome_text(o, c, ch->outcome[c], sizeof ch->outcome[c]);
        snprintf(ch->why, sizeof ch->why, "%s", o->why);
    }
    *n = w->n_changes;
    return w->changes;
}
