/* virtflowctl task resubmit ID: a failed or cancelled schedule task's
 * request submitted again as a new task (a final task is never decided
 * again under its own id: the worker drops a copy of it). The new task is
 * recorded queued and published as submit does; the old one's history says
 * which task took its request over ("resubmitted", {"as", "by"}). The
 * console's Resubmit button runs this. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_task_actions.h"
#include "queue_order.h"
#include "request.h"
#include "store_tasks.h"
#include "task_intake.h"

/* The old task's request with a new task id, as compact text (owned), or
 * NULL after printing why it cannot be resubmitted (exit `*status`). */
static char *new_request(const store_task *t, char new_id[IDS_LEN], int *status)
{
    *status = CTL_EXIT_NEGATIVE;
    if (strcmp(t->kind, "schedule") != 0 ||
        (strcmp(t->status, "failed") != 0 && strcmp(t->status, "cancelled") != 0)) {
        ctl_error("task %s is a %s task, %s: only a failed or cancelled schedule task is "
                  "resubmitted",
                  t->id, t->kind, t->status);
        return NULL;
    }
    json_t *body = t->request ? json_loads(t->request, 0, NULL) : NULL;
    if (!json_is_object(body)) {
        ctl_error("task %s: its request is not a JSON object: nothing to submit again", t->id);
        json_decref(body);
        return NULL;
    }
    ids_new("tsk", new_id);
    json_object_set_new(body, "task_id", json_string(new_id));
    /* The worker's own check: a request it failed as invalid fails again. */
    sched_request req;
    vf_error invalid;
    vf_error_init(&invalid);
    char *text = NULL;
    if (sched_request_parse(body, &req, &invalid) < 0) {
        ctl_error("task %s: its request is invalid (%s): fix it and submit it anew", t->id,
                  invalid.text);
        *status = CTL_EXIT_USAGE;
    } else if (!(text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER))) {
        ctl_error("out of memory");
        *status = CTL_EXIT_UNAVAILABLE;
    }
    json_decref(body);
    return text;
}

/* Record the new task queued, publish it, and note it in the old task's
 * history; a refused publish takes the queued row back. */
static int submit_again(const vf_config *config, store *s, const store_task *old,
                        const char *new_id, const char *body, const char *by)
{
    vf_error err;
    vf_error_init(&err);
    if (task_intake_record(s, new_id, body, "virtflowctl", NULL, &err) < 0) {
        ctl_error("%s", err.text);
        return CTL_EXIT_UNAVAILABLE;
    }
    ctl_request publish = {.command = "task resubmit",
                           .routing_key = queue_order_text_routing_key(body, strlen(body), config),
                           .body = body,
                           .id = new_id};
    json_t *reply = NULL;
    int rc = ctl_publish_request(config, &publish, &reply);
    json_decref(reply);
    if (rc != CTL_EXIT_OK) {
        if (task_intake_withdraw(s, new_id, &err) < 0)
            ctl_error("%s: could not take the queued row back: %s", new_id, err.text);
        return rc;
    }
    json_t *detail = json_pack("{s:s, s:s}", "as", new_id, "by", by);
    char *text = detail ? json_dumps(detail, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    char now[STORE_TIME_SIZE];
    store_now(now);
    if (!text || store_task_event_add(s, old->id, now, "resubmitted", text, &err) < 0)
        ctl_error("task %s: resubmitted as %s, but not noted in its history: %s", old->id, new_id,
                  text ? err.text : "out of memory");
    free(text);
    json_decref(detail);
    return CTL_EXIT_OK;
}

int ctl_task_resubmit(const char *id, const char *by, const char *config_path, bool as_json)
{
    vf_config *config = ctl_load_config_writing(config_path, "task resubmit");
    if (!config)
        return CTL_EXIT_CONFIG;
    char who[256];
    ctl_task_who(by, who, sizeof who);
    int rc = CTL_EXIT_UNAVAILABLE;
    store_task old = {0};
    char *body = NULL;
    char new_id[IDS_LEN];
    vf_error err;
    vf_error_init(&err);
    store *s = ctl_open_store(config, STORE_READ_WRITE);
    if (!s)
        goto out;
    int found = store_task_get(s, id, &old, &err);
    if (found != 0) {
        if (found < 0)
            ctl_error("%s", err.text);
        else
            ctl_error("no task %s (virtflowctl tasks lists the newest)", id);
        rc = found < 0 ? CTL_EXIT_UNAVAILABLE : CTL_EXIT_NEGATIVE;
        goto out;
    }
    if (!(body = new_request(&old, new_id, &rc)))
        goto out;
    rc = submit_again(config, s, &old, new_id, body, who);
    if (rc != CTL_EXIT_OK)
        goto out;
    if (as_json) {
        json_t *answer = json_pack("{s:s, s:s}", "task_id", new_id, "resubmitted_from", id);
        ctl_print_json(answer);
        json_decref(answer);
    } else {
        printf("%s\n", new_id);
    }
out:
    free(body);
    store_task_clear(&old);
    store_close(s);
    config_free(config);
    return rc;
}
