/* Tests of common/store/store_inventory.c (inventory snapshots for what-if replay)
 * and their retention in common/store/store_prune.c, on SQLite and, when VF_PG_URL
 * is set, PostgreSQL: a snapshot is recorded only when the content changes,
 * the listing from a time starts with the snapshot in force then, and
 * pruning keeps that one too. */
#include "store.h"
#include "store_inventory.h"
#include "store_prune.h"
#include "store_reservations.h"
#include "store_tasks.h"
#include "store_fixture.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEEN 16

typedef struct seen {
    int n;
    char at[MAX_SEEN][32];
    char hosts[MAX_SEEN][64];
    int stop_after; /* 0: never */
} seen;

static int collect(const store_inventory_snapshot *snapshot, void *ctx)
{
    seen *s = ctx;
    if (s->n < MAX_SEEN) {
        snprintf(s->at[s->n], sizeof s->at[0], "%s", snapshot->recorded_at);
        snprintf(s->hosts[s->n], sizeof s->hosts[0], "%s", snapshot->hosts);
        char hash[STORE_INVENTORY_HASH_SIZE];
        store_inventory_hash(snapshot->hosts, strlen(snapshot->hosts), hash);
        CHECK_STR(snapshot->content_hash, hash);
    }
    s->n++;
    return s->stop_after && s->n >= s->stop_after;
}

static int record(store *st, const char *at, const char *hosts)
{
    vf_error err;
    vf_error_init(&err);
    char hash[STORE_INVENTORY_HASH_SIZE];
    store_inventory_hash(hosts, strlen(hosts), hash);
    int rc = store_inventory_snapshot_record(st, hash, at, hosts, &err);
    CHECKF(rc >= 0, "%s", err.text);
    return rc;
}

#define A "{\"nodes\":[{\"name\":\"bm-1\",\"cpu\":8,\"memory\":1024}]}"
#define B "{\"nodes\":[{\"name\":\"bm-1\",\"cpu\":16,\"memory\":1024}]}"
#define C "{\"nodes\":[{\"name\":\"bm-2\",\"cpu\":8,\"memory\":1024}]}"

static void run(const char *location)
{
    vf_error err;
    vf_error_init(&err);
    store *st = store_open(location, STORE_READ_WRITE, &err);
    CHECKF(st != NULL, "%s", err.text);
    if (!st)
        return;

    char hash[STORE_INVENTORY_HASH_SIZE];
    store_inventory_hash("", 0, hash);
    CHECK_STR(hash, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

    /* Only changes are recorded; going back to earlier content is a change. */
    CHECK(record(st, "2026-11-01T00:00:00.000Z", A) == 1);
    CHECK(record(st, "2026-11-01T00:01:00.000Z", A) == 0);
    CHECK(record(st, "2026-11-02T00:00:00.000Z", B) == 1);
    CHECK(record(st, "2026-11-03T00:00:00.000Z", B) == 0);
    CHECK(record(st, "2026-11-04T00:00:00.000Z", A) == 1);
    CHECK(record(st, "2026-11-05T00:00:00.000Z", C) == 1);

    seen all = {0};
    CHECK(store_inventory_snapshots(st, NULL, collect, &all, &err) == 0);
    CHECK(all.n == 4);
    CHECK_STR(all.at[0], "2026-11-01T00:00:00.000Z");
    CHECK_STR(all.hosts[0], A);
    CHECK_STR(all.hosts[1], B);
    CHECK_STR(all.at[2], "2026-11-04T00:00:00.000Z");
    CHECK_STR(all.hosts[3], C);

    /* From a time between two snapshots: the one in force then first. */
    seen since = {0};
    CHECK(store_inventory_snapshots(st, "2026-11-03T12:00:00.000Z", collect, &since, &err) == 0);
    CHECK(since.n == 3);
    CHECK_STR(since.at[0], "2026-11-02T00:00:00.000Z");
    CHECK_STR(since.at[2], "2026-11-05T00:00:00.000Z");
    /* Exactly at a snapshot: that one, not the one before. */
    seen exact = {0};
    CHECK(store_inventory_snapshots(st, "2026-11-04T00:00:00.000Z", collect, &exact, &err) == 0);
    CHECK(exact.n == 2);
    CHECK_STR(exact.at[0], "2026-11-04T00:00:00.000Z");
    /* Before the first: everything. */
    seen before = {0};
    CHECK(store_inventory_snapshots(st, "2026-10-01T00:00:00.000Z", collect, &before, &err) == 0);
    CHECK(before.n == 4);
    /* A callback may stop the listing. */
    seen stopped = {.stop_after = 2};
    CHECK(store_inventory_snapshots(st, NULL, collect, &stopped, &err) == 0);
    CHECK(stopped.n == 2);

    /* Retention at 2026-11-04T12:00: the snapshots of 11-01 and 11-02 go,
     * 11-04's (in force at the cutoff) and 11-05's stay; the dry run counts
     * the same, in batches of one. */
    const char *cutoff = "2026-11-04T12:00:00.000Z";
    store_prune_counts dry = {0};
    CHECK(store_prune_count(st, cutoff, &dry, &err) == 0);
    CHECKF(dry.inventory_snapshots == 2, "%lld", (long long)dry.inventory_snapshots);
    store_prune_counts deleted = {0};
    int rc, rounds = 0;
    do {
        rc = store_prune_batch(st, cutoff, 1, &deleted, &err);
        rounds++;
    } while (rc == 1 && rounds < 10);
    CHECKF(rc == 0, "%s", err.text);
    CHECK(rounds == 3); /* 1, 1, then nothing left */
    CHECK(deleted.inventory_snapshots == 2);
    seen kept = {0};
    CHECK(store_inventory_snapshots(st, cutoff, collect, &kept, &err) == 0);
    CHECK(kept.n == 2);
    CHECK_STR(kept.at[0], "2026-11-04T00:00:00.000Z");
    CHECK_STR(kept.at[1], "2026-11-05T00:00:00.000Z");
    /* Pruning again at the same cutoff keeps the one in force. */
    store_prune_counts again = {0};
    CHECK(store_prune_batch(st, cutoff, 10, &again, &err) == 0);
    CHECK(again.inventory_snapshots == 0);
    /* A cutoff past every snapshot keeps the newest. */
    CHECK(store_prune_batch(st, "2026-12-01T00:00:00.000Z", 10, &again, &err) == 0);
    CHECK(again.inventory_snapshots == 1);
    seen last = {0};
    CHECK(store_inventory_snapshots(st, NULL, collect, &last, &err) == 0);
    CHECK(last.n == 1);
    CHECK_STR(last.hosts[0], C);
    /* The newest is C: recording C again adds nothing. */
    CHECK(record(st, "2026-12-02T00:00:00.000Z", C) == 0);
    store_close(st);

    /* The listing works on a read-only handle (virtflowctl simulate). */
    store *ro = store_open(location, STORE_READ_ONLY, &err);
    CHECKF(ro != NULL, "%s", err.text);
    if (ro) {
        seen read = {0};
        CHECK(store_inventory_snapshots(ro, NULL, collect, &read, &err) == 0);
        CHECK(read.n == 1);
        store_close(ro);
    }
}

typedef struct steps {
    int n;
    char lines[8][96];
} steps;

static int collect_step(const store_history_step *step, void *ctx)
{
    steps *s = ctx;
    if (s->n < 8)
        snprintf(s->lines[s->n], sizeof s->lines[0], "%s %s %s %s",
                 step->release ? "release"
                 : step->spare ? "spare"
                               : "request",
                 step->task_id, step->at, step->request ? step->request : "-");
    s->n++;
    return 0;
}

static void add_task(store *st, const char *id, const char *kind, const char *at)
{
    vf_error err;
    vf_error_init(&err);
    store_task_fields f = {.id = id,
                           .kind = kind,
                           .status = "completed",
                           .request = "{\"cpu\":1}",
                           .vmid = -1,
                           .at = at};
    CHECKF(store_task_insert(st, &f, &err) == 0, "%s: %s", id, err.text);
}

/* The history to replay: schedule and spare requests by creation, releases
 * that were not the VM appearing, in time order, from `since`. */
static void run_history(const char *location)
{
    vf_error err;
    vf_error_init(&err);
    store *st = store_open(location, STORE_READ_WRITE, &err);
    CHECKF(st != NULL, "%s", err.text);
    if (!st)
        return;
    add_task(st, "t-old", "schedule", "2026-11-01T00:00:00.000Z");
    add_task(st, "t-b", "schedule", "2026-11-02T00:00:02.000Z");
    add_task(st, "t-a", "schedule", "2026-11-02T00:00:01.000Z");
    add_task(st, "t-spare", "spare", "2026-11-02T00:00:03.000Z");
    CHECK(store_reservation_add(st, "t-a", "bm-1", 1, 512, 0, 100, "2026-11-02T00:00:01.000Z",
                                "2026-11-03T00:00:00.000Z", &err) == 0);
    CHECK(store_reservation_add(st, "t-b", "bm-1", 1, 512, 0, 101, "2026-11-02T00:00:02.000Z",
                                "2026-11-03T00:00:00.000Z", &err) == 0);
    /* t-a released by a task.release; t-b's VM appeared (bound): not a step. */
    CHECK(store_reservation_release_task(st, "t-a", "2026-11-02T00:00:05.000Z", &err) == 1);
    CHECK(store_reservation_release_vmid(st, 101, "bm-1", "2026-11-02T00:00:06.000Z",
                                         "2026-11-02T00:00:06.000Z", &err) == 1);
    /* A preempted placement's vmid kept, then expired: the task's end was its
     * preemption, decided again since; the vmid's end ends nothing. */
    CHECK(store_reservation_keep_vmid(st, "t-b", "bm-1", 102, "2026-11-02T00:00:07.000Z",
                                      "2026-11-02T00:00:08.000Z", &err) == 0);
    CHECK(store_reservations_expire(st, "2026-11-02T00:00:09.000Z", &err) >= 1);
    steps got = {0};
    CHECKF(store_history(st, "2026-11-02T00:00:00.000Z", collect_step, &got, &err) == 0, "%s",
           err.text);
    CHECK(got.n == 4);
    CHECK_STR(got.lines[0], "request t-a 2026-11-02T00:00:01.000Z {\"cpu\":1}");
    CHECK_STR(got.lines[1], "request t-b 2026-11-02T00:00:02.000Z {\"cpu\":1}");
    CHECK_STR(got.lines[2], "spare t-spare 2026-11-02T00:00:03.000Z {\"cpu\":1}");
    CHECK_STR(got.lines[3], "release t-a 2026-11-02T00:00:05.000Z -");
    store_close(st);
}

int main(void)
{
    store_fixture f;
    if (store_fixture_init(&f, "store-inventory") != 0)
        return 1;
    store_fixture_each(&f, "inventory", run);
    store_fixture_each(&f, "history", run_history);
    store_fixture_close(&f);
    return test_summary();
}
