#include "spare_handler.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp_topology.h"
#include "events.h"
#include "ids.h"
#include "json_util.h"
#include "log.h"

#define SPARE_MAX_COUNT 64
#define SPARE_NAME_LEN 64
#define SPARE_DEFAULT_READY_TIMEOUT_S 1800

static const char name_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                 "0123456789._-";

bool spare_handler_accepts(const char *routing_key)
{
    return routing_key && (strcmp(routing_key, AMQP_TOPOLOGY_KEY_SPARE_PREPARE) == 0 ||
                           strcmp(routing_key, AMQP_TOPOLOGY_KEY_SPARE_RELEASE) == 0);
}

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
    task_handler *h;
    const task_message *msg;
    task_outcome *out;
    int64_t now_ms;
    char now[STORE_TIME_SIZE];
    bool is_new;
    int attempt;
    char upgrade_id[SPARE_NAME_LEN]; /* "" when the body has no usable one */
    char cluster[SPARE_NAME_LEN];    /* "" when none */
} context;

static bool id_is_valid(const char *id)
{
    size_t len = id ? strlen(id) : 0;
    return len >= 1 && len < REQUEST_TASK_ID_LEN && strspn(id, request_task_id_chars) == len;
}

/* Same rule as task.schedule: body task_id, else message_id, else a new id. */
static void choose_task_id(const json_t *body, const char *message_id,
                           char out[REQUEST_TASK_ID_LEN])
{
    const char *from_body = json_string_value(json_object_get(body, "task_id"));
    if (id_is_valid(from_body))
        snprintf(out, REQUEST_TASK_ID_LEN, "%s", from_body);
    else if (id_is_valid(message_id))
        snprintf(out, REQUEST_TASK_ID_LEN, "%s", message_id);
    else {
        char fresh[IDS_LEN];
        ids_new("tsk", fresh);
        snprintf(out, REQUEST_TASK_ID_LEN, "%s", fresh);
    }
}

static int history(const context *c, const char *status, json_t *detail, vf_error *err)
{
    char *text = detail ? json_util_dump(detail) : NULL;
    json_decref(detail);
    int rc = store_task_event_add(c->h->store, c->out->task_id, c->now, status, text, err);
    free(text);
    return rc;
}

/* The task row in `status`, then the "processing" history row of this attempt. */
static int write_task(const context *c, const char *status, const char *reason, json_t *result,
                      const char *error, vf_error *err)
{
    char *result_text = NULL;
    if (result) {
        json_object_set_new(result, "task_id", json_string(c->out->task_id));
        result_text = json_util_dump(result);
        json_decref(result);
    }
    store_task_fields fields = {.id = c->out->task_id,
                                .kind = "spare",
                                .status = status,
                                .reason = reason,
                                .attempts = c->attempt,
                                .request = (const char *)c->msg->body,
                                .result = result_text,
                                .error = error,
                                .node = NULL,
                                .vmid = -1,
                                .at = c->now};
    int rc = c->is_new ? store_task_insert(c->h->store, &fields, err)
                       : store_task_update(c->h->store, &fields, err);
    free(result_text);
    if (rc == 1) {
        vf_error_set(err, VF_EINTERNAL, "task %s vanished inside its own transaction",
                     c->out->task_id);
        return -1;
    }
    if (rc < 0)
        return -1;
    json_t *received = json_pack("{s:i, s:s?, s:s?, s:b}", "attempt", c->attempt, "routing_key",
                                 c->msg->routing_key, "message_id", c->msg->message_id,
                                 "redelivered", c->msg->redelivered);
    return history(c, "processing", received, err);
}

/* A later state of a row this message already wrote (no second
 * "processing" history row). */
static int update_status(const context *c, const char *status, json_t *result, vf_error *err)
{
    json_object_set_new(result, "task_id", json_string(c->out->task_id));
    char *text = json_util_dump(result);
    json_decref(result);
    store_task_fields fields = {.id = c->out->task_id,
                                .status = status,
                                .attempts = c->attempt,
                                .result = text,
                                .vmid = -1,
                                .at = c->now};
    int rc = store_task_update(c->h->store, &fields, err) == 0 ? 0 : -1;
    free(text);
    return rc;
}

/* Outbox row plus the copy the caller publishes after the commit. */
static int emit_event(const context *c, const char *type, json_t *data, vf_error *err)
{
    char id[IDS_LEN], key[64];
    if (c->cluster[0] && strncmp(type, "spare.", 6) == 0)
        json_object_set_new(data, "cluster", json_string(c->cluster));
    char *body = events_build(type, data, c->now_ms / 1000, id, key);
    if (!body) {
        vf_error_set(err, VF_ENOMEM, "out of memory building event %s", type);
        return -1;
    }
    if (store_outbox_add(c->h->store, id, key, body, c->now, err) < 0) {
        free(body);
        return -1;
    }
    c->out->event_id = strdup(id);
    c->out->event_key = strdup(key);
    c->out->event_body = body;
    return 0;
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
    json_t *event = json_pack("{s:s, s:s, s:s, s:s, s:i}", "task_id", c->out->task_id, "status",
                              "failed", "error", error, "reason", reason, "attempts", c->attempt);
    if (c->upgrade_id[0])
        json_object_set_new(event, "upgrade_id", json_string(c->upgrade_id));
    json_t *detail_row = detail ? detail : json_object();
    json_object_set_new(detail_row, "reason", json_string(reason));
    json_object_set_new(detail_row, "error", json_string(error));
    json_object_set_new(detail_row, "attempt", json_integer(c->attempt));
    int rc = write_task(c, "failed", reason, result, error, err);
    if (rc == 0)
        rc = history(c, "failed", detail_row, err);
    else
        json_decref(detail_row);
    if (rc == 0)
        rc = emit_event(c, c->upgrade_id[0] ? "spare.failed" : "task.failed", event, err);
    else
        json_decref(event);
    snprintf(c->out->summary, sizeof c->out->summary, "failed (%s): %s", reason, error);
    return rc;
}

static int delay_for_attempt(const vf_config *config, int attempt)
{
    size_t tier = (size_t)(attempt - 1);
    if (tier >= config->retry.n_delays)
        tier = config->retry.n_delays - 1;
    return config->retry.delays_s[tier];
}

/* Not placed yet and attempts remain: the same delay tiers as task.schedule. */
static int record_retry(const context *c, const char *error, json_t *detail, vf_error *err)
{
    task_outcome *out = c->out;
    out->action = TASK_RETRY;
    out->next_attempt = c->attempt + 1;
    out->delay_s = delay_for_attempt(c->h->config, c->attempt);
    out->error = strdup(error);
    json_t *row = detail ? detail : json_object();
    json_object_del(row, "status");
    json_object_del(row, "reason");
    json_object_set_new(row, "attempt", json_integer(c->attempt));
    json_object_set_new(row, "error", json_string(error));
    json_object_set_new(row, "next_attempt", json_integer(out->next_attempt));
    json_object_set_new(row, "delay_s", json_integer(out->delay_s));
    int rc = write_task(c, "retrying", NULL, NULL, error, err);
    if (rc == 0)
        rc = history(c, "retrying", row, err);
    else
        json_decref(row);
    snprintf(out->summary, sizeof out->summary, "retrying in %d s (attempt %d of %d): %s",
             out->delay_s, out->next_attempt, c->h->config->retry.max_attempts, error);
    return rc;
}

static void park(task_outcome *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void park(task_outcome *out, const char *fmt, ...)
{
    char reason[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    out->action = TASK_DEAD;
    out->error = strdup(reason);
    snprintf(out->summary, sizeof out->summary, "parked in virtflow.dead: %s", reason);
}

/* ---- spare.prepare ---- */

typedef struct prepare_request {
    int count;
    int ready_timeout_s;
    sched_request req;
} prepare_request;

static int parse_prepare(const json_t *body, context *c, prepare_request *p, vf_error *err)
{
    static const char *const allowed[] = {"task_id",        "upgrade_id",      "cluster",
                                          "count",          "requested_cpu",   "requested_memory",
                                          "requested_disk", "requested_pool",  "dedicated",
                                          "annotations",    "ready_timeout_s", NULL};
    sched_request_init(&p->req);
    int64_t count = 0, timeout = SPARE_DEFAULT_READY_TIMEOUT_S;
    if (json_util_only_keys(body, allowed, err) < 0 ||
        json_util_string(body, "task_id", false, request_task_id_chars, p->req.task_id,
                         sizeof p->req.task_id, err) < 0 ||
        json_util_int(body, "count", true, 1, SPARE_MAX_COUNT, &count, err) < 0 ||
        json_util_int(body, "ready_timeout_s", false, 1, 86400, &timeout, err) < 0 ||
        json_util_string(body, "cluster", false, name_chars, c->cluster, sizeof c->cluster, err) <
            0 ||
        sched_request_parse_placement(body, &p->req, err) < 0)
        return -1;
    p->count = (int)count;
    p->ready_timeout_s = (int)timeout;
    return 0;
}

/* The upgrade id, when the body has a usable one (kept even if another
 * field is invalid, so the failure event can name the upgrade). */
static int parse_upgrade_id(const json_t *body, context *c, vf_error *err)
{
    char id[SPARE_NAME_LEN] = "";
    if (json_util_string(body, "upgrade_id", true, name_chars, id, sizeof id, err) < 0)
        return -1;
    snprintf(c->upgrade_id, sizeof c->upgrade_id, "%s", id);
    return 0;
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
    size_t host_index;
    const host *node;
    uint32_t vmid;
    double score;
} placed_spare;

/* Every spare placed (the engine then holds them all under the task id), or
 * none: returns 1 placed, 0 not placed (the engine holds nothing and `why`
 * explains), -1 invalid annotation (err). */
static int place_all(context *c, const prepare_request *p, placed_spare *placed,
                     sched_decision *last, vf_error *err)
{
    task_handler *h = c->h;
    size_t excluded[SPARE_MAX_COUNT];
    int64_t ttl_s =
        (int64_t)p->ready_timeout_s + h->config->scheduler.reservation_ttl_s +
        (int64_t)h->config->spare.provisioner.timeout_s * (h->config->retry.max_attempts + 1);
    for (int i = 0; i < p->count; i++) {
        sched_decide_options options = {excluded, (size_t)i};
        if (sched_engine_decide_with(h->engine, &p->req, &options, last, err) < 0)
            goto undo;
        if (!last->placed && !h->config->spare.anti_affinity_strict &&
            sched_engine_decide(h->engine, &p->req, last, err) < 0)
            goto undo;
        if (!last->placed) {
            sched_engine_release(h->engine, c->out->task_id);
            return 0;
        }
        placed[i].host_index = sched_decision_host_index(h->engine, last);
        placed[i].node = last->node;
        placed[i].vmid = last->vmid;
        placed[i].score = last->score;
        excluded[i] = placed[i].host_index;
        sched_reservation res;
        sched_reservation_from_decision(&res, last, &p->req, c->out->task_id,
                                        c->now_ms / 1000 + ttl_s);
        if (sched_engine_reserve(h->engine, &res, err) < 0)
            goto undo;
    }
    return 1;
undo:
    sched_engine_release(h->engine, c->out->task_id);
    return -1;
}

static int record_placement(context *c, const prepare_request *p, const placed_spare *placed,
                            vf_error *err)
{
    task_handler *h = c->h;
    int64_t ttl_s =
        (int64_t)p->ready_timeout_s + h->config->scheduler.reservation_ttl_s +
        (int64_t)h->config->spare.provisioner.timeout_s * (h->config->retry.max_attempts + 1);
    char expires[STORE_TIME_SIZE];
    store_format_time(c->now_ms + ttl_s * 1000, expires);
    json_t *list = json_array();
    for (int i = 0; i < p->count; i++)
        json_array_append_new(list,
                              json_pack("{s:s, s:s, s:s, s:i, s:f}", "name", placed[i].name, "host",
                                        placed[i].node->name, "ip", placed[i].node->ip, "vmid",
                                        (json_int_t)placed[i].vmid, "score", placed[i].score));
    json_t *result = json_pack("{s:s, s:s, s:O}", "status", "provisioning", "upgrade_id",
                               c->upgrade_id, "spares", list);
    int rc = write_task(c, "provisioning", NULL, result, NULL, err);
    if (rc == 0)
        rc = history(
            c, "provisioning",
            json_pack("{s:s, s:O, s:i}", "step", "placed", "spares", list, "attempt", c->attempt),
            err);
    json_decref(list);
    for (int i = 0; rc == 0 && i < p->count; i++) {
        const placed_spare *s = &placed[i];
        rc = store_reservation_add(h->store, c->out->task_id, s->node->name, p->req.cpu,
                                   p->req.memory, p->req.disk, s->vmid, c->now, expires, err);
        store_spare row = {.task_id = c->out->task_id,
                           .upgrade_id = c->upgrade_id,
                           .cluster = c->cluster[0] ? c->cluster : NULL,
                           .index = i + 1,
                           .name = s->name,
                           .node = s->node->name,
                           .ip = s->node->ip,
                           .vmid = s->vmid,
                           .cpu = p->req.cpu,
                           .memory = p->req.memory,
                           .disk = p->req.disk,
                           .state = "provisioning",
                           .next_at = c->now,
                           .ready_timeout_s = p->ready_timeout_s,
                           .pipeline_id = -1,
                           .created_at = c->now};
        if (rc == 0)
            rc = store_spare_add(h->store, &row, err);
    }
    c->out->reserved = true;
    snprintf(c->out->summary, sizeof c->out->summary,
             "%d spares of upgrade %s placed (first on %s, vmid %u); provisioning", p->count,
             c->upgrade_id, placed[0].node->name, placed[0].vmid);
    return rc;
}

static int handle_prepare(context *c, const json_t *body, vf_error *err)
{
    task_handler *h = c->h;
    vf_error invalid;
    vf_error_init(&invalid);
    prepare_request p;
    if (parse_upgrade_id(body, c, &invalid) < 0 || parse_prepare(body, c, &p, &invalid) < 0)
        return record_failure(c, "invalid", invalid.text, NULL, err);

    active_spares active = {"", 0};
    if (store_spare_list(h->store, STORE_SPARES_OF_UPGRADE, c->upgrade_id, 0, note_active, &active,
                         err) < 0)
        return -1;
    if (active.n_active > 0) {
        char why[VF_ERROR_TEXT];
        snprintf(why, sizeof why,
                 "upgrade %s already has %d spares (task %.128s); release them first",
                 c->upgrade_id, active.n_active, active.task_id);
        return record_failure(c, "invalid", why, NULL, err);
    }
    placed_spare placed[SPARE_MAX_COUNT];
    memset(placed, 0, sizeof placed);
    for (int i = 0; i < p.count; i++)
        if (spare_handler_name(h->config->spare.name_pattern, c->upgrade_id, c->cluster, i + 1,
                               placed[i].name, sizeof placed[i].name, &invalid) < 0)
            return record_failure(c, "invalid", invalid.text, NULL, err);

    bool last_attempt = c->attempt >= h->config->retry.max_attempts;
    if (!h->hosts) {
        const char *why =
            h->inventory_note && h->inventory_note[0] ? h->inventory_note : "no inventory yet";
        if (!last_attempt)
            return record_retry(c, why, NULL, err);
        int rc = record_failure(c, "exhausted", why, NULL, err);
        c->out->action = TASK_DEAD;
        c->out->error = strdup(why);
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
    if (last_attempt)
        return record_failure(c, "unschedulable", why, detail, err);
    return record_retry(c, why, detail, err);
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
    change.next_at = c->now;
    change.release_task_id = c->out->task_id;
    change.last_error = NULL;
    change.updated_at = c->now;
    if (store_spare_update(c->h->store, &change, spare->updated_at, scan->err) != 0) {
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
        int found = store_task_get(c->h->store, task_id, &task, err);
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
                                        .at = c->now};
            rc = store_task_update(c->h->store, &fields, err) < 0 ? -1 : 0;
            char *detail = NULL;
            json_t *d = json_pack("{s:s}", "release_task_id", c->out->task_id);
            detail = json_util_dump(d);
            json_decref(d);
            if (rc == 0)
                rc = store_task_event_add(c->h->store, task_id, c->now, "releasing", detail, err);
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
    static const char *const allowed[] = {"upgrade_id", NULL};
    vf_error invalid;
    vf_error_init(&invalid);
    if (parse_upgrade_id(body, c, &invalid) < 0 || json_util_only_keys(body, allowed, &invalid) < 0)
        return record_failure(c, "invalid", invalid.text, NULL, err);

    int n_rows = 0;
    if (store_spare_list(c->h->store, STORE_SPARES_OF_UPGRADE, c->upgrade_id, 0, count_rows,
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
    c->is_new = false;
    release_scan scan = {c, err, 0, json_array(), json_object(), 0, 0};
    int rc = store_spare_list(c->h->store, STORE_SPARES_OF_UPGRADE, c->upgrade_id, 0,
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
            rc = history(
                c, "released",
                json_pack("{s:s}", "note",
                          scan.n_in_progress ? "already being released" : "already released"),
                err);
        if (rc == 0)
            rc = emit_event(c, "spare.released",
                            json_pack("{s:s, s:s, s:s, s:[]}", "task_id", c->out->task_id,
                                      "upgrade_id", c->upgrade_id, "status", "released", "spares"),
                            err);
        snprintf(c->out->summary, sizeof c->out->summary,
                 "upgrade %s: nothing left to release (%s)", c->upgrade_id,
                 scan.n_in_progress ? "already being released" : "already released");
    } else if (rc == 0) {
        rc = mark_prepares_releasing(c, scan.prepares, err);
        if (rc == 0)
            rc = history(c, "releasing", json_pack("{s:O}", "spares", scan.names), err);
        snprintf(c->out->summary, sizeof c->out->summary, "upgrade %s: releasing %zu spares",
                 c->upgrade_id, json_array_size(scan.names));
    }
    json_decref(scan.names);
    json_decref(scan.prepares);
    return rc;
}

int spare_handler_handle(task_handler *h, const task_message *msg, task_outcome *out, vf_error *err)
{
    memset(out, 0, sizeof *out);
    if (msg->too_large) {
        park(out, "message too large: %llu bytes, amqp.max_message_bytes is %lld",
             (unsigned long long)msg->body_size, (long long)h->config->amqp.max_message_bytes);
        return 0;
    }
    json_error_t jerr;
    json_t *body = json_loadb((const char *)msg->body, msg->body_len,
                              JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (!body) {
        park(out, "not JSON: %s (at byte %d)", jerr.text, jerr.position);
        return 0;
    }
    if (!json_is_object(body)) {
        park(out, "not a JSON object: got %s", json_util_type_name(body));
        json_decref(body);
        return 0;
    }
    int rc = -1;
    store_task existing = {0};
    context c;
    memset(&c, 0, sizeof c);
    c.h = h;
    c.msg = msg;
    c.out = out;
    c.now_ms = h->now_ms();
    store_format_time(c.now_ms, c.now);
    choose_task_id(body, msg->message_id, out->task_id);
    int found = store_task_get(h->store, out->task_id, &existing, err);
    if (found < 0)
        goto out;
    c.is_new = found == 1;
    if (!c.is_new && strcmp(existing.kind, "spare") != 0) {
        park(out, "task id %s already names a %s task", out->task_id, existing.kind);
        rc = 0;
        goto out;
    }
    if (!c.is_new && strcmp(existing.status, "retrying") != 0) {
        /* Redelivered or republished: accepted once, never placed twice. */
        out->duplicate = true;
        snprintf(out->summary, sizeof out->summary, "already %s; not handled again",
                 existing.status);
        rc = 0;
        goto out;
    }
    c.attempt = msg->attempt > 0 ? (int)msg->attempt : 1;
    if (!c.is_new && existing.attempts >= c.attempt)
        c.attempt = existing.attempts + 1;
    if (strcmp(msg->routing_key, AMQP_TOPOLOGY_KEY_SPARE_PREPARE) == 0)
        rc = handle_prepare(&c, body, err);
    else
        rc = handle_release(&c, body, err);
out:
    store_task_clear(&existing);
    json_decref(body);
    return rc;
}
