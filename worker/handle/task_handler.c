#include "task_handler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_names.h"
#include "json_util.h"
#include "log.h"
#include "never_fits.h"
#include "preemption.h"
#include "queue_order.h"
#include "store_hosts.h"
#include "store_reservations.h"
#include "store_tasks.h"
#include "suggest.h"
#include "task_attempt.h"
#include "task_group.h"

/* The request's priority where its profile is echoed (handler.h). */
static void echo_priority(json_t *obj, const task_outcome *out)
{
    if (obj && out->has_priority)
        json_object_set_new_nocheck(obj, "priority", json_integer(out->priority));
}

/* failed with `reason`: task row, history, task.failed event, reply; the
 * result and the event carry `suggestions` (borrowed) when given. */
static int record_failure(const task_attempt *a, const char *reason, const char *error,
                          json_t *detail, json_t *suggestions, const char *scheduler, vf_error *err)
{
    task_outcome *out = a->out;
    json_t *result =
        json_pack("{s:s, s:s, s:s}", "status", "failed", "reason", reason, "error", error);
    if (suggestions)
        json_object_set(result, "suggestions", suggestions);
    if (scheduler)
        json_object_set_new(result, "scheduler", json_string(scheduler));
    echo_priority(result, out);
    char *text = task_attempt_result_text(a, result);
    json_decref(result);
    json_t *history = detail ? detail : json_object();
    json_object_set_new(history, "reason", json_string(reason));
    json_object_set_new(history, "error", json_string(error));
    json_object_set_new(history, "attempt", json_integer(a->attempt));
    if (scheduler)
        json_object_set_new(history, "scheduler", json_string(scheduler));
    echo_priority(history, out);
    int rc = task_attempt_write(a, "failed", reason, text, error, NULL, -1, err);
    if (rc == 0)
        rc = task_attempt_history(a, "failed", history, err);
    else
        json_decref(history);
    if (rc == 0) {
        json_t *data =
            json_pack("{s:s, s:s, s:s, s:s, s:i}", "task_id", out->task_id, "status", "failed",
                      "error", error, "reason", reason, "attempts", a->attempt);
        if (suggestions)
            json_object_set(data, "suggestions", suggestions);
        if (scheduler && data)
            json_object_set_new(data, "scheduler", json_string(scheduler));
        echo_priority(data, out);
        rc = task_attempt_event(a, EVENT_TASK_FAILED, data, err);
    }
    if (task_attempt_wants_reply(a)) {
        out->reply_body = text;
        text = NULL;
    }
    free(text);
    snprintf(out->summary, sizeof out->summary, "failed (%s): %s", reason, error);
    return rc;
}

/* A claim of the placement of `req` on `node` with `vmid` for the task of
 * `rec`, decided by `engine` (a profile: its filters and capacity), held
 * until `expires`. */
static reservation_claim claim_of(const task_attempt *rec, const sched_engine *engine,
                                  const sched_request *req, const host *node, uint32_t vmid,
                                  const char *expires)
{
    return (reservation_claim){.task_id = rec->out->task_id,
                               .engine = engine,
                               .node = node,
                               .vmid = vmid,
                               .cpu = req->cpu,
                               .memory = req->memory,
                               .disk = req->disk,
                               .resources = &req->resources,
                               .req = req,
                               .created_at = rec->now,
                               .expires_at = expires,
                               .kind = SCHED_HOLD_FULL};
}

/* The expiry of a placement decided now, as store text and engine seconds. */
static int64_t expiry_of(const task_attempt *rec, char expires[STORE_TIME_SIZE])
{
    int64_t ttl_ms = (int64_t)rec->h->config->scheduler.reservation_ttl_s * 1000;
    store_format_time(rec->now_ms + ttl_ms, expires);
    return sched_hold_expiry_s(rec->now_ms + ttl_ms);
}

/* Hold the placement's resources and vmid: in the engine at once (so the
 * next message already sees it), and in the store by a claim
 * (reservations.h). `with_commit`: claimed all or none with what it took
 * (a preemption). Returns 0, or -1 with err (VF_ECONFLICT: it no longer
 * fits; the batch is decided again). */
static int reserve(const task_attempt *rec, const sched_engine *engine, const sched_request *req,
                   const sched_decision *decision, bool with_commit, vf_error *err)
{
    task_handler *h = rec->h;
    char expires[STORE_TIME_SIZE];
    sched_reservation res;
    sched_reservation_from_decision(&res, decision, req, rec->out->task_id,
                                    expiry_of(rec, expires));
    /* Every placement records its priority (0 unless the request or the
     * config gives one): a request of a higher class may take its room while
     * its VM has not appeared (preempt.h). */
    res.has_priority = true;
    res.priority = rec->out->priority;
    res.created = rec->now_ms;
    if (sched_engine_reserve(h->engine, &res, err) < 0)
        return -1;
    rec->out->reserved = true;
    reservation_claim c = claim_of(rec, engine, req, decision->node, decision->vmid, expires);
    c.has_priority = true;
    c.priority = rec->out->priority;
    if (!h->book) {
        char *resources = NULL;
        if (req->resources.n) {
            json_t *o = resource_amounts_to_json(&req->resources);
            resources = o ? json_dumps(o, JSON_COMPACT) : NULL;
            json_decref(o);
        }
        int rc = store_reservation_add_resources(h->store, rec->out->task_id, decision->node->name,
                                                 req->cpu, req->memory, req->disk, decision->vmid,
                                                 &c.priority, resources, rec->now, expires, err);
        free(resources);
        return rc;
    }
    return with_commit ? reservation_book_claim_all(h->book, h->store, &c, 1, err)
                       : reservation_book_claim(h->book, h->store, &c, err);
}

/* task.completed's data for a placement whose result is `result`: the
 * task, its node and score (the result's own values, shared rather than
 * built again), vmid and attempts; NULL when out of memory. Built directly
 * rather than with json_pack: the keys are literals and the task id is
 * ASCII (request_task_id_chars, or ids_new's), so neither a format string
 * nor a UTF-8 check is worth its cost on every task. */
static json_t *completed_data(const task_attempt *rec, json_t *result, uint32_t vmid)
{
    json_t *data = json_object();
    if (!data)
        return NULL;
    int rc = json_object_set_new_nocheck(data, "task_id", json_string_nocheck(rec->out->task_id));
    rc |= json_object_set_new_nocheck(data, "status", json_string_nocheck("completed"));
    rc |= json_object_set_nocheck(data, "node", json_object_get(result, "node"));
    rc |= json_object_set_new_nocheck(data, "vmid", json_integer((json_int_t)vmid));
    rc |= json_object_set_nocheck(data, "score", json_object_get(result, "score"));
    rc |= json_object_set_new_nocheck(data, "attempts", json_integer(rec->attempt));
    if (rc < 0) {
        json_decref(data);
        return NULL;
    }
    return data;
}

/* `preempted` (borrowed; NULL: none) lists the reservations this placement
 * took (preemption.h): in the result, its history and the event; its claim
 * then goes with the commit. Returns 0 or -1. */
static int record_placement(const task_attempt *rec, const sched_engine *engine,
                            const sched_request *req, const sched_decision *decision,
                            const char *scheduler, json_t *preempted, vf_error *err)
{
    task_handler *h = rec->h;
    task_outcome *out = rec->out;
    if (reserve(rec, engine, req, decision, preempted != NULL, err) < 0)
        return -1;
    json_t *result = sched_decision_to_json(decision, h->hosts);
    if (!result) {
        vf_error_set(err, VF_ENOMEM, "out of memory recording task %s", out->task_id);
        return -1;
    }
    json_object_set_new_nocheck(result, "attempts", json_integer(rec->attempt));
    if (h->inventory_note && h->inventory_note[0])
        json_object_set_new_nocheck(result, "inventory", json_string(h->inventory_note));
    if (scheduler)
        json_object_set_new_nocheck(result, "scheduler", json_string(scheduler));
    echo_priority(result, out);
    if (preempted)
        json_object_set(result, "preempted", preempted);
    json_t *event = completed_data(rec, result, decision->vmid);
    if (scheduler && event)
        json_object_set_new(event, "scheduler", json_string(scheduler));
    echo_priority(event, out);
    if (preempted && event)
        json_object_set(event, "preempted", preempted);
    /* One serialisation serves the row, its history entry and the reply. */
    char *text = task_attempt_result_text(rec, result);
    json_decref(result);
    int rc = text ? 0 : -1;
    if (rc < 0)
        vf_error_set(err, VF_ENOMEM, "out of memory recording task %s", out->task_id);
    if (rc == 0)
        rc = task_attempt_write(rec, "completed", NULL, text, NULL, decision->node->name,
                                decision->vmid, err);
    if (rc == 0)
        rc = task_attempt_history_text(rec, "completed", text, err);
    if (rc == 0)
        rc = task_attempt_event(rec, EVENT_TASK_COMPLETED, event, err);
    else
        json_decref(event);
    if (task_attempt_wants_reply(rec)) {
        out->reply_body = text;
        text = NULL;
    }
    free(text);
    /* An ordinary placement's summary is logged at debug only (service.c):
     * formatting its score was about 1% of the worker's CPU per task for
     * nothing. One that preempted is logged at info (place_by_preemption). */
    if (rc != 0 || preempted || vf_log_threshold <= VF_LOG_DEBUG)
        snprintf(out->summary, sizeof out->summary,
                 "completed on %s, vmid %u, score %.2f (attempt %d)", decision->node->name,
                 decision->vmid, decision->score, rec->attempt);
    out->placed = rc == 0;
    return rc;
}

/* How many times a preemption chooses again after finding a victim that
 * was never answered (such holds are then left out). */
#define MAX_PREEMPT_CHOICES 4

/* Whether the broker refuses a request this worker would publish again
 * (either lane's routing key): preemption's victims need one. */
static bool requests_refused(const task_handler *h)
{
    return h->refuses && (h->refuses(h->refuses_context, BROKER_KEY_SCHEDULE) ||
                          h->refuses(h->refuses_context, BROKER_KEY_SCHEDULE_PRIORITY));
}

/* PostFilter (preempt.h): `decision` placed the request nowhere; take the
 * room of lower-priority reservations whose VMs have not appeared and whose
 * grace (scheduler.preemption_grace_s) has passed, when some host has
 * enough of it, and place the request there. Returns 1 placed, 0 nothing to
 * take (the caller goes on as without preemption), -1 with err
 * (VF_ECONFLICT: a victim changed meanwhile; the batch is decided again). */
static int place_by_preemption(const task_attempt *a, sched_engine *engine,
                               const sched_request *req, const sched_decision *decision,
                               const char *scheduler, vf_error *err)
{
    /* An answer gone out within the grace is a promise: its client may be
     * creating the VM, which the inventory shows only later. */
    int64_t not_after_ms = a->now_ms - (int64_t)a->h->config->scheduler.preemption_grace_s * 1000;
    char placed_before[STORE_TIME_SIZE];
    if (store_format_time(not_after_ms, placed_before) < 0)
        return 0;
    sched_preemption p;
    memset(&p, 0, sizeof p);
    json_t *taken = json_array();
    int rc = -1;
    if (!taken) {
        vf_error_set(err, VF_ENOMEM, "out of memory preempting for task %s", a->out->task_id);
        goto out;
    }
    for (int choice = 1;; choice++) {
        sched_preemption_close(&p);
        if (sched_preempt_choose(engine, req, a->out->priority, not_after_ms, decision, &p, err) <
            0)
            goto out;
        if (!p.found) {
            rc = 0;
            goto out;
        }
        int took = preemption_take(a, &p, a->out->priority, placed_before, taken, err);
        if (took < 0)
            goto out;
        if (took == 0)
            break;
        if (choice == MAX_PREEMPT_CHOICES) { /* unanswered ones everywhere: wait as usual */
            rc = 0;
            goto out;
        }
    }
    char node[HOST_NAME_LEN];
    snprintf(node, sizeof node, "%s", p.node->name);
    /* The victims' room is free now: the engine's own decision places it,
     * vmid and score as for any placement (only the freed host can fit; the
     * victims' vmids stay held, so it takes none of them). */
    sched_decision again;
    if (sched_engine_decide(engine, req, &again, err) < 0)
        goto out;
    if (!again.placed || strcmp(again.node->name, node) != 0) {
        /* The choice mirrors the filters, so only a picture that moved
         * under it gets here: roll back and decide the batch again. */
        vf_error_set(err, VF_ECONFLICT,
                     "preempted %zu reservation(s) on %s for task %s, which still does not fit "
                     "there: %s",
                     p.n_victims, node, a->out->task_id, again.message);
        goto out;
    }
    /* A claim that misses (the victims are ended in this transaction
     * already) fails the batch as a whole: decided again. */
    rc = record_placement(a, engine, req, &again, scheduler, taken, err) < 0 ? -1 : 1;
    if (rc == 1) {
        /* Not an ordinary placement: the worker logs it at info, not in the
         * periodic count. */
        a->out->placed = false;
        char *summary = strdup(a->out->summary);
        if (summary)
            snprintf(a->out->summary, sizeof a->out->summary, "%s, preempting %zu reservation(s)",
                     summary, p.n_victims);
        free(summary);
    }
out:
    json_decref(taken);
    sched_preemption_close(&p);
    return rc;
}

/* ---- count and group: several placements in one decision ---- */

typedef struct placement {
    const host *node; /* borrowed from the snapshot */
    uint32_t vmid;
    double score;
} placement;

/* What place_all counts for a spread: the group's members (g) with this
 * request's placements added as they are made, or, without a group, the
 * request's own placements alone. */
typedef struct counted {
    uint32_t *members; /* per host of the snapshot; g->members or `own` */
    uint32_t *own;     /* owned: the request's own placements, without a group */
} counted;

/* req->count VMs, each a member of req's group when it names one (`g`,
 * else NULL): every one placed (the engine then holds them all under the
 * task id; `first` is the first decision), or none. Returns 1 placed, 0 not
 * (the engine holds nothing and `last` explains), -1 with err (an invalid
 * annotation: VF_EINVAL; VF_ENOMEM). */
static int place_all(const task_attempt *a, sched_engine *engine, const sched_request *req,
                     task_group *g, placement *placed, sched_decision *first, sched_decision *last,
                     vf_error *err)
{
    task_handler *h = a->h;
    int64_t ttl_ms = (int64_t)h->config->scheduler.reservation_ttl_s * 1000;
    counted c = {g ? g->members : NULL, NULL};
    if (!g && req->spread.key[0]) {
        c.own = calloc(h->hosts->n_hosts ? h->hosts->n_hosts : 1, sizeof *c.own);
        if (!c.own) {
            vf_error_set(err, VF_ENOMEM, "out of memory placing task %s", a->out->task_id);
            return -1;
        }
        c.members = c.own;
    }
    for (int i = 0; i < req->count; i++) {
        sched_decide_options options = {.group_members = c.members};
        if (sched_engine_decide_with(engine, req, &options, last, err) < 0)
            goto undo;
        if (!last->placed) {
            sched_engine_release(h->engine, a->out->task_id);
            a->out->reserved = false;
            free(c.own);
            return 0;
        }
        if (i == 0)
            *first = *last;
        placed[i] = (placement){last->node, last->vmid, last->score};
        if (c.members)
            c.members[sched_decision_host_index(engine, last)]++;
        if (g)
            g->n_members++;
        /* Held at once, so the next placement sees its room and vmid taken. */
        sched_reservation res;
        sched_reservation_from_decision(&res, last, req, a->out->task_id,
                                        sched_hold_expiry_s(a->now_ms + ttl_ms));
        if (sched_engine_reserve(h->engine, &res, err) < 0)
            goto undo;
        a->out->reserved = true;
    }
    free(c.own);
    return 1;
undo:
    sched_engine_release(h->engine, a->out->task_id);
    a->out->reserved = false;
    free(c.own);
    return -1;
}

/* Each placement; with a spread, the domain of its host ("domain": "r1"),
 * when the host carries the key. */
static json_t *placements_json(const placement *placed, const sched_request *req)
{
    json_t *list = json_array();
    for (int i = 0; list && i < req->count; i++) {
        json_t *one = json_pack("{s:i, s:{s:s, s:s, s:s}, s:f}", "vmid", (json_int_t)placed[i].vmid,
                                "node", "name", placed[i].node->name, "ip", placed[i].node->ip,
                                "pool", placed[i].node->pool, "score", placed[i].score);
        const char *domain =
            req->spread.key[0] ? host_traits_label(placed[i].node->traits, req->spread.key) : NULL;
        if (one && domain)
            json_object_set_new(one, "domain", json_string(domain));
        json_array_append_new(list, one);
    }
    return list;
}

static json_t *group_json(const sched_request *req)
{
    json_t *group = json_pack("{s:s}", "name", req->group);
    if (group && req->group_policy != SCHED_GROUP_NONE)
        json_object_set_new(group, "policy",
                            json_string(sched_group_policy_name(req->group_policy)));
    if (group && req->group_max_per_host > 0)
        json_object_set_new(group, "max_per_host", json_integer(req->group_max_per_host));
    return group;
}

/* The req->count placements of one task (a count, a group's members),
 * claimed all or none. Without a priority, as a spare's: never preempted
 * (preempt.h): taking one VM of an all-or-none set, or a member from under
 * its group's policy, would undo what was decided for all of them. A miss
 * (SQLite, at once) fails the batch, which is decided again: the group's
 * members were counted from a picture that has just proved stale. */
static int claim_placements(const task_attempt *rec, const sched_engine *engine,
                            const sched_request *req, const placement *placed, vf_error *err)
{
    task_handler *h = rec->h;
    char expires[STORE_TIME_SIZE];
    (void)expiry_of(rec, expires);
    reservation_claim claims[REQUEST_MAX_COUNT];
    for (int i = 0; i < req->count; i++) {
        claims[i] = claim_of(rec, engine, req, placed[i].node, placed[i].vmid, expires);
        claims[i].group = req->group[0] ? req->group : NULL;
    }
    if (!h->book) {
        for (int i = 0; i < req->count; i++) {
            char *resources = NULL;
            if (req->resources.n) {
                json_t *o = resource_amounts_to_json(&req->resources);
                resources = o ? json_dumps(o, JSON_COMPACT) : NULL;
                json_decref(o);
            }
            int rc = store_reservation_add_resources(
                h->store, rec->out->task_id, placed[i].node->name, req->cpu, req->memory, req->disk,
                placed[i].vmid, NULL, resources, rec->now, expires, err);
            free(resources);
            if (rc < 0)
                return -1;
        }
        return req->group[0]
                   ? store_reservations_set_group(h->store, rec->out->task_id, req->group, err)
                   : 0;
    }
    return reservation_book_claim_all(h->book, h->store, claims, (size_t)req->count, err);
}

/* The request's spread as results and events echo it. */
static json_t *spread_json(const sched_request *req)
{
    json_t *spread =
        json_pack("{s:s, s:i, s:s}", "key", req->spread.key, "max_skew", (int)req->spread.max_skew,
                  "when_unsatisfiable", sched_spread_when_name(req->spread.soft));
    if (spread && !req->spread.soft)
        json_object_set_new(spread, "min_domains", json_integer(req->spread.min_domains));
    return spread;
}

/* As record_placement, for place_all's placements: the result and the
 * event name the first in node/vmid/score as a single placement does, and
 * list every one in "placements" (with "count" and "group"); one
 * reservation per placement, marked with the group (claimed first). */
static int record_placements(const task_attempt *rec, const sched_engine *engine,
                             const sched_request *req, const sched_decision *first,
                             const placement *placed, const task_group *g, const char *scheduler,
                             vf_error *err)
{
    task_handler *h = rec->h;
    task_outcome *out = rec->out;
    json_t *result = sched_decision_to_json(first, h->hosts);
    json_t *list = placements_json(placed, req);
    json_t *event = NULL;
    char *text = NULL;
    int rc = -1;
    if (!result || !list) {
        vf_error_set(err, VF_ENOMEM, "out of memory recording task %s", out->task_id);
        goto out;
    }
    json_object_set_new(result, "attempts", json_integer(rec->attempt));
    json_object_set_new(result, "count", json_integer(req->count));
    json_object_set(result, "placements", list);
    if (req->group[0])
        json_object_set_new(result, "group", group_json(req));
    if (req->spread.key[0])
        json_object_set_new(result, "spread", spread_json(req));
    if (h->inventory_note && h->inventory_note[0])
        json_object_set_new(result, "inventory", json_string(h->inventory_note));
    if (scheduler)
        json_object_set_new(result, "scheduler", json_string(scheduler));
    echo_priority(result, out);
    event = completed_data(rec, result, first->vmid);
    if (event && (json_object_set_new_nocheck(event, "count", json_integer(req->count)) < 0 ||
                  json_object_set_nocheck(event, "placements", list) < 0)) {
        json_decref(event);
        event = NULL;
    }
    if (event && req->group[0])
        json_object_set(event, "group", json_object_get(result, "group"));
    if (event && req->spread.key[0])
        json_object_set(event, "spread", json_object_get(result, "spread"));
    if (scheduler && event)
        json_object_set_new(event, "scheduler", json_string(scheduler));
    echo_priority(event, out);
    text = task_attempt_result_text(rec, result);
    if (!text || !event) {
        vf_error_set(err, VF_ENOMEM, "out of memory recording task %s", out->task_id);
        goto out;
    }
    rc =
        task_attempt_write(rec, "completed", NULL, text, NULL, first->node->name, first->vmid, err);
    if (rc == 0)
        rc = task_attempt_history_text(rec, "completed", text, err);
    if (rc == 0 && g)
        rc = task_group_claim(g, h, req, rec->now, err);
    if (rc == 0)
        rc = claim_placements(rec, engine, req, placed, err);
    if (rc == 0) {
        rc = task_attempt_event(rec, EVENT_TASK_COMPLETED, event, err);
        event = NULL;
    }
    if (task_attempt_wants_reply(rec)) {
        out->reply_body = text;
        text = NULL;
    }
    if (req->group[0])
        snprintf(out->summary, sizeof out->summary,
                 "completed: %d VMs of group %s (%s), first on %s, vmid %u (attempt %d)",
                 req->count, req->group,
                 req->group_policy ? sched_group_policy_name(req->group_policy) : "no policy",
                 first->node->name, first->vmid, rec->attempt);
    else
        snprintf(out->summary, sizeof out->summary,
                 "completed: %d VMs, first on %s, vmid %u (attempt %d)", req->count,
                 first->node->name, first->vmid, rec->attempt);
    out->placed = rc == 0;
out:
    json_decref(event);
    json_decref(result);
    json_decref(list);
    free(text);
    return rc;
}

/* An already-final task: send its recorded result again to reply_to. */
static void replay_reply(const task_attempt *a, task_outcome *out, const store_task *task)
{
    if (task->result && task_attempt_wants_reply(a))
        out->reply_body = strdup(task->result);
}

static bool is_final(const char *status)
{
    return strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
           strcmp(status, "cancelled") == 0;
}

/* An operator's cancel (virtflowctl task cancel): the task ends cancelled,
 * no decision made, no attempt spent, nothing reserved; the mark's detail
 * ({"by", "reason"}) goes into the result, the history and task.cancelled. */
static int record_cancel(task_attempt *a, vf_error *err)
{
    task_outcome *out = a->out;
    const store_task *t = &a->existing;
    a->attempt = t->attempts; /* this copy is not decided: no attempt is spent */
    json_t *asked = t->action_detail ? json_loads(t->action_detail, 0, NULL) : NULL;
    const char *by = json_string_value(json_object_get(asked, "by"));
    const char *note = json_string_value(json_object_get(asked, "reason"));
    json_t *result = json_pack("{s:s, s:s, s:i, s:s?, s:s?}", "status", "cancelled", "error",
                               "cancelled by an operator", "attempts", a->attempt, "cancelled_by",
                               by, "note", note);
    json_t *data = json_pack("{s:s, s:s, s:i, s:s?, s:s?}", "task_id", out->task_id, "status",
                             "cancelled", "attempts", a->attempt, "cancelled_by", by, "note", note);
    char *text = result ? task_attempt_result_text(a, result) : NULL;
    json_decref(result);
    int rc = 0;
    if (!text || !data) {
        vf_error_set(err, VF_ENOMEM, "out of memory cancelling task %s", out->task_id);
        rc = -1;
    }
    if (rc == 0)
        rc = task_attempt_write(a, "cancelled", NULL, text, "cancelled by an operator", NULL, -1,
                                err);
    if (rc == 0)
        rc = task_attempt_history_text(a, "cancelled", text, err);
    if (rc == 0) {
        rc = task_attempt_event(a, EVENT_TASK_CANCELLED, data, err);
        data = NULL;
    }
    json_decref(data);
    if (task_attempt_wants_reply(a)) {
        out->reply_body = text;
        text = NULL;
    }
    free(text);
    snprintf(out->summary, sizeof out->summary, "cancelled by an operator%s%s", by ? ": " : "",
             by ? by : "");
    json_decref(asked); /* `by` and `note` point into it */
    return rc;
}

/* An operator's mark on the task (schema/015_task_actions.sql). Returns 1
 * when it settled this message (the task cancelled, or a surplus copy
 * dropped), 0 to decide the task as usual, -1 with err. A retry-now put one
 * more copy of the task in the queue: the first copy back is decided (the
 * mark turns into drop_copy) and the next is dropped, so the task is decided
 * once per attempt whichever copy comes first. A recheck (the worker's own
 * extra copy) is neither counted nor dropped. */
static int apply_mark(task_attempt *a, bool recheck, vf_error *err)
{
    const store_task *t = &a->existing;
    if (a->is_new || !t->action)
        return 0;
    task_handler *h = a->h;
    bool retrying = strcmp(t->status, "retrying") == 0;
    if (strcmp(t->action, "cancel") == 0 && retrying)
        return record_cancel(a, err) < 0 ? -1 : 1;
    if (recheck)
        return 0;
    if (strcmp(t->action, "retry_now") == 0 && retrying) {
        if (store_task_set_action(h->store, t->id, "retry_now", NULL, "drop_copy", t->action_detail,
                                  err) < 0)
            return -1;
        return 0;
    }
    if (strcmp(t->action, "drop_copy") != 0)
        return 0;
    if (store_task_set_action(h->store, t->id, "drop_copy", NULL, NULL, NULL, err) < 0)
        return -1;
    json_t *detail = json_pack(
        "{s:s, s:I, s:b}", "why", "a surplus copy: retry-now had this attempt decided already",
        "message_attempt", (json_int_t)a->msg->attempt, "redelivered", a->msg->redelivered);
    if (task_attempt_history(a, "dropped", detail, err) < 0)
        return -1;
    a->out->duplicate = true;
    if (is_final(t->status))
        replay_reply(a, a->out, t);
    snprintf(a->out->summary, sizeof a->out->summary,
             "a surplus copy after retry-now (task %s); dropped", t->status);
    return 1;
}

/* The steps of task_handler_handle below return 0 to go on to the next
 * step, 1 when they answered the message (its outcome set, recorded when
 * there was anything to record) or -1 with err (the store failed). */
static int answered(int recorded)
{
    return recorded < 0 ? -1 : 1;
}

/* Whether the message is to be decided at all: its task id's first
 * request, not a recheck with nothing to do, no operator's mark settling it
 * (apply_mark), not final already. */
static int needs_deciding(task_attempt *a, bool recheck, vf_error *err)
{
    /* A task id belongs to its first request: another body under it is
     * refused before anything else looks at the task (task_conflict.h). */
    int rc = task_attempt_conflict(a, err);
    if (rc != 0)
        return answered(rc);
    const store_task *existing = &a->existing;
    task_outcome *out = a->out;
    if (recheck && (a->is_new || strcmp(existing->status, "retrying") != 0 || !a->h->hosts)) {
        /* Placed, failed or not ours any more: the recheck has nothing to do. */
        out->duplicate = true;
        snprintf(out->summary, sizeof out->summary, "recheck: %s; nothing to do",
                 a->is_new ? "no such task" : existing->status);
        return 1;
    }
    int marked = apply_mark(a, recheck, err);
    if (marked != 0)
        return answered(marked);
    if (!a->is_new && is_final(existing->status)) {
        /* Redelivered or republished: never scheduled twice. Its event, if
         * still unconfirmed, goes out again from the outbox. */
        out->duplicate = true;
        replay_reply(a, out, existing);
        snprintf(out->summary, sizeof out->summary, "already %s; not scheduled again",
                 existing->status);
        return 1;
    }
    return 0;
}

/* A redelivered message: its worker died or handed it back, and a claim of
 * its may have been recorded by a batch that never committed. Given back
 * here, with this decision (reservations.h). 0, or -1 with err. */
static int give_back_unanswered(task_attempt *a, vf_error *err)
{
    task_handler *h = a->h;
    if (store_reservation_release_unanswered(h->store, a->out->task_id, a->now, err) < 0)
        return -1;
    /* SQLite's claims run in this transaction and see the release: the
     * room is this decision's. PostgreSQL's run on a connection of their
     * own and count those reservations until the batch commits: so does
     * the engine, or its claims there would miss, and be decided again the
     * same way, round after round. */
    if (store_writers_serialized(h->store))
        sched_engine_release(h->engine, a->out->task_id);
    return 0;
}

/* The body as a request into *req, with its priority and the task id it is
 * recorded under; a body that is not one fails the task, invalid. */
static int read_request(task_attempt *a, sched_request *req, vf_error *err)
{
    const vf_config *config = a->h->config;
    task_outcome *out = a->out;
    vf_error invalid;
    vf_error_init(&invalid);
    if (sched_request_parse(a->body, req, &invalid) < 0 ||
        queue_order_priority(req, config, &out->priority, &invalid) < 0)
        return answered(record_failure(a, "invalid", invalid.text, NULL, NULL, NULL, err));
    out->has_priority =
        req->has_priority || req->priority_class[0] || config->scheduler.default_priority_class;
    /* The id the task is recorded under, also when only the message had it:
     * a pick among the near-best hosts hashes it (near_best.h). */
    if (!req->task_id[0])
        snprintf(req->task_id, sizeof req->task_id, "%s", out->task_id);
    /* Named only when the request names a profile: the common path's
     * results stay as they were. */
    memcpy(out->scheduler, req->scheduler_name, sizeof out->scheduler);
    return 0;
}

/* Not decidable by this worker now (`missing_profile`, a scheduler profile
 * it lacks, or no inventory when NULL): the task waits through a retry
 * tier, or on its last attempt fails exhausted and is parked. 0, or -1
 * with err. */
static int wait_or_exhaust(task_attempt *a, const char *why, const char *scheduler,
                           const char *missing_profile, vf_error *err)
{
    task_outcome *out = a->out;
    if (a->attempt >= a->h->config->retry.max_attempts) {
        int rc = record_failure(a, "exhausted", why, NULL, NULL, scheduler, err);
        out->action = TASK_DEAD;
        out->error = strdup(why);
        return rc;
    }
    if (!missing_profile)
        return task_attempt_retry(a, why, NULL, err);
    json_t *extra = json_pack("{s:s}", "scheduler", missing_profile);
    a->event_extra = extra;
    a->retry_reason = "unknown_scheduler";
    int rc = task_attempt_retry(a, why, json_pack("{s:s}", "scheduler", missing_profile), err);
    a->event_extra = NULL;
    json_decref(extra);
    return rc;
}

/* The engine of the request's scheduler profile into *engine. A profile
 * this worker lacks is as a pod whose scheduler is missing: not invalid, it
 * waits for a config that has it (a worker restarted with it, or another
 * worker on the same queue), and ends exhausted if none comes; a recheck
 * has nothing to do. */
static int profile_engine(task_attempt *a, const sched_request *req, bool recheck,
                          sched_engine **engine, vf_error *err)
{
    task_outcome *out = a->out;
    *engine = sched_engine_profile(a->h->engine, req->scheduler_name);
    if (*engine)
        return 0;
    if (recheck) {
        out->duplicate = true;
        snprintf(out->summary, sizeof out->summary, "recheck: no scheduler profile %s",
                 req->scheduler_name);
        return 1;
    }
    char why[160];
    snprintf(why, sizeof why, "no scheduler profile %s on this worker (scheduler.profiles)",
             req->scheduler_name);
    return answered(wait_or_exhaust(a, why, req->scheduler_name, req->scheduler_name, err));
}

/* Several placements, a group's member, or a spread (which counts the
 * others): all or none, the group as the store has it in this transaction.
 * Recorded when placed (1); 0 with *decision saying why not. */
static int decide_several(task_attempt *a, sched_engine *engine, const sched_request *req,
                          const char *scheduler, sched_decision *decision, vf_error *err)
{
    task_group group = {0};
    task_group *g = req->group[0] ? &group : NULL;
    if (g && task_group_read(g, a->h, req, err) < 0) {
        task_group_close(g);
        return -1;
    }
    char why[512];
    if (g && task_group_mismatch(g, req, why, sizeof why)) {
        task_group_close(g);
        return answered(record_failure(a, "invalid", why, NULL, NULL, scheduler, err));
    }
    placement placed[REQUEST_MAX_COUNT];
    sched_decision first;
    vf_error invalid;
    vf_error_init(&invalid);
    int all = place_all(a, engine, req, g, placed, &first, decision, &invalid);
    if (all < 0) {
        task_group_close(g);
        const char *reason = invalid.code == VF_EINVAL ? "invalid" : "exhausted";
        return answered(record_failure(a, reason, invalid.text, NULL, NULL, scheduler, err));
    }
    if (all == 1) {
        int rc = record_placements(a, engine, req, &first, placed, g, scheduler, err);
        task_group_close(g);
        return answered(rc);
    }
    task_group_close(g);
    if (req->count > 1) {
        /* Say that the request is all or none: some of it may fit. */
        char message[sizeof decision->message];
        snprintf(message, sizeof message, "%d VMs (all or none): %.480s", req->count,
                 decision->message);
        memcpy(decision->message, message, sizeof message);
    }
    return 0;
}

/* One VM: recorded when placed (1); 0 with *decision saying why not. */
static int decide_one(task_attempt *a, sched_engine *engine, const sched_request *req,
                      const char *scheduler, sched_decision *decision, vf_error *err)
{
    /* A failure's per-host reasons are left to the index: the history keeps
     * a sample of them (sched_rejections_add), and working out and listing
     * every host's was most of a failure's time on a large inventory. */
    sched_decide_options lazily = {.lazy_host_reasons = true};
    vf_error invalid;
    vf_error_init(&invalid);
    if (sched_engine_decide_with(engine, req, &lazily, decision, &invalid) < 0) {
        const char *reason = invalid.code == VF_EINVAL ? "invalid" : "exhausted";
        return answered(record_failure(a, reason, invalid.text, NULL, NULL, scheduler, err));
    }
    if (decision->placed)
        return answered(record_placement(a, engine, req, decision, scheduler, NULL, err));
    return 0;
}

/* No room: why not and what would fix it, in the attempt's history (and
 * the failed result and event); the task fails when no host could ever
 * hold it or on its last attempt, else waits for a retry. 0, or -1. */
static int record_no_room(task_attempt *a, sched_engine *engine, const sched_request *req,
                          const sched_decision *decision, const char *scheduler, vf_error *err)
{
    task_handler *h = a->h;
    json_t *detail = sched_decision_to_json(decision, h->hosts);
    if (detail && sched_rejections_add(engine, req, decision, detail, SCHED_HISTORY_HOSTS) < 0) {
        json_decref(detail);
        detail = NULL;
    }
    json_t *suggestions = sched_suggest(engine, req, decision, SCHED_SUGGEST_HOSTS);
    if (suggestions)
        json_object_set(detail, "suggestions", suggestions);
    if (scheduler && detail)
        json_object_set_new(detail, "scheduler", json_string(scheduler));
    echo_priority(detail, a->out);
    /* Waiting is pointless when no host of a fresh inventory could hold it
     * even empty (never_fits.h); a stale one may have lost hosts. Judged by
     * the profile that decided, whose filters are the ones that count. */
    char never[512];
    bool fresh = !(h->inventory_note && h->inventory_note[0]);
    int rc;
    if (h->config->scheduler.unfit_requests == CONFIG_UNFIT_FAIL && fresh &&
        sched_never_fits(engine, req, never, sizeof never))
        rc = record_failure(a, "never_fits", never, detail, suggestions, scheduler, err);
    else if (a->attempt >= h->config->retry.max_attempts)
        rc = record_failure(a, "unschedulable", decision->message, detail, suggestions, scheduler,
                            err);
    else
        rc = task_attempt_retry(a, decision->message, detail, err);
    json_decref(suggestions);
    return rc;
}

int task_handler_handle(task_handler *h, const task_message *msg, task_outcome *out, vf_error *err)
{
    task_attempt a;
    int rc = task_attempt_open(&a, h, msg, out, "schedule", err);
    if (rc <= 0)
        goto out;
    bool recheck = msg->recheck && config_trusts_publisher(h->config, msg->user_id);
    if ((rc = needs_deciding(&a, recheck, err)) != 0)
        goto out;
    if (msg->redelivered && (rc = give_back_unanswered(&a, err)) < 0)
        goto out;
    sched_request req;
    sched_engine *engine;
    if ((rc = read_request(&a, &req, err)) != 0 ||
        (rc = profile_engine(&a, &req, recheck, &engine, err)) != 0)
        goto out;
    const char *scheduler = req.scheduler_name[0] ? req.scheduler_name : NULL;
    if (!h->hosts) {
        char why[VF_ERROR_TEXT + 32];
        snprintf(why, sizeof why, "%s",
                 h->inventory_note && h->inventory_note[0] ? h->inventory_note
                                                           : "no inventory yet");
        rc = wait_or_exhaust(&a, why, scheduler, NULL, err);
        goto out;
    }
    sched_decision decision;
    bool several = req.count > 1 || req.group[0] || req.spread.key[0];
    rc = several ? decide_several(&a, engine, &req, scheduler, &decision, err)
                 : decide_one(&a, engine, &req, scheduler, &decision, err);
    if (rc != 0)
        goto out;
    /* A group member, a count or a spread is not placed by preemption: the
     * PostFilter frees room for one VM and knows nothing of a group's
     * members nor of domains. Nor while the broker refuses the victims'
     * requests: published again they would be refused (amqp_refusals.h), so
     * the victims could not be decided. */
    if (!several && sched_preempt_allowed(&req, h->config) && !requests_refused(h)) {
        rc = place_by_preemption(&a, engine, &req, &decision, scheduler, err);
        if (rc != 0)
            goto out;
    }
    if (recheck) {
        /* Still no room: the delayed copy keeps the task's place in its tier. */
        out->duplicate = true;
        snprintf(out->summary, sizeof out->summary, "recheck: still no room (%s)",
                 decision.message);
        goto out;
    }
    rc = record_no_room(&a, engine, &req, &decision, scheduler, err);
out:
    task_attempt_close(&a);
    return rc < 0 ? -1 : 0;
}
