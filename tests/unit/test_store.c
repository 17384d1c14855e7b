/* Tests of common/store against real SQLite files in a fresh directory
 * under /tmp. */
#include "store.h"
#include "store_console.h"
#include "store_deliveries.h"
#include "store_outbox.h"
#include "store_reservations.h"
#include "store_tasks.h"
#include "store_fixture.h"
#include "testlib.h"

#include <sqlite3.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static store_fixture fixture;

/* Run one SQL statement returning one text cell on a raw connection, to see
 * the file as an operator's sqlite3 shell would. */
static char *raw_query(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char *out = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
        goto out;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto out;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        out = strdup((const char *)sqlite3_column_text(st, 0));
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

static int raw_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc;
}

static store_task_fields task_fields(const char *id, const char *status, const char *at)
{
    store_task_fields f = {.id = id,
                           .kind = "schedule",
                           .status = status,
                           .attempts = 0,
                           .request = "{\"requested_cpu\":4}",
                           .vmid = -1,
                           .at = at};
    return f;
}

/* ---- opening ---- */

static void test_open_creates_private_wal_store(void)
{
    char path[256];
    store_fixture_file(&fixture, "open.db", path, sizeof path);
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    store_task_fields f = task_fields("t-open", "queued", "2026-11-22T01:00:00.000Z");
    CHECK(store_task_insert(s, &f, &err) == 0);
    /* The WAL inherits the database file's permissions. */
    char wal[300];
    snprintf(wal, sizeof wal, "%s-wal", path);
    CHECK(stat(wal, &st) == 0 && (st.st_mode & 0777) == 0600);
    store_close(s);

    char *mode = raw_query(path, "PRAGMA journal_mode");
    CHECK_STR(mode, "wal");
    free(mode);
    char *version = raw_query(path, "PRAGMA user_version");
    char want[16];
    snprintf(want, sizeof want, "%d", store_schema_version());
    CHECK_STR(version, want);
    free(version);
    CHECK(store_schema_version() >= 1);

    /* Reopening applies nothing again and keeps the data. */
    s = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    store_task t = {0};
    CHECK(s && store_task_get(s, "t-open", &t, &err) == 0);
    CHECK_STR(t.status, "queued");
    store_task_clear(&t);
    store_close(s);
    version = raw_query(path, "PRAGMA user_version");
    CHECK_STR(version, want);
    free(version);
    store_close(NULL);
}

static void test_open_refuses_newer_schema(void)
{
    char path[256];
    store_fixture_file(&fixture, "newer.db", path, sizeof path);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", store_schema_version() + 1);
    CHECK(raw_exec(path, sql) == SQLITE_OK);
    vf_error err;
    vf_error_init(&err);
    CHECK(store_open(path, STORE_READ_WRITE, &err) == NULL);
    CHECK_CONTAINS(err.text, "newer than this program knows");
    CHECK_CONTAINS(err.text, path);
    /* Left as it was: no WAL switch, no tables. */
    char *mode = raw_query(path, "PRAGMA journal_mode");
    CHECK_STR(mode, "delete");
    free(mode);
    char *tables = raw_query(path, "SELECT count(*) FROM sqlite_master");
    CHECK_STR(tables, "0");
    free(tables);
    vf_error_init(&err);
    CHECK(store_open(path, STORE_READ_ONLY, &err) == NULL);
    CHECK_CONTAINS(err.text, "newer than this program knows");
}

static void test_open_read_only_errors(void)
{
    char path[256];
    store_fixture_file(&fixture, "missing.db", path, sizeof path);
    vf_error err;
    vf_error_init(&err);
    CHECK(store_open(path, STORE_READ_ONLY, &err) == NULL);
    char want[400];
    snprintf(want, sizeof want,
             "store %s does not exist (start virtflow-worker once, or check store.path)", path);
    CHECK_STR(err.text, want);
    CHECK(access(path, F_OK) != 0);

    /* An empty file (never migrated) is not readable as a store. */
    store_fixture_file(&fixture, "empty.db", path, sizeof path);
    CHECK(raw_exec(path, "SELECT 1") == SQLITE_OK);
    vf_error_init(&err);
    CHECK(store_open(path, STORE_READ_ONLY, &err) == NULL);
    CHECK_CONTAINS(err.text, "start virtflow-worker once to migrate it");

    /* Not a database at all. */
    store_fixture_file(&fixture, "garbage.db", path, sizeof path);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        for (int i = 0; i < 64; i++)
            fputs("this is not sqlite ", f);
        fclose(f);
    }
    vf_error_init(&err);
    CHECK(store_open(path, STORE_READ_WRITE, &err) == NULL);
    CHECK_CONTAINS(err.text, "not a database");
    CHECK(err.code == VF_EIO);

    /* Permission denied names the path (root ignores file modes). */
    if (geteuid() != 0) {
        store_fixture_file(&fixture, "locked.db", path, sizeof path);
        vf_error_init(&err);
        store *s = store_open(path, STORE_READ_WRITE, &err);
        store_close(s);
        CHECK(chmod(path, 0) == 0);
        vf_error_init(&err);
        CHECK(store_open(path, STORE_READ_ONLY, &err) == NULL);
        CHECK_CONTAINS(err.text, "permission denied");
        CHECK_CONTAINS(err.text, path);
        vf_error_init(&err);
        CHECK(store_open(path, STORE_READ_WRITE, &err) == NULL);
        CHECK_CONTAINS(err.text, "permission denied");
    }
}

static void test_reader_does_not_block_on_writer(void)
{
    char path[256];
    store_fixture_file(&fixture, "readers.db", path, sizeof path);
    vf_error err;
    vf_error_init(&err);
    store *w = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(w != NULL, "%s", err.text);
    if (!w)
        return;
    store_task_fields f = task_fields("t-committed", "completed", "2026-11-22T01:00:00.000Z");
    CHECK(store_task_insert(w, &f, &err) == 0);
    CHECK(store_begin(w, &err) == 0);
    f = task_fields("t-pending", "queued", "2026-11-22T01:00:01.000Z");
    CHECK(store_task_insert(w, &f, &err) == 0);
    /* More than the page cache holds (2 MiB by default), so the writer has
     * to spill pages to disk before committing: without WAL that takes an
     * exclusive lock and readers would be locked out. */
    static char big[1024];
    memset(big, 'x', sizeof big - 1);
    for (int i = 0; i < 4000; i++) {
        char id[32];
        snprintf(id, sizeof id, "t-bulk-%d", i);
        f = task_fields(id, "queued", "2026-11-22T01:00:01.000Z");
        f.request = big;
        if (store_task_insert(w, &f, &err) != 0) {
            CHECKF(false, "%s", err.text);
            break;
        }
    }

    /* The writer holds its write transaction open while the reader works;
     * a blocked reader would come back with "database is locked". */
    store *r = store_open(path, STORE_READ_ONLY, &err);
    CHECKF(r != NULL, "%s", err.text);
    if (r) {
        store_task t = {0};
        CHECKF(store_task_get(r, "t-committed", &t, &err) == 0, "%s", err.text);
        CHECK_STR(t.status, "completed");
        store_task_clear(&t);
        CHECK(store_task_get(r, "t-pending", &t, &err) == 1);
        /* Read-only means read-only. */
        vf_error_init(&err);
        f = task_fields("t-from-reader", "queued", "2026-11-22T01:00:02.000Z");
        CHECK(store_task_insert(r, &f, &err) == -1);
        CHECK_CONTAINS(err.text, "readonly");
    }
    vf_error_init(&err);
    CHECK(store_commit(w, &err) == 0);
    if (r) {
        store_task t = {0};
        CHECK(store_task_get(r, "t-pending", &t, &err) == 0);
        store_task_clear(&t);
    }
    store_close(r);
    store_close(w);
}

/* ---- tasks ---- */

typedef struct {
    int count;
    char ids[16][64];
    char statuses[16][32];
    char details[16][128];
    int stop_after; /* 0: never */
} collected;

static int collect_task(const store_task *t, void *ctx)
{
    collected *c = ctx;
    if (c->count < 16)
        snprintf(c->ids[c->count], sizeof c->ids[0], "%s", t->id);
    c->count++;
    return c->stop_after && c->count >= c->stop_after;
}

static int collect_event(const store_task_event *e, void *ctx)
{
    collected *c = ctx;
    if (c->count < 16) {
        snprintf(c->statuses[c->count], sizeof c->statuses[0], "%s", e->status);
        snprintf(c->details[c->count], sizeof c->details[0], "%s",
                 e->detail ? e->detail : "(null)");
    }
    c->count++;
    return 0;
}

static int list_ids(store *s, const store_task_filter *filter, collected *c)
{
    memset(c, 0, sizeof *c);
    return store_task_list(s, filter, collect_task, c, NULL);
}

static void test_tasks(store *s)
{
    vf_error err;
    vf_error_init(&err);
    store_task_fields f = task_fields("t-1", "queued", "2026-11-22T01:00:00.000Z");
    CHECKF(store_task_insert(s, &f, &err) == 0, "%s", err.text);
    store_task t = {0};
    CHECK(store_task_get(s, "t-1", &t, &err) == 0);
    CHECK_STR(t.id, "t-1");
    CHECK_STR(t.kind, "schedule");
    CHECK_STR(t.status, "queued");
    CHECK(t.reason == NULL && t.result == NULL && t.error == NULL && t.node == NULL);
    CHECK_STR(t.request, "{\"requested_cpu\":4}");
    CHECK(t.vmid == -1 && t.attempts == 0);
    CHECK_STR(t.created_at, "2026-11-22T01:00:00.000Z");
    CHECK_STR(t.updated_at, "2026-11-22T01:00:00.000Z");
    store_task_clear(&t);
    store_task_clear(&t);
    CHECK(store_task_get(s, "t-nope", &t, &err) == 1);

    /* A redelivered message must not create a second task. */
    vf_error_init(&err);
    CHECK(store_task_insert(s, &f, &err) == -1);
    CHECK(err.code == VF_EINVAL);
    /* SQLite: "UNIQUE constraint failed", PostgreSQL: "violates unique constraint". */
    CHECKF(strstr(err.text, "UNIQUE") || strstr(err.text, "unique"), "%s", err.text);
    vf_error_init(&err);
    f = task_fields("t-badkind", "queued", "2026-11-22T01:00:00.000Z");
    f.kind = "reboot";
    CHECK(store_task_insert(s, &f, &err) == -1);
    CHECK(err.code == VF_EINVAL);

    store_task_fields u = {.id = "t-1",
                           .status = "completed",
                           .attempts = 2,
                           .result = "{\"status\":\"completed\",\"vmid\":120}",
                           .node = "bm-001",
                           .vmid = 120,
                           .at = "2026-11-22T01:00:05.250Z"};
    vf_error_init(&err);
    CHECK(store_task_update(s, &u, &err) == 0);
    CHECK(store_task_get(s, "t-1", &t, &err) == 0);
    CHECK_STR(t.status, "completed");
    CHECK_STR(t.node, "bm-001");
    CHECK(t.vmid == 120 && t.attempts == 2);
    CHECK_STR(t.result, "{\"status\":\"completed\",\"vmid\":120}");
    CHECK_STR(t.request, "{\"requested_cpu\":4}");
    CHECK_STR(t.created_at, "2026-11-22T01:00:00.000Z");
    CHECK_STR(t.updated_at, "2026-11-22T01:00:05.250Z");
    store_task_clear(&t);
    u.id = "t-nope";
    CHECK(store_task_update(s, &u, &err) == 1);

    /* History, oldest first; unknown tasks cannot get history. */
    CHECK(store_task_event_add(s, "t-1", "2026-11-22T01:00:00.000Z", "queued", NULL, &err) == 0);
    CHECK(store_task_event_add(s, "t-1", "2026-11-22T01:00:01.000Z", "processing",
                               "{\"attempt\":1}", &err) == 0);
    CHECK(store_task_event_add(s, "t-1", "2026-11-22T01:00:05.250Z", "completed",
                               "{\"score\":87.5}", &err) == 0);
    vf_error_init(&err);
    CHECK(store_task_event_add(s, "t-ghost", "2026-11-22T01:00:00.000Z", "queued", NULL, &err) ==
          -1);
    CHECK(err.code == VF_EINVAL);
    collected c = {0};
    CHECK(store_task_events(s, "t-1", collect_event, &c, &err) == 0);
    CHECK(c.count == 3);
    CHECK_STR(c.statuses[0], "queued");
    CHECK_STR(c.details[0], "(null)");
    CHECK_STR(c.statuses[1], "processing");
    CHECK_STR(c.statuses[2], "completed");
    CHECK_STR(c.details[2], "{\"score\":87.5}");
    memset(&c, 0, sizeof c);
    CHECK(store_task_events(s, "t-ghost", collect_event, &c, &err) == 0 && c.count == 0);

    /* Listing: newest first, each filter narrows. */
    struct {
        const char *id, *kind, *status, *reason, *node, *at;
    } rows[] = {
        {"t-2", "schedule", "failed", "unschedulable", NULL, "2026-11-22T02:00:00.000Z"},
        {"t-3", "spare", "ready", NULL, "bm-002", "2026-11-22T03:00:00.000Z"},
        {"t-4", "schedule", "failed", "invalid", NULL, "2026-11-22T04:00:00.000Z"},
        {"t-5", "schedule", "completed", NULL, "bm-001", "2026-11-22T05:00:00.000Z"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        store_task_fields n = task_fields(rows[i].id, rows[i].status, rows[i].at);
        n.kind = rows[i].kind;
        n.reason = rows[i].reason;
        n.node = rows[i].node;
        CHECK(store_task_insert(s, &n, &err) == 0);
    }
    CHECK(list_ids(s, NULL, &c) == 0 && c.count == 5);
    CHECK_STR(c.ids[0], "t-5");
    CHECK_STR(c.ids[4], "t-1");
    store_task_filter filter = {.status = "failed"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 2);
    CHECK_STR(c.ids[0], "t-4");
    CHECK_STR(c.ids[1], "t-2");
    filter = (store_task_filter){.status = "failed", .reason = "unschedulable"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 1);
    CHECK_STR(c.ids[0], "t-2");
    filter = (store_task_filter){.kind = "spare"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 1);
    CHECK_STR(c.ids[0], "t-3");
    filter = (store_task_filter){.node = "bm-001"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 2);
    CHECK_STR(c.ids[0], "t-5");
    CHECK_STR(c.ids[1], "t-1");
    filter = (store_task_filter){.since = "2026-11-22T03:00:00.000Z"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 3);
    CHECK_STR(c.ids[2], "t-3");
    filter = (store_task_filter){.limit = 2};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 2);
    CHECK_STR(c.ids[1], "t-4");
    filter = (store_task_filter){.status = "released"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 0);
    /* A callback may stop early. */
    memset(&c, 0, sizeof c);
    c.stop_after = 1;
    CHECK(store_task_list(s, NULL, collect_task, &c, &err) == 0 && c.count == 1);
}

/* Tasks found the ways users know them (issue 36 item 7): by the request's
 * vm_name (a column of its own, filled at insert), by who submitted them
 * (virtflow-api's key name or the AMQP publisher, from the history), by
 * their error text (ASCII case ignored, LIKE's own characters literal); the
 * console's pages share the conditions. */
static void test_task_search(store *s)
{
    vf_error err;
    vf_error_init(&err);
    struct {
        const char *id, *request, *error, *detail;
    } rows[] = {
        {"s-1", "{\"vm_name\": \"web-1\", \"requested_cpu\": 2}",
         "0/3 nodes are available: 3 Insufficient CPU",
         "{\"via\":\"virtflow-api\",\"submitter\":\"ci\"}"},
        {"s-2", "{\"vm_name\": broken", "50%_done", "{\"attempt\":1,\"publisher\":\"other\"}"},
        {"s-3", "{\"vm_name\":\"web-10\"}", "500 done", "{\"attempt\":1,\"publisher\":\"ci\"}"},
        {"s-4", "{\"name\":\"vm_name\",\"vm_name\":7}", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        store_task_fields f = task_fields(rows[i].id, "failed", "2026-11-23T01:00:00.000Z");
        f.request = rows[i].request;
        f.error = rows[i].error;
        CHECKF(store_task_insert(s, &f, &err) == 0, "%s", err.text);
        if (rows[i].detail)
            CHECK(store_task_event_add(s, rows[i].id, "2026-11-23T01:00:00.000Z", "queued",
                                       rows[i].detail, &err) == 0);
    }
    collected c;
    store_task_filter filter = {.vm_name = "web-1"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 1);
    CHECK_STR(c.ids[0], "s-1");
    filter = (store_task_filter){.vm_name = "broken"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 0);
    /* A vm_name that is not a string is no name. */
    filter = (store_task_filter){.vm_name = "7"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 0);
    filter = (store_task_filter){.submitter = "ci"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 2);
    CHECK_STR(c.ids[0], "s-3");
    CHECK_STR(c.ids[1], "s-1");
    filter = (store_task_filter){.submitter = "other", .vm_name = "web-1"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 0);
    filter = (store_task_filter){.error = "insufficient cpu"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 1);
    CHECK_STR(c.ids[0], "s-1");
    filter = (store_task_filter){.error = "50%_"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 1);
    CHECK_STR(c.ids[0], "s-2");
    filter = (store_task_filter){.error = "0_d"};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 0);
    /* The console's pages and counts use the same conditions. */
    store_task_search q = {.filter = {.submitter = "ci", .error = "done"}};
    CHECK(store_task_search_count(s, &q, 100, &err) == 1);
    q = (store_task_search){.filter = {.vm_name = "web-10", .limit = 10}};
    memset(&c, 0, sizeof c);
    CHECK(store_task_search_page(s, &q, collect_task, &c, &err) == 0 && c.count == 1);
    CHECK_STR(c.ids[0], "s-3");
}

static int count_event(const store_task_event *e, void *ctx)
{
    (void)e;
    (*(int *)ctx)++;
    return 0;
}

/* virtflow-api takes back the row of a request the broker refused: only
 * while it is queued (a worker's row stays), history included. */
static void test_task_withdraw(store *s)
{
    vf_error err;
    vf_error_init(&err);
    store_task_fields f = task_fields("w-queued", "queued", "2026-11-22T01:00:00.000Z");
    CHECKF(store_task_insert(s, &f, &err) == 0, "%s", err.text);
    CHECK(store_task_event_add(s, "w-queued", f.at, "queued", NULL, &err) == 0);
    f = task_fields("w-taken", "processing", "2026-11-22T01:00:00.000Z");
    CHECK(store_task_insert(s, &f, &err) == 0);
    CHECK(store_task_event_add(s, "w-taken", f.at, "processing", NULL, &err) == 0);

    CHECK(store_begin(s, &err) == 0);
    CHECKF(store_task_withdraw(s, "w-queued", &err) == 0, "%s", err.text);
    CHECK(store_task_withdraw(s, "w-taken", &err) == 1);
    CHECK(store_task_withdraw(s, "w-nope", &err) == 1);
    CHECK(store_commit(s, &err) == 0);
    store_task t = {0};
    CHECK(store_task_get(s, "w-queued", &t, &err) == 1);
    CHECK(store_task_get(s, "w-taken", &t, &err) == 0);
    CHECK_STR(t.status, "processing");
    store_task_clear(&t);
    int rows = 0;
    CHECK(store_task_events(s, "w-queued", count_event, &rows, &err) == 0 && rows == 0);
    CHECK(store_task_events(s, "w-taken", count_event, &rows, &err) == 0 && rows == 1);
}

/* An operator's mark (virtflowctl task cancel | retry-now): set only from
 * the mark expected, and, when a status is given, only in that status;
 * read back with the row, prefetched or not. */
static void test_task_action(store *s)
{
    vf_error err;
    vf_error_init(&err);
    store_task_fields f = task_fields("a-wait", "retrying", "2026-11-22T01:00:00.000Z");
    CHECKF(store_task_insert(s, &f, &err) == 0, "%s", err.text);
    CHECK(store_task_set_action(s, "a-wait", NULL, "completed", "cancel", NULL, &err) == 1);
    CHECK(store_task_set_action(s, "a-wait", "retry_now", "retrying", "cancel", NULL, &err) == 1);
    CHECKF(store_task_set_action(s, "a-wait", NULL, "retrying", "retry_now", "{\"by\":\"op\"}",
                                 &err) == 0,
           "%s", err.text);
    store_task t = {0};
    CHECK(store_task_get(s, "a-wait", &t, &err) == 0);
    CHECK_STR(t.action, "retry_now");
    CHECK_STR(t.action_detail, "{\"by\":\"op\"}");
    store_task_clear(&t);
    CHECK(store_task_set_action(s, "a-wait", "retry_now", NULL, NULL, NULL, &err) == 0);
    CHECK(store_task_set_action(s, "a-nope", NULL, NULL, "cancel", NULL, &err) == 1);
    CHECK(store_begin(s, &err) == 0);
    const char *ids[] = {"a-wait"};
    CHECK(store_tasks_prefetch(s, ids, 1, &err) == 0);
    CHECK(store_task_get(s, "a-wait", &t, &err) == 0);
    CHECK(t.action == NULL && t.action_detail == NULL);
    store_task_clear(&t);
    CHECK(store_task_set_action(s, "a-wait", NULL, "retrying", "cancel", NULL, &err) == 0);
    CHECK(store_task_get(s, "a-wait", &t, &err) == 0);
    CHECK_STR(t.action, "cancel");
    store_task_clear(&t);
    CHECK(store_commit(s, &err) == 0);
}

/* virtflow-api's requeue sweep (api_sweep.h): stale queued rows only, and
 * each change only while the row is still queued and as read. Dates of 2000
 * so that no other test's rows are older. */
static void test_task_requeue(store *s)
{
    vf_error err;
    vf_error_init(&err);
    store_task_fields f = task_fields("r-old", "queued", "2000-01-01T01:00:00.000Z");
    CHECKF(store_task_insert(s, &f, &err) == 0, "%s", err.text);
    f = task_fields("r-new", "queued", "2000-01-01T03:00:00.000Z");
    CHECK(store_task_insert(s, &f, &err) == 0);
    f = task_fields("r-taken", "processing", "2000-01-01T01:00:00.000Z");
    CHECK(store_task_insert(s, &f, &err) == 0);

    collected c = {0};
    CHECKF(store_tasks_stale_queued(s, "2000-01-01T02:00:00.000Z", 10, collect_task, &c, &err) == 0,
           "%s", err.text);
    CHECK(c.count == 1 && strcmp(c.ids[0], "r-old") == 0);
    CHECKF(store_task_requeue_touch(s, "r-old", "2000-01-01T01:00:00.000Z",
                                    "2000-01-01T02:30:00.000Z", &err) == 0,
           "%s", err.text);
    /* As read before the touch: moved on. */
    CHECK(store_task_requeue_touch(s, "r-old", "2000-01-01T01:00:00.000Z",
                                   "2000-01-01T02:40:00.000Z", &err) == 1);
    CHECK(store_task_requeue_touch(s, "r-taken", "2000-01-01T01:00:00.000Z",
                                   "2000-01-01T02:40:00.000Z", &err) == 1);
    memset(&c, 0, sizeof c);
    CHECK(store_tasks_stale_queued(s, "2000-01-01T02:00:00.000Z", 10, collect_task, &c, &err) ==
              0 &&
          c.count == 0);
    CHECK(store_task_give_up(s, "r-taken", "2000-01-01T01:00:00.000Z", "2000-01-01T04:00:00.000Z",
                             "lost", "gone", &err) == 1);
    CHECKF(store_task_give_up(s, "r-old", "2000-01-01T02:30:00.000Z", "2000-01-01T04:00:00.000Z",
                              "lost", "gone", &err) == 0,
           "%s", err.text);
    store_task t = {0};
    CHECK(store_task_get(s, "r-old", &t, &err) == 0);
    CHECK_STR(t.status, "failed");
    CHECK_STR(t.reason, "lost");
    CHECK_STR(t.error, "gone");
    CHECK_STR(t.updated_at, "2000-01-01T04:00:00.000Z");
    store_task_clear(&t);
    CHECK(store_task_get(s, "r-taken", &t, &err) == 0);
    CHECK_STR(t.status, "processing");
    store_task_clear(&t);
    memset(&c, 0, sizeof c);
    CHECK(store_tasks_stale_queued(s, "2000-01-01T05:00:00.000Z", 10, collect_task, &c, &err) ==
              0 &&
          c.count == 1 && strcmp(c.ids[0], "r-new") == 0);
}

static void test_strings_verbatim(store *s)
{
    const char *id = "t-'quote\";semi";
    const char *evil = "'); DROP TABLE tasks;--";
    const char *bytes = "caf\xc3\xa9 \xff\xfe %s %n \\ \"\n\t";
    vf_error err;
    vf_error_init(&err);
    store_task_fields f = task_fields(id, "queued", "2026-11-22T06:00:00.000Z");
    f.request = evil;
    f.error = bytes;
    f.node = evil;
    CHECKF(store_task_insert(s, &f, &err) == 0, "%s", err.text);
    CHECK(store_task_event_add(s, id, "2026-11-22T06:00:00.000Z", evil, bytes, &err) == 0);
    store_task t = {0};
    CHECK(store_task_get(s, id, &t, &err) == 0);
    CHECK_STR(t.id, id);
    CHECK_STR(t.request, evil);
    CHECK_STR(t.error, bytes);
    CHECK_STR(t.node, evil);
    store_task_clear(&t);
    collected c = {0};
    store_task_filter filter = {.node = evil};
    CHECK(list_ids(s, &filter, &c) == 0 && c.count == 1);
    CHECK_STR(c.ids[0], id);
    memset(&c, 0, sizeof c);
    CHECK(store_task_events(s, id, collect_event, &c, &err) == 0 && c.count == 1);
    CHECK_STR(c.statuses[0], evil);
    CHECK_STR(c.details[0], bytes);
    /* The table is still there with everything in it. */
    CHECK(store_task_get(s, "t-1", &t, &err) == 0);
    store_task_clear(&t);
}

/* ---- one transaction for everything a message causes ---- */

static int count_reservation(const store_reservation *r, void *ctx)
{
    (void)r;
    (*(int *)ctx)++;
    return 0;
}

static void record_placement(store *s, const char *id, vf_error *err)
{
    const char *at = "2026-11-22T07:00:00.000Z";
    store_task_fields f = task_fields(id, "processing", at);
    CHECK(store_task_insert(s, &f, err) == 0);
    CHECK(store_task_event_add(s, id, at, "processing", NULL, err) == 0);
    CHECK(store_reservation_add(s, id, "bm-007", 4, 8192, 40, 777, at, "2026-11-22T07:15:00.000Z",
                                err) == 0);
    char event_id[64];
    snprintf(event_id, sizeof event_id, "evt_%s", id);
    CHECK(store_outbox_add(s, event_id, "event.task.completed", "{}", at, err) == 0);
}

static void test_transaction_is_atomic(store *s, const char *path)
{
    vf_error err;
    vf_error_init(&err);
    int64_t before = -1;
    CHECK(store_outbox_count_pending(s, &before, &err) == 0);

    CHECK(store_begin(s, &err) == 0);
    CHECK(store_in_transaction(s));
    vf_error_init(&err);
    CHECK(store_begin(s, &err) == -1);
    CHECK(err.code == VF_EINTERNAL);
    vf_error_init(&err);
    record_placement(s, "t-rolled-back", &err);
    CHECK(store_rollback(s, &err) == 0);
    CHECK(!store_in_transaction(s));
    CHECK(store_rollback(s, &err) == 0);

    store_task t = {0};
    CHECK(store_task_get(s, "t-rolled-back", &t, &err) == 1);
    int64_t pending = -1;
    CHECK(store_outbox_count_pending(s, &pending, &err) == 0 && pending == before);
    int live = 0;
    CHECK(store_reservations_live(s, "2026-11-22T07:00:00.000Z", count_reservation, &live, &err) ==
          0);
    CHECK(live == 0);
    collected c = {0};
    CHECK(store_task_events(s, "t-rolled-back", collect_event, &c, &err) == 0 && c.count == 0);

    CHECK(store_begin(s, &err) == 0);
    record_placement(s, "t-committed-group", &err);
    CHECK(store_commit(s, &err) == 0);

    /* Visible to another connection, as virtflowctl would see it. */
    store *r = store_open(path, STORE_READ_ONLY, &err);
    CHECKF(r != NULL, "%s", err.text);
    if (!r)
        return;
    CHECK(store_task_get(r, "t-committed-group", &t, &err) == 0);
    store_task_clear(&t);
    CHECK(store_outbox_count_pending(r, &pending, &err) == 0 && pending == before + 1);
    live = 0;
    CHECK(store_reservations_live(r, "2026-11-22T07:00:00.000Z", count_reservation, &live, &err) ==
          0);
    CHECK(live == 1);
    memset(&c, 0, sizeof c);
    CHECK(store_task_events(r, "t-committed-group", collect_event, &c, &err) == 0 && c.count == 1);
    store_close(r);
    /* Leave the store as the next tests expect it. */
    CHECK(store_reservation_release_task(s, "t-committed-group", "2026-11-22T07:00:01.000Z",
                                         &err) == 1);
    CHECK(store_outbox_mark_confirmed(s, "evt_t-committed-group", "2026-11-22T07:00:01.000Z",
                                      &err) == 0);
}

/* ---- reservations ---- */

typedef struct {
    int count;
    int64_t vmids[8];
    char nodes[8][32];
    double cpu[8];
    int64_t memory[8];
} reservations_seen;

static int collect_reservation(const store_reservation *r, void *ctx)
{
    reservations_seen *seen = ctx;
    if (seen->count < 8) {
        seen->vmids[seen->count] = r->vmid;
        snprintf(seen->nodes[seen->count], sizeof seen->nodes[0], "%s", r->node);
        seen->cpu[seen->count] = r->cpu;
        seen->memory[seen->count] = r->memory;
    }
    seen->count++;
    return 0;
}

static void test_reservations(store *s)
{
    vf_error err;
    vf_error_init(&err);
    const char *t0 = "2026-11-22T08:00:00.000Z";
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "r-%d", i);
        store_task_fields f = task_fields(id, "completed", t0);
        CHECK(store_task_insert(s, &f, &err) == 0);
    }
    CHECK(store_reservation_add(s, "r-0", "bm-001", 2.5, 4096, 20, 120, t0,
                                "2026-11-22T08:15:00.000Z", &err) == 0);
    CHECK(store_reservation_add(s, "r-1", "bm-002", 4, 8192, 40, 121, t0,
                                "2026-11-22T08:15:00.000Z", &err) == 0);
    CHECK(store_reservation_add(s, "r-2", "bm-003", 1, 1024, 0, -1, t0, "2026-11-22T08:05:00.000Z",
                                &err) == 0);
    vf_error_init(&err);
    CHECK(store_reservation_add(s, "r-ghost", "bm-003", 1, 1024, 0, 122, t0,
                                "2026-11-22T08:05:00.000Z", &err) == -1);
    CHECK(err.code == VF_EINVAL);

    reservations_seen seen = {0};
    CHECK(store_reservations_live(s, "2026-11-22T08:01:00.000Z", collect_reservation, &seen,
                                  &err) == 0);
    CHECK(seen.count == 3);
    CHECK(seen.vmids[0] == 120 && seen.cpu[0] == 2.5 && seen.memory[0] == 4096);
    CHECK_STR(seen.nodes[1], "bm-002");
    CHECK(seen.vmids[2] == -1);

    /* Past its expiry a reservation no longer counts, even before expire runs. */
    memset(&seen, 0, sizeof seen);
    CHECK(store_reservations_live(s, "2026-11-22T08:05:00.000Z", collect_reservation, &seen,
                                  &err) == 0);
    CHECK(seen.count == 2);

    /* The vmid on another host is not this reservation's VM. */
    CHECK(store_reservation_release_vmid(s, 121, "bm-001", "2026-11-22T08:02:00.000Z",
                                         "2026-11-22T08:01:58.000Z", &err) == 0);
    CHECK(store_reservation_release_vmid(s, 121, "bm-002", "2026-11-22T08:02:00.000Z",
                                         "2026-11-22T08:01:58.000Z", &err) == 1);
    CHECK(store_reservation_release_vmid(s, 121, "bm-002", "2026-11-22T08:02:00.000Z",
                                         "2026-11-22T08:01:58.000Z", &err) == 0);
    memset(&seen, 0, sizeof seen);
    CHECK(store_reservations_live(s, "2026-11-22T08:03:00.000Z", collect_reservation, &seen,
                                  &err) == 0);
    CHECK(seen.count == 2 && seen.vmids[0] == 120 && seen.vmids[1] == -1);

    CHECK(store_reservations_expire(s, "2026-11-22T08:04:59.999Z", &err) == 0);
    CHECK(store_reservations_expire(s, "2026-11-22T08:05:00.000Z", &err) == 1);
    CHECK(store_reservation_release_task(s, "r-0", "2026-11-22T08:06:00.000Z", &err) == 1);
    memset(&seen, 0, sizeof seen);
    CHECK(store_reservations_live(s, "2026-11-22T08:06:00.000Z", collect_reservation, &seen,
                                  &err) == 0);
    CHECK(seen.count == 0);
}

typedef struct priorities_seen {
    int count, with_priority;
    int32_t priority[4];
} priorities_seen;

static int collect_priority(const store_reservation *r, void *arg)
{
    priorities_seen *seen = arg;
    if (seen->count < 4)
        seen->priority[seen->count] = r->has_priority ? r->priority : INT32_MIN;
    seen->count++;
    seen->with_priority += r->has_priority;
    return 0;
}

/* Schema 12: a reservation's priority, read back (negative ones too), and
 * preemption's conditional end: only live, unbound, with a priority below
 * the preemptor's, on the named host. */
static void test_reservation_priority(store *s)
{
    vf_error err;
    vf_error_init(&err);
    const char *t0 = "2026-11-22T09:00:00.000Z", *until = "2026-11-22T09:15:00.000Z";
    static const char *const ids[] = {"pr-low", "pr-neg", "pr-spare", "pr-bound"};
    for (int i = 0; i < 4; i++) {
        store_task_fields f = task_fields(ids[i], "completed", t0);
        CHECK(store_task_insert(s, &f, &err) == 0);
    }
    int32_t low = 5, neg = -7;
    CHECK(store_reservation_add_priority(s, "pr-low", "bm-101", 1, 512, 0, 201, &low, t0, until,
                                         &err) == 0);
    CHECK(store_reservation_add_priority(s, "pr-neg", "bm-101", 1, 512, 0, 202, &neg, t0, until,
                                         &err) == 0);
    CHECK(store_reservation_add(s, "pr-spare", "bm-101", 1, 512, 0, 203, t0, until, &err) == 0);
    CHECK(store_reservation_add_priority(s, "pr-bound", "bm-101", 1, 512, 0, 204, &low, t0, until,
                                         &err) == 0);
    priorities_seen seen = {0};
    CHECK(store_reservations_live(s, "2026-11-22T09:01:00.000Z", collect_priority, &seen, &err) ==
          0);
    CHECK(seen.count == 4 && seen.with_priority == 3);
    CHECK(seen.priority[0] == 5 && seen.priority[1] == -7 && seen.priority[2] == INT32_MIN);
    CHECK(store_reservation_release_vmid(s, 204, "bm-101", "2026-11-22T09:02:00.000Z",
                                         "2026-11-22T09:01:59.000Z", &err) == 1);
    const char *at = "2026-11-22T09:03:00.000Z";
    CHECK(store_reservation_preempt(s, "pr-low", "bm-101", 5, at, &err) == 0); /* not below */
    CHECK(store_reservation_preempt(s, "pr-low", "bm-999", 6, at, &err) == 0); /* another host */
    CHECK(store_reservation_preempt(s, "pr-spare", "bm-101", 1000, at, &err) == 0); /* none */
    CHECK(store_reservation_preempt(s, "pr-bound", "bm-101", 1000, at, &err) == 0); /* bound */
    CHECK(store_reservation_preempt(s, "pr-neg", "bm-101", -6, at, &err) == 1);
    CHECK(store_reservation_preempt(s, "pr-low", "bm-101", 6, at, &err) == 1);
    CHECK(store_reservation_preempt(s, "pr-low", "bm-101", 6, at, &err) == 0); /* ended already */
    memset(&seen, 0, sizeof seen);
    CHECK(store_reservations_live(s, "2026-11-22T09:04:00.000Z", collect_priority, &seen, &err) ==
          0);
    CHECK(seen.count == 1 && seen.with_priority == 0); /* the spare's */
    CHECK(store_reservation_release_task(s, "pr-spare", at, &err) == 1);
}

/* Expiry follows the inventory clock: with no fetch recorded it is the wall
 * clock; once one is, it stands at that time however late it gets, and only
 * moves forward (two workers: the fresher fetch counts). */
static void test_reservation_clock(store *s)
{
    vf_error err;
    vf_error_init(&err);
    char wall[STORE_TIME_SIZE], clock[STORE_TIME_SIZE];
    store_now(wall);
    CHECK(store_reservation_clock(s, clock, &err) == 0);
    CHECKF(strcmp(clock, wall) >= 0, "no fetch recorded: the wall clock, got %s", clock);

    const char *fetched = "2026-11-22T09:00:00.000Z";
    CHECK(store_inventory_fresh_set(s, fetched, &err) == 0);
    CHECK(store_inventory_fresh_set(s, "2026-11-22T08:59:00.000Z", &err) == 0);
    CHECK(store_reservation_clock(s, clock, &err) == 0);
    CHECK_STR(clock, fetched);

    store_task_fields f = task_fields("r-clock", "completed", "2026-11-22T08:58:00.000Z");
    CHECK(store_task_insert(s, &f, &err) == 0);
    CHECK(store_reservation_add(s, "r-clock", "bm-009", 1, 512, 0, 190, "2026-11-22T08:58:00.000Z",
                                "2026-11-22T09:00:00.001Z", &err) == 0);
    /* Long past its expiry by the wall clock, yet held: no inventory fetched
     * since has been able to say whether its VM exists. */
    reservations_seen seen = {0};
    CHECK(store_reservations_live(s, clock, collect_reservation, &seen, &err) == 0);
    CHECK(seen.count == 1 && seen.vmids[0] == 190);
    CHECK(store_reservations_expire(s, clock, &err) == 0);

    CHECK(store_inventory_fresh_set(s, "2026-11-22T09:00:05.000Z", &err) == 0);
    CHECK(store_reservation_clock(s, clock, &err) == 0);
    CHECK(store_reservations_expire(s, clock, &err) == 1);
}

/* ---- outbox ---- */

typedef struct {
    int count;
    char ids[8][32];
    int attempts[8];
    char bodies[8][64];
    char created[8][32];
    store *s;
    bool confirm; /* confirm each event from inside the callback */
} outbox_seen;

static int collect_outbox(const store_outbox_event *e, void *ctx)
{
    outbox_seen *seen = ctx;
    if (seen->count < 8) {
        snprintf(seen->ids[seen->count], sizeof seen->ids[0], "%s", e->id);
        seen->attempts[seen->count] = e->attempts;
        snprintf(seen->bodies[seen->count], sizeof seen->bodies[0], "%s", e->body);
        snprintf(seen->created[seen->count], sizeof seen->created[0], "%s", e->created_at);
    }
    seen->count++;
    if (seen->confirm &&
        store_outbox_mark_confirmed(seen->s, e->id, "2026-11-22T09:10:00.000Z", NULL) != 0)
        return 1;
    return 0;
}

static void test_outbox(store *s)
{
    vf_error err;
    vf_error_init(&err);
    int64_t pending = -1;
    CHECK(store_outbox_count_pending(s, &pending, &err) == 0 && pending == 0);
    CHECK(store_outbox_add(s, "evt_b", "event.task.failed", "{\"b\":1}", "2026-11-22T09:00:02.000Z",
                           &err) == 0);
    CHECK(store_outbox_add(s, "evt_a", "event.task.completed", "{\"a\":1}",
                           "2026-11-22T09:00:01.000Z", &err) == 0);
    CHECK(store_outbox_add(s, "evt_c", "event.spare.ready", "{\"c\":1}", "2026-11-22T09:00:03.000Z",
                           &err) == 0);
    vf_error_init(&err);
    CHECK(store_outbox_add(s, "evt_a", "event.task.completed", "{}", "2026-11-22T09:00:04.000Z",
                           &err) == -1);
    CHECK(err.code == VF_EINVAL);

    outbox_seen seen = {0};
    CHECK(store_outbox_pending(s, NULL, 0, collect_outbox, &seen, &err) == 0 && seen.count == 3);
    CHECK_STR(seen.ids[0], "evt_a");
    CHECK_STR(seen.ids[1], "evt_b");
    CHECK_STR(seen.ids[2], "evt_c");
    memset(&seen, 0, sizeof seen);
    CHECK(store_outbox_pending(s, NULL, 2, collect_outbox, &seen, &err) == 0 && seen.count == 2);

    CHECK(store_outbox_mark_published(s, "evt_a", "2026-11-22T09:01:00.000Z", &err) == 0);
    CHECK(store_outbox_mark_published(s, "evt_a", "2026-11-22T09:02:00.000Z", &err) == 0);
    CHECK(store_outbox_mark_published(s, "evt_zzz", "2026-11-22T09:02:00.000Z", &err) == 1);
    CHECK(store_outbox_mark_confirmed(s, "evt_b", "2026-11-22T09:03:00.000Z", &err) == 0);
    CHECK(store_outbox_mark_confirmed(s, "evt_zzz", "2026-11-22T09:03:00.000Z", &err) == 1);
    memset(&seen, 0, sizeof seen);
    CHECK(store_outbox_pending(s, NULL, 0, collect_outbox, &seen, &err) == 0 && seen.count == 2);
    CHECK_STR(seen.ids[0], "evt_a");
    CHECK(seen.attempts[0] == 2);
    CHECK_STR(seen.ids[1], "evt_c");
    CHECK(store_outbox_count_pending(s, &pending, &err) == 0 && pending == 2);

    /* Callbacks may write: confirm while iterating. */
    memset(&seen, 0, sizeof seen);
    seen.s = s;
    seen.confirm = true;
    CHECK(store_outbox_pending(s, NULL, 0, collect_outbox, &seen, &err) == 0 && seen.count == 2);
    CHECK(store_outbox_count_pending(s, &pending, &err) == 0 && pending == 0);

    /* Pruning removes only confirmed events: evt_b and the group-commit test's. */
    CHECK(store_outbox_prune(s, "2026-11-22T09:05:00.000Z", 0, &err) == 2);
    CHECK(store_outbox_add(s, "evt_d", "event.spare.ready", "{}", "2026-11-22T09:11:00.000Z",
                           &err) == 0);
    CHECK(store_outbox_prune(s, "2026-11-22T09:20:00.000Z", 0, &err) == 2);
    CHECK(store_outbox_count_pending(s, &pending, &err) == 0 && pending == 1);
    CHECK(store_outbox_mark_confirmed(s, "evt_d", "2026-11-22T09:12:00.000Z", &err) == 0);
}

/* ---- deliveries ---- */

typedef struct {
    int count;
    char keys[8][64];
    char bodies[8][32];
    int codes[8];
} deliveries_seen;

static int collect_delivery(const store_delivery *d, void *ctx)
{
    deliveries_seen *seen = ctx;
    if (seen->count < 8) {
        snprintf(seen->keys[seen->count], sizeof seen->keys[0], "%s/%s/%s", d->event_id,
                 d->receiver, d->status);
        snprintf(seen->bodies[seen->count], sizeof seen->bodies[0], "%s", d->body);
        seen->codes[seen->count] = d->last_code;
    }
    seen->count++;
    return 0;
}

static void test_deliveries(store *s)
{
    vf_error err;
    vf_error_init(&err);
    CHECK(store_delivery_add(s, "evt_1", "upgradectrl", "{\"n\":1}", "2026-11-22T10:00:00.000Z",
                             &err) == 0);
    CHECK(store_delivery_add(s, "evt_1", "audit", "{\"n\":1}", "2026-11-22T10:00:00.000Z", &err) ==
          0);
    CHECK(store_delivery_add(s, "evt_2", "upgradectrl", "{\"n\":2}", "2026-11-22T10:00:01.000Z",
                             &err) == 0);
    /* The relay sees evt_1 again (redelivery): nothing changes. */
    CHECK(store_delivery_add(s, "evt_1", "upgradectrl", "{\"n\":999}", "2026-11-22T10:00:05.000Z",
                             &err) == 1);

    deliveries_seen seen = {0};
    CHECK(store_deliveries_due(s, "2026-11-22T09:59:59.999Z", 0, collect_delivery, &seen, &err) ==
          0);
    CHECK(seen.count == 0);
    memset(&seen, 0, sizeof seen);
    CHECK(store_deliveries_due(s, "2026-11-22T10:00:01.000Z", 0, collect_delivery, &seen, &err) ==
          0);
    CHECK(seen.count == 3);
    CHECK_STR(seen.keys[0], "evt_1/audit/pending");
    CHECK_STR(seen.keys[1], "evt_1/upgradectrl/pending");
    CHECK_STR(seen.bodies[1], "{\"n\":1}");
    CHECK_STR(seen.keys[2], "evt_2/upgradectrl/pending");

    /* evt_1 to upgradectrl failed with 503: retried later, so evt_2 is due first. */
    store_delivery_change change = {.event_id = "evt_1",
                                    .receiver = "upgradectrl",
                                    .status = "pending",
                                    .attempts = 1,
                                    .next_attempt_at = "2026-11-22T10:00:06.000Z",
                                    .last_code = 503,
                                    .last_error = "HTTP 503"};
    CHECK(store_delivery_update(s, &change, &err) == 0);
    change = (store_delivery_change){.event_id = "evt_1",
                                     .receiver = "audit",
                                     .status = "delivered",
                                     .attempts = 1,
                                     .last_code = 204,
                                     .delivered_at = "2026-11-22T10:00:01.500Z"};
    CHECK(store_delivery_update(s, &change, &err) == 0);
    change.receiver = "nobody";
    CHECK(store_delivery_update(s, &change, &err) == 1);
    change = (store_delivery_change){
        .event_id = "evt_2", .receiver = "upgradectrl", .status = "exploded"};
    vf_error_init(&err);
    CHECK(store_delivery_update(s, &change, &err) == -1);
    CHECK(err.code == VF_EINVAL);

    memset(&seen, 0, sizeof seen);
    CHECK(store_deliveries_due(s, "2026-11-22T10:00:10.000Z", 0, collect_delivery, &seen, &err) ==
          0);
    CHECK(seen.count == 2);
    CHECK_STR(seen.keys[0], "evt_2/upgradectrl/pending");
    CHECK_STR(seen.keys[1], "evt_1/upgradectrl/pending");
    CHECK(seen.codes[1] == 503);
    memset(&seen, 0, sizeof seen);
    CHECK(store_deliveries_due(s, "2026-11-22T10:00:10.000Z", 1, collect_delivery, &seen, &err) ==
          0);
    CHECK(seen.count == 1);

    memset(&seen, 0, sizeof seen);
    store_delivery_filter filter = {.status = "delivered"};
    CHECK(store_delivery_list(s, &filter, collect_delivery, &seen, &err) == 0);
    CHECK(seen.count == 1);
    CHECK_STR(seen.keys[0], "evt_1/audit/delivered");
    CHECK(seen.codes[0] == 204);
    memset(&seen, 0, sizeof seen);
    filter = (store_delivery_filter){.receiver = "upgradectrl"};
    CHECK(store_delivery_list(s, &filter, collect_delivery, &seen, &err) == 0);
    CHECK(seen.count == 2);
    CHECK_STR(seen.keys[0], "evt_2/upgradectrl/pending");
    memset(&seen, 0, sizeof seen);
    filter = (store_delivery_filter){.event_id = "evt_1", .limit = 5};
    CHECK(store_delivery_list(s, &filter, collect_delivery, &seen, &err) == 0);
    CHECK(seen.count == 2);
    memset(&seen, 0, sizeof seen);
    CHECK(store_delivery_list(s, NULL, collect_delivery, &seen, &err) == 0);
    CHECK(seen.count == 3);
}

/* ---- crash ---- */

static void test_crash_keeps_committed(void)
{
    char path[256];
    store_fixture_file(&fixture, "crash.db", path, sizeof path);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* The child dies without closing anything, like a killed worker. */
        store *s = store_open(path, STORE_READ_WRITE, NULL);
        if (!s)
            _exit(2);
        store_task_fields f = task_fields("t-survives", "completed", "2026-11-22T11:00:00.000Z");
        if (store_begin(s, NULL) || store_task_insert(s, &f, NULL) ||
            store_outbox_add(s, "evt_survives", "event.task.completed", "{}",
                             "2026-11-22T11:00:00.000Z", NULL) ||
            store_commit(s, NULL))
            _exit(3);
        f = task_fields("t-lost", "queued", "2026-11-22T11:00:01.000Z");
        if (store_begin(s, NULL) || store_task_insert(s, &f, NULL))
            _exit(4);
        _exit(0);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);

    vf_error err;
    vf_error_init(&err);
    store *s = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    if (!s)
        return;
    store_task t = {0};
    CHECK(store_task_get(s, "t-survives", &t, &err) == 0);
    CHECK_STR(t.status, "completed");
    store_task_clear(&t);
    CHECK(store_task_get(s, "t-lost", &t, &err) == 1);
    int64_t pending = 0;
    CHECK(store_outbox_count_pending(s, &pending, &err) == 0 && pending == 1);
    /* The store takes writes again: the dead writer's lock is gone. */
    store_task_fields f = task_fields("t-after", "queued", "2026-11-22T11:00:02.000Z");
    CHECK(store_task_insert(s, &f, &err) == 0);
    store_close(s);
}

static void test_time_format(void)
{
    char buf[STORE_TIME_SIZE];
    const char *text = buf;
    CHECK(store_format_time(0, buf) == 0);
    CHECK_STR(text, "1970-01-01T00:00:00.000Z");
    CHECK(store_format_time(1795309323123LL, buf) == 0);
    CHECK_STR(text, "2026-11-22T01:02:03.123Z");
    CHECK(store_format_time(-1, buf) == -1);
    store_now(buf);
    CHECK(strlen(buf) == 24 && buf[4] == '-' && buf[10] == 'T' && buf[19] == '.' && buf[23] == 'Z');
    CHECK(strcmp(buf, "2020-01-01T00:00:00.000Z") > 0);
}

/* True when another process could not take a write lock on SQLite's
 * shared-lock range of `path` (SHARED_FIRST = PENDING_BYTE + 2, 510 bytes in
 * the unix VFS): some process holds a SHARED lock on the database file. */
static bool shared_lock_held_elsewhere(const char *path)
{
    /* The answer comes back through a pipe, not the exit status: under
     * valgrind --error-exitcode the child's status also reports leak
     * findings at its _exit. */
    int answer[2];
    if (pipe(answer) < 0)
        return false;
    pid_t pid = fork();
    if (pid == 0) {
        close(answer[0]);
        char verdict = '?';
        int fd = open(path, O_RDWR);
        struct flock probe = {
            .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0x40000002, .l_len = 510};
        if (fd >= 0 && fcntl(fd, F_GETLK, &probe) == 0)
            verdict = probe.l_type == F_UNLCK ? 'f' : 'h';
        if (write(answer[1], &verdict, 1) != 1)
            _exit(2);
        _exit(0);
    }
    close(answer[1]);
    char verdict = '?';
    if (read(answer[0], &verdict, 1) != 1)
        verdict = '?';
    close(answer[0]);
    waitpid(pid, NULL, 0);
    CHECKF(verdict != '?', "the lock probe could not run");
    return verdict == 'h';
}

/* Opening and closing a second handle in the same process must leave the
 * first handle's locks alone: close() of any fd on a file cancels every POSIX
 * lock the process holds on it, and a WAL database whose users' SHARED locks
 * are gone can be checkpointed, reset or deleted under them by another
 * process — the worker's database was once corrupted this way, when its
 * checkpoint thread opened a second handle with the old store_open. */
static void test_second_handle_keeps_locks(void)
{
    char path[256];
    store_fixture_file(&fixture, "locks.db", path, sizeof path);
    vf_error err;
    vf_error_init(&err);
    store *first = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(first != NULL, "%s", err.text);
    if (!first)
        return;
    store_task_fields f = task_fields("t-locks", "queued", "2026-11-22T12:00:00.000Z");
    CHECK(store_task_insert(first, &f, &err) == 0);
    CHECKF(shared_lock_held_elsewhere(path), "a WAL connection holds a SHARED lock");

    store_close(store_open(path, STORE_READ_WRITE, &err));
    CHECKF(shared_lock_held_elsewhere(path),
           "still held after a second read-write handle was opened and closed");
    store_close(store_open(path, STORE_READ_ONLY, &err));
    CHECKF(shared_lock_held_elsewhere(path),
           "still held after a read-only handle was opened and closed");
    store_close(first);
}

/* PostgreSQL: a connection the server drops (restart, failover, idle
 * timeout) fails the call under way as "unavailable", retryable, and the
 * next call reconnects and prepares its statements again. */
static void test_pg_reconnects(const char *base)
{
    char url[600], sql[256];
    snprintf(url, sizeof url, "%s&application_name=vftest_reconnect_%ld", base, (long)getpid());
    snprintf(sql, sizeof sql,
             "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
             "WHERE application_name = 'vftest_reconnect_%ld'",
             (long)getpid());
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(url, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    if (!s)
        return;
    store_task t = {0};
    CHECK(store_task_get(s, "t-reconnect", &t, &err) == 1);
    CHECK(store_fixture_pg_exec(sql) == 0);
    int rc = store_task_get(s, "t-reconnect", &t, &err);
    CHECKF(rc == -1 && err.code == VF_EUNAVAILABLE, "rc %d: %s", rc, err.text);
    vf_error_init(&err);
    store_task_fields f = task_fields("t-reconnect", "queued", "2026-11-22T12:00:00.000Z");
    CHECKF(store_task_insert(s, &f, &err) == 0, "%s", err.text);
    CHECKF(store_task_get(s, "t-reconnect", &t, &err) == 0, "%s", err.text);
    CHECK_STR(t.status, "queued");
    store_task_clear(&t);

    /* Lost inside a transaction: the transaction is gone, and nothing after
     * it may run on a new connection as if it were still open (each
     * statement would commit alone): every call fails until the rollback. */
    vf_error_init(&err);
    CHECK(store_begin(s, &err) == 0);
    store_task_fields g = task_fields("t-lost", "queued", "2026-11-22T12:00:00.000Z");
    CHECKF(store_task_insert(s, &g, &err) == 0, "%s", err.text);
    CHECK(store_fixture_pg_exec(sql) == 0);
    rc = store_task_event_add(s, "t-lost", "2026-11-22T12:00:00.000Z", "queued", NULL, &err);
    CHECKF(rc == -1 && err.code == VF_EUNAVAILABLE, "rc %d: %s", rc, err.text);
    vf_error_init(&err);
    rc = store_task_event_add(s, "t-lost", "2026-11-22T12:00:00.000Z", "queued", NULL, &err);
    CHECKF(rc == -1 && err.code == VF_EUNAVAILABLE, "still refused: rc %d: %s", rc, err.text);
    CHECK(store_in_transaction(s));
    vf_error_init(&err);
    CHECK(store_commit(s, &err) == -1);
    CHECK(!store_in_transaction(s));
    CHECK(store_rollback(s, &err) == 0);
    vf_error_init(&err);
    CHECK(store_begin(s, &err) == 0);
    CHECKF(store_task_get(s, "t-lost", &t, &err) == 1, "the lost transaction left nothing");
    g.id = "t-after";
    CHECKF(store_task_insert(s, &g, &err) == 0, "%s", err.text);
    CHECKF(store_commit(s, &err) == 0, "%s", err.text);
    CHECK(store_task_get(s, "t-after", &t, &err) == 0);
    store_task_clear(&t);
    store_close(s);
}

/* PostgreSQL: several processes starting at once on an empty schema (a
 * deployment's workers and relay) take turns migrating: every one opens the
 * store, and the schema is applied once. */
static void test_pg_concurrent_migrations(const char *url)
{
    enum { OPENERS = 4 };
    pid_t children[OPENERS];
    for (int i = 0; i < OPENERS; i++) {
        children[i] = fork();
        if (children[i] == 0) {
            vf_error err;
            vf_error_init(&err);
            store *s = store_open(url, STORE_READ_WRITE, &err);
            if (!s)
                fprintf(stderr, "opener %d: %s\n", i, err.text);
            store_close(s);
            _exit(s ? 0 : 1);
        }
    }
    int opened = 0;
    for (int i = 0; i < OPENERS; i++) {
        int status = 0;
        if (children[i] > 0 && waitpid(children[i], &status, 0) == children[i] &&
            WIFEXITED(status) && WEXITSTATUS(status) == 0)
            opened++;
    }
    CHECKF(opened == OPENERS, "%d of %d concurrent openers succeeded", opened, OPENERS);
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(url, STORE_READ_ONLY, &err);
    CHECKF(s != NULL, "the schema is current: %s", err.text);
    store_close(s);
}

/* ---- batched writes (store_defer_writes) ---- */

typedef struct {
    int count; /* rows seen: the first is tb-2's "received", then s0, s1, ... */
    int wrong;
    int64_t last_id;
} many_events;

static int check_many(const store_task_event *e, void *ctx)
{
    many_events *m = ctx;
    int i = m->count++ - 1;
    if (e->id <= m->last_id)
        m->wrong++;
    m->last_id = e->id;
    if (i < 0)
        return 0;
    char status[16], detail[32];
    snprintf(status, sizeof status, "s%d", i);
    snprintf(detail, sizeof detail, "{\"i\":%d}", i);
    bool null_detail = i % 7 == 3;
    if (strcmp(e->status, status) != 0 || strcmp(e->task_id, "tb-2") != 0 ||
        (null_detail ? e->detail != NULL : !e->detail || strcmp(e->detail, detail) != 0))
        m->wrong++;
    return 0;
}

/* With writes deferred, history rows and events are kept and sent as a few
 * multi-row statements per table on PostgreSQL (store_batch): the rows must come out
 * exactly as separate inserts would have written them, in order, seen by
 * the transaction's own reads, gone with a rollback, and a bad row must
 * fail the commit. On SQLite the same calls write at once. */
static void test_batched_writes(const char *location)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(location, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s: %s", location, err.text);
    if (!s)
        return;
    store_defer_writes(s);
    static const char detail[] = "{\"note\":\"a \\\"q\\\" \\\\ \xc3\xa9 \xe2\x9c\x93\"}";
    store_task_fields f1 = task_fields("tb-1", "queued", "2026-11-22T10:00:00.000Z");
    store_task_fields f2 = task_fields("tb-2", "queued", "2026-11-22T10:00:00.000Z");
    CHECK(store_begin(s, &err) == 0);
    CHECK(store_task_insert(s, &f1, &err) == 0);
    CHECK(store_task_insert(s, &f2, &err) == 0);
    CHECK(store_task_event_add(s, "tb-1", "2026-11-22T10:00:00.000Z", "received", detail, &err) ==
          0);
    CHECK(store_task_event_add(s, "tb-2", "2026-11-22T10:00:00.000Z", "received", NULL, &err) == 0);
    CHECK(store_task_event_add(s, "tb-1", "2026-11-22T10:00:01.000Z", "placed", "{}", &err) == 0);
    CHECK(store_outbox_add(s, "evt_tb2", "event.task.failed", "{\"n\":2}",
                           "2026-11-22T10:00:02.000Z", &err) == 0);
    CHECK(store_outbox_add(s, "evt_tb1", "event.task.completed", detail, "2026-11-22T10:00:02.000Z",
                           &err) == 0);
    /* The transaction reads what it wrote. */
    collected c = {0};
    CHECKF(store_task_events(s, "tb-1", collect_event, &c, &err) == 0, "%s", err.text);
    CHECK(c.count == 2);
    CHECK_STR(c.statuses[0], "received");
    CHECK_STR(c.details[0], detail);
    CHECK_STR(c.statuses[1], "placed");
    CHECK(store_task_event_add(s, "tb-1", "2026-11-22T10:00:03.000Z", "completed", NULL, &err) ==
          0);
    CHECKF(store_commit(s, &err) == 0, "%s", err.text);

    memset(&c, 0, sizeof c);
    CHECK(store_task_events(s, "tb-1", collect_event, &c, &err) == 0 && c.count == 3);
    CHECK_STR(c.statuses[0], "received");
    CHECK_STR(c.details[0], detail);
    CHECK_STR(c.statuses[1], "placed");
    CHECK_STR(c.details[1], "{}");
    CHECK_STR(c.statuses[2], "completed");
    CHECK_STR(c.details[2], "(null)");
    memset(&c, 0, sizeof c);
    CHECK(store_task_events(s, "tb-2", collect_event, &c, &err) == 0 && c.count == 1);
    CHECK_STR(c.details[0], "(null)");
    /* Written in the order added (same created_at: the write order decides). */
    outbox_seen seen = {0};
    CHECK(store_outbox_pending(s, NULL, 0, collect_outbox, &seen, &err) == 0);
    CHECK(seen.count == 2);
    CHECK_STR(seen.ids[0], "evt_tb2");
    CHECK_STR(seen.bodies[0], "{\"n\":2}");
    CHECK_STR(seen.ids[1], "evt_tb1");
    CHECK_STR(seen.bodies[1], detail);
    CHECK_STR(seen.created[1], "2026-11-22T10:00:02.000Z");

    /* Many rows: sent in statements of several sizes (64 + 16 + 4 + 4 + 1 +
     * 1 here), every value in its row and every row in its place. */
    CHECK(store_begin(s, &err) == 0);
    char status[16], detail_i[32];
    for (int i = 0; i < 90; i++) {
        snprintf(status, sizeof status, "s%d", i);
        snprintf(detail_i, sizeof detail_i, "{\"i\":%d}", i);
        CHECK(store_task_event_add(s, "tb-2", "2026-11-22T10:00:04.000Z", status,
                                   i % 7 == 3 ? NULL : detail_i, &err) == 0);
    }
    CHECKF(store_commit(s, &err) == 0, "%s", err.text);
    many_events many = {0};
    CHECK(store_task_events(s, "tb-2", check_many, &many, &err) == 0);
    CHECKF(many.count == 91 && many.wrong == 0, "%d rows, %d out of place", many.count, many.wrong);

    /* A rollback takes the kept rows with it; the next transaction writes none. */
    store_task_fields f3 = task_fields("tb-3", "queued", "2026-11-22T10:01:00.000Z");
    CHECK(store_begin(s, &err) == 0);
    CHECK(store_task_insert(s, &f3, &err) == 0);
    CHECK(store_task_event_add(s, "tb-3", "2026-11-22T10:01:00.000Z", "received", NULL, &err) == 0);
    CHECK(store_outbox_add(s, "evt_tb3", "event.task.failed", "{}", "2026-11-22T10:01:00.000Z",
                           &err) == 0);
    CHECK(store_rollback(s, &err) == 0);
    CHECK(store_begin(s, &err) == 0);
    CHECKF(store_commit(s, &err) == 0, "%s", err.text);
    memset(&c, 0, sizeof c);
    CHECK(store_task_events(s, "tb-3", collect_event, &c, &err) == 0 && c.count == 0);
    int64_t pending = -1;
    CHECK(store_outbox_count_pending(s, &pending, &err) == 0 && pending == 2);

    /* A row the server refuses (history of a task that does not exist) fails
     * the commit, and nothing of the transaction is written. */
    CHECK(store_begin(s, &err) == 0);
    CHECK(store_outbox_add(s, "evt_tb4", "event.task.failed", "{}", "2026-11-22T10:02:00.000Z",
                           &err) == 0);
    int added =
        store_task_event_add(s, "tb-none", "2026-11-22T10:02:00.000Z", "received", NULL, &err);
    vf_error_init(&err);
    CHECK(added == -1 || store_commit(s, &err) == -1);
    (void)store_rollback(s, NULL);
    CHECK(store_outbox_count_pending(s, &pending, &err) == 0 && pending == 2);
    memset(&c, 0, sizeof c);
    CHECK(store_task_events(s, "tb-none", collect_event, &c, &err) == 0 && c.count == 0);

    /* Confirms in one statement: the listed events, unknown ids skipped. */
    const char *ids[] = {"evt_tb1", "evt_unknown", "evt_tb2"};
    CHECK(store_begin(s, &err) == 0);
    CHECKF(store_outbox_mark_confirmed_many(s, ids, 3, "2026-11-22T10:03:00.000Z", &err) == 0, "%s",
           err.text);
    CHECKF(store_commit(s, &err) == 0, "%s", err.text);
    CHECK(store_outbox_count_pending(s, &pending, &err) == 0 && pending == 0);
    store_close(s);
}

/* Everything that must behave the same on either backend. */
static void test_store_semantics(const char *location)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(location, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s: %s", location, err.text);
    if (s) {
        test_tasks(s);
        test_task_search(s);
        test_task_withdraw(s);
        test_task_action(s);
        test_task_requeue(s);
        test_strings_verbatim(s);
        test_transaction_is_atomic(s, location);
        test_reservations(s);
        test_reservation_priority(s);
        test_reservation_clock(s);
        test_outbox(s);
        test_deliveries(s);
    }
    store_close(s);
    test_batched_writes(location);
    /* Opening again finds the schema current and changes nothing. */
    vf_error_init(&err);
    s = store_open(location, STORE_READ_ONLY, &err);
    CHECKF(s != NULL, "%s", err.text);
    store_close(s);
}

int main(void)
{
    if (store_fixture_init(&fixture, "store") != 0)
        return 1;
    test_time_format();
    test_open_creates_private_wal_store();
    test_open_refuses_newer_schema();
    test_open_read_only_errors();
    test_reader_does_not_block_on_writer();

    char path[256];
    test_store_semantics(store_fixture_file(&fixture, "main.db", path, sizeof path));
    test_crash_keeps_committed();
    test_second_handle_keeps_locks();

    /* The same semantics on PostgreSQL; the file-level tests above (modes,
     * WAL, locks, crash of a writer) are SQLite's alone. */
    char url[512];
    if (store_fixture_pg(&fixture, "store", url, sizeof url) == 0) {
        test_store_semantics(url);
        test_pg_reconnects(url);
    }
    if (store_fixture_pg(&fixture, "migrate", url, sizeof url) == 0)
        test_pg_concurrent_migrations(url);
    store_fixture_close(&fixture);
    return test_summary();
}
