/* task_conflict: a task id belongs to its first request (task_conflict.h).
 * The rule itself, then the squatting case of issue 34 through the real
 * handlers on SQLite and PostgreSQL: Bob publishes first, with the id Alice
 * is about to use and a 1-vCPU body; Alice's 8-vCPU request is refused as a
 * conflict (a reply, an event, a history row) instead of being answered with
 * Bob's placement, and Bob's task is left exactly as it was. */
#include "handler_fixture.h"
#include "log.h"
#include "release_handler.h"
#include "spare_handler.h"
#include "store_reservations.h"
#include "store_tasks.h"
#include "task_conflict.h"
#include "task_handler.h"

#include <jansson.h>

static store_fixture files;

static bool same(const char *recorded, const char *id, const char *body_text)
{
    json_t *body = json_loads(body_text, 0, NULL);
    bool result = task_conflict_same_request(recorded, id, body);
    json_decref(body);
    return result;
}

static void test_rule(void)
{
    const char *first = "{\"task_id\":\"t\",\"requested_cpu\":2,\"requested_memory\":1024}";
    CHECK(same(first, "t", first));
    /* Members in another order, other whitespace: the same JSON value. */
    CHECK(same(first, "t",
               "{ \"requested_memory\": 1024, \"requested_cpu\": 2, \"task_id\": \"t\" }"));
    /* Named by message_id alone on either side (virtflowctl submit, the
     * worker's rechecks and republishes). */
    CHECK(same("{\"requested_cpu\":2,\"requested_memory\":1024}", "t", first));
    CHECK(same(first, "t", "{\"requested_cpu\":2,\"requested_memory\":1024}"));
    /* Anything else in the body counts. */
    CHECK(!same(first, "t", "{\"task_id\":\"t\",\"requested_cpu\":8,\"requested_memory\":1024}"));
    CHECK(!same(
        first, "t",
        "{\"task_id\":\"t\",\"requested_cpu\":2,\"requested_memory\":1024,\"vm_name\":\"x\"}"));
    CHECK(!same(first, "t", "{\"task_id\":\"t\",\"requested_cpu\":2}"));
    CHECK(!same(first, "t", "{\"task_id\":\"t\",\"requested_cpu\":2.0,\"requested_memory\":1024}"));
    /* A recorded request that is not a JSON object is no body's. */
    CHECK(!same("not JSON", "t", first));
    CHECK(!same(NULL, "t", first));
}

/* A message from `user`, answered on `reply_to` (NULL: none). */
static int handle_as(fixture *f, handler_fn fn, const char *key, const char *body, const char *id,
                     const char *user, const char *reply_to, task_outcome *out)
{
    task_message msg = {.body = (const unsigned char *)body,
                        .body_len = strlen(body),
                        .body_size = strlen(body),
                        .routing_key = key,
                        .message_id = id,
                        .reply_to = reply_to,
                        .user_id = user};
    return handle_message(f, fn, &msg, out);
}

typedef struct history {
    char statuses[256];
    json_t *conflict; /* the last conflict row's detail */
} history;

static int history_row(const store_task_event *e, void *ctx)
{
    history *h = ctx;
    size_t n = strlen(h->statuses);
    snprintf(h->statuses + n, sizeof h->statuses - n, "%s%s", n ? " " : "", e->status);
    if (strcmp(e->status, "conflict") == 0) {
        json_decref(h->conflict);
        h->conflict = e->detail ? json_loads(e->detail, 0, NULL) : NULL;
    }
    return 0;
}

static void history_of(fixture *f, const char *id, history *h)
{
    memset(h, 0, sizeof *h);
    vf_error err;
    vf_error_init(&err);
    CHECK(store_task_events(f->store, id, history_row, h, &err) == 0);
}

typedef struct held {
    const char *task_id;
    int n;
    double cpu;
} held;

static int count_held(const store_reservation *r, void *ctx)
{
    held *h = ctx;
    if (strcmp(r->task_id, h->task_id) == 0) {
        h->n++;
        h->cpu += r->cpu;
    }
    return 0;
}

/* The task row as a string of what a reader sees of its state. */
static void state_of(fixture *f, const char *id, char *out, size_t size)
{
    store_task t;
    memset(&t, 0, sizeof t);
    vf_error err;
    vf_error_init(&err);
    if (store_task_get(f->store, id, &t, &err) != 0) {
        snprintf(out, size, "(none)");
        return;
    }
    snprintf(out, size, "%s|%s|%d|%s|%s|%lld|%s|%s", t.status, t.reason ? t.reason : "", t.attempts,
             t.node ? t.node : "", t.result ? t.result : "", (long long)t.vmid, t.updated_at,
             t.request ? t.request : "");
    store_task_clear(&t);
}

static void check_conflict_outcome(const task_outcome *out, const char *id, bool replied)
{
    CHECK(out->action == TASK_ACK && !out->duplicate && !out->reserved && !out->placed);
    CHECK_STR(out->status, "conflict");
    CHECK_STR(out->event_key, "event.task.conflict");
    json_t *event = out->event_body ? json_loads(out->event_body, 0, NULL) : NULL;
    json_t *data = json_object_get(event, "data");
    CHECK_STR(json_string_value(json_object_get(event, "type")), "task.conflict");
    CHECK_STR(json_string_value(json_object_get(data, "task_id")), id);
    CHECK_STR(json_string_value(json_object_get(data, "status")), "conflict");
    CHECK_STR(json_string_value(json_object_get(data, "via")), "broker");
    CHECK_STR(json_string_value(json_object_get(data, "publisher")), "alice");
    json_decref(event);
    if (!replied) {
        CHECK(out->reply_body == NULL);
        return;
    }
    json_t *reply = out->reply_body ? json_loads(out->reply_body, 0, NULL) : NULL;
    CHECK_STR(json_string_value(json_object_get(reply, "status")), "conflict");
    CHECK_STR(json_string_value(json_object_get(reply, "task_id")), id);
    CHECK(strstr(json_string_value(json_object_get(reply, "error")) ?: "", "another") != NULL);
    json_decref(reply);
}

/* Bob first (placed, 1 vCPU), then Alice's 8 vCPUs under the same id. */
static void squat_completed(fixture *f)
{
    const char *bob = "{\"task_id\":\"upg-42-vm-1\",\"requested_cpu\":1,\"requested_memory\":512}";
    const char *alice =
        "{\"task_id\":\"upg-42-vm-1\",\"requested_cpu\":8,\"requested_memory\":8192}";
    task_outcome out;
    CHECK(handle_as(f, task_handler_handle, "task.schedule", bob, "upg-42-vm-1", "bob", NULL,
                    &out) == 0);
    CHECK(out.placed && out.reserved);
    task_outcome_close(&out);
    char before[2048], after[2048];
    state_of(f, "upg-42-vm-1", before, sizeof before);

    CHECK(handle_as(f, task_handler_handle, "task.schedule", alice, "alice-msg-1", "alice",
                    "amq.rabbitmq.reply-to.alice", &out) == 0);
    check_conflict_outcome(&out, "upg-42-vm-1", true);
    task_outcome_close(&out);
    state_of(f, "upg-42-vm-1", after, sizeof after);
    CHECK_STR(after, before);

    held h = {"upg-42-vm-1", 0, 0};
    vf_error err;
    vf_error_init(&err);
    CHECK(store_reservations_live(f->store, FIXED_TEXT, count_held, &h, &err) == 0);
    CHECK(h.n == 1 && h.cpu == 1.0);

    history hist;
    history_of(f, "upg-42-vm-1", &hist);
    CHECK_STR(hist.statuses, "processing completed conflict");
    CHECK_STR(json_string_value(json_object_get(hist.conflict, "publisher")), "alice");
    CHECK_STR(json_string_value(json_object_get(hist.conflict, "message_id")), "alice-msg-1");
    CHECK(json_integer_value(
              json_object_get(json_object_get(hist.conflict, "request"), "requested_cpu")) == 8);
    json_decref(hist.conflict);

    /* Bob is still the submitter: Alice may not release it. */
    CHECK(handle_as(f, release_handler_handle, "task.release", "{\"task_id\":\"upg-42-vm-1\"}",
                    "rel-1", "alice", NULL, &out) == 0);
    CHECK_STR(out.status, "refused");
    task_outcome_close(&out);

    /* Bob's own redelivery, its members reordered: the same request. */
    CHECK(handle_as(f, task_handler_handle, "task.schedule",
                    "{\"requested_memory\":512, \"requested_cpu\":1, \"task_id\":\"upg-42-vm-1\"}",
                    "upg-42-vm-1", "bob", "amq.rabbitmq.reply-to.bob", &out) == 0);
    CHECK(out.duplicate && !out.event_id && out.reply_body && strstr(out.reply_body, "completed"));
    task_outcome_close(&out);
}

/* A task waiting in a delay tier keeps its attempts and its request: the
 * conflicting body is not taken for its next attempt. */
static void squat_retrying(fixture *f)
{
    const char *bob = "{\"task_id\":\"t-wait\",\"requested_cpu\":64,\"requested_memory\":512}";
    const char *alice = "{\"task_id\":\"t-wait\",\"requested_cpu\":1,\"requested_memory\":512}";
    f->config->scheduler.unfit_requests = CONFIG_UNFIT_WAIT;
    task_outcome out;
    CHECK(handle_as(f, task_handler_handle, "task.schedule", bob, "t-wait", "bob", NULL, &out) ==
          0);
    CHECK(out.action == TASK_RETRY);
    task_outcome_close(&out);
    char before[2048], after[2048];
    state_of(f, "t-wait", before, sizeof before);
    CHECK(handle_as(f, task_handler_handle, "task.schedule", alice, "t-wait", "alice", NULL,
                    &out) == 0);
    check_conflict_outcome(&out, "t-wait", false);
    task_outcome_close(&out);
    state_of(f, "t-wait", after, sizeof after);
    CHECK_STR(after, before);
    f->config->scheduler.unfit_requests = CONFIG_UNFIT_FAIL;
}

/* A row virtflow-api recorded as queued (its message still on the way) is
 * not taken over by another body published first under its id. */
static void squat_queued(fixture *f)
{
    const char *api = "{\"task_id\":\"t-api\",\"requested_cpu\":2,\"requested_memory\":512}";
    const char *other = "{\"task_id\":\"t-api\",\"requested_cpu\":1,\"requested_memory\":512}";
    vf_error err;
    vf_error_init(&err);
    store_task_fields queued = {.id = "t-api",
                                .kind = "schedule",
                                .status = "queued",
                                .request = api,
                                .vmid = -1,
                                .at = FIXED_TEXT};
    CHECK(store_task_insert(f->store, &queued, &err) == 0);
    task_outcome out;
    CHECK(handle_as(f, task_handler_handle, "task.schedule", other, "t-api", "alice", NULL, &out) ==
          0);
    check_conflict_outcome(&out, "t-api", false);
    task_outcome_close(&out);
    char state[2048];
    state_of(f, "t-api", state, sizeof state);
    CHECK(strncmp(state, "queued|", 7) == 0);
    /* The API's own message then is the task's request, decided once. */
    CHECK(handle_as(f, task_handler_handle, "task.schedule", api, "t-api", "api", NULL, &out) == 0);
    CHECK(out.placed);
    task_outcome_close(&out);
}

/* spare.prepare follows the same rule. */
static void squat_spare(fixture *f)
{
    const char *first = "{\"upgrade_id\":\"u1\",\"cluster\":\"c\",\"count\":1,"
                        "\"requested_cpu\":1,\"requested_memory\":512}";
    const char *other = "{\"upgrade_id\":\"u1\",\"cluster\":\"c\",\"count\":1,"
                        "\"requested_cpu\":4,\"requested_memory\":512}";
    task_outcome out;
    CHECK(handle_as(f, spare_handler_handle, "spare.prepare", first, "sp-1", "bob", NULL, &out) ==
          0);
    task_outcome_close(&out);
    char before[2048], after[2048];
    state_of(f, "sp-1", before, sizeof before);
    CHECK(strcmp(before, "(none)") != 0);
    CHECK(handle_as(f, spare_handler_handle, "spare.prepare", other, "sp-1", "alice", NULL, &out) ==
          0);
    CHECK_STR(out.status, "conflict");
    task_outcome_close(&out);
    state_of(f, "sp-1", after, sizeof after);
    CHECK_STR(after, before);
}

static void run(const char *location)
{
    fixture f;
    memset(&f, 0, sizeof f);
    if (!fixture_open_at(&f, location)) {
        CHECKF(false, "fixture at %s", location);
        fixture_close(&f);
        return;
    }
    squat_completed(&f);
    squat_retrying(&f);
    squat_queued(&f);
    squat_spare(&f);
    fixture_close(&f);
}

int main(void)
{
    vf_log_set_level(VF_LOG_ERROR);
    test_rule();
    if (store_fixture_init(&files, "conflict") != 0)
        return 1;
    store_fixture_each(&files, "conflict", run);
    store_fixture_close(&files);
    return test_summary();
}
