/* decision_replay: see decision_replay.h. */
#include "decision_replay.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt.h"
#include "spare_place.h"

/* Every host's reason in the decision just made ("fits" for none). */
static json_t *host_reasons_json(const sched_engine *engine, const sched_decision *d)
{
    const hostset *hosts = sched_engine_snapshot(engine);
    json_t *all = json_object();
    for (size_t i = 0; all && hosts && d->host_reasons && i < hosts->n_hosts && i < d->n_hosts;
         i++) {
        sched_reason r = (sched_reason)d->host_reasons[i];
        json_object_set_new(all, hosts->hosts[i].name,
                            json_string(r == SCHED_REASON_NONE ? "fits" : sched_reason_text(r)));
    }
    return all;
}

/* The result of decision `d` as the worker records it, with every host's
 * reason beside it. */
static json_t *outcome_json(const sched_engine *engine, const sched_decision *d)
{
    json_t *out = sched_decision_to_json(d, sched_engine_snapshot(engine));
    if (out)
        json_object_set_new(out, "host_reasons", host_reasons_json(engine, d));
    return out;
}

static int decide(sched_engine *decider, const sched_request *req, const uint32_t *members,
                  sched_decision *d, vf_error *err)
{
    sched_decide_options options = {.host_reasons = true, .group_members = members};
    return sched_engine_decide_with(decider, req, &options, d, err);
}

/* One VM; placed nowhere, maybe by preemption (task_handler.c's
 * place_by_preemption). */
static json_t *replay_one(sched_engine *engine, sched_engine *decider,
                          const decision_replay_input *in, vf_error *err)
{
    sched_decision d;
    if (decide(decider, in->req, NULL, &d, err) < 0)
        return NULL;
    if (d.placed || !in->may_preempt)
        return outcome_json(engine, &d);
    sched_preemption p;
    if (sched_preempt_choose(decider, in->req, in->priority, in->preempt_not_after_ms, &d, &p,
                             err) < 0)
        return NULL;
    if (!p.found) {
        sched_preemption_close(&p);
        return outcome_json(engine, &d);
    }
    json_t *taken = json_array();
    for (size_t i = 0; taken && i < p.n_victims; i++) {
        const sched_victim *v = &p.victims[i];
        json_array_append_new(taken,
                              json_pack("{s:s, s:i, s:i}", "task_id", v->task_id, "priority",
                                        (json_int_t)v->priority, "vmid", (json_int_t)v->vmid));
        if (sched_preempt_end_victim(engine, v, p.node->name, err) < 0) {
            json_decref(taken);
            sched_preemption_close(&p);
            return NULL;
        }
    }
    sched_preemption_close(&p);
    json_t *out = decide(decider, in->req, NULL, &d, err) < 0 ? NULL : outcome_json(engine, &d);
    if (out)
        json_object_set_new(out, "preempted", taken);
    else
        json_decref(taken);
    return out;
}

/* `count` VMs, a group's member or a spread: all or none (task_handler.c's
 * place_all). A spread counts the group's members, else the request's own
 * placements as they are made. */
static json_t *replay_several(sched_engine *engine, sched_engine *decider,
                              const decision_replay_input *in, vf_error *err)
{
    const sched_request *req = in->req;
    const hostset *hosts = sched_engine_snapshot(engine);
    size_t n_hosts = hosts ? hosts->n_hosts : 0;
    bool counted = req->group[0] || req->spread.key[0];
    uint32_t *members = counted ? calloc(n_hosts ? n_hosts : 1, sizeof *members) : NULL;
    json_t *list = json_array(), *out = NULL;
    if ((counted && !members) || !list) {
        vf_error_set(err, VF_ENOMEM, "out of memory replaying task %s", req->task_id);
        goto out;
    }
    if (members && in->group_members)
        memcpy(members, in->group_members, n_hosts * sizeof *members);
    for (int i = 0; i < req->count; i++) {
        sched_decision d;
        if (decide(decider, req, members, &d, err) < 0)
            goto out;
        if (!d.placed || i == 0) {
            json_decref(out);
            out = outcome_json(engine, &d);
        }
        if (!d.placed) {
            if (req->count > 1) { /* as the worker says it: the request is all or none */
                char message[sizeof d.message + 32];
                snprintf(message, sizeof message, "%d VMs (all or none): %.480s", req->count,
                         d.message);
                json_object_set_new(out, "error", json_string(message));
                json_object_set_new(out, "explanation", json_string(message));
            }
            break;
        }
        json_array_append_new(list, json_pack("{s:i, s:{s:s}, s:f}", "vmid", (json_int_t)d.vmid,
                                              "node", "name", d.node->name, "score", d.score));
        if (members)
            members[sched_decision_host_index(decider, &d)]++;
        sched_reservation res;
        sched_reservation_from_decision(&res, &d, req, req->task_id, in->hold_expires);
        if (sched_engine_reserve(engine, &res, err) < 0) {
            json_decref(out);
            out = NULL;
            goto out;
        }
    }
    if (out && json_array_size(list) == (size_t)req->count) {
        json_object_set_new(out, "count", json_integer(req->count));
        json_object_set(out, "placements", list);
    }
out:
    json_decref(list);
    free(members);
    return out;
}

/* spare.prepare: every spare or none (spare_handler.c). */
static json_t *replay_spares(sched_engine *engine, sched_engine *decider,
                             const decision_replay_input *in, vf_error *err)
{
    sched_spare_placement at[SCHED_SPARE_MAX_COUNT];
    sched_decision last;
    int rc = sched_spares_place(engine, decider, in->req, in->spare_count, in->spare_strict,
                                in->req->task_id, in->hold_expires, at, &last, err);
    if (rc < 0)
        return NULL;
    if (rc == 0)
        return outcome_json(engine, &last);
    json_t *list = json_array();
    for (int i = 0; list && i < in->spare_count; i++)
        json_array_append_new(list, json_pack("{s:s, s:i, s:f}", "host", at[i].node->name, "vmid",
                                              (json_int_t)at[i].vmid, "score", at[i].score));
    json_t *out = json_pack("{s:s, s:o}", "status", "provisioning", "spares", list);
    if (!out)
        vf_error_set(err, VF_ENOMEM, "out of memory replaying task %s", in->req->task_id);
    return out;
}

json_t *decision_replay_run(sched_engine *engine, const decision_replay_input *in, vf_error *err)
{
    sched_engine *decider = sched_engine_profile(engine, in->req->scheduler_name);
    if (!decider) {
        vf_error_set(err, VF_ECONFIG, "no scheduler profile %s in the configuration replayed",
                     in->req->scheduler_name);
        return NULL;
    }
    json_t *out = in->spare_count > 0 ? replay_spares(engine, decider, in, err)
                  : in->req->count > 1 || in->req->group[0] || in->req->spread.key[0]
                      ? replay_several(engine, decider, in, err)
                      : replay_one(engine, decider, in, err);
    if (!out && err->code == VF_OK)
        vf_error_set(err, VF_ENOMEM, "out of memory replaying task %s", in->req->task_id);
    return out;
}

/* ---- comparing ---- */

static void differ(json_t *list, const char *field, const json_t *recorded, const json_t *replayed)
{
    json_array_append_new(list, json_pack("{s:s, s:O?, s:O?}", "field", field, "recorded", recorded,
                                          "replayed", replayed));
}

/* Both absent, or equal (numbers within rounding: scores are kept to two
 * decimals in the result). */
static bool same(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return a == b;
    if (json_is_number(a) && json_is_number(b))
        return fabs(json_number_value(a) - json_number_value(b)) < 0.006;
    return json_equal((json_t *)a, (json_t *)b);
}

static void compare_member(json_t *list, const char *field, const json_t *recorded,
                           const json_t *replayed)
{
    if (!same(recorded, replayed))
        differ(list, field, recorded, replayed);
}

/* Each element's `key` (and a second `key2`, may be NULL) in order. */
static void compare_list(json_t *list, const char *name, const json_t *recorded,
                         const json_t *replayed, const char *key, const char *key2)
{
    if (!recorded)
        return;
    if (json_array_size(recorded) != json_array_size(replayed)) {
        differ(list, name, recorded, replayed);
        return;
    }
    for (size_t i = 0; i < json_array_size(recorded); i++) {
        const json_t *a = json_array_get(recorded, i), *b = json_array_get(replayed, i);
        const char *keys[2] = {key, key2};
        for (int k = 0; k < 2 && keys[k]; k++) {
            const json_t *x = json_object_get(a, keys[k]), *y = json_object_get(b, keys[k]);
            if (json_is_object(x)) { /* placements' node: {"name": ...} */
                x = json_object_get(x, "name");
                y = json_object_get(y, "name");
            }
            char field[96];
            snprintf(field, sizeof field, "%s[%zu].%s", name, i, keys[k]);
            compare_member(list, field, x, y);
        }
    }
}

/* The recorded count of hosts per reason against every host's reason. */
static void compare_counts(json_t *list, const json_t *recorded, const json_t *reasons)
{
    const char *reason;
    json_t *count;
    json_object_foreach((json_t *)recorded, reason, count)
    {
        json_int_t n = 0;
        const char *host;
        json_t *why;
        json_object_foreach((json_t *)reasons, host, why) n +=
            strcmp(json_string_value(why), reason) == 0;
        char field[96];
        snprintf(field, sizeof field, "rejection_counts.%s", reason);
        json_t *replayed = json_integer(n);
        compare_member(list, field, count, replayed);
        json_decref(replayed);
    }
}

json_t *decision_replay_compare(const json_t *recorded, const json_t *replayed)
{
    json_t *list = json_array();
    if (!list)
        return NULL;
    static const char *const plain[] = {"status",   "vmid",  "score",
                                        "feasible", "hosts", "explanation"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        if (json_object_get(recorded, plain[i]))
            compare_member(list, plain[i], json_object_get(recorded, plain[i]),
                           json_object_get(replayed, plain[i]));
    compare_member(list, "node", json_object_get(json_object_get(recorded, "node"), "name"),
                   json_object_get(json_object_get(replayed, "node"), "name"));
    const char *name;
    json_t *value;
    json_t *scores = json_object_get(replayed, "scores");
    json_object_foreach(json_object_get(recorded, "scores"), name, value)
    {
        char field[96];
        snprintf(field, sizeof field, "scores.%s", name);
        compare_member(list, field, json_object_get(value, "score"),
                       json_object_get(json_object_get(scores, name), "score"));
    }
    json_t *reasons = json_object_get(replayed, "host_reasons");
    json_object_foreach(json_object_get(recorded, "rejections"), name, value)
    {
        char field[96];
        snprintf(field, sizeof field, "rejections.%s", name);
        compare_member(list, field, value, json_object_get(reasons, name));
    }
    compare_list(list, "placements", json_object_get(recorded, "placements"),
                 json_object_get(replayed, "placements"), "node", "vmid");
    compare_list(list, "spares", json_object_get(recorded, "spares"),
                 json_object_get(replayed, "spares"), "host", "vmid");
    const json_t *preempted = json_object_get(recorded, "preempted");
    if (preempted)
        compare_list(list, "preempted", preempted, json_object_get(replayed, "preempted"),
                     "task_id", NULL);
    else if (json_object_get(replayed, "preempted"))
        differ(list, "preempted", NULL, json_object_get(replayed, "preempted"));
    compare_counts(list, json_object_get(recorded, "rejection_counts"), reasons);
    return list;
}
