/* wal_sync and the store's deferred sync: tickets cover earlier commits, a
 * failed sync is final, and committed data is there after a reopen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"
#include "store_tasks.h"
#include "store_fixture.h"
#include "testlib.h"
#include "wal_sync.h"

static store_fixture fixture;
static char path[256];

static int add_task(store *s, const char *id)
{
    store_task_fields t = {.id = id,
                           .kind = "schedule",
                           .status = "completed",
                           .attempts = 1,
                           .request = "{}",
                           .vmid = -1,
                           .at = "2026-11-22T01:02:03.000Z"};
    vf_error err;
    vf_error_init(&err);
    int rc = store_begin(s, &err) == 0 && store_task_insert(s, &t, &err) == 0 &&
                     store_commit(s, &err) == 0
                 ? 0
                 : -1;
    if (rc < 0)
        fprintf(stderr, "add_task %s: %s\n", id, err.text);
    return rc;
}

static store *open_store(vf_error *err)
{
    vf_error_init(err);
    store *s = store_open(path, STORE_READ_WRITE, err);
    CHECKF(s != NULL, "%s", err->text);
    return s;
}

static void test_tickets(void)
{
    vf_error err;
    store *s = open_store(&err);
    if (!s)
        return;
    /* Only a handle that deferred its sync can be synced. */
    CHECK(store_sync(s, &err) < 0);
    CHECK_CONTAINS(err.text, "without store_defer_sync");
    vf_error_init(&err);
    CHECKF(store_defer_sync(s, &err) == 0, "%s", err.text);
    CHECK(store_defer_sync(s, &err) == 0); /* twice is harmless */

    wal_sync *w = wal_sync_start(s, &err);
    CHECKF(w != NULL, "%s", err.text);
    CHECK(add_task(s, "t-1") == 0);
    uint64_t first = wal_sync_request(w);
    CHECK(add_task(s, "t-2") == 0);
    uint64_t second = wal_sync_request(w);
    CHECK(second > first);
    CHECKF(wal_sync_wait(w, second, &err) == 0, "%s", err.text);
    /* A later ticket covers the earlier one. */
    CHECK(wal_sync_done(w, first));
    CHECK(wal_sync_done(w, second));
    CHECK(!wal_sync_done(w, second + 1));
    wal_sync_stop(w);
    store_close(s);

    /* What was committed is there for the next handle. */
    s = store_open(path, STORE_READ_ONLY, &err);
    CHECKF(s != NULL, "%s", err.text);
    store_task task;
    memset(&task, 0, sizeof task);
    CHECK(s && store_task_get(s, "t-2", &task, &err) == 0 && strcmp(task.status, "completed") == 0);
    store_task_clear(&task);
    store_close(s);
}

static void test_failure_is_final(void)
{
    vf_error err;
    store *s = open_store(&err);
    if (!s)
        return;
    CHECK(store_defer_sync(s, &err) == 0);
    wal_sync *w = wal_sync_start(s, &err);
    CHECK(add_task(s, "t-3") == 0);
    CHECK(wal_sync_wait(w, wal_sync_request(w), &err) == 0);

    /* The WAL removed under the worker: syncing it proves nothing any more. */
    char wal[sizeof path + 8];
    snprintf(wal, sizeof wal, "%s-wal", path);
    CHECK(unlink(wal) == 0);
    uint64_t ticket = wal_sync_request(w);
    CHECK(wal_sync_wait(w, ticket, &err) < 0);
    CHECK_CONTAINS(err.text, "removed while in use");
    CHECK(!wal_sync_done(w, ticket));
    /* And stays failed: no later ticket is ever reported durable. */
    vf_error again;
    vf_error_init(&again);
    CHECK(wal_sync_wait(w, wal_sync_request(w), &again) < 0);
    CHECK_CONTAINS(again.text, "removed while in use");
    wal_sync_stop(w);
    store_close(s);
}

int main(void)
{
    if (store_fixture_init(&fixture, "wal-sync") != 0)
        return 1;
    store_fixture_file(&fixture, "virtflow.db", path, sizeof path);
    test_tickets();
    test_failure_is_final();
    store_fixture_close(&fixture);
    return test_summary();
}
