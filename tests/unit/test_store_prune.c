/* Tests of common/store/store_prune.c (retention) against real SQLite files in a
 * fresh directory under /tmp: what goes, what stays, batch bounds, dry-run
 * counts, idempotence across two handles, and the incremental vacuum. */
#include "store.h"
#include "store_dead_letters.h"
#include "store_deliveries.h"
#include "store_outbox.h"
#include "store_prune.h"
#include "store_reservations.h"
#include "store_spares.h"
#include "store_tasks.h"
#include "store_fixture.h"
#include "testlib.h"

#include <sqlite3.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static store_fixture fixture;

#define OLD "2026-11-01T00:00:00.000Z"
#define CUTOFF "2026-11-10T00:00:00.000Z"
#define YOUNG "2026-11-20T00:00:00.000Z"
#define FAR "2026-12-31T00:00:00.000Z"

static store *open_fresh(const char *name)
{
    char path[256];
    store_fixture_file(&fixture, name, path, sizeof path);
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    return s;
}

static void add_task(store *s, const char *id, const char *kind, const char *status, const char *at,
                     int events)
{
    vf_error err;
    vf_error_init(&err);
    store_task_fields f = {
        .id = id, .kind = kind, .status = status, .request = "{}", .vmid = -1, .at = at};
    CHECKF(store_task_insert(s, &f, &err) == 0, "%s: %s", id, err.text);
    for (int i = 0; i < events; i++)
        CHECKF(store_task_event_add(s, id, at, status, "{\"n\":1}", &err) == 0, "%s", err.text);
}

/* A reservation of task_id, ended at `released_at` by an inventory showing
 * its VM, its time running out then too (NULL: still held, until FAR). */
static void add_reservation(store *s, const char *task_id, int64_t vmid, const char *released_at)
{
    vf_error err;
    vf_error_init(&err);
    CHECKF(store_reservation_add(s, task_id, "bm-001", 1, 512, 0, vmid, OLD,
                                 released_at ? released_at : FAR, &err) == 0,
           "%s", err.text);
    if (released_at)
        CHECK(store_reservation_release_vmid(s, vmid, "bm-001", released_at, released_at, &err) ==
              1);
}

static void add_spare(store *s, const char *task_id, int index, const char *state,
                      const char *release_task_id)
{
    vf_error err;
    vf_error_init(&err);
    char name[64];
    snprintf(name, sizeof name, "spare-%s-%d", task_id, index);
    store_spare spare = {.task_id = task_id,
                         .upgrade_id = task_id,
                         .index = index,
                         .name = name,
                         .node = "bm-001",
                         .vmid = 500 + index,
                         .cpu = 1,
                         .memory = 512,
                         .state = state,
                         .ready_timeout_s = 60,
                         .release_task_id = release_task_id,
                         .pipeline_id = -1,
                         .created_at = OLD,
                         .updated_at = OLD};
    CHECKF(store_spare_add(s, &spare, &err) == 0, "%s", err.text);
}

static int task_exists(store *s, const char *id)
{
    store_task t = {0};
    vf_error err;
    vf_error_init(&err);
    int rc = store_task_get(s, id, &t, &err);
    store_task_clear(&t);
    return rc == 0;
}

/* Read through a connection of its own, as an operator's sqlite3 would. */
static int count_rows(const char *path_name, const char *sql)
{
    char path[256];
    store_fixture_file(&fixture, path_name, path, sizeof path);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int n = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static int prune_all(store *s, const char *cutoff, int limit, store_prune_counts *deleted,
                     int *rounds)
{
    vf_error err;
    vf_error_init(&err);
    int rc;
    *rounds = 0;
    do {
        rc = store_prune_batch(s, cutoff, limit, deleted, &err);
        (*rounds)++;
    } while (rc == 1 && *rounds < 1000);
    CHECKF(rc == 0, "prune: %s", err.text);
    return rc;
}

/* Every kind of row, on each side of the cutoff; only final, old, unused
 * rows go, and the dry run counts exactly what goes. */
static void test_what_goes_and_what_stays(void)
{
    store *s = open_fresh("mixed.db");
    if (!s)
        return;
    vf_error err;
    vf_error_init(&err);

    /* go */
    add_task(s, "old-completed", "schedule", "completed", OLD, 3);
    add_reservation(s, "old-completed", 100, OLD);
    add_task(s, "old-failed", "schedule", "failed", OLD, 5);
    add_task(s, "old-spare-released", "spare", "released", OLD, 2);
    add_spare(s, "old-spare-released", 1, "released", NULL);
    add_spare(s, "old-spare-released", 2, "failed", NULL);
    add_reservation(s, "old-spare-released", 101, OLD);
    /* stay */
    add_task(s, "young-completed", "schedule", "completed", YOUNG, 2);
    add_task(s, "old-processing", "schedule", "processing", OLD, 1);
    add_task(s, "old-retrying", "schedule", "retrying", OLD, 1);
    add_task(s, "old-completed-held", "schedule", "completed", OLD, 1);
    add_reservation(s, "old-completed-held", 102, NULL);
    add_task(s, "old-spare-ready", "spare", "ready", OLD, 1);
    add_spare(s, "old-spare-ready", 1, "ready", NULL);
    add_task(s, "old-spare-final-live", "spare", "released", OLD, 1);
    add_spare(s, "old-spare-final-live", 1, "releasing", NULL);
    add_task(s, "old-release-task", "spare", "released", OLD, 1);
    add_task(s, "old-spare-being-released", "spare", "releasing", OLD, 1);
    add_spare(s, "old-spare-being-released", 1, "releasing", "old-release-task");
    /* a live task's old released reservation goes, a young one stays */
    add_reservation(s, "old-processing", 103, OLD);
    add_reservation(s, "old-processing", 104, YOUNG);

    /* outbox: confirmed old goes; unconfirmed old and confirmed young stay */
    CHECK(store_outbox_add(s, "evt-old-confirmed", "event.x", "{}", OLD, &err) == 0);
    CHECK(store_outbox_mark_confirmed(s, "evt-old-confirmed", OLD, &err) == 0);
    CHECK(store_outbox_add(s, "evt-old-pending", "event.x", "{}", OLD, &err) == 0);
    CHECK(store_outbox_add(s, "evt-young", "event.x", "{}", OLD, &err) == 0);
    CHECK(store_outbox_mark_confirmed(s, "evt-young", YOUNG, &err) == 0);

    /* deliveries: finished old go; pending old and finished young stay */
    static const struct {
        const char *event, *status, *at;
    } deliveries[] = {{"d-delivered", "delivered", OLD},
                      {"d-failed", "failed", OLD},
                      {"d-pending", "pending", OLD},
                      {"d-delivering", "delivering", OLD},
                      {"d-young", "delivered", YOUNG}};
    for (size_t i = 0; i < sizeof deliveries / sizeof deliveries[0]; i++) {
        CHECK(store_delivery_add(s, deliveries[i].event, "r", "{}", deliveries[i].at, &err) == 0);
        store_delivery_change change = {
            .event_id = deliveries[i].event, .receiver = "r", .status = deliveries[i].status};
        CHECK(store_delivery_update(s, &change, &err) == 0);
    }

    /* dead letters: records last parked before the cutoff go, the young one stays */
    static const char *const dead_at[][2] = {
        {"dl-old", OLD}, {"dl-old-2", OLD}, {"dl-young", YOUNG}};
    for (size_t i = 0; i < sizeof dead_at / sizeof dead_at[0]; i++) {
        store_dead_letter_park park = {.routing_key = "task.schedule",
                                       .message_id = dead_at[i][0],
                                       .reason = "not JSON",
                                       .parked_by = "worker",
                                       .parked_at = dead_at[i][1]};
        CHECK(store_dead_letter_record(s, &park, &err) == 0);
    }

    store_prune_counts dry = {0};
    CHECKF(store_prune_count(s, CUTOFF, &dry, &err) == 0, "%s", err.text);
    CHECK(dry.tasks == 3);
    CHECK(dry.task_events == 10);
    CHECK(dry.reservations == 3); /* 100, 101 with their tasks; 103 */
    CHECK(dry.spares == 2);
    CHECK(dry.outbox == 1);
    CHECK(dry.deliveries == 2);
    CHECK(dry.dead_letters == 2);

    store_prune_counts deleted = {0};
    int rounds = 0;
    prune_all(s, CUTOFF, STORE_PRUNE_BATCH, &deleted, &rounds);
    CHECK(rounds == 1);
    CHECK(memcmp(&dry, &deleted, sizeof dry) == 0);
    CHECKF(deleted.tasks == 3 && deleted.task_events == 10 && deleted.reservations == 3 &&
               deleted.spares == 2 && deleted.outbox == 1 && deleted.deliveries == 2,
           "deleted %lld tasks %lld events %lld reservations %lld spares %lld outbox %lld "
           "deliveries",
           (long long)deleted.tasks, (long long)deleted.task_events,
           (long long)deleted.reservations, (long long)deleted.spares, (long long)deleted.outbox,
           (long long)deleted.deliveries);

    CHECK(!task_exists(s, "old-completed") && !task_exists(s, "old-failed") &&
          !task_exists(s, "old-spare-released"));
    static const char *kept[] = {
        "young-completed", "old-processing",       "old-retrying",     "old-completed-held",
        "old-spare-ready", "old-spare-final-live", "old-release-task", "old-spare-being-released"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        CHECKF(task_exists(s, kept[i]), "%s was pruned", kept[i]);
    CHECK(count_rows("mixed.db", "SELECT count(*) FROM task_events") == 9);
    CHECK(count_rows("mixed.db", "SELECT count(*) FROM reservations") == 2); /* 102, 104 */
    CHECK(count_rows("mixed.db", "SELECT count(*) FROM reservations WHERE vmid = 104") == 1);
    CHECK(count_rows("mixed.db", "SELECT count(*) FROM spares") == 3);
    CHECK(count_rows("mixed.db", "SELECT count(*) FROM outbox") == 2);
    CHECK(count_rows("mixed.db", "SELECT count(*) FROM deliveries WHERE event_id IN "
                                 "('d-pending', 'd-delivering', 'd-young')") == 3);
    CHECK(count_rows("mixed.db", "SELECT count(*) FROM deliveries") == 3);
    CHECK(count_rows("mixed.db", "SELECT count(*) FROM dead_letters WHERE message_id = "
                                 "'dl-young'") == 1);
    CHECK(count_rows("mixed.db", "SELECT count(*) FROM dead_letters") == 1);

    /* Again: nothing left to delete, nothing counted twice. */
    store_prune_counts again = {0};
    CHECK(store_prune_batch(s, CUTOFF, STORE_PRUNE_BATCH, &again, &err) == 0);
    store_prune_counts zero = {0};
    CHECK(memcmp(&again, &zero, sizeof zero) == 0);
    CHECK(store_prune_count(s, CUTOFF, &dry, &err) == 0 && memcmp(&dry, &zero, sizeof zero) == 0);
    store_close(s);
}

/* 1,200 old tasks, batches of 500: three rounds of at most 500 each, and two
 * handles taking turns (two workers on one store) delete each row once. */
static void test_batches_bounded_and_idempotent(void)
{
    store *s = open_fresh("batches.db");
    store *other = open_fresh("batches.db");
    if (!s || !other) {
        store_close(s);
        store_close(other);
        return;
    }
    vf_error err;
    vf_error_init(&err);
    CHECK(store_begin(s, &err) == 0);
    for (int i = 0; i < 1200; i++) {
        char id[32];
        snprintf(id, sizeof id, "t%04d", i);
        add_task(s, id, "schedule", i % 2 ? "completed" : "failed", OLD, 2);
    }
    CHECK(store_commit(s, &err) == 0);

    store_prune_counts first = {0}, second = {0}, third = {0};
    CHECK(store_prune_batch(s, CUTOFF, 500, &first, &err) == 1);
    CHECK(first.tasks == 500 && first.task_events == 1000);
    CHECK(store_prune_batch(other, CUTOFF, 500, &second, &err) == 1);
    CHECK(second.tasks == 500 && second.task_events == 1000);
    CHECK(store_prune_batch(s, CUTOFF, 500, &third, &err) == 0);
    CHECK(third.tasks == 200 && third.task_events == 400);
    store_prune_counts late = {0};
    CHECK(store_prune_batch(other, CUTOFF, 500, &late, &err) == 0 && late.tasks == 0);
    CHECK(count_rows("batches.db", "SELECT count(*) FROM tasks") == 0);
    CHECK(count_rows("batches.db", "SELECT count(*) FROM task_events") == 0);

    /* Bad arguments are an error, not a full-table delete. */
    CHECK(store_prune_batch(s, CUTOFF, 0, &late, &err) < 0 && err.code == VF_EINVAL);
    store_close(other);
    store_close(s);
}

static long long file_size(const char *name)
{
    char path[256];
    store_fixture_file(&fixture, name, path, sizeof path);
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* A new store is INCREMENTAL: after pruning, vacuum steps give the pages
 * back and the file shrinks. An old store (auto_vacuum NONE) is reported as
 * such and the step does nothing. */
/* store_others_wrote: another connection's commit is seen once; this
 * handle's own commits are not (prune pauses only for other writers). */
static void test_others_wrote(void)
{
    store *s = open_fresh("others.db");
    if (!s)
        return;
    vf_error err;
    vf_error_init(&err);
    int64_t version = -1;
    bool wrote = true;
    CHECK(store_others_wrote(s, &version, &wrote, &err) == 0 && !wrote); /* takes note */
    add_task(s, "own-1", "schedule", "completed", OLD, 1);
    CHECK(store_others_wrote(s, &version, &wrote, &err) == 0);
    CHECKF(!wrote, "its own commit is not another writer's");

    char path[256];
    store_fixture_file(&fixture, "others.db", path, sizeof path);
    sqlite3 *other = NULL;
    CHECK(sqlite3_open(path, &other) == SQLITE_OK);
    CHECK(sqlite3_exec(other,
                       "INSERT INTO tasks (id, kind, status, created_at, updated_at) VALUES "
                       "('other-1', 'schedule', 'processing', '2020-01-01T00:00:00.000Z', "
                       "'2020-01-01T00:00:00.000Z')",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(other);
    CHECK(store_others_wrote(s, &version, &wrote, &err) == 0);
    CHECKF(wrote, "another connection's commit is seen");
    CHECK(store_others_wrote(s, &version, &wrote, &err) == 0);
    CHECKF(!wrote, "and only once");
    store_close(s);
}

static void test_vacuum(void)
{
    store *s = open_fresh("vacuum.db");
    if (!s)
        return;
    vf_error err;
    vf_error_init(&err);
    bool incremental = false;
    CHECK(store_auto_vacuum_incremental(s, &incremental, &err) == 0 && incremental);
    char big[4096];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char detail[4200];
    snprintf(detail, sizeof detail, "{\"pad\":\"%s\"}", big);
    CHECK(store_begin(s, &err) == 0);
    for (int i = 0; i < 2000; i++) {
        char id[32];
        snprintf(id, sizeof id, "v%04d", i);
        store_task_fields f = {.id = id,
                               .kind = "schedule",
                               .status = "completed",
                               .request = "{}",
                               .vmid = -1,
                               .at = OLD};
        CHECK(store_task_insert(s, &f, &err) == 0);
        CHECK(store_task_event_add(s, id, OLD, "completed", detail, &err) == 0);
    }
    CHECK(store_commit(s, &err) == 0);
    int wal = 0, copied = 0;
    CHECK(store_checkpoint(s, &wal, &copied, &err) == 0);
    long long before = file_size("vacuum.db");

    store_prune_counts deleted = {0};
    int rounds = 0;
    prune_all(s, CUTOFF, 500, &deleted, &rounds);
    CHECK(deleted.tasks == 2000 && rounds == 5);
    int64_t freed = 0, total = 0;
    for (int i = 0; i < 100; i++) {
        CHECK(store_vacuum_step(s, 500, &freed, &err) == 0);
        total += freed;
        if (freed == 0)
            break;
    }
    CHECK(store_checkpoint(s, &wal, &copied, &err) == 0);
    long long after = file_size("vacuum.db");
    CHECKF(total > 1000 && after < before / 4, "freed %lld pages, file %lld -> %lld bytes",
           (long long)total, before, after);

    /* The WAL left by all that goes back to zero bytes. */
    char wal_path[256];
    store_fixture_file(&fixture, "vacuum.db-wal", wal_path, sizeof wal_path);
    struct stat wal_stat;
    CHECK(stat(wal_path, &wal_stat) == 0 && wal_stat.st_size > 1000000);
    bool truncated = false;
    CHECK(store_wal_truncate(s, &truncated, &err) == 0 && truncated);
    CHECKF(stat(wal_path, &wal_stat) == 0 && wal_stat.st_size == 0, "WAL still %lld bytes",
           (long long)wal_stat.st_size);
    store_close(s);

    /* An older store: made before the pragma existed, i.e. with a table in
     * it before store_open could set auto_vacuum. */
    char path[256];
    store_fixture_file(&fixture, "old.db", path, sizeof path);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE unrelated (x)", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    s = open_fresh("old.db");
    if (!s)
        return;
    CHECK(store_auto_vacuum_incremental(s, &incremental, &err) == 0 && !incremental);
    freed = 7;
    CHECK(store_vacuum_step(s, 100, &freed, &err) == 0 && freed == 0);
    store_close(s);
}

/* Between EARLY and CUTOFF. */
#define EARLY "2026-11-03T00:00:00.000Z"
#define MIDDLE "2026-11-05T00:00:00.000Z"

/* A reservation of task_id ended at `ended` by an inventory showing its VM
 * (bound) or by a release (not bound), expiring at `expires`. */
static void add_ended(store *s, const char *task_id, int64_t vmid, const char *ended,
                      const char *expires, bool bound)
{
    vf_error err;
    vf_error_init(&err);
    CHECKF(store_reservation_add(s, task_id, "bm-001", 1, 512, 0, vmid, OLD, expires, &err) == 0,
           "%s", err.text);
    if (bound)
        CHECK(store_reservation_release_vmid(s, vmid, "bm-001", ended, ended, &err) == 1);
    else
        CHECK(store_reservation_release_task(s, task_id, ended, &err) == 1);
}

static int count_live_and_bound(const store_reservation *r, void *user)
{
    (void)r;
    (*(int *)user)++;
    return 0;
}

/* Retention's own cutoffs (retention_cutoffs_at): a reservation an
 * inventory ended is kept, with the final task it belongs to, until it was
 * bound and expired before `bound`, and a final task until last written
 * before `tasks`, even when the rows' cutoff is later (store.retention
 * shorter than those windows; issue 34). On SQLite and PostgreSQL. */
static void run_windows(const char *location)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(location, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    if (!s)
        return;
    /* kept: bound after EARLY; bound before but expiring after it */
    add_task(s, "bound-recently", "schedule", "completed", OLD, 1);
    add_ended(s, "bound-recently", 200, MIDDLE, MIDDLE, true);
    add_task(s, "bound-long-ttl", "schedule", "completed", OLD, 1);
    add_ended(s, "bound-long-ttl", 201, OLD, MIDDLE, true);
    add_task(s, "final-recently", "schedule", "failed", MIDDLE, 1);
    /* deleted: bound and expired before EARLY; released (nobody counts it) */
    add_task(s, "bound-long-ago", "schedule", "completed", OLD, 1);
    add_ended(s, "bound-long-ago", 202, OLD, OLD, true);
    add_task(s, "released", "schedule", "completed", OLD, 1);
    add_ended(s, "released", 203, MIDDLE, FAR, false);
    add_task(s, "final-long-ago", "schedule", "failed", OLD, 1);

    /* What a worker whose snapshot is as old as the bound cutoff counts. */
    int before = 0;
    CHECK(store_reservations_counted(s, EARLY, EARLY, count_live_and_bound, &before, &err) == 0);
    store_prune_cutoffs cutoffs = {.rows = CUTOFF, .tasks = EARLY, .bound = EARLY};
    store_prune_counts dry = {0}, deleted = {0};
    CHECKF(store_prune_count_at(s, &cutoffs, &dry, &err) == 0, "%s", err.text);
    int rc;
    while ((rc = store_prune_batch_at(s, &cutoffs, 2, &deleted, &err)) == 1)
        ;
    CHECKF(rc == 0, "%s", err.text);
    CHECKF(memcmp(&dry, &deleted, sizeof dry) == 0 && deleted.tasks == 3 &&
               deleted.reservations == 2,
           "%s: deleted %lld tasks, %lld reservations (counted %lld, %lld)", location,
           (long long)deleted.tasks, (long long)deleted.reservations, (long long)dry.tasks,
           (long long)dry.reservations);
    static const char *const kept[] = {"bound-recently", "bound-long-ttl", "final-recently"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        CHECKF(task_exists(s, kept[i]), "%s: %s was pruned", location, kept[i]);
    CHECK(!task_exists(s, "bound-long-ago") && !task_exists(s, "released") &&
          !task_exists(s, "final-long-ago"));
    /* That worker still counts what it did. */
    int after = 0;
    CHECK(store_reservations_counted(s, EARLY, EARLY, count_live_and_bound, &after, &err) == 0);
    CHECKF(after == before && after == 2, "%s: counted %d before, %d after", location, before,
           after);

    /* With one cutoff for everything (store.retention alone), they would go. */
    CHECK(store_prune_batch(s, CUTOFF, STORE_PRUNE_BATCH, &deleted, &err) == 0);
    CHECK(!task_exists(s, "bound-recently") && !task_exists(s, "final-recently"));
    store_close(s);
}

int main(void)
{
    if (store_fixture_init(&fixture, "prune") != 0)
        return 1;
    store_fixture_each(&fixture, "windows", run_windows);
    test_what_goes_and_what_stays();
    test_batches_bounded_and_idempotent();
    test_vacuum();
    test_others_wrote();
    store_fixture_close(&fixture);
    return test_summary();
}
