/* release_handler: see release_handler.h. */
#include "release_handler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "reservations.h"
#include "store_tasks.h"
#include "task_attempt.h"

static bool wants_reply(const task_message *msg)
{
    return msg->reply_to && msg->reply_to[0];
}

static void reply(const task_attempt *a, const char *status, const char *note)
{
    if (!wants_reply(a->msg))
        return;
    json_t *body =
        json_pack("{s:s, s:s, s:s?}", "task_id", a->out->task_id, "status", status, "note", note);
    a->out->reply_body = json_util_dump(body);
    json_decref(body);
}

/* A history row on the released task: who asked, with which message. */
static json_t *asked_by(const task_message *msg)
{
    return json_pack("{s:s?, s:s?}", "released_by", msg->user_id, "message_id", msg->message_id);
}

static int refuse(task_attempt *a, const char *submitter, vf_error *err)
{
    const task_message *msg = a->msg;
    char why[256];
    snprintf(why, sizeof why,
             "%s may not release it: only its submitter (%s) or a trusted publisher "
             "(relay.trusted_publishers) may",
             msg->user_id ? msg->user_id : "a publisher without user_id",
             submitter ? submitter : "none recorded");
    json_t *detail = asked_by(msg);
    json_object_set_new(detail, "error", json_string(why));
    if (task_attempt_history(a, "release_refused", detail, err) < 0)
        return -1;
    reply(a, "refused", why);
    snprintf(a->out->status, sizeof a->out->status, "refused");
    snprintf(a->out->summary, sizeof a->out->summary, "release refused: %s", why);
    return 0;
}

static int release(task_attempt *a, vf_error *err)
{
    task_handler *h = a->h;
    const store_task *task = &a->existing;
    long ended = task->node
                     ? reservations_release_task(h->store, h->engine, a->out->task_id, a->now, err)
                     : 0;
    if (ended < 0)
        return -1;
    snprintf(a->out->status, sizeof a->out->status, "released");
    if (ended == 0) {
        reply(a, "released", "nothing held");
        snprintf(a->out->summary, sizeof a->out->summary,
                 "release: nothing held (task %s; released, expired, its VM already seen, or "
                 "never placed)",
                 task->status);
        return 0;
    }
    a->out->released = true;
    json_t *detail = asked_by(a->msg);
    json_object_set_new(detail, "node", json_string(task->node));
    if (task->vmid > 0)
        json_object_set_new(detail, "vmid", json_integer(task->vmid));
    if (task_attempt_history(a, "released", detail, err) < 0)
        return -1;
    json_t *data = json_pack("{s:s, s:s, s:s, s:s?}", "task_id", a->out->task_id, "status",
                             "released", "node", task->node, "released_by", a->msg->user_id);
    if (task->vmid > 0)
        json_object_set_new(data, "vmid", json_integer(task->vmid));
    if (task_attempt_event(a, EVENT_TASK_RELEASED, data, err) < 0)
        return -1;
    reply(a, "released", NULL);
    snprintf(a->out->summary, sizeof a->out->summary,
             "released: %s gave back its reservation on %s (vmid %lld)",
             a->msg->user_id ? a->msg->user_id : "a publisher without user_id", task->node,
             (long long)task->vmid);
    return 0;
}

int release_handler_handle(task_handler *h, const task_message *msg, task_outcome *out,
                           vf_error *err)
{
    static const char *const allowed[] = {"task_id", NULL};
    task_attempt a;
    /* The body's task_id names the task released: its row is a->existing.
     * Nothing here writes the row itself (task_attempt_write): a release
     * only adds history. */
    int rc = task_attempt_open(&a, h, msg, out, "schedule", err);
    if (rc <= 0)
        goto out;
    rc = 0;
    vf_error invalid;
    vf_error_init(&invalid);
    const char *named = json_string_value(json_object_get(a.body, "task_id"));
    if (!named || strcmp(named, out->task_id) != 0) {
        task_outcome_park(out, "task.release: \"task_id\" must name the task to release");
        out->task_id[0] = '\0';
        goto out;
    }
    if (json_util_only_keys(a.body, allowed, &invalid) < 0) {
        task_outcome_park(out, "task.release: %s", invalid.text);
        goto out;
    }
    if (a.is_new) {
        /* Not recorded yet: its task.schedule may still be on its way, or
         * with another worker. Wait through the tiers, then park. */
        if (a.attempt >= h->config->retry.max_attempts) {
            task_outcome_park(out, "task.release: no task %s was ever recorded", out->task_id);
        } else {
            out->action = TASK_RETRY;
            out->next_attempt = a.attempt + 1;
            out->delay_s = task_attempt_delay_s(h->config, a.attempt);
            out->error = strdup("the task to release is not recorded yet");
            snprintf(out->summary, sizeof out->summary,
                     "release: task not recorded yet; trying again in %d s", out->delay_s);
        }
        goto out;
    }
    char *submitter = NULL;
    rc = task_attempt_first_publisher(&a, &submitter, err);
    if (rc == 0) {
        bool allowed_to = msg->user_id && ((submitter && strcmp(submitter, msg->user_id) == 0) ||
                                           config_trusts_publisher(h->config, msg->user_id));
        rc = allowed_to ? release(&a, err) : refuse(&a, submitter, err);
    }
    free(submitter);
out:
    task_attempt_close(&a);
    return rc;
}
