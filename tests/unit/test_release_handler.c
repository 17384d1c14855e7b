/* release_handler without a broker: each outcome of a task.release message
 * (worker/handle/release_handler.h) against a real SQLite store and engine,
 * after task.schedule messages placed by the real task handler. */
#include "handler_fixture.h"
#include "log.h"
#include "release_handler.h"
#include "store_reservations.h"
#include "store_tasks.h"
#include "task_handler.h"

#include <jansson.h>

/* One message from broker user `user` (NULL: no user_id), in its own
 * transaction, with a reply queue. */
static int handle_as(fixture *f, handler_fn fn, const char *routing_key, const char *body,
                     const char *user, int64_t attempt, task_outcome *out)
{
    task_message msg = {(const unsigned char *)body,
                        strlen(body),
                        false,
                        strlen(body),
                        routing_key,
                        "msg-1",
                        "amq.gen-reply",
                        false,
                        attempt,
                        user,
                        false,
                        NULL,
                        NULL};
    return handle_message(f, fn, &msg, out);
}

static int release_as(fixture *f, const char *body, const char *user, int64_t attempt,
                      task_outcome *out)
{
    return handle_as(f, release_handler_handle, "task.release", body, user, attempt, out);
}

static int count_live(const store_reservation *r, void *user)
{
    (void)r;
    (*(int *)user)++;
    return 0;
}

static int live_reservations(fixture *f)
{
    vf_error err;
    vf_error_init(&err);
    int n = 0;
    CHECK(store_reservations_live(f->store, "2026-11-22T01:02:03.250Z", count_live, &n, &err) == 0);
    return n;
}

static double engine_cpu(fixture *f, const char *node)
{
    const host *h = hostset_find(f->hosts, node);
    return sched_engine_host_load(f->engine, (size_t)(h - f->hosts->hosts))->cpu;
}

typedef struct history {
    int released, refused;
    char released_by[64];
} history;

static int read_history(const store_task_event *e, void *user)
{
    history *h = user;
    if (strcmp(e->status, "released") == 0) {
        h->released++;
        json_t *d = json_loads(e->detail, 0, NULL);
        snprintf(h->released_by, sizeof h->released_by, "%s",
                 json_string_value(json_object_get(d, "released_by")));
        json_decref(d);
    }
    h->refused += strcmp(e->status, "release_refused") == 0;
    return 0;
}

static history history_of(fixture *f, const char *id)
{
    vf_error err;
    vf_error_init(&err);
    history h = {0};
    CHECK(store_task_events(f->store, id, read_history, &h, &err) == 0);
    return h;
}

static const char *reply_status(const task_outcome *out)
{
    static char status[32];
    json_t *reply = out->reply_body ? json_loads(out->reply_body, 0, NULL) : NULL;
    snprintf(status, sizeof status, "%s",
             reply ? json_string_value(json_object_get(reply, "status")) : "(no reply)");
    json_decref(reply);
    return status;
}

static void test_release(fixture *f)
{
    task_outcome out;
    CHECK(handle_as(f, task_handler_handle, "task.schedule",
                    "{\"task_id\":\"t-r1\",\"requested_cpu\":6,\"requested_memory\":1024}", "alice",
                    0, &out) == 0);
    CHECK(out.placed);
    task_outcome_close(&out);
    CHECK(live_reservations(f) == 1);
    store_task task = {0};
    vf_error err;
    vf_error_init(&err);
    CHECK(store_task_get(f->store, "t-r1", &task, &err) == 0);
    char node[HOST_NAME_LEN];
    snprintf(node, sizeof node, "%s", task.node);
    store_task_clear(&task);
    CHECK(engine_cpu(f, node) == 6);

    /* Someone else: refused, recorded, nothing freed. */
    CHECK(release_as(f, "{\"task_id\":\"t-r1\"}", "mallory", 0, &out) == 0);
    CHECK(out.action == TASK_ACK && !out.released && !out.event_body);
    CHECK_STR(reply_status(&out), "refused");
    CHECK_CONTAINS(out.summary, "alice");
    task_outcome_close(&out);
    CHECK(live_reservations(f) == 1);
    CHECK(engine_cpu(f, node) == 6);
    CHECK(history_of(f, "t-r1").refused == 1);
    /* Without a user_id nobody can be told apart: refused too. */
    CHECK(release_as(f, "{\"task_id\":\"t-r1\"}", NULL, 0, &out) == 0);
    CHECK_STR(reply_status(&out), "refused");
    task_outcome_close(&out);

    /* The submitter: released in the store and the engine, history, event. */
    CHECK(release_as(f, "{\"task_id\":\"t-r1\"}", "alice", 0, &out) == 0);
    CHECK(out.action == TASK_ACK && out.released);
    CHECK_STR(out.task_id, "t-r1");
    CHECK_STR(out.event_key, "event.task.released");
    json_t *event = json_loads(out.event_body, 0, NULL);
    json_t *data = json_object_get(event, "data");
    CHECK_STR(json_string_value(json_object_get(data, "node")), node);
    CHECK_STR(json_string_value(json_object_get(data, "released_by")), "alice");
    CHECK(json_integer_value(json_object_get(data, "vmid")) >= 100);
    json_decref(event);
    CHECK_STR(reply_status(&out), "released");
    task_outcome_close(&out);
    CHECK(live_reservations(f) == 0);
    CHECK(engine_cpu(f, node) == 0);
    history h = history_of(f, "t-r1");
    CHECK(h.released == 1);
    CHECK_STR(h.released_by, "alice");
    CHECK(store_task_get(f->store, "t-r1", &task, &err) == 0);
    CHECK_STR(task.status, "completed"); /* the decision stands; only the hold ended */
    store_task_clear(&task);

    /* Again: harmless, no event, no second history row. */
    CHECK(release_as(f, "{\"task_id\":\"t-r1\"}", "alice", 0, &out) == 0);
    CHECK(out.action == TASK_ACK && !out.released && !out.event_body);
    CHECK_STR(reply_status(&out), "released");
    task_outcome_close(&out);
    CHECK(history_of(f, "t-r1").released == 1);

    /* A trusted publisher (the worker's own login, "guest" by default) may
     * release anyone's. */
    CHECK(handle_as(f, task_handler_handle, "task.schedule",
                    "{\"task_id\":\"t-r2\",\"requested_cpu\":2,\"requested_memory\":1024}", "bob",
                    0, &out) == 0);
    task_outcome_close(&out);
    CHECK(release_as(f, "{\"task_id\":\"t-r2\"}", "guest", 0, &out) == 0);
    CHECK(out.released);
    task_outcome_close(&out);
    CHECK(live_reservations(f) == 0);
}

static void test_release_bad_input(fixture *f)
{
    task_outcome out;
    /* Not recorded yet: retried through the tiers, then parked. */
    CHECK(release_as(f, "{\"task_id\":\"t-later\"}", "alice", 0, &out) == 0);
    CHECK(out.action == TASK_RETRY && out.next_attempt == 2 && out.delay_s > 0);
    task_outcome_close(&out);
    CHECK(release_as(f, "{\"task_id\":\"t-later\"}", "guest", f->config->retry.max_attempts,
                     &out) == 0);
    CHECK(out.action == TASK_DEAD);
    CHECK_CONTAINS(out.error, "no task t-later");
    task_outcome_close(&out);
    vf_error err;
    vf_error_init(&err);
    store_task none = {0};
    CHECK(store_task_get(f->store, "t-later", &none, &err) == 1); /* nothing recorded */

    static const char *const bad[] = {"{\"task_id\":5}", "{}", "[1]", "not json",
                                      "{\"task_id\":\"t-r1\",\"force\":true}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(release_as(f, bad[i], "alice", 0, &out) == 0);
        CHECKF(out.action == TASK_DEAD, "%s parked", bad[i]);
        task_outcome_close(&out);
    }
}

int main(void)
{
    vf_log_set_level(VF_LOG_WARN);
    fixture f;
    if (!fixture_open(&f)) {
        CHECK(!"fixture");
        fixture_close(&f);
        return test_summary();
    }
    test_release(&f);
    test_release_bad_input(&f);
    fixture_close(&f);
    return test_summary();
}
