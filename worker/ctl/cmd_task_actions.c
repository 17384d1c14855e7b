/* virtflowctl task cancel | retry-now ID: an operator's action on a task
 * whose message waits in the broker, out of reach.
 *
 * cancel (a queued or retrying task) ends the task in the store at once, as
 * the worker would: status cancelled, its history line and task.cancelled
 * in the outbox, which the worker holding the outbox sweep publishes (a
 * worker's user, which the relay trusts). The copy still in the broker
 * finds a final task when a worker takes it, and is dropped. The update
 * takes the next attempt number, so a worker that took that copy meanwhile
 * cannot record its decision over the cancel (its update expects the
 * attempts it read: store_task_update's check_attempts): it decides again,
 * finds the task cancelled and drops the copy.
 *
 * retry-now (a retrying task) is a mark on the row (store_task_set_action,
 * schema/015_task_actions.sql) that the worker honours when a copy comes
 * back, and the request published again at once, so that a copy comes back
 * now. The console's buttons run these. */
#include "cmd_task_actions.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"

#include "events.h"
#include "queue_order.h"
#include "store_outbox.h"
#include "store_tasks.h"

void ctl_task_who(const char *by, char *out, size_t size)
{
    if (by && by[0]) {
        snprintf(out, size, "%s", by);
        return;
    }
    const struct passwd *pw = getpwuid(geteuid());
    snprintf(out, size, "virtflowctl (user %s)", pw && pw->pw_name ? pw->pw_name : "unknown");
}

/* The mark's detail, also the history line's: {"by", "reason"?}. Owned. */
static char *mark_detail(const char *by, const char *reason)
{
    json_t *detail = json_pack("{s:s, s:s?}", "by", by, "reason", reason);
    char *text = detail ? json_dumps(detail, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(detail);
    return text;
}

/* The answer, as text or as {"task_id", "action", "outcome", "note"}. */
static void answer(const char *id, const char *action, const char *outcome, const char *note,
                   bool as_json)
{
    if (as_json) {
        json_t *out = json_pack("{s:s, s:s, s:s, s:s}", "task_id", id, "action", action, "outcome",
                                outcome, "note", note);
        ctl_print_json(out);
        json_decref(out);
    } else {
        printf("%s: %s: %s\n", ctl_text(id), outcome, note);
    }
}

/* Why an action is refused for task t, or NULL when it is allowed: both
 * need a schedule task, cancel a queued or retrying one, retry-now a
 * retrying one. */
static const char *refusal(const store_task *t, bool cancel, char *buf, size_t size)
{
    if (strcmp(t->kind, "schedule") != 0) {
        snprintf(buf, size, "task %s is a %s task: only a schedule task can be", t->id, t->kind);
        return buf;
    }
    bool waiting =
        strcmp(t->status, "retrying") == 0 || (cancel && strcmp(t->status, "queued") == 0);
    if (!waiting) {
        snprintf(buf, size, "task %s is %s: only a %s can be", t->id, t->status,
                 cancel ? "queued or retrying task (one whose message waits in the broker)"
                        : "retrying task (waiting in a delay tier)");
        return buf;
    }
    return NULL;
}

/* End task t cancelled in the open transaction, as the worker's own cancel
 * records it (result, history line, task.cancelled), with `detail` the
 * operator's {"by", "reason"?}. Returns 0, 1 when the task changed meanwhile
 * (a worker recorded an attempt), -1 with err. */
static int cancel_now(store *s, const store_task *t, const char *detail, vf_error *err)
{
    json_t *asked = json_loads(detail, 0, NULL);
    const char *by = json_string_value(json_object_get(asked, "by"));
    const char *note = json_string_value(json_object_get(asked, "reason"));
    int attempts = t->attempts + 1; /* the fence: see the top of this file */
    json_t *result = json_pack("{s:s, s:s, s:i, s:s?, s:s?}", "status", "cancelled", "error",
                               "cancelled by an operator", "attempts", attempts, "cancelled_by", by,
                               "note", note);
    json_t *data = json_pack("{s:s, s:s, s:i, s:s?, s:s?}", "task_id", t->id, "status", "cancelled",
                             "attempts", attempts, "cancelled_by", by, "note", note);
    json_decref(asked); /* by and note are copied now */
    char *text = result ? json_dumps(result, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(result);
    char now[STORE_TIME_SIZE], event_id[IDS_LEN], key[64];
    store_now(now);
    char *event =
        data ? events_build(EVENT_TASK_CANCELLED, data, clock_wall_ms() / 1000, event_id, key)
             : NULL;
    int rc = -1;
    if (!text || !event) {
        vf_error_set(err, VF_ENOMEM, "out of memory cancelling task %s", t->id);
        goto out;
    }
    store_task_fields fields = {.id = t->id,
                                .status = "cancelled",
                                .attempts = attempts,
                                .result = text,
                                .error = "cancelled by an operator",
                                .vmid = -1,
                                .at = now,
                                .check_attempts = true,
                                .expected_attempts = t->attempts};
    rc = store_task_update(s, &fields, err);
    if (rc == 0 && (store_task_event_add(s, t->id, now, "cancelled", text, err) < 0 ||
                    store_outbox_add(s, event_id, key, event, now, err) < 0))
        rc = -1;
out:
    free(text);
    free(event);
    return rc;
}

/* Mark the task in one transaction: returns the exit status, and sets
 * *publish when retry-now must publish `request` (owned) now. */
static int mark(store *s, const char *id, bool cancel, const char *detail, bool as_json,
                char **request)
{
    vf_error err;
    vf_error_init(&err);
    store_task t = {0};
    const char *action = cancel ? "cancel" : "retry-now";
    int rc = CTL_EXIT_UNAVAILABLE;
    if (store_begin(s, &err) < 0) {
        ctl_error("%s", err.text);
        return rc;
    }
    int found = store_task_get(s, id, &t, &err);
    char why[512];
    if (found < 0) {
        ctl_error("%s", err.text);
        goto out;
    }
    rc = CTL_EXIT_NEGATIVE;
    if (found == 1) {
        ctl_error("no task %s (virtflowctl tasks lists the newest)", id);
        goto out;
    }
    const char *mark_now = t.action;
    if (cancel && strcmp(t.status, "cancelled") == 0) {
        answer(id, action, "cancelled", "already cancelled", as_json);
        rc = CTL_EXIT_OK;
        goto out;
    }
    if (refusal(&t, cancel, why, sizeof why)) {
        ctl_error("%s %s", why, cancel ? "cancelled" : "retried now");
        goto out;
    }
    if (cancel) {
        rc = CTL_EXIT_UNAVAILABLE;
        int changed = cancel_now(s, &t, detail, &err);
        if (changed == 1) {
            ctl_error("task %s changed meanwhile (a worker decided it): see virtflowctl task %s",
                      id, id);
            rc = CTL_EXIT_NEGATIVE;
        } else if (changed < 0 || store_commit(s, &err) < 0) {
            ctl_error("%s", err.text);
        } else {
            answer(id, action, "cancelled",
                   "cancelled now; the copy in the broker is dropped when a worker takes it",
                   as_json);
            rc = CTL_EXIT_OK;
        }
        goto out;
    }
    if (mark_now && strcmp(mark_now, "cancel") == 0) {
        ctl_error("task %s: a cancel is requested; it is not retried", id);
        goto out;
    }
    if (mark_now && strcmp(mark_now, "retry_now") == 0) {
        answer(id, action, "requested", "retry-now already requested: its copy is queued", as_json);
        rc = CTL_EXIT_OK;
        goto out;
    }
    if (mark_now) {
        ctl_error("task %s: the copy a retry-now made surplus has not come back yet; try again "
                  "once it has (virtflowctl task %s shows it \"dropped\")",
                  id, id);
        goto out;
    }
    rc = CTL_EXIT_UNAVAILABLE;
    int changed = store_task_set_action(s, id, mark_now, "retrying", "retry_now", detail, &err);
    if (changed < 0) {
        ctl_error("%s", err.text);
        goto out;
    }
    if (changed == 1) {
        ctl_error("task %s changed meanwhile (a worker decided it): try again", id);
        rc = CTL_EXIT_NEGATIVE;
        goto out;
    }
    char now[STORE_TIME_SIZE];
    store_now(now);
    if (store_task_event_add(s, id, now, "retry_now_requested", detail, &err) < 0 ||
        store_commit(s, &err) < 0) {
        ctl_error("%s", err.text);
        goto out;
    }
    if (t.request)
        *request = strdup(t.request);
    rc = CTL_EXIT_OK;
out:
    if (store_in_transaction(s)) {
        vf_error ignored;
        vf_error_init(&ignored);
        (void)store_rollback(s, &ignored);
    }
    store_task_clear(&t);
    return rc;
}

/* The broker did not take the retry-now copy: no surplus copy exists, so
 * the mark goes (whichever of its two states it reached meanwhile). */
static void unmark(store *s, const char *id)
{
    vf_error err;
    vf_error_init(&err);
    int rc = store_task_set_action(s, id, "retry_now", NULL, NULL, NULL, &err);
    if (rc == 1)
        rc = store_task_set_action(s, id, "drop_copy", NULL, NULL, NULL, &err);
    if (rc < 0)
        ctl_error("task %s: %s", id, err.text);
    char now[STORE_TIME_SIZE];
    store_now(now);
    if (store_task_event_add(s, id, now, "retry_now_withdrawn",
                             "{\"why\":\"the broker did not take the copy\"}", &err) < 0)
        ctl_error("task %s: %s", id, err.text);
}

int ctl_task_action(const char *action, const char *id, const char *by, const char *reason,
                    const char *config_path, bool as_json)
{
    bool cancel = strcmp(action, "cancel") == 0;
    vf_config *config =
        ctl_load_config_writing(config_path, cancel ? "task cancel" : "task retry-now");
    if (!config)
        return CTL_EXIT_CONFIG;
    char who[256];
    ctl_task_who(by, who, sizeof who);
    char *detail = mark_detail(who, reason);
    char *request = NULL;
    int rc = CTL_EXIT_UNAVAILABLE;
    store *s = detail ? ctl_open_store(config, STORE_READ_WRITE) : NULL;
    if (!s)
        goto out;
    rc = mark(s, id, cancel, detail, as_json, &request);
    if (rc != CTL_EXIT_OK || cancel || !request)
        goto out;
    const char *key = queue_order_text_routing_key(request, strlen(request), config);
    ctl_request publish = {
        .command = "task retry-now", .routing_key = key, .body = request, .id = id};
    json_t *reply = NULL;
    rc = ctl_publish_request(config, &publish, &reply);
    json_decref(reply);
    if (rc != CTL_EXIT_OK) {
        unmark(s, id);
        goto out;
    }
    answer(id, "retry-now", "requested",
           "published again: a worker decides it now and drops the delayed copy", as_json);
out:
    free(request);
    free(detail);
    store_close(s);
    config_free(config);
    return rc;
}
