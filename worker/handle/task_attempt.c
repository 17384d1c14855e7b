#include "task_attempt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "grow.h"
#include "ids.h"
#include "json_util.h"
#include "provenance.h"
#include "store_outbox.h"
#include "store_tasks.h"
#include "task_conflict.h"
#include "task_owner.h"

void task_outcome_park(task_outcome *out, const char *fmt, ...)
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

static bool id_is_valid(const char *id)
{
    size_t len = id ? strlen(id) : 0;
    return len >= 1 && len < REQUEST_TASK_ID_LEN && strspn(id, request_task_id_chars) == len;
}

/* The task id the message names: the body's task_id when it is a valid
 * one, else the AMQP message_id when valid. False when neither is. */
static bool named_task_id(const json_t *body, const char *message_id, char out[REQUEST_TASK_ID_LEN])
{
    const char *from_body = json_string_value(json_object_get(body, "task_id"));
    if (id_is_valid(from_body))
        snprintf(out, REQUEST_TASK_ID_LEN, "%s", from_body);
    else if (id_is_valid(message_id))
        snprintf(out, REQUEST_TASK_ID_LEN, "%s", message_id);
    else
        return false;
    return true;
}

/* The named task id, else a new one (such a message cannot be recognised
 * if redelivered: clients should set one, virtflowctl submit always does). */
static void choose_task_id(const json_t *body, const char *message_id,
                           char out[REQUEST_TASK_ID_LEN])
{
    if (!named_task_id(body, message_id, out)) {
        char fresh[IDS_LEN];
        ids_new("tsk", fresh);
        snprintf(out, REQUEST_TASK_ID_LEN, "%s", fresh);
    }
}

static json_t *read_body(const task_message *msg, json_error_t *jerr)
{
    return json_loadb((const char *)msg->body, msg->body_len,
                      JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, jerr);
}

json_t *task_attempt_read(const task_message *msg, char task_id[REQUEST_TASK_ID_LEN])
{
    if (msg->too_large)
        return NULL;
    json_error_t jerr;
    json_t *body = read_body(msg, &jerr);
    if (!json_is_object(body) || !named_task_id(body, msg->message_id, task_id)) {
        json_decref(body);
        return NULL;
    }
    return body;
}

int task_attempt_number(const vf_config *config, const task_message *msg)
{
    /* Only the worker's own retries carry an attempt: anyone else's header
     * could skip every retry (5) or, cast to int, overflow (2147483648). */
    if (msg->attempt <= 0 || !config_trusts_publisher(config, msg->user_id))
        return 1;
    int64_t max = config->retry.max_attempts > 0 ? config->retry.max_attempts : 1;
    return (int)(msg->attempt < max ? msg->attempt : max);
}

int task_attempt_open(task_attempt *a, task_handler *h, const task_message *msg, task_outcome *out,
                      const char *kind, vf_error *err)
{
    memset(a, 0, sizeof *a);
    memset(out, 0, sizeof *out);
    a->h = h;
    a->msg = msg;
    a->out = out;
    a->kind = kind;
    if (msg->too_large) {
        task_outcome_park(out, "message too large: %llu bytes, amqp.max_message_bytes is %lld",
                          (unsigned long long)msg->body_size,
                          (long long)h->config->amqp.max_message_bytes);
        return 0;
    }
    json_error_t jerr;
    a->body = msg->parsed ? json_incref(msg->parsed) : read_body(msg, &jerr);
    if (!a->body) {
        task_outcome_park(out, "not JSON: %s (at byte %d)", jerr.text, jerr.position);
        return 0;
    }
    if (!json_is_object(a->body)) {
        task_outcome_park(out, "not a JSON object: got %s", json_util_type_name(a->body));
        return 0;
    }
    a->now_ms = h->now_ms();
    store_format_time(a->now_ms, a->now);
    choose_task_id(a->body, msg->message_id, out->task_id);
    int found = store_task_get(h->store, out->task_id, &a->existing, err);
    if (found < 0)
        return -1;
    a->is_new = found == 1;
    if (!a->is_new && strcmp(a->existing.kind, kind) != 0) {
        task_outcome_park(out, "task id %s already names a %s task", out->task_id,
                          a->existing.kind);
        return 0;
    }
    a->attempt = task_attempt_number(h->config, msg);
    if (!a->is_new && a->existing.attempts >= a->attempt)
        a->attempt = a->existing.attempts + 1; /* a redelivered copy of an earlier attempt */
    /* A request republished from the outbox (a preempted task decided
     * again) names no reply_to: the answer goes where the client asked. */
    if (!(msg->reply_to && msg->reply_to[0]) && !a->is_new && a->existing.reply_to) {
        out->reply_to = strdup(a->existing.reply_to);
        out->correlation_id =
            a->existing.correlation_id ? strdup(a->existing.correlation_id) : NULL;
    }
    provenance_capture(a); /* before anything of this attempt is decided or held */
    return 1;
}

int task_attempt_first_publisher(const task_attempt *a, char **user, vf_error *err)
{
    task_owner owner;
    *user = NULL;
    if (task_owner_read(a->h->store, a->out->task_id, &owner, err) < 0)
        return -1;
    *user = owner.publisher;
    owner.publisher = NULL;
    task_owner_clear(&owner);
    return 0;
}

/* Whether this message, the recorded request again, comes from another
 * publisher than the task's first: not a redelivery (the broker redelivers
 * a message with its properties, and a client's retry publishes as itself)
 * but someone else's message under that id. A trusted publisher (the
 * worker's own republishes, virtflow-api) is never another; nor is anyone
 * when the first named none. Returns 1 another, 0 not, -1 error. */
static int from_another_publisher(const task_attempt *a, vf_error *err)
{
    const char *user = a->msg->user_id;
    if (config_trusts_publisher(a->h->config, user))
        return 0;
    char *first = NULL;
    if (task_attempt_first_publisher(a, &first, err) < 0)
        return -1;
    int other = first && (!user || strcmp(first, user) != 0);
    free(first);
    return other;
}

int task_attempt_conflict(task_attempt *a, vf_error *err)
{
    if (a->is_new)
        return 0;
    bool same = task_conflict_same_request(a->existing.request, a->out->task_id, a->body);
    int other = same ? from_another_publisher(a, err) : 0;
    if (other < 0)
        return -1;
    if (same && !other)
        return 0;
    const task_message *msg = a->msg;
    task_outcome *out = a->out;
    task_conflict c = {.other_publisher = other == 1,
                       .task_id = out->task_id,
                       .kind = a->kind,
                       .via = "broker",
                       .publisher = msg->user_id,
                       .message_id = msg->message_id,
                       .routing_key = msg->routing_key,
                       .request = a->body,
                       .now_ms = a->now_ms};
    if (task_conflict_record(a->h->store, &c, &out->event_id, &out->event_key, &out->event_body,
                             err) < 0)
        return -1;
    if (msg->reply_to && msg->reply_to[0] && !(out->reply_body = task_conflict_reply(&c))) {
        vf_error_set(err, VF_ENOMEM, "out of memory answering task %s", out->task_id);
        return -1;
    }
    /* Nothing of the task changed: counted as a conflict, not a new state. */
    snprintf(out->status, sizeof out->status, "conflict");
    snprintf(out->summary, sizeof out->summary,
             "conflict: the task id already names %s (recorded first, %s); this "
             "message (publisher %s, message_id %s) is refused, the task left as it was",
             other ? "the same request from another publisher" : "another request",
             a->existing.status, msg->user_id ? msg->user_id : "none",
             msg->message_id ? msg->message_id : "none");
    return 1;
}

void task_attempt_close(task_attempt *a)
{
    store_task_clear(&a->existing);
    json_decref(a->body);
    a->body = NULL;
}

int task_attempt_history_text(const task_attempt *a, const char *status, const char *detail,
                              vf_error *err)
{
    return store_task_event_add(a->h->store, a->out->task_id, a->now, status, detail, err);
}

int task_attempt_history(const task_attempt *a, const char *status, json_t *detail, vf_error *err)
{
    char *text = detail ? json_util_dump(detail) : NULL;
    json_decref(detail);
    int rc = task_attempt_history_text(a, status, text, err);
    free(text);
    return rc;
}

/* How this attempt's message arrived, for its "processing" history row, or
 * NULL (no detail) when a field the broker gave is not UTF-8. publisher: the
 * AMQP user_id, checked by the broker; the first attempt's names the
 * submitter, who may give the reservation back (task.release). Built
 * directly rather than with json_pack, which would parse its format and
 * check every key on every task; the values from the message are still
 * checked. */
static json_t *received_json(const task_attempt *a)
{
    const task_message *msg = a->msg;
    json_t *received = json_object();
    if (!received)
        return NULL;
    int rc = json_object_set_new_nocheck(received, "attempt", json_integer(a->attempt));
    rc |= json_object_set_new_nocheck(received, "routing_key",
                                      json_util_string_or_null(msg->routing_key));
    rc |= json_object_set_new_nocheck(received, "message_id",
                                      json_util_string_or_null(msg->message_id));
    rc |= json_object_set_new_nocheck(received, "redelivered", json_boolean(msg->redelivered));
    rc |= json_object_set_new_nocheck(received, "worker", json_util_string_or_null(a->h->worker));
    rc |=
        json_object_set_new_nocheck(received, "publisher", json_util_string_or_null(msg->user_id));
    if (rc < 0) {
        json_decref(received);
        return NULL;
    }
    return received;
}

int task_attempt_write(const task_attempt *a, const char *status, const char *reason,
                       const char *result_text, const char *error, const char *node, int64_t vmid,
                       vf_error *err)
{
    const task_message *msg = a->msg;
    store_task_fields fields = {.id = a->out->task_id,
                                .kind = a->kind,
                                .status = status,
                                .reason = reason,
                                .attempts = a->attempt,
                                .request = (const char *)msg->body, /* verbatim, as sent */
                                .result = result_text,
                                .error = error,
                                .node = node,
                                .vmid = vmid,
                                .at = a->now,
                                .check_attempts = true,
                                .expected_attempts = a->existing.attempts,
                                .reply_to =
                                    msg->reply_to && msg->reply_to[0] ? msg->reply_to : NULL,
                                .correlation_id = msg->correlation_id};
    int rc = a->is_new ? store_task_insert(a->h->store, &fields, err)
                       : store_task_update(a->h->store, &fields, err);
    if (rc == 1) {
        /* Read in this transaction, gone or moved on since: another worker
         * recorded an attempt of it first (a redelivered copy beside a
         * retry's, after a worker died). Decide the batch again. */
        vf_error_set(err, VF_ECONFLICT, "task %s was recorded by another worker meanwhile",
                     a->out->task_id);
        return -1;
    }
    if (rc < 0)
        return -1;
    snprintf(a->out->status, sizeof a->out->status, "%s", status);
    snprintf(a->out->reason, sizeof a->out->reason, "%s", reason ? reason : "");
    a->out->attempt = (int)a->attempt;
    snprintf(a->out->node, sizeof a->out->node, "%s", node ? node : "");
    snprintf(a->out->error_text, sizeof a->out->error_text, "%s", error ? error : "");
    /* What this decision was made over: the last write of the attempt that
     * commits is the record kept (provenance.h). */
    if (provenance_write(a, err) < 0)
        return -1;
    return task_attempt_history(a, "processing", received_json(a), err);
}

int task_attempt_event(const task_attempt *a, event_type type, json_t *data, vf_error *err)
{
    char id[IDS_LEN], key[64];
    char *body = events_build(type, data, a->now_ms / 1000, id, key);
    if (!body) {
        vf_error_set(err, VF_ENOMEM, "out of memory building event %s", event_types_name(type));
        return -1;
    }
    if (store_outbox_add(a->h->store, id, key, body, a->now, err) < 0) {
        free(body);
        return -1;
    }
    a->out->event_id = strdup(id);
    a->out->event_key = strdup(key);
    a->out->event_body = body;
    return 0;
}

int task_attempt_outbox(const task_attempt *a, const char *id, const char *key, char *body,
                        vf_error *err)
{
    char fresh[IDS_LEN];
    if (!id) {
        ids_new("evt", fresh);
        id = fresh;
    }
    task_outcome *out = a->out;
    if (grow_array((void **)&out->more, &out->cap_more, out->n_more + 1, sizeof *out->more) < 0) {
        free(body);
        vf_error_set(err, VF_ENOMEM, "out of memory recording task %s", out->task_id);
        return -1;
    }
    if (store_outbox_add(a->h->store, id, key, body, a->now, err) < 0) {
        free(body);
        return -1;
    }
    outcome_message *m = &out->more[out->n_more];
    m->id = strdup(id);
    m->key = strdup(key);
    m->body = body;
    if (!m->id || !m->key) {
        free(m->id);
        free(m->key);
        free(body);
        vf_error_set(err, VF_ENOMEM, "out of memory recording task %s", out->task_id);
        return -1;
    }
    out->n_more++;
    return 0;
}

int task_attempt_event_more(const task_attempt *a, event_type type, json_t *data, vf_error *err)
{
    char id[IDS_LEN], key[64];
    char *body = events_build(type, data, a->now_ms / 1000, id, key);
    if (!body) {
        vf_error_set(err, VF_ENOMEM, "out of memory building event %s", event_types_name(type));
        return -1;
    }
    return task_attempt_outbox(a, id, key, body, err);
}

int task_attempt_delay_s(const vf_config *config, int attempt)
{
    size_t tier = (size_t)(attempt - 1);
    if (tier >= config->retry.n_delays)
        tier = config->retry.n_delays - 1;
    return config->retry.delays_s[tier];
}

int task_attempt_retry(const task_attempt *a, const char *error, json_t *detail, vf_error *err)
{
    task_outcome *out = a->out;
    out->action = TASK_RETRY;
    out->next_attempt = a->attempt + 1;
    out->delay_s = task_attempt_delay_s(a->h->config, a->attempt);
    out->error = strdup(error);
    json_t *history = detail ? detail : json_object();
    /* A decision's own verdict is not the task's: it goes on. */
    json_object_del(history, "status");
    json_object_del(history, "reason");
    if (a->retry_reason)
        json_object_set_new(history, "reason", json_string(a->retry_reason));
    json_object_set_new(history, "attempt", json_integer(a->attempt));
    json_object_set_new(history, "error", json_string(error));
    json_object_set_new(history, "next_attempt", json_integer(out->next_attempt));
    json_object_set_new(history, "delay_s", json_integer(out->delay_s));
    /* A progress event, so that a watcher sees more than the end. */
    json_t *event =
        json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i}", "task_id", out->task_id, "kind", a->kind,
                  "status", "retrying", "error", error, "attempt", a->attempt, "next_attempt",
                  out->next_attempt, "delay_s", out->delay_s);
    if (a->event_extra && event)
        json_object_update(event, a->event_extra);
    if (a->retry_reason && event)
        json_object_set_new(event, "reason", json_string(a->retry_reason));
    int rc = task_attempt_write(a, "retrying", NULL, NULL, error, NULL, -1, err);
    if (rc == 0)
        rc = task_attempt_history(a, "retrying", history, err);
    else
        json_decref(history);
    if (rc == 0)
        rc = task_attempt_event(a, EVENT_TASK_RETRYING, event, err);
    else
        json_decref(event);
    snprintf(out->summary, sizeof out->summary, "retrying in %d s (attempt %d of %d): %s",
             out->delay_s, out->next_attempt, a->h->config->retry.max_attempts, error);
    return rc;
}

char *task_attempt_result_text(const task_attempt *a, json_t *result)
{
    /* The id is ASCII: from request_task_id_chars, or made by ids_new. */
    json_object_set_new_nocheck(result, "task_id", json_string_nocheck(a->out->task_id));
    return json_util_dump(result);
}

bool task_attempt_wants_reply(const task_attempt *a)
{
    return (a->msg->reply_to && a->msg->reply_to[0]) || a->out->reply_to;
}
