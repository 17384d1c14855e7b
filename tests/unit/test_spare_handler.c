/* spare_handler without a broker: spare.prepare and spare.release decided
 * against a real store and engine with the clock seam fixed
 * (handler_fixture.h): spares placed on distinct hosts and recorded for the
 * driver, too few hosts retried, bad requests failed, a release handing the
 * spares back to the driver, a row recorded `queued` by virtflow-api taken
 * over by the first copy (not mistaken for a duplicate), the check the API
 * refuses bodies with, and the name pattern. */
#include "handler_fixture.h"
#include "log.h"
#include "release_handler.h"
#include "spare_handler.h"
#include "store_spares.h"
#include "store_tasks.h"
#include "task_handler.h"
#include "task_intake.h"

#include <jansson.h>

static int handle(fixture *f, const char *key, const char *body, const char *id, int64_t attempt,
                  task_outcome *out)
{
    return handle_with(f, spare_handler_handle, key, body, id, attempt, out);
}

typedef struct spares_seen {
    int n;
    char nodes[8][32];
    char states[8][16];
    char next_at[8][32];
    char release_task[8][64];
} spares_seen;

static int note_spare(const store_spare *s, void *user)
{
    spares_seen *seen = user;
    if (seen->n < 8) {
        snprintf(seen->nodes[seen->n], sizeof seen->nodes[0], "%s", s->node ? s->node : "");
        snprintf(seen->states[seen->n], sizeof seen->states[0], "%s", s->state);
        snprintf(seen->next_at[seen->n], sizeof seen->next_at[0], "%s",
                 s->next_at ? s->next_at : "");
        snprintf(seen->release_task[seen->n], sizeof seen->release_task[0], "%s",
                 s->release_task_id ? s->release_task_id : "");
    }
    seen->n++;
    return 0;
}

static void task_is(fixture *f, const char *id, const char *status, const char *reason)
{
    store_task t;
    memset(&t, 0, sizeof t);
    vf_error err;
    vf_error_init(&err);
    CHECKF(store_task_get(f->store, id, &t, &err) == 0, "task %s: %s", id, err.text);
    CHECK_STR(t.kind, "spare");
    CHECK_STR(t.status, status);
    if (reason)
        CHECK_STR(t.reason, reason);
    CHECK_STR(t.updated_at, FIXED_TEXT);
    store_task_clear(&t);
}

static void test_prepare_and_release(fixture *f)
{
    task_outcome out;
    CHECK(handle(f, "spare.prepare",
                 "{\"upgrade_id\":\"upg-1\",\"cluster\":\"prod-a\",\"count\":2,"
                 "\"requested_cpu\":4,\"requested_memory\":4096}",
                 "p-1", 0, &out) == 0);
    CHECK(out.action == TASK_ACK && out.reserved);
    /* The progress event spare.provisioning now; spare.ready comes from the
     * driver, later. */
    CHECK(out.event_id != NULL);
    task_outcome_close(&out);
    task_is(f, "p-1", "provisioning", NULL);

    spares_seen seen = {0};
    vf_error err;
    vf_error_init(&err);
    CHECK(store_spare_list(f->store, STORE_SPARES_OF_TASK, "p-1", 0, note_spare, &seen, &err) == 0);
    CHECK(seen.n == 2);
    CHECK(strcmp(seen.nodes[0], seen.nodes[1]) != 0); /* anti-affinity: distinct hosts */
    for (int i = 0; i < 2 && i < seen.n; i++) {
        CHECK_STR(seen.states[i], "provisioning");
        CHECK_STR(seen.next_at[i], FIXED_TEXT); /* due at once for the driver */
    }

    /* A second prepare for the same upgrade while its spares are up. */
    CHECK(handle(f, "spare.prepare",
                 "{\"upgrade_id\":\"upg-1\",\"cluster\":\"prod-a\",\"count\":1,"
                 "\"requested_cpu\":1,\"requested_memory\":512}",
                 "p-2", 0, &out) == 0);
    CHECK_STR(out.event_key, "event.spare.failed");
    task_outcome_close(&out);
    task_is(f, "p-2", "failed", "invalid");

    /* Release: every spare handed to the driver under the release task. */
    CHECK(handle(f, "spare.release", "{\"upgrade_id\":\"upg-1\"}", "r-1", 0, &out) == 0);
    CHECK(out.action == TASK_ACK);
    task_outcome_close(&out);
    task_is(f, "r-1", "releasing", NULL);
    task_is(f, "p-1", "releasing", NULL);
    memset(&seen, 0, sizeof seen);
    CHECK(store_spare_list(f->store, STORE_SPARES_OF_TASK, "p-1", 0, note_spare, &seen, &err) == 0);
    CHECK(seen.n == 2);
    for (int i = 0; i < 2 && i < seen.n; i++) {
        CHECK_STR(seen.states[i], "releasing");
        CHECK_STR(seen.release_task[i], "r-1");
    }
}

static void test_failures(fixture *f)
{
    task_outcome out;
    /* Four spares on three hosts, strictly distinct: retried, nothing held. */
    const char *four = "{\"upgrade_id\":\"upg-4\",\"cluster\":\"prod-b\",\"count\":4,"
                       "\"requested_cpu\":1,\"requested_memory\":512}";
    CHECK(handle(f, "spare.prepare", four, "p-4", 0, &out) == 0);
    CHECK(out.action == TASK_RETRY && out.next_attempt == 2 && !out.reserved);
    task_outcome_close(&out);
    task_is(f, "p-4", "retrying", NULL);
    CHECK(handle(f, "spare.prepare", four, "p-4", f->config->retry.max_attempts, &out) == 0);
    CHECK(out.action == TASK_ACK && !out.reserved);
    CHECK_STR(out.event_key, "event.spare.failed");
    task_outcome_close(&out);
    task_is(f, "p-4", "failed", "unschedulable");

    /* count out of range */
    CHECK(handle(f, "spare.prepare",
                 "{\"upgrade_id\":\"upg-0\",\"cluster\":\"prod-c\",\"count\":0,"
                 "\"requested_cpu\":1,\"requested_memory\":512}",
                 "p-0", 0, &out) == 0);
    CHECK_STR(out.event_key, "event.spare.failed");
    task_outcome_close(&out);
    task_is(f, "p-0", "failed", "invalid");

    /* Releasing an upgrade never seen */
    CHECK(handle(f, "spare.release", "{\"upgrade_id\":\"upg-never\"}", "r-never", 0, &out) == 0);
    CHECK_STR(out.event_key, "event.spare.failed");
    task_outcome_close(&out);
    task_is(f, "r-never", "failed", "invalid");

    /* A scheduling profile this worker lacks: waits, reason unknown_scheduler;
     * exhausted at the last attempt. */
    const char *gpu = "{\"upgrade_id\":\"upg-gpu\",\"cluster\":\"prod-g\",\"count\":1,"
                      "\"requested_cpu\":1,\"requested_memory\":512,\"annotations\":"
                      "{\"scheduler.qemu-scheduler/name\":\"gpu\"}}";
    CHECK(handle(f, "spare.prepare", gpu, "p-gpu", 0, &out) == 0);
    CHECK(out.action == TASK_RETRY && !out.reserved);
    CHECK(out.event_body && strstr(out.event_body, "\"reason\":\"unknown_scheduler\""));
    task_outcome_close(&out);
    task_is(f, "p-gpu", "retrying", NULL);
    CHECK(handle(f, "spare.prepare", gpu, "p-gpu", f->config->retry.max_attempts, &out) == 0);
    CHECK(out.action == TASK_DEAD && !out.reserved);
    task_outcome_close(&out);
    task_is(f, "p-gpu", "failed", "exhausted");

    /* Not JSON: parked, no task row */
    CHECK(handle(f, "spare.prepare", "{nope", "p-garbage", 0, &out) == 0);
    CHECK(out.action == TASK_DEAD && out.error != NULL);
    task_outcome_close(&out);
}

/* virtflow-api records the task `queued` before publishing: the message
 * that follows is its first attempt, and a copy after it a duplicate. */
static void test_queued_by_the_api(fixture *f)
{
    const char *body = "{\"task_id\":\"p-api\",\"upgrade_id\":\"upg-api\",\"count\":1,"
                       "\"requested_cpu\":1,\"requested_memory\":512}";
    vf_error err;
    vf_error_init(&err);
    CHECKF(task_intake_record_as(f->store, "spare", "p-api", body, "virtflow-api", "upgradectrl",
                                 FIXED_TEXT, &err) == 1,
           "%s", err.text);
    task_outcome out;
    CHECK(handle(f, "spare.prepare", body, "p-api", 0, &out) == 0);
    CHECK(out.action == TASK_ACK && out.reserved && !out.duplicate);
    task_outcome_close(&out);
    task_is(f, "p-api", "provisioning", NULL);
    CHECK(handle(f, "spare.prepare", body, "p-api", 0, &out) == 0);
    CHECK(out.duplicate && !out.reserved);
    task_outcome_close(&out);

    const char *release = "{\"upgrade_id\":\"upg-api\"}";
    CHECK(task_intake_record_as(f->store, "spare", "r-api", release, "virtflow-api", NULL,
                                FIXED_TEXT, &err) == 1);
    CHECK(handle(f, "spare.release", release, "r-api", 0, &out) == 0);
    CHECK(out.action == TASK_ACK && !out.duplicate);
    task_outcome_close(&out);
    task_is(f, "r-api", "releasing", NULL);
}

/* The check virtflow-api refuses with: the handler's own words, no store. */
static void test_request_check(const vf_config *config)
{
    static const struct {
        const char *key, *body, *words; /* words NULL: accepted */
    } cases[] = {
        {"spare.prepare",
         "{\"upgrade_id\":\"u\",\"count\":2,\"requested_cpu\":1,\"requested_memory\":1}", NULL},
        {"spare.prepare", "{\"upgrade_id\":\"u\",\"count\":0,\"requested_cpu\":1}", "count"},
        {"spare.prepare",
         "{\"upgrade_id\":\"u\",\"count\":1,\"requested_cpu\":1,\"requested_memory\":1,"
         "\"colour\":1}",
         "colour"},
        {"spare.prepare", "{\"count\":1,\"requested_cpu\":1,\"requested_memory\":1}", "upgrade_id"},
        {"spare.prepare",
         "{\"upgrade_id\":\"" /* 63 characters: the name pattern makes it longer */
         "u23456789012345678901234567890123456789012345678901234567890123\",\"count\":1,"
         "\"requested_cpu\":1,\"requested_memory\":1}",
         "name_pattern"},
        {"spare.release", "{\"upgrade_id\":\"u\"}", NULL},
        {"spare.release", "{\"upgrade_id\":\"u\",\"task_id\":\"x\"}", "task_id"},
        {"spare.release", "{}", "upgrade_id"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *body = json_loads(cases[i].body, 0, NULL);
        vf_error err;
        vf_error_init(&err);
        int rc = spare_handler_check(config, cases[i].key, body, &err);
        if (!cases[i].words)
            CHECKF(rc == 0, "%s %s: %s", cases[i].key, cases[i].body, err.text);
        else
            CHECKF(rc < 0 && err.code == VF_EINVAL && strstr(err.text, cases[i].words),
                   "%s %s: %d %s", cases[i].key, cases[i].body, rc, err.text);
        json_decref(body);
    }
}

static void test_names(void)
{
    char name[64];
    vf_error err;
    vf_error_init(&err);
    CHECK(spare_handler_name("spare-{upgrade_id}-{cluster}-{index}", "upg-1", "prod-a", 3, name,
                             sizeof name, &err) == 0);
    CHECK_STR(name, "spare-upg-1-prod-a-3");
    CHECK(spare_handler_name("spare {index}", "u", "c", 1, name, sizeof name, &err) < 0);
    CHECK(err.code == VF_EINVAL);
    /* handler_for: the one table of which handler takes a routing key. */
    CHECK(handler_for("spare.prepare")->handle == spare_handler_handle);
    CHECK(handler_for("spare.release")->handle == spare_handler_handle);
    CHECK_STR(handler_for("spare.release")->kind, "spare");
    CHECK(handler_for("task.release")->handle == release_handler_handle);
    CHECK_STR(handler_for("task.release")->kind, "release");
    CHECK(!handler_for("task.release")->ordered_by_priority);
    const char *scheduled[] = {"task.schedule", "task.schedule.priority", "spare", NULL};
    for (size_t i = 0; i < sizeof scheduled / sizeof scheduled[0]; i++) {
        CHECK(handler_for(scheduled[i])->handle == task_handler_handle);
        CHECK_STR(handler_for(scheduled[i])->kind, "schedule");
        CHECK(handler_for(scheduled[i])->ordered_by_priority);
    }
}

int main(void)
{
    vf_log_set_level(VF_LOG_WARN);
    test_names();
    fixture f;
    if (!fixture_open(&f)) {
        CHECK(!"fixture");
        fixture_close(&f);
        return test_summary();
    }
    test_prepare_and_release(&f);
    test_failures(&f);
    test_queued_by_the_api(&f);
    test_request_check(f.config);
    fixture_close(&f);
    return test_summary();
}
