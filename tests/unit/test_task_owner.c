/* task_owner on SQLite and PostgreSQL: a task accepted by virtflow-api
 * belongs to its key (the acceptance row) and was first processed as
 * virtflow-api's broker login; a task that came by the broker belongs to the
 * publisher of its first "processing" row that names one; a later row's
 * "submitter" (a conflicting request from another key) changes nothing; a
 * task without history, or unknown, has no owner. */
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_fixture.h"
#include "store_tasks.h"
#include "task_intake.h"
#include "task_owner.h"
#include "testlib.h"

static store_fixture fixture;

static void add_task(store *s, const char *id)
{
    vf_error err;
    vf_error_init(&err);
    store_task_fields t = {.id = id,
                           .kind = "schedule",
                           .status = "queued",
                           .attempts = 0,
                           .request = "{}",
                           .vmid = -1,
                           .at = "2026-11-01T00:00:00.000Z"};
    CHECKF(store_task_insert(s, &t, &err) == 0, "%s", err.text);
}

static void add_event(store *s, const char *id, const char *status, const char *detail)
{
    vf_error err;
    vf_error_init(&err);
    CHECKF(store_task_event_add(s, id, "2026-11-01T00:00:01.000Z", status, detail, &err) == 0, "%s",
           err.text);
}

static void check_owner(store *s, const char *id, const char *key, const char *publisher)
{
    vf_error err;
    vf_error_init(&err);
    task_owner owner = {(char *)"stale", (char *)"stale"};
    CHECKF(task_owner_read(s, id, &owner, &err) == 0, "%s", err.text);
    if (key)
        CHECK_STR(owner.key, key);
    else
        CHECKF(owner.key == NULL, "task %s: key %s", id, owner.key);
    if (publisher)
        CHECK_STR(owner.publisher, publisher);
    else
        CHECKF(owner.publisher == NULL, "task %s: publisher %s", id, owner.publisher);
    task_owner_clear(&owner);
}

static void run(const char *location)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(location, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    if (!s)
        return;

    /* Accepted by virtflow-api from key "alice", then processed. */
    CHECKF(task_intake_record(s, "t-api", "{}", "virtflow-api", "alice", &err) == 0, "%s",
           err.text);
    add_event(s, "t-api", "processing", "{\"attempt\":1,\"publisher\":\"vf-api\"}");
    add_event(s, "t-api", "conflict", "{\"via\":\"virtflow-api\",\"submitter\":\"mallory\"}");
    check_owner(s, "t-api", "alice", "vf-api");

    /* By the broker: a processing row without detail says nothing; the
     * first that names a publisher is the owner; a later one changes
     * nothing. A conflict from a key first changes nothing either. */
    add_task(s, "t-broker");
    add_event(s, "t-broker", "received", "{\"note\":\"no submitter\"}");
    add_event(s, "t-broker", "processing", NULL);
    add_event(s, "t-broker", "processing", "{\"attempt\":1,\"publisher\":\"team-a\"}");
    add_event(s, "t-broker", "processing", "{\"attempt\":2,\"publisher\":\"team-b\"}");
    check_owner(s, "t-broker", NULL, "team-a");

    add_task(s, "t-conflict-first");
    add_event(s, "t-conflict-first", "conflict", "{\"submitter\":\"mallory\"}");
    check_owner(s, "t-conflict-first", "mallory", NULL);

    /* Processed, but the row named no publisher (an older row). */
    add_task(s, "t-anonymous");
    add_event(s, "t-anonymous", "processing", "{\"attempt\":1}");
    check_owner(s, "t-anonymous", NULL, NULL);

    add_task(s, "t-bare");
    check_owner(s, "t-bare", NULL, NULL);
    check_owner(s, "no-such-task", NULL, NULL);
    store_close(s);
}

int main(void)
{
    if (store_fixture_init(&fixture, "task-owner") != 0)
        return 1;
    store_fixture_each(&fixture, "task_owner", run);
    store_fixture_close(&fixture);
    return test_summary();
}
