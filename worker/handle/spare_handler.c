#include "spare_handler.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_names.h"
#include "events.h"
#include "ids.h"
#include "json_util.h"
#include "log.h"
#include "store_reservations.h"
#include "store_spares.h"
#include "store_tasks.h"
#include "spare_kube.h"
#include "spare_place.h"
#include "task_attempt.h"

#define SPARE_NAME_LEN 64

static const char name_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                 "0123456789._-";

int spare_handler_name(const char *pattern, const char *upgrade_id, const char *cluster, int index,
                       char *buf, size_t size, vf_error *err)
{
    size_t used = 0;
    bool overflow = false;
    for (const char *p = pattern; *p && !overflow;) {
        const char *value = NULL;
        char number[16];
        size_t skip = 0;
        if (strncmp(p, "{upgrade_id}", 12) == 0) {
            value = upgrade_id;
            skip = 12;
        } else if (strncmp(p, "{cluster}", 9) == 0) {
            value = cluster ? cluster : "";
            skip = 9;
        } else if (strncmp(p, "{index}", 7) == 0) {
            snprintf(number, sizeof number, "%d", index);
            value = number;
            skip = 7;
        }
        if (value) {
            size_t len = strlen(value);
            if (used + len >= size)
                overflow = true;
            else {
                memcpy(buf + used, value, len);
                used += len;
            }
            p += skip;
        } else {
            if (used + 1 >= size)
                overflow = true;
            else
                buf[used++] = *p;
            p++;
        }
    }
    buf[used < size ? used : size - 1] = '\0';
    if (overflow || used == 0 || used >= SPARE_NAME_LEN) {
        vf_error_set(err, VF_EINVAL,
                     "spare.name_pattern \"%.64s\" gives a name of 1..63 characters only for a "
                     "shorter upgrade_id or cluster",
                     pattern);
        return -1;
    }
    if (strspn(buf, name_chars) != used) {
        vf_error_set(err, VF_EINVAL,
                     "spare name \"%s\" (from spare.name_pattern) may only use [A-Za-z0-9._-]",
                     buf);
        return -1;
    }
    return 0;
}

/* ---- the parts both requests share ---- */

typedef struct context {
    task_attempt a;
    char upgrade_id[SPARE_NAME_LEN]; /* "" when the body has no usable one */
    char cluster[SPARE_NAME_LEN];    /* "" when none */
    /* The scheduling profile the request names ("" none), which spare.failed
     * names as task.failed does. */
    char scheduler[REQUEST_SCHEDULER_NAME_LEN];
} context;

/* The task row in `status` (result stolen, may be NULL), then the
 * "processing" history row of this attempt. */
static int write_task(const context *c, const char *status, const char *reason, json_t *result,
                      const char *error, vf_error *err)
{
    char *text = result ? task_attempt_result_text(&c->a, result) : NULL;
    json_decref(result);
    int rc = task_attempt_write(&c->a, status, reason, text, error, NULL, -1, err);
    free(text);
    return rc;
}

/* A later state of a row this message already wrote (no second
 * "processing" history row). */
static int update_status(const context *c, const char *status, json_t *result, vf_error *err)
{
    json_object_set_new(result, "task_id", json_string(c->a.out->task_id));
    char *text = json_util_dump(result);
    json_decref(result);
    store_task_fields fields = {.id = c->a.out->task_id,
                                .status = status,
                                .attempts = c->a.attempt,
                                .result = text,
                                .vmid = -1,
                                .at = c->a.now};
    int rc = store_task_update(c->a.h->store, &fields, err) == 0 ? 0 : -1;
    free(text);
    return rc;
}

/* Spare events also name the cluster. */
static int emit_event(const context *c, event_type type, json_t *data, vf_error *err)
{
    if (c->cluster[0] && strncmp(event_types_name(type), "spare.", 6) == 0)
        json_object_set_new(data, "cluster", json_string(c->cluster));
    return task_attempt_event(&c->a, type, data, err);
}

/* failed with `reason`: row, history, and spare.failed (task.failed when the
 * upgrade id is unusable, since spare.failed must name one). */
static int record_failure(const context *c, const char *reason, const char *error, json_t *detail,
                          vf_error *err)
{
    json_t *result =
        json_pack("{s:s, s:s, s:s}", "status", "failed", "reason", reason, "error", error);
    if (c->upgrade_id[0])
        json_object_set_new(result, "upgrade_id", json_string(c->upgrade_id));
    json_t *event = json_pack("{s:s, s:s, s:s, s:s, s:i}", "task_id", c->a.out->task_id, "status",
                              "failed", "error", error, "reason", reason, "attempts", c->a.attempt);
    if (c->upgrade_id[0])
        json_object_set_new(event, "upgrade_id", json_string(c->upgrade_id));
    if (c->scheduler[0])
        json_object_set_new(event, "scheduler", json_string(c->scheduler));
    json_t *detail_row = detail ? detail : json_object();
    json_object_set_new(detail_row, "reason", json_string(reason));
    json_object_set_new(detail_row, "error", json_string(error));
    json_object_set_new(detail_row, "attempt", json_integer(c->a.attempt));
    int rc = write_task(c, "failed", reason, result, error, err);
    if (rc == 0)
        rc = task_attempt_history(&c->a, "failed", detail_row, err);
    else
        json_decref(detail_row);
    if (rc == 0)
        rc = emit_event(c, c->upgrade_id[0] ? EVENT_SPARE_FAILED : EVENT_TASK_FAILED, event, err);
    else
        json_decref(event);
    snprintf(c->a.out->summary, sizeof c->a.out->summary, "failed (%s): %s", reason, error);
    return rc;
}

/* retrying, with the task.retrying event naming the upgrade and cluster. */
static int retry(context *c, const char *why, json_t *detail, vf_error *err)
{
    json_t *extra = json_pack("{s:s}", "upgrade_id", c->upgrade_id);
    if (extra && c->cluster[0])
        json_object_set_new(extra, "cluster", json_string(c->cluster));
    c->a.event_extra = extra;
    int rc = task_attempt_retry(&c->a, why, detail, err);
    c->a.event_extra = NULL;
    json_decref(extra);
    return rc;
}

/* ---- spare.prepare ---- */

typedef struct prepare_request {
    int count;
    int ready_timeout_s;
    bool placement_read; /* req's placement fields (the profile) were read */
    sched_request req;
} prepare_request;

static int parse_prepare(const vf_config *config, const json_t *body, char cluster[SPARE_NAME_LEN],
                         prepare_request *p, vf_error *err)
{
    static const char *const allowed[] = {
        "task_id",          "upgrade_id",      "cluster",          "count",     "requested_cpu",
        "requested_memory", "requested_disk",  "requested_pool",   "dedicated", "annotations",
        "ready_timeout_s",  "required_traits", "forbidden_traits", "resources", NULL};
    sched_request_init(&p->req);
    p->placement_read = false;
    int64_t count = 0, timeout = SCHED_SPARE_READY_TIMEOUT_S;
    if (json_util_only_keys(body, allowed, err) < 0 ||
        json_util_string(body, "task_id", false, request_task_id_chars, p->req.task_id,
                         sizeof p->req.task_id, err) < 0 ||
        json_util_int(body, "count", true, 1, SCHED_SPARE_MAX_COUNT, &count, err) < 0 ||
        json_util_int(body, "ready_timeout_s", false, 1, 86400, &timeout, err) < 0 ||
        json_util_string(body, "cluster", false, name_chars, cluster, SPARE_NAME_LEN, err) < 0 ||
        sched_request_parse_placement(body, &p->req, err) < 0)
        return -1;
    p->placement_read = true;
    p->count = (int)count;
    p->ready_timeout_s = (int)timeout;
    /* The cluster picks the Kubernetes API; one that is not configured
     * could never be watched for Ready. */
    spare_kube_api api;
    if (spare_kube_api_for(config, cluster, &api, err) < 0)
        return -1;
    return 0;
}

/* The upgrade id, when the body has a usable one (kept even if another
 * field is invalid, so the failure event can name the upgrade). */
static int read_upgrade_id(const json_t *body, char upgrade_id[SPARE_NAME_LEN], vf_error *err)
{
    char id[SPARE_NAME_LEN] = "";
    if (json_util_string(body, "upgrade_id", true, name_chars, id, sizeof id, err) < 0)
        return -1;
    snprintf(upgrade_id, SPARE_NAME_LEN, "%s", id);
    return 0;
}

/* Every check of a spare.prepare body that needs no store: its fields, its
 * cluster, and the spares' names from spare.name_pattern (written into
 * names[0..count-1] when not NULL). */
static int check_prepare(const vf_config *config, const json_t *body,
                         char upgrade_id[SPARE_NAME_LEN], char cluster[SPARE_NAME_LEN],
                         prepare_request *p, char (*names)[SPARE_NAME_LEN], vf_error *err)
{
    if (read_upgrade_id(body, upgrade_id, err) < 0 ||
        parse_prepare(config, body, cluster, p, err) < 0)
        return -1;
    char scratch[SPARE_NAME_LEN];
    for (int i = 0; i < p->count; i++)
        if (spare_handler_name(config->spare.name_pattern, upgrade_id, cluster, i + 1,
                               names ? names[i] : scratch, SPARE_NAME_LEN, err) < 0)
            return -1;
    return 0;
}

static const char *const release_keys[] = {"upgrade_id", NULL};

int spare_handler_check(const vf_config *config, const char *routing_key, const json_t *body,
                        vf_error *err)
{
    char upgrade_id[SPARE_NAME_LEN] = "", cluster[SPARE_NAME_LEN] = "";
    if (routing_key && strcmp(routing_key, BROKER_KEY_SPARE_RELEASE) == 0)
        return read_upgrade_id(body, upgrade_id, err) < 0 ||
                       json_util_only_keys(body, release_keys, err) < 0
                   ? -1
                   : 0;
    prepare_request p;
    return check_prepare(config, body, upgrade_id, cluster, &p, NULL, err);
}

typedef struct active_spares {
    char task_id[REQUEST_TASK_ID_LEN];
    int n_active; /* not failed, not released */
} active_spares;

static int note_active(const store_spare *spare, void *user)
{
    active_spares *a = user;
    if (strcmp(spare->state, "failed") != 0 && strcmp(spare->state, "released") != 0) {
        a->n_active++;
        snprintf(a->task_id, sizeof a->task_id, "%s", spare->task_id);
    }
    return 0;
}

typedef struct placed_spare {
    char name[SPARE_NAME_LEN];
    sched_spare_placement at;
} placed_spare;

/* Every spare placed (the engine then holds them all under the task id), or
 * none: returns 1 placed, 0 not placed (the engine holds nothing and `why`
 * explains), -1 invalid annotation (err). The rule is spare_place.h's,
 * which virtflowctl simulate replays. */
static int place_all(context *c, const prepare_request *p, placed_spare *placed,
                     sched_decision *last, vf_error *err)
{
    task_handler *h = c->a.h;
    /* The profile decides; holds go through the default engine, which
     * passes them on to every profile (engine.h). Known: checked before. */
    sched_engine *decider = sched_engine_profile(h->engine, p->req.scheduler_name);
    int64_t ttl_s =
        (int64_t)p->ready_timeout_s + h->config->scheduler.reservation_ttl_s +
        (int64_t)h->config->spare.provisioner.timeout_s * (h->config->retry.max_attempts + 1);
    sched_spare_placement at[SCHED_SPARE_MAX_COUNT];
    int rc = sched_spares_place(h->engine, decider, &p->req, p->count,
                                h->config->spare.anti_affinity_strict, c->a.out->task_id,
                                sched_hold_expiry_s(c->a.now_ms + ttl_s * 1000), at, last, err);
    for (int i = 0; rc == 1 && i < p->count; i++)
        placed[i].at = at[i];
    return rc;
}

/* The spares' reservations, claimed all or none (reservations.h): at once
 * on SQLite, with the batch's commit on PostgreSQL. Without a priority:
 * never preempted. A miss fails the batch, decided again. */
static int claim_spares(context *c, const prepare_request *p, const placed_spare *placed,
                        const char *expires, vf_error *err)
{
    task_handler *h = c->a.h;
    if (!h->book) {
        for (int i = 0; i < p->count; i++)
            if (store_reservation_add(h->store, c->a.out->task_id, placed[i].at.node->name,
                                      p->req.cpu, p->req.memory, p->req.disk, placed[i].at.vmid,
                                      c->a.now, expires, err) < 0)
                return -1;
        return 0;
    }
    const sched_engine *decider = sched_engine_profile(h->engine, p->req.scheduler_name);
    reservation_claim claims[SCHED_SPARE_MAX_COUNT];
    for (int i = 0; i < p->count; i++)
        claims[i] = (reservation_claim){.task_id = c->a.out->task_id,
                                        .engine = decider ? decider : h->engine,
                                        .node = placed[i].at.node,
                                        .vmid = placed[i].at.vmid,
                                        .cpu = p->req.cpu,
                                        .memory = p->req.memory,
                                        .disk = p->req.disk,
                                        .resources = &p->req.resources,
                                        .req = &p->req,
                                        .created_at = c->a.now,
                                        .expires_at = expires,
                                        .kind = SCHED_HOLD_FULL};
    return reservation_book_claim_all(h->book, h->store, claims, (size_t)p->count, err);
}

static int record_placement(context *c, const prepare_request *p, const placed_spare *placed,
                            vf_error *err)
{
    task_handler *h = c->a.h;
    int64_t ttl_s =
        (int64_t)p->ready_timeout_s + h->config->scheduler.reservation_ttl_s +
        (int64_t)h->config->spare.provisioner.timeout_s * (h->config->retry.max_attempts + 1);
    char expires[STORE_TIME_SIZE];
    store_format_time(c->a.now_ms + ttl_s * 1000, expires);
    json_t *list = json_array();
    for (int i = 0; i < p->count; i++)
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:s, s:i, s:f}", "name", placed[i].name, "host",
                            placed[i].at.node->name, "ip", placed[i].at.node->ip, "vmid",
                            (json_int_t)placed[i].at.vmid, "score", placed[i].at.score));
    json_t *result = json_pack("{s:s, s:s, s:O}", "status", "provisioning", "upgrade_id",
                               c->upgrade_id, "spares", list);
    int rc = write_task(c, "provisioning", NULL, result, NULL, err);
    if (rc == 0)
        rc = task_attempt_history(
            &c->a, "provisioning",
            json_pack("{s:s, s:O, s:i}", "step", "placed", "spares", list, "attempt", c->a.attempt),
            err);
    if (rc == 0)
        rc = emit_event(c, EVENT_SPARE_PROVISIONING,
                        json_pack("{s:s, s:s, s:s, s:O, s:i}", "task_id", c->a.out->task_id,
                                  "upgrade_id", c->upgrade_id, "status", "provisioning", "spares",
                                  list, "attempts", c->a.attempt),
                        err);
    json_decref(list);
    if (rc == 0)
        rc = claim_spares(c, p, placed, expires, err);
    for (int i = 0; rc == 0 && i < p->count; i++) {
        const placed_spare *s = &placed[i];
        store_spare row = {.task_id = c->a.out->task_id,
                           .upgrade_id = c->upgrade_id,
                           .cluster = c->cluster[0] ? c->cluster : NULL,
                           .index = i + 1,
                           .name = s->name,
                           .node = s->at.node->name,
                           .ip = s->at.node->ip,
                           .vmid = s->at.vmid,
                           .cpu = p->req.cpu,
                           .memory = p->req.memory,
                           .disk = p->req.disk,
                           .state = "provisioning",
                           .next_at = c->a.now,
                           .ready_timeout_s = p->ready_timeout_s,
                           .pipeline_id = -1,
                           .created_at = c->a.now};
        if (rc == 0)
            rc = store_spare_add(h->store, &row, err);
    }
    c->a.out->reserved = true;
    snprintf(c->a.out->summary, sizeof c->a.out->summary,
             "%d spares of upgrade %s placed (first on %s, vmid %u); provisioning", p->count,
             c->upgrade_id, placed[0].at.node->name, placed[0].at.vmid);
    return rc;
}

static int handle_prepare(context *c, const json_t *body, vf_error *err)
{
    task_handler *h = c->a.h;
    vf_error invalid;
    vf_error_init(&invalid);
    prepare_request p = {.placement_read = false};
    placed_spare placed[SCHED_SPARE_MAX_COUNT];
    char names[SCHED_SPARE_MAX_COUNT][SPARE_NAME_LEN];
    memset(placed, 0, sizeof placed);
    int checked = check_prepare(h->config, body, c->upgrade_id, c->cluster, &p, names, &invalid);
    if (p.placement_read)
        memcpy(c->scheduler, p.req.scheduler_name, sizeof c->scheduler);
    if (checked < 0)
        return record_failure(c, "invalid", invalid.text, NULL, err);
    for (int i = 0; i < p.count; i++)
        memcpy(placed[i].name, names[i], SPARE_NAME_LEN);

    active_spares active = {"", 0};
    if (store_spare_list(h->store, STORE_SPARES_OF_UPGRADE, c->upgrade_id, 0, note_active, &active,
                         err) < 0)
        return -1;
    if (active.n_active > 0) {
        char why[VF_ERROR_TEXT + 64];
        snprintf(why, sizeof why,
                 "upgrade %s already has %d spares (task %.128s); release them first",
                 c->upgrade_id, active.n_active, active.task_id);
        return record_failure(c, "invalid", why, NULL, err);
    }

    bool last_attempt = c->a.attempt >= h->config->retry.max_attempts;
    if (!h->hosts) {
        const char *why =
            h->inventory_note && h->inventory_note[0] ? h->inventory_note : "no inventory yet";
        if (!last_attempt)
            return retry(c, why, NULL, err);
        int rc = record_failure(c, "exhausted", why, NULL, err);
        c->a.out->action = TASK_DEAD;
        c->a.out->error = strdup(why);
        return rc;
    }
    if (!sched_engine_profile(h->engine, p.req.scheduler_name)) {
        /* As task.schedule: waits for a worker that has the profile. */
        char why[160];
        snprintf(why, sizeof why, "no scheduler profile %s on this worker (scheduler.profiles)",
                 p.req.scheduler_name);
        if (!last_attempt) {
            c->a.retry_reason = "unknown_scheduler";
            return retry(c, why, json_pack("{s:s}", "scheduler", p.req.scheduler_name), err);
        }
        int rc = record_failure(c, "exhausted", why, NULL, err);
        c->a.out->action = TASK_DEAD;
        c->a.out->error = strdup(why);
        return rc;
    }
    sched_decision decision;
    int placed_all = place_all(c, &p, placed, &decision, &invalid);
    if (placed_all < 0)
        return record_failure(c, invalid.code == VF_EINVAL ? "invalid" : "exhausted", invalid.text,
                              NULL, err);
    if (placed_all == 1)
        return record_placement(c, &p, placed, err);
    char why[VF_ERROR_TEXT + 600];
    snprintf(why, sizeof why, "%d spares need %d %s hosts: %s", p.count, p.count,
             h->config->spare.anti_affinity_strict ? "distinct" : "(preferably distinct)",
             decision.message);
    json_t *detail = sched_decision_to_json(&decision, h->hosts);
    sched_rejections_sample(detail, SCHED_HISTORY_HOSTS);
    if (last_attempt)
        return record_failure(c, "unschedulable", why, detail, err);
    return retry(c, why, detail, err);
}

/* ---- spare.release ---- */

typedef struct release_scan {
    context *c;
    vf_error *err;
    int failed;
    json_t *names;     /* spares handed to the driver */
    json_t *prepares;  /* distinct prepare task ids, as an object used as a set */
    int n_known;       /* rows of this upgrade, whatever their state */
    int n_in_progress; /* already releasing under another task */
} release_scan;

static int take_for_release(const store_spare *spare, void *user)
{
    release_scan *scan = user;
    context *c = scan->c;
    scan->n_known++;
    const char *state = spare->state;
    if (strcmp(state, "releasing") == 0) {
        scan->n_in_progress++;
        return 0;
    }
    if (strcmp(state, "released") == 0 || strcmp(state, "failed") == 0)
        return 0;
    store_spare change = *spare;
    change.state = "releasing";
    change.attempts = 0;
    change.next_at = c->a.now;
    change.release_task_id = c->a.out->task_id;
    change.last_error = NULL;
    change.updated_at = c->a.now;
    if (store_spare_update(c->a.h->store, &change, spare->updated_at, scan->err) != 0) {
        scan->failed = 1;
        return 1;
    }
    json_array_append_new(scan->names, json_string(spare->name));
    json_object_set_new(scan->prepares, spare->task_id, json_true());
    return 0;
}

/* Move each prepare task whose spares are now being released to "releasing". */
static int mark_prepares_releasing(context *c, json_t *prepares, vf_error *err)
{
    const char *task_id;
    json_t *unused;
    json_object_foreach(prepares, task_id, unused)
    {
        store_task task = {0};
        int found = store_task_get(c->a.h->store, task_id, &task, err);
        if (found < 0)
            return -1;
        int rc = 0;
        if (found == 0 && strcmp(task.status, "failed") != 0) {
            store_task_fields fields = {.id = task_id,
                                        .status = "releasing",
                                        .attempts = task.attempts,
                                        .result = task.result,
                                        .error = task.error,
                                        .vmid = -1,
                                        .at = c->a.now};
            rc = store_task_update(c->a.h->store, &fields, err) < 0 ? -1 : 0;
            char *detail = NULL;
            json_t *d = json_pack("{s:s}", "release_task_id", c->a.out->task_id);
            detail = json_util_dump(d);
            json_decref(d);
            if (rc == 0)
                rc = store_task_event_add(c->a.h->store, task_id, c->a.now, "releasing", detail,
                                          err);
            free(detail);
        }
        store_task_clear(&task);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int count_rows(const store_spare *spare, void *user)
{
    (void)spare;
    (*(int *)user)++;
    return 0;
}

static int handle_release(context *c, const json_t *body, vf_error *err)
{
    vf_error invalid;
    vf_error_init(&invalid);
    if (read_upgrade_id(body, c->upgrade_id, &invalid) < 0 ||
        json_util_only_keys(body, release_keys, &invalid) < 0)
        return record_failure(c, "invalid", invalid.text, NULL, err);

    int n_rows = 0;
    if (store_spare_list(c->a.h->store, STORE_SPARES_OF_UPGRADE, c->upgrade_id, 0, count_rows,
                         &n_rows, err) < 0)
        return -1;
    if (n_rows == 0) {
        char why[160];
        snprintf(why, sizeof why, "no spares were ever recorded for upgrade %s", c->upgrade_id);
        return record_failure(c, "invalid", why, NULL, err);
    }
    /* The task row first: spares rows point at it. */
    if (write_task(c, "releasing", NULL, NULL, NULL, err) < 0)
        return -1;
    c->a.is_new = false;
    release_scan scan = {c, err, 0, json_array(), json_object(), 0, 0};
    int rc = store_spare_list(c->a.h->store, STORE_SPARES_OF_UPGRADE, c->upgrade_id, 0,
                              take_for_release, &scan, err);
    if (rc == 0 && scan.failed)
        rc = -1;
    if (rc == 0 && json_array_size(scan.names) == 0) {
        /* Released already (or being released by an earlier request): say so,
         * harmlessly, so a client repeating itself gets an answer. */
        json_t *result = json_pack(
            "{s:s, s:s, s:[], s:s}", "status", "released", "upgrade_id", c->upgrade_id, "spares",
            "note", scan.n_in_progress ? "already being released" : "already released");
        rc = update_status(c, "released", result, err);
        if (rc == 0)
            rc = task_attempt_history(
                &c->a, "released",
                json_pack("{s:s}", "note",
                          scan.n_in_progress ? "already being released" : "already released"),
                err);
        if (rc == 0)
            rc = emit_event(c, EVENT_SPARE_RELEASED,
                            json_pack("{s:s, s:s, s:s, s:[]}", "task_id", c->a.out->task_id,
                                      "upgrade_id", c->upgrade_id, "status", "released", "spares"),
                            err);
        snprintf(c->a.out->summary, sizeof c->a.out->summary,
                 "upgrade %s: nothing left to release (%s)", c->upgrade_id,
                 scan.n_in_progress ? "already being released" : "already released");
    } else if (rc == 0) {
        rc = mark_prepares_releasing(c, scan.prepares, err);
        if (rc == 0)
            rc = task_attempt_history(&c->a, "releasing", json_pack("{s:O}", "spares", scan.names),
                                      err);
        snprintf(c->a.out->summary, sizeof c->a.out->summary, "upgrade %s: releasing %zu spares",
                 c->upgrade_id, json_array_size(scan.names));
    }
    json_decref(scan.names);
    json_decref(scan.prepares);
    return rc;
}

int spare_handler_handle(task_handler *h, const task_message *msg, task_outcome *out, vf_error *err)
{
    context c;
    memset(&c, 0, sizeof c);
    int rc = task_attempt_open(&c.a, h, msg, out, "spare", err);
    if (rc <= 0)
        goto out;
    rc = task_attempt_conflict(&c.a, err); /* another body under a recorded id */
    if (rc != 0) {
        rc = rc < 0 ? -1 : 0;
        goto out;
    }
    /* A row `queued` was recorded by the client that published the message
     * (virtflow-api): the first copy that arrives decides it. */
    if (!c.a.is_new && strcmp(c.a.existing.status, "retrying") != 0 &&
        strcmp(c.a.existing.status, "queued") != 0) {
        /* Redelivered or republished: accepted once, never placed twice. */
        out->duplicate = true;
        snprintf(out->summary, sizeof out->summary, "already %s; not handled again",
                 c.a.existing.status);
        goto out;
    }
    if (strcmp(msg->routing_key, BROKER_KEY_SPARE_PREPARE) == 0)
        rc = handle_prepare(&c, c.a.body, err);
    else
        rc = handle_release(&c, c.a.body, err);
out:
    task_attempt_close(&c.a);
    return rc;
}
