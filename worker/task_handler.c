#include "task_handler.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "ids.h"
#include "json_util.h"
#include "log.h"

/* Per-host reasons kept in one history row, at most; the counts in the
 * explanation always cover every host. */
#define MAX_REJECTIONS_RECORDED 1000

void task_outcome_close(task_outcome *outcome)
{
    if (!outcome)
        return;
    free(outcome->event_id);
    free(outcome->event_key);
    free(outcome->event_body);
    free(outcome->reply_body);
    free(outcome->error);
    memset(outcome, 0, sizeof *outcome);
}

static bool id_is_valid(const char *id)
{
    size_t len = id ? strlen(id) : 0;
    return len >= 1 && len < REQUEST_TASK_ID_LEN && strspn(id, request_task_id_chars) == len;
}

/* The task id: the body's task_id when it is a valid one, else the AMQP
 * message_id when valid, else a new one (such a message cannot be recognised
 * if redelivered: clients should set one, virtflowctl submit always does). */
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

typedef struct clock_now {
    int64_t ms;
    char store_time[STORE_TIME_SIZE]; /* for rows */
} clock_now;

static void read_clock(const task_handler *h, clock_now *now)
{
    now->ms = h->now_ms();
    store_format_time(now->ms, now->store_time);
}

static int add_history(task_handler *h, const char *task_id, const clock_now *now,
                       const char *status, json_t *detail, vf_error *err)
{
    char *text = detail ? json_util_dump(detail) : NULL;
    json_decref(detail);
    int rc = store_task_event_add(h->store, task_id, now->store_time, status, text, err);
    free(text);
    return rc;
}

/* Record the task's first sight or its next attempt. Fills *existing_status
 * ("" when new). Returns 0, or -1 on a store error. */
static int record_received(task_handler *h, const task_message *msg, const char *task_id,
                           const char *request_text, const clock_now *now, int attempt, bool is_new,
                           vf_error *err)
{
    if (is_new) {
        store_task_fields fields = {.id = task_id,
                                    .kind = "schedule",
                                    .status = "processing",
                                    .attempts = attempt,
                                    .request = request_text,
                                    .vmid = -1,
                                    .at = now->store_time};
        if (store_task_insert(h->store, &fields, err) < 0)
            return -1;
        json_t *queued = json_pack("{s:s?, s:s?, s:b}", "routing_key", msg->routing_key,
                                   "message_id", msg->message_id, "redelivered", msg->redelivered);
        if (add_history(h, task_id, now, "queued", queued, err) < 0)
            return -1;
    }
    return add_history(h, task_id, now, "processing", json_pack("{s:i}", "attempt", attempt), err);
}

/* Write the final or retrying state of the task row. */
static int update_task(task_handler *h, const char *task_id, const char *status, const char *reason,
                       int attempt, json_t *result, const char *error, const char *node,
                       int64_t vmid, const clock_now *now, vf_error *err)
{
    char *result_text = result ? json_util_dump(result) : NULL;
    store_task_fields fields = {.id = task_id,
                                .status = status,
                                .reason = reason,
                                .attempts = attempt,
                                .result = result_text,
                                .error = error,
                                .node = node,
                                .vmid = vmid,
                                .at = now->store_time};
    int rc = store_task_update(h->store, &fields, err);
    free(result_text);
    if (rc == 1) {
        vf_error_set(err, VF_EINTERNAL, "task %s vanished inside its own transaction", task_id);
        return -1;
    }
    return rc;
}

/* Put an event in the outbox and keep it in the outcome for publishing. */
static int emit_event(task_handler *h, task_outcome *out, const char *type, json_t *data,
                      const clock_now *now, vf_error *err)
{
    char id[IDS_LEN], key[64];
    char *body = events_build(type, data, now->ms / 1000, id, key);
    if (!body) {
        vf_error_set(err, VF_ENOMEM, "out of memory building event %s", type);
        return -1;
    }
    if (store_outbox_add(h->store, id, key, body, now->store_time, err) < 0) {
        free(body);
        return -1;
    }
    out->event_id = strdup(id);
    out->event_key = strdup(key);
    out->event_body = body;
    return 0;
}

static void set_reply(task_outcome *out, const task_message *msg, json_t *result)
{
    if (!msg->reply_to || !msg->reply_to[0] || !result)
        return;
    json_t *reply = json_deep_copy(result);
    json_object_set_new(reply, "task_id", json_string(out->task_id));
    out->reply_body = json_util_dump(reply);
    json_decref(reply);
}

/* failed with `reason`: task row, history, task.failed event, reply. */
static int record_failure(task_handler *h, const task_message *msg, task_outcome *out,
                          const char *reason, const char *error, int attempt, json_t *detail,
                          const clock_now *now, vf_error *err)
{
    json_t *result =
        json_pack("{s:s, s:s, s:s}", "status", "failed", "reason", reason, "error", error);
    json_t *history = detail ? detail : json_object();
    json_object_set_new(history, "reason", json_string(reason));
    json_object_set_new(history, "error", json_string(error));
    json_object_set_new(history, "attempt", json_integer(attempt));
    int rc =
        update_task(h, out->task_id, "failed", reason, attempt, result, error, NULL, -1, now, err);
    if (rc == 0)
        rc = add_history(h, out->task_id, now, "failed", history, err);
    if (rc == 0)
        rc = emit_event(h, out, "task.failed",
                        json_pack("{s:s, s:s, s:s, s:s, s:i}", "task_id", out->task_id, "status",
                                  "failed", "error", error, "reason", reason, "attempts", attempt),
                        now, err);
    set_reply(out, msg, result);
    json_decref(result);
    snprintf(out->summary, sizeof out->summary, "failed (%s): %s", reason, error);
    return rc;
}

/* Keep at most MAX_REJECTIONS_RECORDED per-host reasons in a history detail. */
static void cap_rejections(json_t *detail)
{
    json_t *rejections = json_object_get(detail, "rejections");
    size_t total = json_object_size(rejections);
    if (total <= MAX_REJECTIONS_RECORDED)
        return;
    json_t *kept = json_object();
    const char *name;
    json_t *reason;
    size_t count = 0;
    json_object_foreach(rejections, name, reason)
    {
        if (count++ == MAX_REJECTIONS_RECORDED)
            break;
        json_object_set(kept, name, reason);
    }
    json_object_set_new(detail, "rejections", kept);
    json_object_set_new(detail, "rejections_omitted",
                        json_integer((json_int_t)(total - MAX_REJECTIONS_RECORDED)));
}

static int delay_for_attempt(const vf_config *config, int attempt)
{
    size_t tier = (size_t)(attempt - 1);
    if (tier >= config->retry.n_delays)
        tier = config->retry.n_delays - 1;
    return config->retry.delays_s[tier];
}

/* Not done yet and attempts remain: record "retrying" and ask for a retry. */
static int record_retry(task_handler *h, task_outcome *out, int attempt, const char *error,
                        json_t *detail, const clock_now *now, vf_error *err)
{
    out->action = TASK_RETRY;
    out->next_attempt = attempt + 1;
    out->delay_s = delay_for_attempt(h->config, attempt);
    out->error = strdup(error);
    json_t *history = detail ? detail : json_object();
    /* The decision's own verdict is not the task's: it goes on. */
    json_object_del(history, "status");
    json_object_del(history, "reason");
    json_object_set_new(history, "attempt", json_integer(attempt));
    json_object_set_new(history, "error", json_string(error));
    json_object_set_new(history, "next_attempt", json_integer(out->next_attempt));
    json_object_set_new(history, "delay_s", json_integer(out->delay_s));
    int rc =
        update_task(h, out->task_id, "retrying", NULL, attempt, NULL, error, NULL, -1, now, err);
    if (rc == 0)
        rc = add_history(h, out->task_id, now, "retrying", history, err);
    snprintf(out->summary, sizeof out->summary, "retrying in %d s (attempt %d of %d): %s",
             out->delay_s, out->next_attempt, h->config->retry.max_attempts, error);
    return rc;
}

static int record_placement(task_handler *h, const task_message *msg, task_outcome *out,
                            const sched_request *req, const sched_decision *decision, int attempt,
                            const clock_now *now, vf_error *err)
{
    int64_t ttl_ms = (int64_t)h->config->scheduler.reservation_ttl_s * 1000;
    char expires[STORE_TIME_SIZE];
    store_format_time(now->ms + ttl_ms, expires);
    if (store_reservation_add(h->store, out->task_id, decision->node->name, req->cpu, req->memory,
                              req->disk, decision->vmid, now->store_time, expires, err) < 0)
        return -1;
    sched_reservation res;
    sched_reservation_from_decision(&res, decision, req, out->task_id, (now->ms + ttl_ms) / 1000);
    if (sched_engine_reserve(h->engine, &res, err) < 0)
        return -1;
    out->reserved = true;

    json_t *result = sched_decision_to_json(decision, h->hosts);
    if (!result) {
        vf_error_set(err, VF_ENOMEM, "out of memory recording task %s", out->task_id);
        return -1;
    }
    json_object_set_new(result, "attempts", json_integer(attempt));
    if (h->inventory_note && h->inventory_note[0])
        json_object_set_new(result, "inventory", json_string(h->inventory_note));
    int rc = update_task(h, out->task_id, "completed", NULL, attempt, result, NULL,
                         decision->node->name, decision->vmid, now, err);
    if (rc == 0)
        rc = add_history(h, out->task_id, now, "completed", json_deep_copy(result), err);
    json_t *node = json_pack("{s:s, s:s, s:s}", "name", decision->node->name, "ip",
                             decision->node->ip, "pool", decision->node->pool);
    if (rc == 0)
        rc = emit_event(h, out, "task.completed",
                        json_pack("{s:s, s:s, s:o, s:i, s:O, s:i}", "task_id", out->task_id,
                                  "status", "completed", "node", node, "vmid",
                                  (json_int_t)decision->vmid, "score",
                                  json_object_get(result, "score"), "attempts", attempt),
                        now, err);
    else
        json_decref(node);
    set_reply(out, msg, result);
    json_decref(result);
    snprintf(out->summary, sizeof out->summary, "completed on %s, vmid %u, score %.2f (attempt %d)",
             decision->node->name, decision->vmid, decision->score, attempt);
    return rc;
}

/* An already-final task: send its recorded result again to reply_to. */
static void replay_reply(const task_message *msg, task_outcome *out, const store_task *task)
{
    if (!task->result)
        return;
    json_t *result = json_loads(task->result, 0, NULL);
    set_reply(out, msg, result);
    json_decref(result);
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

int task_handler_handle(task_handler *h, const task_message *msg, task_outcome *out, vf_error *err)
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
    clock_now now;
    read_clock(h, &now);
    choose_task_id(body, msg->message_id, out->task_id);
    int found = store_task_get(h->store, out->task_id, &existing, err);
    if (found < 0)
        goto out;
    bool is_new = found == 1;
    if (!is_new && strcmp(existing.kind, "schedule") != 0) {
        park(out, "task id %s already names a %s task", out->task_id, existing.kind);
        rc = 0;
        goto out;
    }
    if (!is_new &&
        (strcmp(existing.status, "completed") == 0 || strcmp(existing.status, "failed") == 0)) {
        /* Redelivered or republished: never scheduled twice. Its event, if
         * still unconfirmed, goes out again from the outbox. */
        out->duplicate = true;
        replay_reply(msg, out, &existing);
        snprintf(out->summary, sizeof out->summary, "already %s; not scheduled again",
                 existing.status);
        rc = 0;
        goto out;
    }
    int attempt = msg->attempt > 0 ? (int)msg->attempt : 1;
    if (!is_new && existing.attempts >= attempt)
        attempt = existing.attempts + 1; /* a redelivered copy of an earlier attempt */

    char *request_text = json_util_dump(body);
    rc = record_received(h, msg, out->task_id, request_text, &now, attempt, is_new, err);
    free(request_text);
    if (rc < 0)
        goto out;

    sched_request req;
    vf_error invalid;
    vf_error_init(&invalid);
    if (sched_request_parse(body, &req, &invalid) < 0) {
        rc = record_failure(h, msg, out, "invalid", invalid.text, attempt, NULL, &now, err);
        goto out;
    }
    bool last_attempt = attempt >= h->config->retry.max_attempts;
    if (!h->hosts) {
        char why[VF_ERROR_TEXT + 32];
        snprintf(why, sizeof why, "%s",
                 h->inventory_note && h->inventory_note[0] ? h->inventory_note
                                                           : "no inventory yet");
        if (last_attempt) {
            rc = record_failure(h, msg, out, "exhausted", why, attempt, NULL, &now, err);
            out->action = TASK_DEAD;
            out->error = strdup(why);
        } else {
            rc = record_retry(h, out, attempt, why, NULL, &now, err);
        }
        goto out;
    }
    sched_decision decision;
    if (sched_engine_decide(h->engine, &req, &decision, &invalid) < 0) {
        const char *reason = invalid.code == VF_EINVAL ? "invalid" : "exhausted";
        rc = record_failure(h, msg, out, reason, invalid.text, attempt, NULL, &now, err);
        goto out;
    }
    if (decision.placed) {
        rc = record_placement(h, msg, out, &req, &decision, attempt, &now, err);
        goto out;
    }
    json_t *detail = sched_decision_to_json(&decision, h->hosts);
    cap_rejections(detail);
    if (last_attempt)
        rc = record_failure(h, msg, out, "unschedulable", decision.message, attempt, detail, &now,
                            err);
    else
        rc = record_retry(h, out, attempt, decision.message, detail, &now, err);
out:
    store_task_clear(&existing);
    json_decref(body);
    return rc;
}
