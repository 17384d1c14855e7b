/* task_handler, task_attempt and events without a broker: each outcome of a
 * task.schedule message (worker/handle/task_handler.h) decided against a real
 * SQLite store and engine, with the handler's clock seam fixed, so every
 * timestamp the handler writes (task row, history, event envelope) is known. */
#include "events.h"
#include "handler_fixture.h"
#include "log.h"
#include "store_tasks.h"
#include "task_handler.h"

#include <jansson.h>

static int handle(fixture *f, const char *body, const char *id, int64_t attempt, task_outcome *out)
{
    return handle_with(f, task_handler_handle, "task.schedule", body, id, attempt, out);
}

static int count_event(const store_task_event *e, void *user)
{
    int *n = user;
    (*n)++;
    CHECK_STR(e->at, FIXED_TEXT);
    return 0;
}

/* The row of `id` (cleared by the caller), checked to carry the fixed clock. */
static bool get_task(fixture *f, const char *id, store_task *t)
{
    vf_error err;
    vf_error_init(&err);
    memset(t, 0, sizeof *t);
    if (store_task_get(f->store, id, t, &err) != 0) {
        CHECKF(false, "task %s not found: %s", id, err.text);
        return false;
    }
    CHECK_STR(t->created_at, FIXED_TEXT);
    CHECK_STR(t->updated_at, FIXED_TEXT);
    return true;
}

static json_t *event_of(const task_outcome *out)
{
    json_error_t jerr;
    json_t *event = out->event_body ? json_loads(out->event_body, 0, &jerr) : NULL;
    CHECKF(event != NULL, "event body %s", out->event_body ? out->event_body : "(none)");
    if (event) {
        CHECK_STR(json_string_value(json_object_get(event, "timestamp")), "2026-11-22T01:02:03Z");
        CHECK_STR(json_string_value(json_object_get(event, "id")), out->event_id);
    }
    return event;
}

static void test_placed(fixture *f)
{
    task_outcome out;
    CHECK(handle(f, "{\"task_id\":\"t-placed\",\"requested_cpu\":2,\"requested_memory\":1024}",
                 "t-placed", 0, &out) == 0);
    CHECK(out.action == TASK_ACK && out.placed && out.reserved && !out.duplicate);
    CHECK_STR(out.task_id, "t-placed");
    CHECK_STR(out.event_key, "event.task.completed");
    json_t *event = event_of(&out);
    json_t *data = json_object_get(event, "data");
    CHECK_STR(json_string_value(json_object_get(data, "status")), "completed");
    CHECK(json_integer_value(json_object_get(data, "attempts")) == 1);
    char node[32] = "";
    const char *name = json_string_value(json_object_get(json_object_get(data, "node"), "name"));
    snprintf(node, sizeof node, "%s", name ? name : "");
    CHECK(strncmp(node, "bm-00", 5) == 0);
    json_decref(event);

    store_task t;
    if (get_task(f, "t-placed", &t)) {
        CHECK_STR(t.status, "completed");
        CHECK(t.reason == NULL && t.attempts == 1);
        CHECK_STR(t.node, node);
    }
    store_task_clear(&t);
    int n = 0;
    vf_error err;
    vf_error_init(&err);
    CHECK(store_task_events(f->store, "t-placed", count_event, &n, &err) == 0);
    CHECK(n >= 2); /* processing, then completed */
    task_outcome_close(&out);

    /* The same id again: recognised, nothing recorded, nothing reserved. */
    CHECK(handle(f, "{\"task_id\":\"t-placed\",\"requested_cpu\":2,\"requested_memory\":1024}",
                 "t-placed", 0, &out) == 0);
    CHECK(out.action == TASK_ACK && out.duplicate && !out.reserved && !out.event_id);
    task_outcome_close(&out);
    int again = 0;
    CHECK(store_task_events(f->store, "t-placed", count_event, &again, &err) == 0);
    CHECK(again == n);
}

/* virtflow-api records a task as queued before it publishes: the worker
 * takes that row over (an update, not a second insert), decides it once at
 * attempt 1, keeps the API's history line, and a copy arriving after the
 * decision is acked without another. */
static void test_queued_by_api(fixture *f)
{
    const char *body = "{\"task_id\":\"t-queued\",\"requested_cpu\":1,\"requested_memory\":512}";
    vf_error err;
    vf_error_init(&err);
    store_task_fields queued = {.id = "t-queued",
                                .kind = "schedule",
                                .status = "queued",
                                .request = body,
                                .vmid = -1,
                                .at = FIXED_TEXT};
    CHECKF(store_task_insert(f->store, &queued, &err) == 0, "%s", err.text);
    CHECK(store_task_event_add(f->store, "t-queued", FIXED_TEXT, "queued", NULL, &err) == 0);

    task_outcome out;
    CHECK(handle(f, body, "t-queued", 0, &out) == 0);
    CHECK(out.action == TASK_ACK && out.placed && out.reserved && !out.duplicate);
    task_outcome_close(&out);
    store_task t;
    if (get_task(f, "t-queued", &t)) {
        CHECK_STR(t.status, "completed");
        CHECK(t.attempts == 1);
        CHECK_STR(t.request, body);
    }
    store_task_clear(&t);
    int n = 0;
    CHECK(store_task_events(f->store, "t-queued", count_event, &n, &err) == 0);
    CHECK(n == 3); /* queued, processing, completed */

    CHECK(handle(f, body, "t-queued", 0, &out) == 0);
    CHECK(out.action == TASK_ACK && out.duplicate && !out.reserved && !out.event_id);
    task_outcome_close(&out);
    int again = 0;
    CHECK(store_task_events(f->store, "t-queued", count_event, &again, &err) == 0);
    CHECK(again == n);
}

static void test_invalid(fixture *f)
{
    task_outcome out;
    CHECK(handle(f, "{\"task_id\":\"t-invalid\",\"requested_cpu\":-4,\"requested_memory\":1024}",
                 "t-invalid", 0, &out) == 0);
    CHECK(out.action == TASK_ACK && !out.reserved);
    CHECK_STR(out.event_key, "event.task.failed");
    json_t *event = event_of(&out);
    CHECK_STR(json_string_value(json_object_get(json_object_get(event, "data"), "reason")),
              "invalid");
    json_decref(event);
    store_task t;
    if (get_task(f, "t-invalid", &t)) {
        CHECK_STR(t.status, "failed");
        CHECK_STR(t.reason, "invalid");
    }
    store_task_clear(&t);
    task_outcome_close(&out);
}

static void test_unschedulable(fixture *f)
{
    /* 64 vCPUs no host holds (8 cores x 4): with scheduler.unfit_requests
     * wait it retries like any request that finds no room (test_never_fits
     * below: what fail, the default, does). */
    f->config->scheduler.unfit_requests = CONFIG_UNFIT_WAIT;
    const char *body = "{\"task_id\":\"t-huge\",\"requested_cpu\":64,\"requested_memory\":1024}";
    task_outcome out;
    /* First attempt: back through the first delay tier as attempt 2. */
    CHECK(handle(f, body, "t-huge", 0, &out) == 0);
    CHECK(out.action == TASK_RETRY && out.next_attempt == 2 && !out.reserved);
    CHECK(out.delay_s == f->config->retry.delays_s[0]);
    store_task t;
    if (get_task(f, "t-huge", &t))
        CHECK_STR(t.status, "retrying");
    store_task_clear(&t);
    task_outcome_close(&out);

    /* The last attempt (the worker's own header, trusted): failed for good. */
    CHECK(handle(f, body, "t-huge", f->config->retry.max_attempts, &out) == 0);
    CHECK(out.action == TASK_ACK);
    CHECK_STR(out.event_key, "event.task.failed");
    json_t *event = event_of(&out);
    CHECK_STR(json_string_value(json_object_get(json_object_get(event, "data"), "reason")),
              "unschedulable");
    /* Why not: a host of 8 cores x 4 takes 32 vCPUs: at least 32 more to free
     * (t-placed holds 2 on one of them). */
    json_t *why = json_object_get(json_object_get(event, "data"), "suggestions");
    json_t *host_change = json_object_get(json_object_get(why, "hosts"), "bm-003");
    json_int_t to_free =
        json_integer_value(json_object_get(json_object_get(host_change, "free"), "cpu"));
    CHECKF(to_free == 32 || to_free == 34, "bm-003: free %lld vCPUs", (long long)to_free);
    CHECK(json_object_size(json_object_get(why, "hosts")) == 3);
    json_decref(event);
    if (get_task(f, "t-huge", &t)) {
        CHECK_STR(t.status, "failed");
        CHECK_STR(t.reason, "unschedulable");
        CHECK(t.attempts == f->config->retry.max_attempts);
    }
    store_task_clear(&t);
    task_outcome_close(&out);
    f->config->scheduler.unfit_requests = CONFIG_UNFIT_FAIL;
}

/* scheduler.unfit_requests: fail (the default): a request no host could
 * hold even empty ends on its first attempt, failed/never_fits, with why;
 * not when the inventory is stale (it may have lost the hosts that would). */
static void test_never_fits(fixture *f)
{
    const char *body = "{\"task_id\":\"t-never\",\"requested_cpu\":2,\"requested_memory\":512,"
                       "\"requested_pool\":\"gpu\"}";
    task_outcome out;
    CHECK(handle(f, body, "t-never", 0, &out) == 0);
    CHECK(out.action == TASK_ACK && !out.reserved);
    CHECK_STR(out.event_key, "event.task.failed");
    CHECK_STR(out.reason, "never_fits");
    json_t *event = event_of(&out);
    json_t *data = json_object_get(event, "data");
    CHECK_STR(json_string_value(json_object_get(data, "reason")), "never_fits");
    CHECK_STR(json_string_value(json_object_get(data, "error")),
              "no host is in pool \"gpu\"; the inventory's pools: default");
    CHECK(json_integer_value(json_object_get(data, "attempts")) == 1);
    json_decref(event);
    store_task t;
    if (get_task(f, "t-never", &t)) {
        CHECK_STR(t.status, "failed");
        CHECK_STR(t.reason, "never_fits");
        CHECK(t.attempts == 1);
    }
    store_task_clear(&t);
    task_outcome_close(&out);

    /* Too large for any host: the largest is named. */
    const char *huge = "{\"task_id\":\"t-huge2\",\"requested_cpu\":33,\"requested_memory\":512}";
    CHECK(handle(f, huge, "t-huge2", 0, &out) == 0);
    CHECK(out.action == TASK_ACK);
    CHECK_STR(out.reason, "never_fits");
    CHECK_CONTAINS(out.error_text, "asks for 33 vCPUs; the most any host of pool \"default\" holds "
                                   "empty is 32 (bm-00");
    task_outcome_close(&out);

    /* A stale inventory: it waits. */
    const char *stale = "{\"task_id\":\"t-stale\",\"requested_cpu\":33,\"requested_memory\":512}";
    f->handler.inventory_note = "inventory is stale (40 s old): connection refused";
    CHECK(handle(f, stale, "t-stale", 0, &out) == 0);
    CHECK(out.action == TASK_RETRY);
    task_outcome_close(&out);
    f->handler.inventory_note = "";
}

/* A recheck (x-virtflow-recheck): the worker sends a waiting task again when
 * room grows. Believed from a trusted publisher only; spends no attempt and
 * records nothing while there is still no room. */
static int recheck_as(fixture *f, const char *body, const char *id, const char *user,
                      int64_t attempt, task_outcome *out)
{
    task_message msg = {(const unsigned char *)body,
                        strlen(body),
                        false,
                        strlen(body),
                        "task.schedule",
                        id,
                        NULL,
                        false,
                        attempt,
                        user,
                        true,
                        NULL,
                        NULL};
    return handle_message(f, task_handler_handle, &msg, out);
}

static int history_rows(fixture *f, const char *id)
{
    vf_error err;
    vf_error_init(&err);
    int n = 0;
    CHECK(store_task_events(f->store, id, count_event, &n, &err) == 0);
    return n;
}

static void test_recheck(fixture *f)
{
    vf_error err;
    vf_error_init(&err);
    /* Fill every host with holds the engine keeps. */
    for (size_t i = 0; i < f->hosts->n_hosts; i++) {
        sched_reservation fill;
        memset(&fill, 0, sizeof fill);
        snprintf(fill.task_id, sizeof fill.task_id, "fill-%zu", i);
        memcpy(fill.node, f->hosts->hosts[i].name, sizeof fill.node);
        fill.cpu = 1000;
        CHECK(sched_engine_reserve(f->engine, &fill, &err) == 0);
    }
    const char *body = "{\"task_id\":\"t-wait\",\"requested_cpu\":2,\"requested_memory\":512}";
    task_outcome out;
    CHECK(handle(f, body, "t-wait", 0, &out) == 0);
    CHECK(out.action == TASK_RETRY);
    task_outcome_close(&out);
    int rows = history_rows(f, "t-wait");

    /* Still no room: acked, nothing recorded, no attempt spent, no retry. */
    CHECK(recheck_as(f, body, "t-wait", "guest", 1, &out) == 0);
    CHECK(out.action == TASK_ACK && out.duplicate && !out.reserved && !out.event_body);
    CHECK_CONTAINS(out.summary, "recheck: still no room");
    task_outcome_close(&out);
    store_task t;
    if (get_task(f, "t-wait", &t)) {
        CHECK_STR(t.status, "retrying");
        CHECK(t.attempts == 1);
    }
    store_task_clear(&t);
    CHECK(history_rows(f, "t-wait") == rows);

    /* Room grows: the recheck places it (completed, reserved, event). */
    for (size_t i = 0; i < f->hosts->n_hosts; i++) {
        char id[32];
        snprintf(id, sizeof id, "fill-%zu", i);
        sched_engine_release(f->engine, id);
    }
    CHECK(recheck_as(f, body, "t-wait", "guest", 1, &out) == 0);
    CHECK(out.action == TASK_ACK && out.placed && out.reserved);
    CHECK_STR(out.event_key, "event.task.completed");
    task_outcome_close(&out);
    if (get_task(f, "t-wait", &t))
        CHECK_STR(t.status, "completed");
    store_task_clear(&t);

    /* A recheck of a task no longer waiting does nothing; nor does the
     * delayed copy when it comes back (already completed). */
    CHECK(recheck_as(f, body, "t-wait", "guest", 1, &out) == 0);
    CHECK(out.duplicate && !out.reserved && !out.event_body);
    task_outcome_close(&out);
    CHECK(handle(f, body, "t-wait", 2, &out) == 0);
    CHECK(out.duplicate && !out.reserved);
    task_outcome_close(&out);

    /* From an untrusted publisher the header means nothing: an ordinary
     * message, whose id is final here, so a duplicate; a new id is decided as
     * any first attempt. */
    const char *other = "{\"task_id\":\"t-other\",\"requested_cpu\":2,\"requested_memory\":512}";
    CHECK(recheck_as(f, other, "t-other", "mallory", 0, &out) == 0);
    CHECK(out.placed && !out.duplicate);
    task_outcome_close(&out);
}

static void test_no_inventory(fixture *f)
{
    const char *body = "{\"task_id\":\"t-blind\",\"requested_cpu\":1,\"requested_memory\":256}";
    f->handler.hosts = NULL;
    f->handler.inventory_note = "inventory unreachable (test)";
    task_outcome out;
    CHECK(handle(f, body, "t-blind", 0, &out) == 0);
    CHECK(out.action == TASK_RETRY && out.next_attempt == 2);
    task_outcome_close(&out);
    CHECK(handle(f, body, "t-blind", f->config->retry.max_attempts, &out) == 0);
    CHECK(out.action == TASK_DEAD && out.error != NULL);
    CHECK_STR(out.event_key, "event.task.failed");
    store_task t;
    if (get_task(f, "t-blind", &t)) {
        CHECK_STR(t.status, "failed");
        CHECK_STR(t.reason, "exhausted");
    }
    store_task_clear(&t);
    task_outcome_close(&out);
    f->handler.hosts = f->hosts;
    f->handler.inventory_note = "";
}

static void test_unreadable(fixture *f)
{
    task_outcome out;
    CHECK(handle(f, "not json at all", "t-garbage", 0, &out) == 0);
    CHECK(out.action == TASK_DEAD && out.error != NULL && out.event_id == NULL);
    vf_error err;
    vf_error_init(&err);
    store_task t;
    memset(&t, 0, sizeof t);
    CHECK(store_task_get(f->store, "t-garbage", &t, &err) == 1); /* no row */
    store_task_clear(&t);
    task_outcome_close(&out);
}

static void test_events(void)
{
    char id[IDS_LEN], key[64];
    char *text = events_build(EVENT_SPARE_READY, json_pack("{s:s}", "task_id", "t-1"),
                              FIXED_MS / 1000, id, key);
    CHECK(text != NULL);
    CHECK(strncmp(id, "evt_", 4) == 0);
    CHECK_STR(key, "event.spare.ready");
    json_error_t jerr;
    json_t *event = text ? json_loads(text, 0, &jerr) : NULL;
    CHECK_STR(json_string_value(json_object_get(event, "type")), "spare.ready");
    CHECK_STR(json_string_value(json_object_get(event, "id")), id);
    CHECK_STR(json_string_value(json_object_get(event, "timestamp")), "2026-11-22T01:02:03Z");
    CHECK_STR(json_string_value(json_object_get(json_object_get(event, "data"), "task_id")), "t-1");
    json_decref(event);
    free(text);
}

/* Collects the history's details, in order, joined. */
static int join_detail(const store_task_event *e, void *user)
{
    char *all = user;
    size_t used = strlen(all);
    snprintf(all + used, 8192 - used, "%s|%s\n", e->status, e->detail ? e->detail : "");
    return 0;
}

/* The texts a placement writes, byte for byte (docs/contracts.md): the
 * result (task row, "completed" history and reply), the "processing" history
 * and the task.completed event, on a fixture of their own so that the host
 * and vmid chosen do not depend on the other tests. A change to how they are
 * built must not change a byte of them. */
static void test_placed_texts(void)
{
    fixture f;
    if (!fixture_open(&f)) {
        CHECK(!"fixture");
        fixture_close(&f);
        return;
    }
    task_outcome out;
    const char *body = "{\"task_id\":\"t-texts\",\"requested_cpu\":2,\"requested_memory\":1024}";
    task_message msg = {(const unsigned char *)body,
                        strlen(body),
                        false,
                        strlen(body),
                        "task.schedule",
                        "m-texts",
                        "reply.q",
                        true,
                        0,
                        "guest",
                        false,
                        NULL,
                        NULL};
    CHECK(handle_message(&f, task_handler_handle, &msg, &out) == 0);
    const char *result =
        "{\"status\":\"completed\",\"node\":{\"name\":\"bm-001\",\"ip\":\"10.0.0.1\",\"pool\":"
        "\"default\"},\"vmid\":100,\"score\":94.58,\"scores\":{\"FreeResources\":{\"score\":93.75,"
        "\"weight\":1.0},\"Balanced\":{\"score\":100.0,\"weight\":1.0},\"VMSlots\":{\"score\":90.0,"
        "\"weight\":1.0}},\"feasible\":3,\"hosts\":3,\"explanation\":\"bm-001 chosen with score "
        "94.58, vmid 100; 3/3 nodes are available\",\"attempts\":1,\"task_id\":\"t-texts\"}";
    CHECK_STR(out.reply_body, result);
    store_task t;
    if (get_task(&f, "t-texts", &t))
        CHECK_STR(t.result, result);
    store_task_clear(&t);
    char history[8192] = "", want[8192];
    vf_error err;
    vf_error_init(&err);
    CHECK(store_task_events(f.store, "t-texts", join_detail, history, &err) == 0);
    snprintf(want, sizeof want, "processing|%s\ncompleted|%s\n",
             "{\"attempt\":1,\"routing_key\":\"task.schedule\",\"message_id\":\"m-texts\","
             "\"redelivered\":true,\"worker\":\"test:1\",\"publisher\":\"guest\"}",
             result);
    CHECK_STR(history, want);
    char event[1024];
    snprintf(
        event, sizeof event,
        "{\"id\":\"%s\",\"type\":\"task.completed\",\"timestamp\":\"2026-11-22T01:02:03Z\","
        "\"data\":{\"task_id\":\"t-texts\",\"status\":\"completed\",\"node\":{\"name\":\"bm-001\","
        "\"ip\":\"10.0.0.1\",\"pool\":\"default\"},\"vmid\":100,\"score\":94.58,\"attempts\":1}}",
        out.event_id ? out.event_id : "");
    CHECK_STR(out.event_body, event);
    task_outcome_close(&out);

    /* The "processing" history of a message without a message id or a
     * user_id (nulls), and of one whose message id is not UTF-8 (no detail:
     * jansson refuses the text, and the history keeps the row). */
    const struct {
        const char *task_id, *message_id, *want;
    } arrivals[] = {
        {"t-texts-2", NULL,
         "processing|{\"attempt\":1,\"routing_key\":\"task.schedule\",\"message_id\":null,"
         "\"redelivered\":false,\"worker\":\"test:1\",\"publisher\":null}\n"},
        {"t-texts-3", "m-\xff", "processing|\n"},
    };
    for (size_t i = 0; i < sizeof arrivals / sizeof arrivals[0]; i++) {
        char text[128];
        snprintf(text, sizeof text,
                 "{\"task_id\":\"%s\",\"requested_cpu\":1,\"requested_memory\":64}",
                 arrivals[i].task_id);
        task_message plain = {(const unsigned char *)text,
                              strlen(text),
                              false,
                              strlen(text),
                              "task.schedule",
                              arrivals[i].message_id,
                              NULL,
                              false,
                              0,
                              NULL,
                              false,
                              NULL,
                              NULL};
        CHECK(handle_message(&f, task_handler_handle, &plain, &out) == 0);
        task_outcome_close(&out);
        history[0] = '\0';
        CHECK(store_task_events(f.store, arrivals[i].task_id, join_detail, history, &err) == 0);
        char *completed = strstr(history, "completed|");
        if (completed)
            *completed = '\0';
        CHECK_STR(history, arrivals[i].want);
    }
    fixture_close(&f);
}

/* scheduler_name picks a profile and the result, event and history name it;
 * a name no profile has waits (retried, reason unknown_scheduler) and ends
 * exhausted after the last attempt. */
static void test_profiles(fixture *f)
{
    vf_error err;
    vf_error_init(&err);
    sched_params params;
    sched_params_from_config(&params, f->config);
    CHECK(sched_engine_add_profile(f->engine, "packer", &params, &err) == 0);

    task_outcome out;
    CHECK(handle(f,
                 "{\"task_id\":\"t-prof\",\"requested_cpu\":1,\"requested_memory\":256,"
                 "\"scheduler_name\":\"packer\"}",
                 "t-prof", 0, &out) == 0);
    CHECK(out.placed && out.reserved);
    CHECK_STR(out.scheduler, "packer");
    json_t *event = event_of(&out);
    CHECK_STR(json_string_value(json_object_get(json_object_get(event, "data"), "scheduler")),
              "packer");
    json_decref(event);
    task_outcome_close(&out);
    store_task t;
    if (get_task(f, "t-prof", &t))
        CHECK_CONTAINS(t.result, "\"scheduler\":\"packer\"");
    store_task_clear(&t);
    /* Held by the default engine too: the profiles share reservations. */
    CHECK(sched_engine_release(f->engine, "t-prof") == 1);

    const char *body = "{\"task_id\":\"t-noprof\",\"requested_cpu\":1,\"requested_memory\":256,"
                       "\"annotations\":{\"scheduler.qemu-scheduler/name\":\"gpu\"}}";
    CHECK(handle(f, body, "t-noprof", 0, &out) == 0);
    CHECK(out.action == TASK_RETRY && out.next_attempt == 2 && !out.reserved);
    CHECK_STR(out.event_key, "event.task.retrying");
    event = event_of(&out);
    json_t *data = json_object_get(event, "data");
    CHECK_STR(json_string_value(json_object_get(data, "reason")), "unknown_scheduler");
    CHECK_STR(json_string_value(json_object_get(data, "scheduler")), "gpu");
    json_decref(event);
    task_outcome_close(&out);
    if (get_task(f, "t-noprof", &t))
        CHECK_STR(t.status, "retrying");
    store_task_clear(&t);
    CHECK(handle(f, body, "t-noprof", f->config->retry.max_attempts, &out) == 0);
    CHECK(out.action == TASK_DEAD);
    CHECK_STR(out.event_key, "event.task.failed");
    task_outcome_close(&out);
    if (get_task(f, "t-noprof", &t)) {
        CHECK_STR(t.status, "failed");
        CHECK_STR(t.reason, "exhausted");
        CHECK_CONTAINS(t.error, "no scheduler profile gpu");
    }
    store_task_clear(&t);
    static char history[8192];
    history[0] = '\0';
    CHECK(store_task_events(f->store, "t-noprof", join_detail, history, &err) == 0);
    CHECK_CONTAINS(history, "\"reason\":\"unknown_scheduler\"");
    CHECK_CONTAINS(history, "\"scheduler\":\"gpu\"");
}

/* The history statuses of task `id`, joined by spaces, into out. */
static int history_row(const store_task_event *e, void *ctx)
{
    char *out = ctx;
    size_t len = strlen(out);
    snprintf(out + len, 512 - len, "%s%s", len ? " " : "", e->status);
    return 0;
}

static void history_of(fixture *f, const char *id, char out[512])
{
    vf_error err;
    vf_error_init(&err);
    out[0] = '\0';
    CHECK(store_task_events(f->store, id, history_row, out, &err) == 0);
}

static int mark(fixture *f, const char *id, const char *from, const char *to)
{
    vf_error err;
    vf_error_init(&err);
    return store_task_set_action(f->store, id, from, "retrying", to, "{\"by\":\"op\"}", &err);
}

/* An operator's marks (virtflowctl task cancel | retry-now): a cancelled
 * task ends at the next copy without spending an attempt; after a retry-now
 * the first copy back is decided and the next one dropped. */
static void test_operator_marks(fixture *f)
{
    f->config->scheduler.unfit_requests = CONFIG_UNFIT_WAIT;
    const char *body = "{\"task_id\":\"t-cancel\",\"requested_cpu\":64,\"requested_memory\":1}";
    task_outcome out;
    store_task t;
    char history[512];
    CHECK(handle(f, body, "t-cancel", 0, &out) == 0 && out.action == TASK_RETRY);
    task_outcome_close(&out);
    CHECK(mark(f, "t-cancel", "retry_now", "cancel") == 1); /* not the mark it has */
    CHECK(mark(f, "t-cancel", NULL, "cancel") == 0);
    CHECK(handle(f, body, "t-cancel", 2, &out) == 0);
    CHECK(out.action == TASK_ACK && !out.reserved);
    CHECK_STR(out.event_key, "event.task.cancelled");
    json_t *event = event_of(&out);
    CHECK_STR(json_string_value(json_object_get(json_object_get(event, "data"), "cancelled_by")),
              "op");
    json_decref(event);
    task_outcome_close(&out);
    if (get_task(f, "t-cancel", &t)) {
        CHECK_STR(t.status, "cancelled");
        CHECK(t.attempts == 1);
    }
    store_task_clear(&t);
    CHECK(mark(f, "t-cancel", "cancel", "cancel") == 1); /* not retrying any more */
    CHECK(handle(f, body, "t-cancel", 2, &out) == 0 && out.duplicate);
    task_outcome_close(&out);

    body = "{\"task_id\":\"t-now\",\"requested_cpu\":64,\"requested_memory\":1}";
    CHECK(handle(f, body, "t-now", 0, &out) == 0 && out.action == TASK_RETRY);
    task_outcome_close(&out);
    CHECK(mark(f, "t-now", NULL, "retry_now") == 0);
    /* The operator's copy (no attempt header) first: decided as attempt 2. */
    CHECK(handle(f, body, "t-now", 0, &out) == 0);
    CHECK(out.action == TASK_RETRY && out.next_attempt == 3 && !out.duplicate);
    task_outcome_close(&out);
    if (get_task(f, "t-now", &t)) {
        CHECK(t.attempts == 2);
        CHECK_STR(t.action, "drop_copy");
    }
    store_task_clear(&t);
    /* The delayed copy of attempt 2 comes back: dropped, nothing decided. */
    CHECK(handle(f, body, "t-now", 2, &out) == 0);
    CHECK(out.duplicate && out.action == TASK_ACK && !out.event_body);
    task_outcome_close(&out);
    if (get_task(f, "t-now", &t)) {
        CHECK(t.attempts == 2);
        CHECK(t.action == NULL);
    }
    store_task_clear(&t);
    /* The new delayed copy (attempt 3) is decided as usual. */
    CHECK(handle(f, body, "t-now", 3, &out) == 0 && out.action == TASK_RETRY);
    task_outcome_close(&out);
    history_of(f, "t-now", history);
    CHECK_STR(history, "processing retrying processing retrying dropped processing retrying");
    f->config->scheduler.unfit_requests = CONFIG_UNFIT_FAIL;
}

int main(void)
{
    vf_log_set_level(VF_LOG_WARN);
    test_events();
    test_placed_texts();
    fixture f;
    if (!fixture_open(&f)) {
        CHECK(!"fixture");
        fixture_close(&f);
        return test_summary();
    }
    test_placed(&f);
    test_queued_by_api(&f);
    test_invalid(&f);
    test_unschedulable(&f);
    test_never_fits(&f);
    test_no_inventory(&f);
    test_recheck(&f);
    test_unreadable(&f);
    test_profiles(&f);
    test_operator_marks(&f);
    fixture_close(&f);
    return test_summary();
}
