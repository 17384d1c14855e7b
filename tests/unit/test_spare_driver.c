/* spare_driver through its seams: the store it shares with the handlers (a
 * real SQLite file), the configuration it is started with, and
 * spare_driver_take_released. spare_handler accepts the tasks as the worker
 * does (handler_fixture.h); the driver's own thread takes them from there:
 * a prepare with provisioner and readiness "none" becomes ready, its release
 * released, and a provisioner command that fails fails the task at its last
 * attempt, with the events in the outbox and the task ids handed back for the
 * scheduler's overlay. Waits are bounded by a count of short sleeps, never
 * asserted on time. */
#include "handler_fixture.h"
#include "log.h"
#include "spare_driver.h"
#include "spare_handler.h"
#include "store_outbox.h"
#include "store_spares.h"
#include "store_tasks.h"

#define OWNER "test:1"

static int handle(fixture *f, const char *key, const char *body, const char *id)
{
    task_outcome out;
    int rc = handle_with(f, spare_handler_handle, key, body, id, 0, &out);
    task_outcome_close(&out);
    return rc;
}

/* The task's status, into out ("" when it cannot be read). */
static void task_status(fixture *f, const char *id, char *out, size_t size, char *reason,
                        size_t reason_size)
{
    store_task t;
    memset(&t, 0, sizeof t);
    vf_error err;
    vf_error_init(&err);
    out[0] = '\0';
    if (reason)
        reason[0] = '\0';
    if (store_task_get(f->store, id, &t, &err) == 0) {
        snprintf(out, size, "%s", t.status ? t.status : "");
        if (reason)
            snprintf(reason, reason_size, "%s", t.reason ? t.reason : "");
    }
    store_task_clear(&t);
}

/* Wait (at most 600 sleeps of 50 ms: the driver scans every 500 ms) until
 * task `id` has `status`. Returns whether it came. */
static bool wait_status(fixture *f, const char *id, const char *status)
{
    char now[32];
    for (int i = 0; i < 600; i++) {
        task_status(f, id, now, sizeof now, NULL, 0);
        if (strcmp(now, status) == 0)
            return true;
        usleep(50 * 1000);
    }
    fprintf(stderr, "task %s: still %s, not %s\n", id, now, status);
    return false;
}

typedef struct spare_states {
    int n;
    char state[4][16];
} spare_states;

static int note_state(const store_spare *s, void *user)
{
    spare_states *seen = user;
    if (seen->n < 4)
        snprintf(seen->state[seen->n], sizeof seen->state[0], "%s", s->state);
    seen->n++;
    return 0;
}

/* Every spare of task `id` is in `state`, and there are `n`. */
static void spares_are(fixture *f, const char *id, int n, const char *state)
{
    spare_states seen = {0};
    vf_error err;
    vf_error_init(&err);
    CHECK(store_spare_list(f->store, STORE_SPARES_OF_TASK, id, 0, note_state, &seen, &err) == 0);
    CHECKF(seen.n == n, "task %s: %d spares", id, seen.n);
    for (int i = 0; i < seen.n && i < 4; i++)
        CHECKF(strcmp(seen.state[i], state) == 0, "task %s spare %d: %s, not %s", id, i,
               seen.state[i], state);
}

typedef struct event_search {
    const char *routing_key;
    const char *task_id;
    int found;
    const char *scheduler; /* NULL: any; else the body must name this profile */
} event_search;

static int find_event(const store_outbox_event *event, void *user)
{
    event_search *search = user;
    char needle[96];
    snprintf(needle, sizeof needle, "\"task_id\": \"%s\"", search->task_id);
    char compact[96];
    snprintf(compact, sizeof compact, "\"task_id\":\"%s\"", search->task_id);
    char profile[96] = "";
    if (search->scheduler)
        snprintf(profile, sizeof profile, "\"scheduler\":\"%s\"", search->scheduler);
    if (strcmp(event->routing_key, search->routing_key) == 0 &&
        (strstr(event->body, needle) || strstr(event->body, compact)) &&
        (!search->scheduler || strstr(event->body, profile)))
        search->found++;
    return 0;
}

/* How many outbox events with this routing key name task `task_id`. */
/* How many of them name scheduling profile `scheduler`. */
static int events_naming(fixture *f, const char *routing_key, const char *task_id,
                         const char *scheduler)
{
    event_search search = {routing_key, task_id, 0, scheduler};
    vf_error err;
    vf_error_init(&err);
    CHECKF(store_outbox_pending(f->store, NULL, 0, find_event, &search, &err) == 0, "%s", err.text);
    return search.found;
}

static int events_of(fixture *f, const char *routing_key, const char *task_id)
{
    event_search search = {routing_key, task_id, 0, NULL};
    vf_error err;
    vf_error_init(&err);
    CHECKF(store_outbox_pending(f->store, NULL, 0, find_event, &search, &err) == 0, "%s", err.text);
    return search.found;
}

typedef struct released_ids {
    int n;
    char ids[8][64];
} released_ids;

static void note_released(const char *task_id, void *user)
{
    released_ids *got = user;
    if (got->n < 8)
        snprintf(got->ids[got->n], sizeof got->ids[0], "%s", task_id);
    got->n++;
}

static bool released_has(const released_ids *got, const char *task_id)
{
    for (int i = 0; i < got->n && i < 8; i++)
        if (strcmp(got->ids[i], task_id) == 0)
            return true;
    return false;
}

static void test_ready_then_released(fixture *f)
{
    vf_error err;
    vf_error_init(&err);
    CHECK(handle(f, "spare.prepare",
                 "{\"upgrade_id\":\"upg-1\",\"cluster\":\"prod-a\",\"count\":2,"
                 "\"requested_cpu\":2,\"requested_memory\":2048,"
                 "\"annotations\":{\"scheduler.qemu-scheduler/name\":\"default\"}}",
                 "p-1") == 0);
    spare_driver *driver = spare_driver_start(f->config, OWNER, &err);
    CHECKF(driver != NULL, "%s", err.text);
    if (!driver)
        return;

    /* provisioner none: created at once; readiness none: ready at once. */
    CHECK(wait_status(f, "p-1", "ready"));
    spares_are(f, "p-1", 2, "ready");
    CHECK(events_of(f, "event.spare.ready", "p-1") == 1);
    /* The profile the request named, as task.completed names it. */
    CHECK(events_naming(f, "event.spare.ready", "p-1", "default") == 1);
    released_ids got = {0};
    spare_driver_take_released(driver, note_released, &got);
    CHECK(got.n == 0); /* a ready spare still holds its host */

    /* The release handed over by the handler, with the driver running. */
    CHECK(handle(f, "spare.release", "{\"upgrade_id\":\"upg-1\"}", "r-1") == 0);
    CHECK(wait_status(f, "r-1", "released"));
    CHECK(wait_status(f, "p-1", "released"));
    spares_are(f, "p-1", 2, "released");
    CHECK(events_of(f, "event.spare.released", "r-1") == 1);
    spare_driver_take_released(driver, note_released, &got);
    CHECKF(released_has(&got, "p-1"), "the prepare's reservations reach the scheduler");
    /* Handed over once: the next call has nothing. */
    released_ids again = {0};
    spare_driver_take_released(driver, note_released, &again);
    CHECK(again.n == 0);
    spare_driver_stop(driver);
}

/* A provisioner command that always fails, tried once. */
static bool use_failing_command(vf_config *config)
{
    free(config->spare.provisioner.type);
    config->spare.provisioner.type = strdup("command");
    config->spare.provisioner.command = calloc(2, sizeof *config->spare.provisioner.command);
    if (!config->spare.provisioner.type || !config->spare.provisioner.command)
        return false;
    config->spare.provisioner.command[0] = strdup("false");
    config->spare.provisioner.n_command = 1;
    config->retry.max_attempts = 1;
    return config->spare.provisioner.command[0] != NULL;
}

static void test_failed_create(fixture *f)
{
    vf_error err;
    vf_error_init(&err);
    CHECK(handle(f, "spare.prepare",
                 "{\"upgrade_id\":\"upg-f\",\"cluster\":\"prod-b\",\"count\":1,"
                 "\"requested_cpu\":1,\"requested_memory\":512}",
                 "p-f") == 0);
    /* Changed before the driver starts: it borrows the configuration. */
    CHECK(use_failing_command(f->config));
    spare_driver *driver = spare_driver_start(f->config, OWNER, &err);
    CHECKF(driver != NULL, "%s", err.text);
    if (!driver)
        return;
    CHECK(wait_status(f, "p-f", "failed"));
    char status[32], reason[32];
    task_status(f, "p-f", status, sizeof status, reason, sizeof reason);
    CHECK_STR(reason, "exhausted");
    spares_are(f, "p-f", 1, "failed"); /* never created: nothing to destroy */
    CHECK(events_of(f, "event.spare.failed", "p-f") == 1);
    released_ids got = {0};
    spare_driver_take_released(driver, note_released, &got);
    CHECK(released_has(&got, "p-f"));
    spare_driver_stop(driver);
}

static void test_start_without_store(void)
{
    vf_config *config = config_defaults();
    CHECK(config != NULL);
    if (!config)
        return;
    free(config->store.path);
    config->store.path = strdup("/nonexistent-vf-dir/virtflow.db");
    vf_error err;
    vf_error_init(&err);
    CHECK(spare_driver_start(config, OWNER, &err) == NULL);
    CHECK(err.text[0] != '\0');
    spare_driver_stop(NULL);
    spare_driver_take_released(NULL, note_released, NULL);
    config_free(config);
}

int main(void)
{
    vf_log_set_level(VF_LOG_ERROR);
    test_start_without_store();
    fixture f;
    if (!fixture_open(&f)) {
        CHECK(!"fixture");
        fixture_close(&f);
        return test_summary();
    }
    /* The driver opens its own handle on the fixture's file. */
    char path[128];
    store_fixture_file(&f.files, "virtflow.db", path, sizeof path);
    free(f.config->store.path);
    f.config->store.path = strdup(path);
    test_ready_then_released(&f);
    test_failed_create(&f);
    fixture_close(&f);
    return test_summary();
}
