/* virtflowctl task ID --watch, tasks --watch (see cmd_watch.h). */
#include "cmd_watch.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "ctl.h"
#include "ids.h"
#include "store_outbox.h"
#include "store_tasks.h"
#include "task_view.h"

#define WATCH_POLL_US 250000
#define WATCH_BATCH 200

typedef struct follow {
    bool json;
    int64_t after_row;
    char after_event[IDS_LEN];
} follow;

static int print_row(const store_task_event *e, void *user)
{
    follow *f = user;
    f->after_row = e->id;
    if (f->json) {
        /* One object a line: a stream a script reads line by line. */
        json_t *row = task_view_event_json(e);
        char *text = row ? json_dumps(row, JSON_COMPACT) : NULL;
        json_decref(row);
        if (text)
            printf("%s\n", text);
        free(text);
        fflush(stdout);
        return 0;
    }
    json_t *detail = task_view_stored_json(e->detail);
    char *text = json_is_null(detail) ? NULL : json_dumps(detail, JSON_COMPACT | JSON_ENCODE_ANY);
    printf("%s  %-14s %s\n", ctl_text(e->at), ctl_text(e->status), text ? ctl_text(text) : "");
    free(text);
    json_decref(detail);
    fflush(stdout);
    return 0;
}

/* Whether `status` ended the watch, and how it ended (exit status). */
static bool rests(const char *status, int *rc)
{
    if (!task_view_is_settled(status))
        return false;
    *rc = strcmp(status, "failed") == 0 || strcmp(status, "cancelled") == 0 ? CTL_EXIT_NEGATIVE
                                                                            : CTL_EXIT_OK;
    return true;
}

int ctl_task_watch(const char *config_path, const char *id, bool json)
{
    vf_config *config = ctl_load_config(config_path);
    if (!config)
        return CTL_EXIT_CONFIG;
    store *s = ctl_open_store(config, STORE_READ_ONLY);
    int rc = CTL_EXIT_UNAVAILABLE;
    follow f = {.json = json};
    for (bool done = false; s && !done;) {
        vf_error err;
        vf_error_init(&err);
        int64_t before = f.after_row;
        if (store_task_events_after(s, id, f.after_row, WATCH_BATCH, print_row, &f, &err) < 0) {
            ctl_error("%s", err.text);
            break;
        }
        if (f.after_row != before)
            continue; /* more may be there already */
        store_task task = {0};
        int found = store_task_get(s, id, &task, &err);
        if (found < 0) {
            ctl_error("%s", err.text);
        } else if (found == 1) {
            ctl_error("no task %s in %s (virtflowctl tasks lists the newest)", id,
                      ctl_store_name(config));
            rc = CTL_EXIT_NEGATIVE;
        }
        done = found != 0 || rests(task.status, &rc);
        store_task_clear(&task);
        if (!done)
            usleep(WATCH_POLL_US);
    }
    store_close(s);
    config_free(config);
    return rc;
}

static int print_event(const store_outbox_event *e, void *user)
{
    follow *f = user;
    snprintf(f->after_event, sizeof f->after_event, "%s", e->id);
    if (f->json) {
        printf("%s\n", e->body);
    } else {
        json_t *event = json_loads(e->body, 0, NULL);
        json_t *data = json_object_get(event, "data");
        printf("%s  %-20s %-40s %s\n", ctl_text(e->created_at),
               ctl_text(json_string_value(json_object_get(event, "type"))),
               ctl_text(json_string_value(json_object_get(data, "task_id"))),
               ctl_text(json_string_value(json_object_get(data, "status"))));
        json_decref(event);
    }
    fflush(stdout);
    return 0;
}

int ctl_tasks_watch(const char *config_path, const char *since, bool json)
{
    follow f = {.json = json};
    if (since && strncmp(since, "evt_", 4) == 0 && strlen(since) < IDS_LEN) {
        snprintf(f.after_event, sizeof f.after_event, "%s", since);
    } else {
        char at[STORE_TIME_SIZE];
        int64_t unix_s = 0;
        if (since && (task_view_parse_since(since, at) < 0 || ids_parse_time(at, &unix_s) < 0)) {
            ctl_error("--since: expected an event id, 30m, 2h, 1d or an RFC 3339 UTC time");
            return CTL_EXIT_USAGE;
        }
        store_outbox_id_bound(since ? unix_s * 1000 : clock_wall_ms() - STORE_OUTBOX_SETTLE_MS, '0',
                              f.after_event);
    }
    vf_config *config = ctl_load_config(config_path);
    if (!config)
        return CTL_EXIT_CONFIG;
    store *s = ctl_open_store(config, STORE_READ_ONLY);
    int rc = CTL_EXIT_UNAVAILABLE;
    while (s) {
        char before[IDS_LEN], cursor[IDS_LEN];
        memcpy(cursor, f.after_event, IDS_LEN);
        store_outbox_id_bound(clock_wall_ms() - STORE_OUTBOX_SETTLE_MS, '0', before);
        vf_error err;
        vf_error_init(&err);
        if (store_outbox_events_between(s, f.after_event, before, WATCH_BATCH, print_event, &f,
                                        &err) < 0) {
            ctl_error("%s", err.text);
            break;
        }
        if (strcmp(cursor, f.after_event) == 0)
            usleep(WATCH_POLL_US);
    }
    store_close(s);
    config_free(config);
    return rc;
}
