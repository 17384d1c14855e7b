/* db: deferred statements (db_step_deferred) and the round-trip count.
 * On PostgreSQL a transaction's deferred writes cost no round trip each:
 * they are collected with the next statement that waits, their failure
 * (a server error, or fewer rows changed than expected, with the code the
 * caller chose) comes back there, sticks until ROLLBACK, and COMMIT cannot
 * succeed after it. On SQLite, and outside a transaction, they run at once. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "store_fixture.h"
#include "testlib.h"

static int64_t count_rows(db *d, const char *where)
{
    db_stmt *slot = NULL;
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM t WHERE %s", where);
    vf_error err;
    vf_error_init(&err);
    db_stmt *st = db_prepare(d, &slot, sql, &err);
    int64_t n = -1;
    if (st && db_step(st, "counting", &err) == DB_ROW)
        n = db_column_int64(st, 0);
    db_stmt_free(st);
    return n;
}

static int insert(db *d, db_stmt **slot, int id, vf_error *err)
{
    db_stmt *st = db_prepare(d, slot, "INSERT INTO t (id, v) VALUES (?1, 0)", err);
    if (!st)
        return -1;
    db_bind_int64(st, 1, id);
    return db_step_deferred(st, "inserting", &(db_expect){0}, err);
}

/* Send st deferred, then COMMIT (the deferred results come with it): 0, or
 * -1 with err from whichever failed. */
static int deferred_then_commit(db_stmt *st, const char *what, const db_expect *expect,
                                db_stmt *commit, vf_error *err)
{
    int rc = st ? db_step_deferred(st, what, expect, err) : -1;
    if (rc == 0 && commit)
        rc = db_step(commit, "commit", err) == DB_DONE ? 0 : -1;
    return rc;
}

/* A transaction refused with VF_ECONFLICT and `text` (rc and err from
 * deferred_then_commit): checked, then rolled back, err and the prepared
 * COMMIT ready for the next one. */
static void refused_then_rollback(db *d, int rc, vf_error *err, const char *text, db_stmt *commit)
{
    CHECKF(rc == -1 && err->code == VF_ECONFLICT, "rc %d: %s", rc, err->text);
    CHECK_CONTAINS(err->text, text);
    vf_error_init(err);
    db_reset(commit);
    CHECK(db_exec(d, "ROLLBACK", "rollback", err) == 0);
}

static void run(db *d, bool pg)
{
    vf_error err;
    vf_error_init(&err);
    CHECKF(db_exec(d, "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)", "creating", &err) == 0,
           "%s", err.text);
    db_stmt *ins = NULL, *upd = NULL;

    /* Outside a transaction: at once, also the failure. */
    CHECK(insert(d, &ins, 1, &err) == 0);
    CHECK(insert(d, &ins, 1, &err) == -1 && err.code == VF_EINVAL);
    vf_error_init(&err);

    /* Inside: sent; one round trip collects them all. */
    CHECK(db_exec(d, "BEGIN", "begin", &err) == 0);
    uint64_t before = db_round_trips(d);
    for (int id = 2; id <= 11; id++)
        CHECKF(insert(d, &ins, id, &err) == 0, "%s", err.text);
    CHECK(db_round_trips(d) == before); /* nothing waited (SQLite: never counts) */
    CHECK(count_rows(d, "id >= 2") == 10);
    if (pg)
        /* One to collect the ten, three for the count (prepare, run, and
         * DEALLOCATE as count_rows frees it): ten one by one were ten. */
        CHECKF(db_round_trips(d) - before <= 4, "%llu round trips for 10 inserts and a count",
               (unsigned long long)(db_round_trips(d) - before));
    CHECK(db_exec(d, "COMMIT", "commit", &err) == 0);

    /* An update that must change a row and changes none: the chosen code,
     * at the next statement that waits (PostgreSQL) or at once (SQLite). */
    CHECK(db_exec(d, "BEGIN", "begin", &err) == 0);
    CHECK(insert(d, &ins, 20, &err) == 0);
    upd = db_prepare(d, &upd, "UPDATE t SET v = 1 WHERE id = ?1", &err);
    CHECK(upd != NULL);
    db_bind_int64(upd, 1, 999);
    db_expect expect = {.min_changes = 1, .short_code = VF_ECONFLICT, .short_text = "row 999 gone"};
    int rc = db_step_deferred(upd, "updating", &expect, &err);
    if (pg) {
        CHECK(rc == 0);
        CHECK(count_rows(d, "id = 20") == -1); /* the deferred failure comes back here */
        vf_error again;
        vf_error_init(&again);
        CHECK(db_exec(d, "COMMIT", "commit", &again) == -1 && again.code == VF_ECONFLICT);
        CHECK_CONTAINS(again.text, "row 999 gone");
    } else {
        CHECK(rc == -1 && err.code == VF_ECONFLICT);
        CHECK_CONTAINS(err.text, "row 999 gone");
    }
    CHECK(db_exec(d, "ROLLBACK", "rollback", &err) == 0);
    vf_error_init(&err);
    CHECK(count_rows(d, "id = 20") == 0); /* rolled back, and the handle works again */

    /* A server error: the duplicate's code, and nothing of it commits. */
    CHECK(db_exec(d, "BEGIN", "begin", &err) == 0);
    rc = insert(d, &ins, 30, &err);
    if (rc == 0)
        rc = insert(d, &ins, 2, &err); /* committed above */
    if (rc == 0)
        rc = db_exec(d, "COMMIT", "commit", &err);
    CHECK(rc == -1 && err.code == VF_EINVAL);
    vf_error_init(&err);
    CHECK(db_exec(d, "ROLLBACK", "rollback", &err) == 0);
    CHECK(count_rows(d, "id = 30") == 0);
    CHECK(count_rows(d, "id > 0") == 11);
    /* A read after deferred writes travels with them: one round trip. */
    db_stmt *count = NULL;
    CHECK(db_prepare(d, &count, "SELECT count(*) FROM t", &err) != NULL);
    CHECK(db_exec(d, "BEGIN", "begin", &err) == 0);
    CHECK(insert(d, &ins, 40, &err) == 0);
    before = db_round_trips(d);
    CHECKF(count && db_step(count, "counting", &err) == DB_ROW, "%s", err.text);
    if (count)
        CHECK(db_column_int64(count, 0) == 12);
    if (pg)
        CHECK(db_round_trips(d) - before == 1);
    db_reset(count);
    CHECK(db_exec(d, "ROLLBACK", "rollback", &err) == 0);

    /* A prepared COMMIT (as the store runs it) after an update that had to
     * change a row and changed none: refused with the chosen code, and
     * nothing of the transaction commits. On PostgreSQL the COMMIT travels
     * in the same round trip as the update: the server itself refuses the
     * update, which stops the pipeline before the COMMIT. */
    db_stmt *commit = NULL;
    CHECK(db_prepare(d, &commit, "COMMIT", &err) != NULL);
    CHECK(db_exec(d, "BEGIN", "begin", &err) == 0);
    CHECK(insert(d, &ins, 50, &err) == 0);
    db_bind_int64(upd, 1, 999);
    before = db_round_trips(d);
    rc = deferred_then_commit(upd, "updating", &expect, commit, &err);
    if (pg)
        CHECKF(db_round_trips(d) - before == 1, "%llu round trips for a refused update and COMMIT",
               (unsigned long long)(db_round_trips(d) - before));
    refused_then_rollback(d, rc, &err, "row 999 gone", commit);
    CHECK(count_rows(d, "id = 50") == 0);

    /* The same update when its row exists: committed, and on PostgreSQL
     * the insert, the checked update and the COMMIT cost one round trip. */
    CHECK(db_exec(d, "BEGIN", "begin", &err) == 0);
    CHECK(insert(d, &ins, 60, &err) == 0);
    db_bind_int64(upd, 1, 60);
    before = db_round_trips(d);
    rc = deferred_then_commit(upd, "updating", &expect, commit, &err);
    CHECKF(rc == 0, "%s", err.text);
    if (pg)
        CHECKF(db_round_trips(d) - before == 1, "%llu round trips for an update and COMMIT",
               (unsigned long long)(db_round_trips(d) - before));
    db_reset(commit);
    CHECK(!db_in_transaction(d));
    CHECK(count_rows(d, "id = 60 AND v = 1") == 1);

    /* An insert that must add a row (ON CONFLICT DO NOTHING, as a
     * reservation's) and adds none: refused the same way. */
    db_stmt *add = NULL;
    CHECK(db_prepare(d, &add, "INSERT INTO t (id, v) VALUES (?1, 2) ON CONFLICT (id) DO NOTHING",
                     &err) != NULL);
    CHECK(db_exec(d, "BEGIN", "begin", &err) == 0);
    CHECK(insert(d, &ins, 70, &err) == 0);
    db_bind_int64(add, 1, 60);
    db_expect taken = {.min_changes = 1, .short_code = VF_ECONFLICT, .short_text = "60 taken"};
    rc = deferred_then_commit(add, "adding", &taken, commit, &err);
    refused_then_rollback(d, rc, &err, "60 taken", commit);
    CHECK(count_rows(d, "id = 70") == 0);
    CHECK(count_rows(d, "id = 60 AND v = 1") == 1);
    db_stmt_free(add);

    /* PostgreSQL: a statement that is its own check (a data-modifying WITH,
     * which the checked form cannot wrap) is refused the same way, its
     * COMMIT in the same round trip; and when it adds its row, commits. */
    db_stmt *self = NULL;
    if (pg) {
        CHECK(db_prepare(d, &self,
                         "WITH a AS (INSERT INTO t (id, v) VALUES (?1, 3) ON CONFLICT (id) "
                         "DO NOTHING RETURNING 1) SELECT 1 / (count(*) >= 1)::int FROM a",
                         &err) != NULL);
        db_expect held = {
            .short_code = VF_ECONFLICT, .short_text = "60 held", .checks_itself = true};
        CHECK(db_exec(d, "BEGIN", "begin", &err) == 0);
        CHECK(insert(d, &ins, 71, &err) == 0);
        db_bind_int64(self, 1, 60);
        rc = deferred_then_commit(self, "adding", &held, commit, &err);
        refused_then_rollback(d, rc, &err, "60 held", commit);
        CHECK(count_rows(d, "id = 71") == 0);

        CHECK(db_exec(d, "BEGIN", "begin", &err) == 0);
        db_bind_int64(self, 1, 81);
        uint64_t before_self = db_round_trips(d);
        rc = deferred_then_commit(self, "adding", &held, commit, &err);
        CHECKF(rc == 0, "%s", err.text);
        CHECKF(db_round_trips(d) - before_self == 1,
               "%llu round trips for a checked insert and COMMIT",
               (unsigned long long)(db_round_trips(d) - before_self));
        db_reset(commit);
        CHECK(count_rows(d, "id = 81 AND v = 3") == 1);
    }
    db_stmt_free(self);

    /* A statement sent for the first time on this connection behind one
     * that fails (on PostgreSQL its preparation travels in the same round
     * trip, and the server skips it with the rest): refused with the first
     * one's error, and at its next use prepared again, not taken as
     * prepared (the worker, after a failed batch, then failed every batch
     * with "prepared statement ... does not exist"). */
    db_stmt *ten = NULL;
    CHECK(db_prepare(d, &ten, "UPDATE t SET v = v + 10 WHERE id = ?1", &err) != NULL);
    db_expect there = {.min_changes = 1, .short_code = VF_ECONFLICT, .short_text = "row 60 gone"};
    CHECK(db_exec(d, "BEGIN", "begin", &err) == 0);
    db_bind_int64(upd, 1, 999);
    rc = db_step_deferred(upd, "updating", &expect, &err);
    if (rc == 0) {
        db_bind_int64(ten, 1, 60);
        rc = deferred_then_commit(ten, "adding ten", &there, commit, &err);
    }
    refused_then_rollback(d, rc, &err, "row 999 gone", commit);
    CHECK(db_exec(d, "BEGIN", "begin", &err) == 0);
    db_bind_int64(ten, 1, 60);
    rc = deferred_then_commit(ten, "adding ten", &there, commit, &err);
    CHECKF(rc == 0, "%s", err.text);
    db_reset(commit);
    CHECK(!db_in_transaction(d));
    CHECK(count_rows(d, "id = 60 AND v = 11") == 1);
    db_stmt_free(ten);

    /* PostgreSQL: statements the connection no longer holds (dropped by a
     * DEALLOCATE here; a pooler moving the session would do the same): the
     * use that finds out fails as an outage, and the next one runs on a
     * new connection, its statement prepared again. */
    if (pg) {
        CHECK(db_exec(d, "DEALLOCATE ALL", "dropping the prepared statements", &err) == 0);
        db_reset(count);
        CHECK(db_step(count, "counting", &err) == -1 && err.code == VF_EUNAVAILABLE);
        CHECK_CONTAINS(err.text, "does not exist");
        vf_error_init(&err);
        db_reset(count);
        CHECKF(db_step(count, "counting", &err) == DB_ROW, "%s", err.text);
        db_reset(count);
        /* Found inside a transaction: it fails there, its ROLLBACK goes on
         * that connection, and the next use outside it gets a new one. */
        CHECK(db_exec(d, "BEGIN", "begin", &err) == 0);
        CHECK(insert(d, &ins, 96, &err) == 0);
        CHECK(db_exec(d, "DEALLOCATE ALL", "dropping the prepared statements", &err) == 0);
        CHECK(db_step(count, "counting", &err) == -1 && err.code == VF_EUNAVAILABLE);
        vf_error_init(&err);
        db_reset(count);
        CHECK(db_in_transaction(d));
        CHECKF(db_exec(d, "ROLLBACK", "rollback", &err) == 0, "%s", err.text);
        CHECK(!db_in_transaction(d));
        CHECKF(db_step(count, "counting", &err) == DB_ROW, "%s", err.text);
        db_reset(count);
        CHECK(count_rows(d, "id = 96") == 0);
    }
    db_stmt_free(count);
    db_stmt_free(commit);
    /* Their slots live on this stack: free them before it goes. */
    db_stmt_free(ins);
    db_stmt_free(upd);
}

/* SQLite: an INSERT's rowid without RETURNING, and 0 when ON CONFLICT
 * DO NOTHING added nothing. */
static void test_inserted_id(db *d)
{
    vf_error err;
    vf_error_init(&err);
    CHECKF(db_exec(d, "CREATE TABLE u (id INTEGER PRIMARY KEY, k INTEGER UNIQUE)", "creating",
                   &err) == 0,
           "%s", err.text);
    CHECK(db_exec(d, "INSERT INTO u (id, k) VALUES (41, 1)", "seeding", &err) == 0);
    db_stmt *slot = NULL;
    db_stmt *st =
        db_prepare(d, &slot, "INSERT INTO u (k) VALUES (?1) ON CONFLICT (k) DO NOTHING", &err);
    CHECKF(st != NULL, "%s", err.text);
    db_bind_int64(st, 1, 2);
    CHECK(db_step(st, "inserting", &err) == DB_DONE);
    CHECK(db_changes(st) == 1);
    CHECKF(db_inserted_id(st) == 42, "%lld", (long long)db_inserted_id(st));
    db_reset(st);
    db_bind_int64(st, 1, 1); /* taken: nothing added */
    CHECK(db_step(st, "inserting", &err) == DB_DONE);
    CHECK(db_changes(st) == 0);
    CHECK(db_inserted_id(st) == 0);
    db_stmt_free(st);
}

typedef struct holder {
    db *d;
    int hold_ms;
} holder;

static void *commit_later(void *arg)
{
    holder *h = arg;
    struct timespec pause = {h->hold_ms / 1000, (long)(h->hold_ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
    vf_error err;
    vf_error_init(&err);
    CHECKF(db_exec(h->d, "COMMIT", "commit", &err) == 0, "%s", err.text);
    return NULL;
}

/* SQLite's write lock: a writer waits for it, trying again while the busy
 * timeout lasts (db_sqlite.c), and gets it once the holder commits; past
 * the timeout it gives up with VF_EUNAVAILABLE. */
static void test_write_lock_wait(const char *path)
{
    vf_error err;
    vf_error_init(&err);
    db *a = db_open_sqlite(path, false, 5000, "holder", &err);
    db *b = db_open_sqlite(path, false, 5000, "waiter", &err);
    db *c = db_open_sqlite(path, false, 100, "impatient", &err);
    CHECKF(a && b && c, "%s", err.text);
    if (!a || !b || !c)
        goto out;
    CHECK(db_exec(a, "PRAGMA journal_mode=WAL", "wal", &err) == 0);
    CHECK(db_exec(a, "BEGIN IMMEDIATE", "begin", &err) == 0);
    CHECK(db_exec(c, "BEGIN IMMEDIATE", "begin", &err) == -1 && err.code == VF_EUNAVAILABLE);
    vf_error_init(&err);
    holder h = {a, 200};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, commit_later, &h) == 0);
    CHECKF(db_exec(b, "BEGIN IMMEDIATE", "begin", &err) == 0, "%s", err.text);
    pthread_join(thread, NULL);
    CHECK(db_exec(b, "COMMIT", "commit", &err) == 0);
out:
    db_close(a);
    db_close(b);
    db_close(c);
}

int main(void)
{
    store_fixture fixture;
    if (store_fixture_init(&fixture, "db") != 0)
        return 1;
    char path[256];
    store_fixture_file(&fixture, "sqlite.db", path, sizeof path);
    /* db_open_sqlite opens an existing file; it creates none. */
    FILE *created = fopen(path, "w");
    if (created)
        fclose(created);
    vf_error err;
    vf_error_init(&err);
    db *d = db_open_sqlite(path, false, 1000, "sqlite test", &err);
    CHECKF(d != NULL, "%s", err.text);
    if (d) {
        run(d, false);
        test_inserted_id(d);
    }
    db_close(d);
    test_write_lock_wait(path);

    char url[1024];
    if (store_fixture_pg(&fixture, "db", url, sizeof url) == 0) {
        db_pg_options options = {.url = url};
        d = db_open_pg(&options, "pg test", &err);
        CHECKF(d != NULL, "%s", err.text);
        if (d)
            run(d, true);
        db_close(d);
    }
    store_fixture_close(&fixture);
    return test_summary();
}
