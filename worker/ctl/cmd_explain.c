/* virtflowctl explain TASK_ID [--replay]: a past decision, what it was made
 * over (store_provenance.h), and, with --replay, the same decision made
 * again from that record (decision_replay.h) and compared with what was
 * recorded; then once more under today's configuration (-c/--config FILE)
 * over the same record: "would it land there today?". Reads the store only. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_record.h"
#include "decision_replay.h"
#include "engine.h"
#include "preempt.h"
#include "provenance.h"
#include "queue_order.h"
#include "request.h"
#include "spare_place.h"
#include "store_tasks.h"

static void explain_usage(FILE *out)
{
    fprintf(out, "usage: virtflowctl explain TASK_ID [--replay] [-c CONFIG] [--json]\n"
                 "\n"
                 "Show what the task's last decision was made over: the inventory snapshot, the\n"
                 "digest of the reservations held, the scheduler configuration and the\n"
                 "reservation clock. With --replay, decide it again from that record (the\n"
                 "snapshot, the reservations rebuilt from the store and checked against the\n"
                 "digest, the recorded scheduler section) and compare node, vmid, score, each\n"
                 "plugin's part and every recorded host reason with what was recorded; then\n"
                 "once more under the configuration of -c (today's) and name the scheduler\n"
                 "keys that differ. Reads the store only.\n"
                 "\n"
                 "  --replay   decide again and compare\n"
                 "  --json     the report as one JSON object (identical, differences, today)\n"
                 "\n"
                 "exit status: 0 identical (or no --replay), 1 the replay differs from the\n"
                 "record, 2 usage or no such task, 3 configuration error, 4 store unreachable,\n"
                 "5 the task has no decision record.\n");
}

/* What the worker recorded of the decision: the detail of the task's last
 * history row that holds one, and the worker that made it. */
typedef struct recorded {
    json_t *outcome;
    char worker[256];
} recorded;

static int keep_outcome(const store_task_event *event, void *ctx)
{
    recorded *r = ctx;
    json_t *detail = event->detail ? json_loads(event->detail, 0, NULL) : NULL;
    const char *worker = json_string_value(json_object_get(detail, "worker"));
    const char *step = json_string_value(json_object_get(detail, "step"));
    if (strcmp(event->status, "processing") == 0 && worker)
        snprintf(r->worker, sizeof r->worker, "%s", worker);
    /* A decision's detail explains it (sched_decision_to_json); spares
     * placed are listed by the "placed" step. */
    if (json_object_get(detail, "explanation") || (step && strcmp(step, "placed") == 0)) {
        json_decref(r->outcome);
        r->outcome = json_incref(detail);
    }
    json_decref(detail);
    return 0;
}

/* The request of `task` as the worker parsed it into *req (spare.prepare:
 * *spare_count > 0). Returns 0 or -1 with err. */
static int parse_request(const store_task *task, sched_request *req, int *spare_count,
                         vf_error *err)
{
    json_t *body = task->request ? json_loads(task->request, 0, NULL) : NULL;
    int rc = -1;
    *spare_count = 0;
    if (!body)
        vf_error_set(err, VF_EINVAL, "task %s: its request is not JSON", task->id);
    else if (strcmp(task->kind, "spare") == 0)
        rc = ctl_parse_spare_prepare(body, req, spare_count, NULL, err);
    else
        rc = sched_request_parse(body, req, err);
    json_decref(body);
    if (rc == 0 && !req->task_id[0])
        snprintf(req->task_id, sizeof req->task_id, "%s", task->id);
    return rc;
}

/* Decide the task again under `config` over the record. Owned result or
 * NULL with err. */
static json_t *replay_under(const vf_config *config, const vf_config *today, const ctl_record *r,
                            const sched_request *req, int spare_count, const uint32_t *members,
                            const char *worker, vf_error *err)
{
    sched_engine *engine = sched_engine_from_config(config, worker[0] ? worker : NULL, err);
    json_t *out = NULL;
    if (!engine || sched_engine_set_hosts(engine, r->hosts, NULL, NULL, err) < 0)
        goto out;
    for (size_t i = 0; i < r->n_holds; i++)
        if (sched_engine_reserve(engine, &r->holds[i], err) < 0)
            goto out;
    decision_replay_input in = {.req = req, .spare_count = spare_count, .group_members = members};
    if (queue_order_priority(req, config, &in.priority, err) < 0)
        goto out;
    in.may_preempt = !spare_count && req->count <= 1 && !req->group[0] && !req->spread.key[0] &&
                     sched_preempt_allowed(req, config);
    in.preempt_not_after_ms =
        r->p.decided_ms - (int64_t)config->scheduler.preemption_grace_s * 1000;
    /* Spares' holds live by spare.* and retry.*, not in the scheduler section: today's. */
    int64_t ttl_s = (int64_t)config->scheduler.reservation_ttl_s;
    if (spare_count)
        ttl_s += (int64_t)today->spare.provisioner.timeout_s * (today->retry.max_attempts + 1);
    in.hold_expires = sched_hold_expiry_s(r->p.decided_ms + ttl_s * 1000);
    in.spare_strict = today->spare.anti_affinity_strict;
    out = decision_replay_run(engine, &in, err);
out:
    sched_engine_free(engine);
    return out;
}

/* ---- a group's members at the decision ---- */

typedef struct members {
    const ctl_record *r;
    uint32_t *per_host;
} members;

static bool shows_guest(const hostset *hosts, int64_t vmid, size_t host_index)
{
    for (size_t i = 0; i < hosts->n_guests; i++)
        if (hosts->guests[i].vmid == vmid && hosts->guests[i].host_index == host_index)
            return true;
    return false;
}

/* task_group.c's count: the holds in force, and the members ended because
 * an inventory showed their VM, while the snapshot shows it there. */
static int count_member(const store_reservation *row, void *ctx)
{
    members *m = ctx;
    const host *h = hostset_find(m->r->hosts, row->node);
    if (!h)
        return 0;
    size_t index = (size_t)(h - m->r->hosts->hosts);
    bool held = false;
    for (size_t i = 0; i < m->r->n_holds && !held; i++)
        held = m->r->hold_ids[i] == row->id;
    bool bound = row->bound_at && row->released_at &&
                 strcmp(row->released_at, m->r->decided_at) < 0 &&
                 shows_guest(m->r->hosts, row->vmid, index);
    m->per_host[index] += held || bound;
    return 0;
}

static uint32_t *group_members(store *s, const ctl_record *r, const sched_request *req,
                               vf_error *err)
{
    members m = {r, calloc(r->hosts->n_hosts ? r->hosts->n_hosts : 1, sizeof *m.per_host)};
    if (!m.per_host) {
        vf_error_set(err, VF_ENOMEM, "out of memory reading group %s", req->group);
        return NULL;
    }
    if (store_group_reservations(s, req->group, count_member, &m, err) < 0) {
        free(m.per_host);
        return NULL;
    }
    return m.per_host;
}

/* ---- the report ---- */

static void note_key(const char *key, bool reloads, void *user)
{
    (void)reloads;
    if (strncmp(key, "scheduler.", 10) == 0)
        json_array_append_new(user, json_string(key));
}

/* Why a replay under the recorded configuration can differ, most likely
 * first. */
static const char *why_different(const ctl_record *r)
{
    if (!r->config)
        return "no scheduler configuration was recorded: replayed under today's";
    if (!r->snapshot_exact)
        return "the inventory content decided over was not recorded (inventory.record_decided "
               "off, or pruned): replayed over the nearest earlier snapshot";
    if (!r->holds_exact)
        return "the reservations rebuilt from the store do not give the recorded digest "
               "(another worker's holds not yet seen by the deciding one, custom resources, or "
               "rows pruned)";
    return "the same snapshot, holds and configuration decide otherwise: the engine's code "
           "(a plugin, its arithmetic) changed since";
}

static json_t *record_json(const ctl_record *r, const char *worker)
{
    char digest[24];
    snprintf(digest, sizeof digest, "%016" PRIx64, r->p.holds);
    return json_pack("{s:s, s:s, s:{s:I, s:b, s:s, s:I}, s:{s:s, s:b, s:I, s:I}, s:o?, s:I}",
                     "decided_at", r->decided_at, "worker", worker, "snapshot", "id",
                     (json_int_t)r->snapshot_id, "exact", r->snapshot_exact, "recorded_at",
                     r->snapshot_at, "hosts", (json_int_t)r->hosts->n_hosts, "holds", "digest",
                     digest, "rebuilt_exactly", r->holds_exact, "count", (json_int_t)r->n_holds,
                     "ambiguous", (json_int_t)r->ambiguous, "config",
                     r->p.config_id > 0 ? json_integer(r->p.config_id) : NULL, "clock_ms",
                     (json_int_t)r->p.clock_ms);
}

static void print_outcome(const char *title, const json_t *replayed, const json_t *differences,
                          const char *why)
{
    size_t n = json_array_size(differences);
    printf("%s: %s\n", title, n ? "DIFFERS" : "identical");
    const json_t *node = json_object_get(json_object_get(replayed, "node"), "name");
    if (node)
        printf("  node %s, vmid %" JSON_INTEGER_FORMAT ", score %.2f\n", json_string_value(node),
               json_integer_value(json_object_get(replayed, "vmid")),
               json_number_value(json_object_get(replayed, "score")));
    else if (json_object_get(replayed, "explanation"))
        printf("  %s\n", json_string_value(json_object_get(replayed, "explanation")));
    const json_t *preempted = json_object_get(replayed, "preempted");
    for (size_t i = 0; i < json_array_size(preempted); i++) {
        const json_t *v = json_array_get(preempted, i);
        printf("  preempting %s (priority %" JSON_INTEGER_FORMAT ", vmid %" JSON_INTEGER_FORMAT
               ")\n",
               json_string_value(json_object_get(v, "task_id")),
               json_integer_value(json_object_get(v, "priority")),
               json_integer_value(json_object_get(v, "vmid")));
    }
    const json_t *spares = json_object_get(replayed, "spares");
    for (size_t i = 0; i < json_array_size(spares); i++)
        printf("  spare %zu on %s, vmid %" JSON_INTEGER_FORMAT "\n", i,
               json_string_value(json_object_get(json_array_get(spares, i), "host")),
               json_integer_value(json_object_get(json_array_get(spares, i), "vmid")));
    const char *host;
    json_t *reason;
    json_object_foreach((json_t *)json_object_get(replayed, "host_reasons"), host, reason)
        printf("  %-24s %s\n", host, json_string_value(reason));
    if (n)
        printf("differences (recorded -> replayed):\n");
    for (size_t i = 0; i < n; i++) {
        const json_t *d = json_array_get(differences, i);
        size_t flags = JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(6);
        char *a = json_dumps(json_object_get(d, "recorded"), flags);
        char *b = json_dumps(json_object_get(d, "replayed"), flags);
        printf("  %s: %s -> %s\n", json_string_value(json_object_get(d, "field")), a ? a : "none",
               b ? b : "none");
        free(a);
        free(b);
    }
    if (n && why)
        printf("why: %s\n", why);
}

static void print_record(const store_task *task, const ctl_record *r, const char *worker)
{
    printf("task %s (%s, %s): decided %s%s%s\n", task->id, task->kind, task->status, r->decided_at,
           worker[0] ? " by " : "", worker);
    printf("  inventory: snapshot %lld recorded %s, %zu hosts%s\n", (long long)r->snapshot_id,
           r->snapshot_at, r->hosts->n_hosts,
           r->snapshot_exact ? "" : " (NOT the content decided over: none recorded)");
    printf("  holds: %zu reservations rebuilt from the store, digest %016" PRIx64 " %s", r->n_holds,
           r->holds_digest, r->holds_exact ? "= the record" : "!= the record");
    if (r->ambiguous)
        printf(" (%zu rows of the decision's millisecond sorted out by the batch's order and it)",
               r->ambiguous);
    printf("\n  configuration: %s\n", r->config ? "the scheduler section recorded with the decision"
                                                : "none recorded (today's used)");
}

typedef struct explained {
    json_t *replayed, *differences;
    json_t *today, *today_differences, *changes;
} explained;

static void explained_close(explained *e)
{
    json_decref(e->replayed);
    json_decref(e->differences);
    json_decref(e->today);
    json_decref(e->today_differences);
    json_decref(e->changes);
}

/* Replay under the recorded and today's configurations and compare. */
static int replay_both(store *s, const store_task *task, const ctl_record *r, const recorded *rec,
                       const vf_config *today, explained *e, vf_error *err)
{
    sched_request req;
    int spare_count = 0;
    uint32_t *members = NULL;
    int rc = -1;
    if (parse_request(task, &req, &spare_count, err) < 0)
        goto out;
    if (req.group[0] && !(members = group_members(s, r, &req, err)))
        goto out;
    const vf_config *then = r->config ? r->config : today;
    e->replayed = replay_under(then, today, r, &req, spare_count, members, rec->worker, err);
    e->today = e->replayed
                   ? replay_under(today, today, r, &req, spare_count, members, rec->worker, err)
                   : NULL;
    if (!e->today)
        goto out;
    json_t *empty = json_object();
    const json_t *outcome = rec->outcome ? rec->outcome : empty;
    e->differences = decision_replay_compare(outcome, e->replayed);
    e->today_differences = decision_replay_compare(outcome, e->today);
    json_decref(empty);
    e->changes = json_array();
    if (r->config)
        (void)config_diff(r->config, today, CONFIG_RELOADS_WORKER, note_key, e->changes);
    rc = e->differences && e->today_differences && e->changes ? 0 : -1;
    if (rc < 0)
        vf_error_set(err, VF_ENOMEM, "out of memory comparing task %s", task->id);
out:
    free(members);
    return rc;
}

static void report(const store_task *task, const ctl_record *r, const recorded *rec,
                   const explained *e, bool as_json)
{
    bool identical = json_array_size(e->differences) == 0;
    if (as_json) {
        json_t *all =
            json_pack("{s:s, s:s, s:s, s:o, s:b, s:O, s:s?, s:O, s:O?, s:{s:b, s:O, s:O, s:O}}",
                      "task_id", task->id, "kind", task->kind, "status", task->status, "record",
                      record_json(r, rec->worker), "identical", identical, "differences",
                      e->differences, "why", identical ? NULL : why_different(r), "replayed",
                      e->replayed, "recorded", rec->outcome, "today", "identical",
                      json_array_size(e->today_differences) == 0, "differences",
                      e->today_differences, "config_changes", e->changes, "replayed", e->today);
        ctl_print_json(all);
        json_decref(all);
        return;
    }
    print_record(task, r, rec->worker);
    print_outcome("replayed from the record", e->replayed, e->differences, why_different(r));
    char why[512] = "";
    size_t n = json_array_size(e->changes);
    for (size_t i = 0; i < n; i++)
        snprintf(why + strlen(why), sizeof why - strlen(why), "%s%s", i ? ", " : "",
                 json_string_value(json_array_get(e->changes, i)));
    char because[600];
    snprintf(because, sizeof because, "scheduler keys changed since: %s", n ? why : "none");
    print_outcome("under today's configuration", e->today, e->today_differences, because);
    /* The keys that changed, also when they change nothing here: what the
     * JSON's config_changes always lists (a preempted task's last decision,
     * that nothing fits, comes out the same under most strategies). */
    if (n && json_array_size(e->today_differences) == 0)
        printf("  %s (the same decision)\n", because);
}

int ctl_explain(int argc, char **argv)
{
    bool replay = false;
    const ctl_option options[] = {
        {"replay", 0, CTL_OPTION_SET, &replay, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed = ctl_options_parse("explain", argc, argv, options, explain_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    if (args.operand_count != 1) {
        ctl_error("explain: expected one TASK_ID");
        return CTL_EXIT_USAGE;
    }
    const char *id = args.operands[0];
    vf_config *config = ctl_load_config(args.config_path);
    if (!config)
        return CTL_EXIT_CONFIG;
    int rc = CTL_EXIT_UNAVAILABLE;
    store_task task = {0};
    /* As the recorded section has them, so that only real changes show. */
    provenance_resolve_auto(config);
    ctl_record r = {0};
    recorded rec = {0};
    explained e = {0};
    vf_error err;
    vf_error_init(&err);
    store *s = ctl_open_store(config, STORE_READ_ONLY);
    if (!s)
        goto out;
    int missing = store_task_get(s, id, &task, &err); /* 0 found, 1 not */
    int has = missing == 0 ? ctl_record_read(s, id, &r, &err) : -1;
    if (missing == 1) {
        ctl_error("explain: no task %s", id);
        rc = CTL_EXIT_USAGE;
        goto out;
    }
    if (has == 0) {
        ctl_error("explain: task %s has no decision record (decided before records were kept, "
                  "or not decided yet)",
                  id);
        rc = CTL_EXIT_PENDING;
        goto out;
    }
    if (missing < 0 || has < 0 || store_task_events(s, id, keep_outcome, &rec, &err) < 0) {
        ctl_error("explain: %s", err.text);
        goto out;
    }
    if (!replay) {
        if (args.json) {
            json_t *all =
                json_pack("{s:s, s:o}", "task_id", id, "record", record_json(&r, rec.worker));
            ctl_print_json(all);
            json_decref(all);
        } else {
            print_record(&task, &r, rec.worker);
        }
        rc = CTL_EXIT_OK;
        goto out;
    }
    if (replay_both(s, &task, &r, &rec, config, &e, &err) < 0) {
        ctl_error("explain: %s", err.text);
        rc = err.code == VF_ENOMEM ? CTL_EXIT_UNAVAILABLE : CTL_EXIT_NEGATIVE;
        goto out;
    }
    report(&task, &r, &rec, &e, args.json);
    rc = json_array_size(e.differences) ? CTL_EXIT_NEGATIVE : CTL_EXIT_OK;
out:
    explained_close(&e);
    json_decref(rec.outcome);
    ctl_record_close(&r);
    store_task_clear(&task);
    store_close(s);
    config_free(config);
    return rc;
}
