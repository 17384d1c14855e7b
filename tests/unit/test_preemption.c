/* preemption (worker/handle/preemption.c) through the task handler, on a
 * real SQLite store: three hosts filled by priority-0 placements whose VMs
 * never appear, answered longer ago than scheduler.preemption_grace_s; a
 * request of class `high` (preemption: lower) that fits nowhere takes one
 * of them in its own transaction: the victim's reservation ends, leaving
 * its vmid held alone (the preemptor gets another), its task goes back to
 * retrying with its attempt given back, both histories say why, its client
 * is told on its reply_to, the outcome carries task.preempted and the
 * victim's request for the outbox, and the victim's next message decides
 * it again at the same attempt and answers the same reply_to. A class with
 * preemption: never, a request no higher than the holders, and holders
 * answered within the grace, take nothing; a reservation whose VM appeared
 * (bound) is never a victim. */
#include <jansson.h>

#include "handler_fixture.h"
#include "reservations.h"
#include "store_reservations.h"
#include "store_tasks.h"
#include "task_handler.h"

static const char config_text[] = "scheduler:\n"
                                  "  priority_classes:\n"
                                  "    high: {value: 1000, preemption: lower}\n"
                                  "    polite: {value: 1000, preemption: never}\n"
                                  "    low: {value: -5}\n";

static int handle(fixture *f, const char *body, const char *id, task_outcome *out)
{
    return handle_with(f, task_handler_handle, "task.schedule", body, id, 0, out);
}

/* Longer ago than the default grace (300 s): answers no longer promises. */
static int64_t before_the_grace(void)
{
    return FIXED_MS - 301 * 1000;
}

/* 9000 MiB: one per 16 GiB host. Its client waits on "reply-<id>". */
static void place(fixture *f, const char *id, const char *extra)
{
    char body[256], reply_to[64];
    snprintf(body, sizeof body,
             "{\"task_id\":\"%s\",\"requested_cpu\":1,\"requested_memory\":9000%s}", id, extra);
    snprintf(reply_to, sizeof reply_to, "reply-%s", id);
    task_message msg = {.body = (const unsigned char *)body,
                        .body_len = strlen(body),
                        .body_size = strlen(body),
                        .routing_key = "task.schedule",
                        .message_id = id,
                        .reply_to = reply_to,
                        .user_id = "guest",
                        .correlation_id = "corr-1"};
    task_outcome out;
    CHECK(handle_message(f, task_handler_handle, &msg, &out) == 0);
    CHECKF(out.placed, "%s placed: %s", id, out.summary);
    task_outcome_close(&out);
}

typedef struct live {
    int n;         /* holding capacity */
    int with_task; /* of them, the task's */
    const char *task;
    int64_t kept_vmid; /* the task's reservation of a vmid alone (a preempted one's); 0: none */
    int kept;          /* such reservations of any task */
} live;

static int count_live(const store_reservation *r, void *arg)
{
    live *l = arg;
    bool mine = l->task && strcmp(r->task_id, l->task) == 0;
    if (r->vmid_only) {
        l->kept++;
        if (mine)
            l->kept_vmid = r->vmid;
        return 0;
    }
    l->n++;
    if (mine)
        l->with_task++;
    return 0;
}

static live live_of(fixture *f, const char *task)
{
    live l = {0, 0, task, 0, 0};
    vf_error err;
    vf_error_init(&err);
    CHECK(store_reservations_live(f->store, FIXED_TEXT, count_live, &l, &err) == 0);
    return l;
}

typedef struct history {
    bool preempted;
    char detail[512];
} history;

static int find_preempted(const store_task_event *e, void *arg)
{
    history *h = arg;
    if (strcmp(e->status, "preempted") == 0) {
        h->preempted = true;
        snprintf(h->detail, sizeof h->detail, "%s", e->detail ? e->detail : "");
    }
    return 0;
}

static void test_preempts(fixture *f)
{
    f->handler.now_ms = before_the_grace;
    place(f, "low-1", "");
    place(f, "low-2", "");
    place(f, "low-3", "");
    f->handler.now_ms = fixed_clock;
    CHECK(live_of(f, NULL).n == 3);

    /* polite: the same priority, but its class never preempts. */
    task_outcome out;
    CHECK(handle(f,
                 "{\"task_id\":\"polite-1\",\"requested_cpu\":1,\"requested_memory\":9000,"
                 "\"priority_class\":\"polite\"}",
                 "polite-1", &out) == 0);
    CHECK(!out.placed && out.action == TASK_RETRY && out.n_more == 0);
    task_outcome_close(&out);
    CHECK(live_of(f, NULL).n == 3);

    CHECK(handle(f,
                 "{\"task_id\":\"high-1\",\"requested_cpu\":1,\"requested_memory\":9000,"
                 "\"priority_class\":\"high\"}",
                 "high-1", &out) == 0);
    CHECKF(out.reserved && out.action == TASK_ACK, "%s", out.summary);
    CHECK_STR(out.status, "completed");
    CHECK(!out.placed); /* logged at info, not counted as an ordinary placement */
    /* At the default log level too: the placement's own words, then the preemption. */
    CHECK_CONTAINS(out.summary, "completed on ");
    CHECK_CONTAINS(out.summary, "preempting 1 reservation(s)");
    CHECK_STR(out.event_key, "event.task.completed");
    CHECK_CONTAINS(out.event_body, "\"preempted\"");
    CHECK(out.released);
    CHECK(out.n_more == 2);
    const char *victim = NULL;
    json_t *event = NULL;
    if (out.n_more == 2) {
        CHECK_STR(out.more[0].key, "event.task.preempted");
        CHECK_STR(out.more[1].key, "task.schedule");
        json_error_t jerr;
        event = json_loads(out.more[0].body, 0, &jerr);
        json_t *data = json_object_get(event, "data");
        victim = json_string_value(json_object_get(data, "task_id"));
        CHECK_STR(json_string_value(json_object_get(data, "preempted_by")), "high-1");
        CHECK_STR(json_string_value(json_object_get(data, "status")), "retrying");
        CHECK(json_integer_value(json_object_get(data, "priority")) == 0);
        CHECK(json_integer_value(json_object_get(data, "preempted_by_priority")) == 1000);
        CHECK_CONTAINS(out.more[1].body, "\"requested_memory\"");
    }
    CHECK(victim && strncmp(victim, "low-", 4) == 0);
    char victim_id[32] = "";
    snprintf(victim_id, sizeof victim_id, "%s", victim ? victim : "");
    /* Its client is told on its own channel. */
    char reply_to[64];
    snprintf(reply_to, sizeof reply_to, "reply-%s", victim_id);
    CHECK(out.n_replies == 1);
    if (out.n_replies == 1) {
        CHECK_STR(out.replies[0].to, reply_to);
        CHECK_STR(out.replies[0].correlation_id, "corr-1");
        CHECK_CONTAINS(out.replies[0].body, "\"status\":\"preempted\"");
        CHECK_CONTAINS(out.replies[0].body, "\"preempted_by\":\"high-1\"");
    }
    vf_error err;
    vf_error_init(&err);
    store_task t;
    memset(&t, 0, sizeof t);
    CHECK(store_task_get(f->store, "high-1", &t, &err) == 0);
    int64_t high_vmid = t.vmid;
    store_task_clear(&t);
    char request[256] = "";
    if (out.n_more == 2)
        snprintf(request, sizeof request, "%s", out.more[1].body);
    json_decref(event);
    task_outcome_close(&out);

    /* The store: the victim's reservation ended, its vmid held alone
     * (never the preemptor's), the preemptor's held. */
    live l = live_of(f, victim_id);
    CHECK(l.n == 3 && l.with_task == 0);
    CHECK(l.kept_vmid > 0 && l.kept_vmid != high_vmid);
    CHECK(live_of(f, "high-1").with_task == 1);
    CHECK(store_task_get(f->store, victim_id, &t, &err) == 0);
    CHECK_STR(t.status, "retrying");
    CHECK(t.attempts == 0 && t.node == NULL);
    CHECK_CONTAINS(t.error ? t.error : "", "preempted by high-1");
    store_task_clear(&t);
    history h = {false, ""};
    CHECK(store_task_events(f->store, victim_id, find_preempted, &h, &err) == 0);
    CHECK(h.preempted);
    CHECK_CONTAINS(h.detail, "\"preempted_by\":\"high-1\"");

    /* The victim's request comes back (published from the outbox, without
     * reply_to): decided again at attempt 1, no room, a retry, answered to
     * the reply_to its task recorded. */
    CHECK(handle(f, request, NULL, &out) == 0);
    CHECK(out.action == TASK_RETRY && out.attempt == 1);
    CHECK_STR(out.reply_to, reply_to);
    CHECK_STR(out.correlation_id, "corr-1");
    task_outcome_close(&out);

    /* high-2: the same class, but every holder left is now either of the
     * same priority (high-1) or low; it takes another low one. A third
     * (high-3) then finds only priority-1000 holders and bound ones. */
    CHECK(handle(f,
                 "{\"task_id\":\"high-2\",\"requested_cpu\":1,\"requested_memory\":9000,"
                 "\"priority_class\":\"high\"}",
                 "high-2", &out) == 0);
    CHECK(out.reserved && out.n_more == 2);
    task_outcome_close(&out);
}

/* A reservation whose VM the inventory showed (bound) is never a victim. */
static void test_bound_untouched(fixture *f)
{
    live before = live_of(f, NULL);
    /* The last low holder: bind it (its VM appeared), as the worker does. */
    vf_error err;
    vf_error_init(&err);
    store_task t;
    memset(&t, 0, sizeof t);
    const char *last = NULL;
    static const char *const lows[] = {"low-1", "low-2", "low-3"};
    for (size_t i = 0; i < 3; i++) {
        if (live_of(f, lows[i]).with_task == 1)
            last = lows[i];
    }
    CHECK(last != NULL);
    if (!last)
        return;
    CHECK(store_task_get(f->store, last, &t, &err) == 0);
    CHECK(store_begin(f->store, &err) == 0);
    /* The reservation clock at the fixture's time, not the wall clock's. */
    CHECK(store_inventory_fresh_set(f->store, FIXED_TEXT, &err) == 0);
    CHECK(store_reservation_release_vmid(f->store, t.vmid, t.node, FIXED_TEXT, FIXED_TEXT, &err) ==
          1);
    CHECK(store_commit(f->store, &err) == 0);
    /* The engine drops it when its snapshot shows the VM; the book reloads
     * it as counted but bound (reservations_hold_live). */
    sched_engine_release_all(f->engine);
    long held = reservations_hold_live(f->store, f->engine, FIXED_MS - 1000, &err);
    /* And the preempted placements' vmids, each held alone. */
    CHECKF(held == before.n + before.kept, "held %ld of %d + %d: %s", held, before.n, before.kept,
           err.text);
    task_outcome out;
    CHECK(handle(f,
                 "{\"task_id\":\"high-3\",\"requested_cpu\":1,\"requested_memory\":9000,"
                 "\"priority_class\":\"high\"}",
                 "high-3", &out) == 0);
    CHECKF(!out.reserved && out.n_more == 0, "%s", out.summary);
    task_outcome_close(&out);
    store_task_clear(&t);
    CHECK(store_task_get(f->store, last, &t, &err) == 0);
    CHECK_STR(t.status, "completed");
    store_task_clear(&t);
}

/* Issue 34, item 2: placements answered within scheduler.preemption_grace_s
 * are promises (their clients may be creating the VMs): a high request
 * that fits nowhere takes none of them and waits. */
static void test_grace_keeps_promises(fixture *f)
{
    place(f, "fresh-1", "");
    place(f, "fresh-2", "");
    place(f, "fresh-3", "");
    task_outcome out;
    CHECK(handle(f,
                 "{\"task_id\":\"high-early\",\"requested_cpu\":1,\"requested_memory\":9000,"
                 "\"priority_class\":\"high\"}",
                 "high-early", &out) == 0);
    CHECKF(!out.reserved && out.action == TASK_RETRY && out.n_more == 0 && out.n_replies == 0, "%s",
           out.summary);
    task_outcome_close(&out);
    CHECK(live_of(f, NULL).n == 3);
    static const char *const fresh[] = {"fresh-1", "fresh-2", "fresh-3"};
    for (size_t i = 0; i < 3; i++)
        CHECK(live_of(f, fresh[i]).with_task == 1);
}

int main(void)
{
    fixture f;
    CHECK(fixture_open(&f));
    vf_error err;
    vf_error_init(&err);
    config_free(f.config);
    f.config = config_load_string(config_text, strlen(config_text), "test", &err);
    CHECKF(f.config != NULL, "%s", err.text);
    f.handler.config = f.config;
    if (f.config) {
        test_preempts(&f);
        test_bound_untouched(&f);
    }
    fixture_close(&f);
    CHECK(fixture_open(&f));
    config_free(f.config);
    f.config = config_load_string(config_text, strlen(config_text), "test", &err);
    f.handler.config = f.config;
    if (f.config)
        test_grace_keeps_promises(&f);
    fixture_close(&f);
    return test_summary();
}
