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

/* One attempt at one task, written once its outcome is known: a new task's
 * row is inserted in its final (or retrying) state, an existing one updated,
 * so each message costs one row write plus its history rows. */
typedef struct attempt_record {
    task_handler *h;
    const task_message *msg;
    task_outcome *out;
    const clock_now *now;
    bool is_new;
    int attempt;
} attempt_record;

static int add_history_text(const attempt_record *rec, const char *status, const char *detail,
                            vf_error *err)
{
    return store_task_event_add(rec->h->store, rec->out->task_id, rec->now->store_time, status,
                                detail, err);
}

static int add_history(const attempt_record *rec, const char *status, json_t *detail, vf_error *err)
{
    char *text = detail ? json_util_dump(detail) : NULL;
    json_decref(detail);
    int rc = add_history_text(rec, status, text, err);
    free(text);
    return rc;
}

/* The task row in its new state, then the "processing" history row of this
 * attempt (carrying how the message arrived). */
static int write_task(const attempt_record *rec, const char *status, const char *reason,
                      const char *result_text, const char *error, const char *node, int64_t vmid,
                      vf_error *err)
{
    const task_message *msg = rec->msg;
    store_task_fields fields = {.id = rec->out->task_id,
                                .kind = "schedule",
                                .status = status,
                                .reason = reason,
                                .attempts = rec->attempt,
                                .request = (const char *)msg->body, /* verbatim, as sent */
                                .result = result_text,
                                .error = error,
                                .node = node,
                                .vmid = vmid,
                                .at = rec->now->store_time};
    int rc = rec->is_new ? store_task_insert(rec->h->store, &fields, err)
                         : store_task_update(rec->h->store, &fields, err);
    if (rc == 1) {
        vf_error_set(err, VF_EINTERNAL, "task %s vanished inside its own transaction",
                     rec->out->task_id);
        return -1;
    }
    if (rc < 0)
        return -1;
    json_t *received =
        json_pack("{s:i, s:s?, s:s?, s:b}", "attempt", rec->attempt, "routing_key",
                  msg->routing_key, "message_id", msg->message_id, "redelivered", msg->redelivered);
    return add_history(rec, "processing", received, err);
}

/* Put an event in the outbox and keep it in the outcome for publishing. */
static int emit_event(const attempt_record *rec, const char *type, json_t *data, vf_error *err)
{
    char id[IDS_LEN], key[64];
    char *body = events_build(type, data, rec->now->ms / 1000, id, key);
    if (!body) {
        vf_error_set(err, VF_ENOMEM, "out of memory building event %s", type);
        return -1;
    }
    if (store_outbox_add(rec->h->store, id, key, body, rec->now->store_time, err) < 0) {
        free(body);
        return -1;
    }
    rec->out->event_id = strdup(id);
    rec->out->event_key = strdup(key);
    rec->out->event_body = body;
    return 0;
}

static bool wants_reply(const task_message *msg)
{
    return msg->reply_to && msg->reply_to[0];
}

/* The result object, with the task id in it, as text (owned). */
static char *result_text(json_t *result, const char *task_id)
{
    json_object_set_new(result, "task_id", json_string(task_id));
    return json_util_dump(result);
}

/* failed with `reason`: task row, history, task.failed event, reply. */
static int record_failure(const attempt_record *rec, const char *reason, const char *error,
                          json_t *detail, vf_error *err)
{
    task_outcome *out = rec->out;
    json_t *result =
        json_pack("{s:s, s:s, s:s}", "status", "failed", "reason", reason, "error", error);
    char *text = result_text(result, out->task_id);
    json_decref(result);
    json_t *history = detail ? detail : json_object();
    json_object_set_new(history, "reason", json_string(reason));
    json_object_set_new(history, "error", json_string(error));
    json_object_set_new(history, "attempt", json_integer(rec->attempt));
    int rc = write_task(rec, "failed", reason, text, error, NULL, -1, err);
    if (rc == 0)
        rc = add_history(rec, "failed", history, err);
    else
        json_decref(history);
    if (rc == 0)
        rc = emit_event(rec, "task.failed",
                        json_pack("{s:s, s:s, s:s, s:s, s:i}", "task_id", out->task_id, "status",
                                  "failed", "error", error, "reason", reason, "attempts",
                                  rec->attempt),
                        err);
    if (wants_reply(rec->msg)) {
        out->reply_body = text;
        text = NULL;
    }
    free(text);
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
static int record_retry(const attempt_record *rec, const char *error, json_t *detail, vf_error *err)
{
    task_outcome *out = rec->out;
    out->action = TASK_RETRY;
    out->next_attempt = rec->attempt + 1;
    out->delay_s = delay_for_attempt(rec->h->config, rec->attempt);
    out->error = strdup(error);
    json_t *history = detail ? detail : json_object();
    /* The decision's own verdict is not the task's: it goes on. */
    json_object_del(history, "status");
    json_object_del(history, "reason");
    json_object_set_new(history, "attempt", json_integer(rec->attempt));
    json_object_set_new(history, "error", json_string(error));
    json_object_set_new(history, "next_attempt", json_integer(out->next_attempt));
    json_object_set_new(history, "delay_s", json_integer(out->delay_s));
    int rc = write_task(rec, "retrying", NULL, NULL, error, NULL, -1, err);
    if (rc == 0)
        rc = add_history(rec, "retrying", history, err);
    else
        json_decref(history);
    snprintf(out->summary, sizeof out->summary, "retrying in %d s (attempt %d of %d): %s",
             out->delay_s, out->next_attempt, rec->h->config->retry.max_attempts, error);
    return rc;
}

/* Hold the placement's resources and vmid, in the store (same transaction
 * as the task row) and in the engine (so the next message already sees it). */
static int reserve(const attempt_record *rec, const sched_request *req,
                   const sched_decision *decision, vf_error *err)
{
    task_handler *h = rec->h;
    int64_t ttl_ms = (int64_t)h->config->scheduler.reservation_ttl_s * 1000;
    char expires[STORE_TIME_SIZE];
    store_format_time(rec->now->ms + ttl_ms, expires);
    if (store_reservation_add(h->store, rec->out->task_id, decision->node->name, req->cpu,
                              req->memory, req->disk, decision->vmid, rec->now->store_time, expires,
                              err) < 0)
        return -1;
    sched_reservation res;
    sched_reservation_from_decision(&res, decision, req, rec->out->task_id,
                                    (rec->now->ms + ttl_ms) / 1000);
    if (sched_engine_reserve(h->engine, &res, err) < 0)
        return -1;
    rec->out->reserved = true;
    return 0;
}

static int record_placement(const attempt_record *rec, const sched_request *req,
                            const sched_decision *decision, vf_error *err)
{
    task_handler *h = rec->h;
    task_outcome *out = rec->out;
    json_t *result = sched_decision_to_json(decision, h->hosts);
    if (!result) {
        vf_error_set(err, VF_ENOMEM, "out of memory recording task %s", out->task_id);
        return -1;
    }
    json_object_set_new(result, "attempts", json_integer(rec->attempt));
    if (h->inventory_note && h->inventory_note[0])
        json_object_set_new(result, "inventory", json_string(h->inventory_note));
    json_t *event =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:i, s:O, s:i}", "task_id", out->task_id, "status",
                  "completed", "node", "name", decision->node->name, "ip", decision->node->ip,
                  "pool", decision->node->pool, "vmid", (json_int_t)decision->vmid, "score",
                  json_object_get(result, "score"), "attempts", rec->attempt);
    /* One serialisation serves the row, its history entry and the reply. */
    char *text = result_text(result, out->task_id);
    json_decref(result);
    int rc = text ? 0 : -1;
    if (rc < 0)
        vf_error_set(err, VF_ENOMEM, "out of memory recording task %s", out->task_id);
    if (rc == 0)
        rc = write_task(rec, "completed", NULL, text, NULL, decision->node->name, decision->vmid,
                        err);
    if (rc == 0)
        rc = add_history_text(rec, "completed", text, err);
    if (rc == 0)
        rc = reserve(rec, req, decision, err);
    if (rc == 0)
        rc = emit_event(rec, "task.completed", event, err);
    else
        json_decref(event);
    if (wants_reply(rec->msg)) {
        out->reply_body = text;
        text = NULL;
    }
    free(text);
    snprintf(out->summary, sizeof out->summary, "completed on %s, vmid %u, score %.2f (attempt %d)",
             decision->node->name, decision->vmid, decision->score, rec->attempt);
    return rc;
}

/* An already-final task: send its recorded result again to reply_to. */
static void replay_reply(const task_message *msg, task_outcome *out, const store_task *task)
{
    if (task->result && wants_reply(msg))
        out->reply_body = strdup(task->result);
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
    attempt_record rec = {h, msg, out, &now, is_new, attempt};

    sched_request req;
    vf_error invalid;
    vf_error_init(&invalid);
    if (sched_request_parse(body, &req, &invalid) < 0) {
        rc = record_failure(&rec, "invalid", invalid.text, NULL, err);
        goto out;
    }
    bool last_attempt = attempt >= h->config->retry.max_attempts;
    if (!h->hosts) {
        char why[VF_ERROR_TEXT + 32];
        snprintf(why, sizeof why, "%s",
                 h->inventory_note && h->inventory_note[0] ? h->inventory_note
                                                           : "no inventory yet");
        if (last_attempt) {
            rc = record_failure(&rec, "exhausted", why, NULL, err);
            out->action = TASK_DEAD;
            out->error = strdup(why);
        } else {
            rc = record_retry(&rec, why, NULL, err);
        }
        goto out;
    }
    sched_decision decision;
    if (sched_engine_decide(h->engine, &req, &decision, &invalid) < 0) {
        const char *reason = invalid.code == VF_EINVAL ? "invalid" : "exhausted";
        rc = record_failure(&rec, reason, invalid.text, NULL, err);
        goto out;
    }
    if (decision.placed) {
        rc = record_placement(&rec, &req, &decision, err);
        goto out;
    }
    json_t *detail = sched_decision_to_json(&decision, h->hosts);
    cap_rejections(detail);
    if (last_attempt)
        rc = record_failure(&rec, "unschedulable", decision.message, detail, err);
    else
        rc = record_retry(&rec, decision.message, detail, err);
out:
    store_task_clear(&existing);
    json_decref(body);
    return rc;
}
