/* bench_deliveries: what one stuck receiver costs the others (issue 13,
 * finding 7). The relay scans each receiver's due deliveries every time a slot
 * frees up (store_deliveries_due_receiver, LIMIT = its free slots). A receiver
 * that is down piles up a backlog of due rows; this measures a scan for a
 * healthy receiver, and for the stuck one, beside that backlog.
 *
 * The store gets `backlog` due deliveries (default 1,000,000) for receiver
 * "stuck" and 100 for "healthy", due after them (the healthy receiver's events
 * are the newer ones), with event bodies of the usual size. Each query is
 * timed as the median of several runs, first with the indexes of the current
 * schema ("after"), then with the index schema version 2 had
 * (deliveries_due on (status, next_attempt_at), "before"). Besides the due
 * scans it times the crash requeue (store_deliveries_requeue, once at relay
 * start) and the deliveries part of `virtflowctl stats`' counts, the other
 * queries that looked at deliveries by status: that one is timed as SQL text,
 * store_stats.c's before and after migration 003 changed it.
 *
 * Usage: bench_deliveries [dir] [backlog rows] */
#include "store.h"
#include "store_deliveries.h"
#include "benchlib.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEALTHY_ROWS 100
#define RUNS 7
#define SLOTS 8 /* relay.receivers[].max_in_flight's default */
#define NOW "2026-11-23T00:00:00.000Z"

/* The deliveries part of store_counts (common/store/store_stats.c), as it was with
 * the index on status, and as it is now, grouped in the new index's order. */
static const char *const counts_sql_before =
    "SELECT status, COUNT(*), MIN(created_at), event_id FROM deliveries GROUP BY status";
static const char *const counts_sql_after =
    "SELECT status, SUM(n), MIN(oldest_at), event_id FROM "
    "(SELECT status, COUNT(*) AS n, MIN(created_at) AS oldest_at, event_id FROM deliveries "
    "GROUP BY receiver, status) GROUP BY status";

static int exec(sqlite3 *db, const char *sql)
{
    char *message = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &message) != SQLITE_OK) {
        fprintf(stderr, "bench_deliveries: %s: %s\n", sql, message ? message : "?");
        sqlite3_free(message);
        return -1;
    }
    return 0;
}

/* Due deliveries of `receiver`, `rows` of them, one millisecond apart from
 * `first_ms` after 2026-11-22T00:00:00Z. Fast: one INSERT ... SELECT. */
static int fill(sqlite3 *db, const char *receiver, long rows, long first_ms)
{
    char sql[2048];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < %ld) "
             "INSERT INTO deliveries (event_id, receiver, status, attempts, next_attempt_at, "
             "created_at, body) "
             "SELECT printf('evt_%%s_%%010d', '%s', i), '%s', 'pending', 0, t, t, "
             "printf('{\"id\":\"evt_%%s_%%010d\",\"type\":\"task.completed\",\"timestamp\":\"%%s\","
             "\"data\":{\"task_id\":\"tsk_%%010d\",\"status\":\"completed\",\"node\":{\"name\":"
             "\"bm-001\",\"ip\":\"10.0.0.1\",\"pool\":\"default\"},\"vmid\":120,\"score\":87.5,"
             "\"attempts\":1}}', '%s', i, t, i) "
             "FROM (SELECT i, strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', '2026-11-22T00:00:00', "
             "printf('+%%d.%%03d seconds', (%ld + i) / 1000, (%ld + i) %% 1000)) AS t, i FROM n)",
             rows, receiver, receiver, receiver, first_ms, first_ms);
    return exec(db, sql);
}

static int count_row(const store_delivery *d, void *ctx)
{
    (void)d;
    (*(int *)ctx)++;
    return 0;
}

static int run_sql(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
        rc = SQLITE_OK;
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "bench_deliveries: %s: %s\n", sql, sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { DUE_HEALTHY, DUE_STUCK, REQUEUE, COUNTS, N_QUERIES };
static const char *const query_names[N_QUERIES] = {
    "due scan, healthy receiver", "due scan, stuck receiver", "requeue at relay start",
    "stats: deliveries by status"};

/* Median seconds of query `q`; -1 on error. */
static double time_query(store *s, sqlite3 *db, const char *counts_sql, int q)
{
    double took[RUNS];
    for (int run = 0; run < RUNS; run++) {
        vf_error err;
        vf_error_init(&err);
        int rows = 0, rc = 0;
        double start = bench_now_s();
        if (q == DUE_HEALTHY || q == DUE_STUCK) {
            rc = store_deliveries_due_receiver(s, q == DUE_HEALTHY ? "healthy" : "stuck", NOW,
                                               SLOTS, count_row, &rows, &err);
            if (rc == 0 && rows != SLOTS) {
                fprintf(stderr, "bench_deliveries: %s found %d rows, not %d\n", query_names[q],
                        rows, SLOTS);
                return -1;
            }
        } else if (q == REQUEUE) {
            rc = store_deliveries_requeue(s, NOW, &err) < 0 ? -1 : 0;
        } else {
            rc = run_sql(db, counts_sql); /* says what failed itself */
        }
        took[run] = bench_now_s() - start;
        if (rc != 0) {
            fprintf(stderr, "bench_deliveries: %s: %s\n", query_names[q], err.text);
            return -1;
        }
    }
    qsort(took, RUNS, sizeof took[0], compare_double);
    return took[RUNS / 2];
}

static int measure(store *s, sqlite3 *db, const char *counts_sql, double out[N_QUERIES])
{
    /* Queries read the database file, not a WAL of a million pages. */
    if (exec(db, "PRAGMA wal_checkpoint(TRUNCATE)") < 0)
        return -1;
    for (int q = 0; q < N_QUERIES; q++)
        if ((out[q] = time_query(s, db, counts_sql, q)) < 0)
            return -1;
    return 0;
}

int main(int argc, char **argv)
{
    char dir[256];
    if (argc > 1)
        snprintf(dir, sizeof dir, "%s/bench_deliveries_XXXXXX", argv[1]);
    else
        snprintf(dir, sizeof dir, "/tmp/bench_deliveries_XXXXXX");
    long backlog = argc > 2 ? atol(argv[2]) : 1000000;
    if (backlog < SLOTS || !mkdtemp(dir)) {
        fprintf(stderr, "usage: bench_deliveries [dir] [backlog rows >= %d]\n", SLOTS);
        return 2;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/virtflow.db", dir);
    int status = 1;
    sqlite3 *db = NULL;
    store *s = NULL;
    vf_error err;
    vf_error_init(&err);
    double after[N_QUERIES], before[N_QUERIES];

    s = store_open(path, STORE_READ_WRITE, &err); /* creates the current schema */
    if (!s) {
        fprintf(stderr, "bench_deliveries: %s\n", err.text);
        goto out;
    }
    if (sqlite3_open(path, &db) != SQLITE_OK || exec(db, "PRAGMA busy_timeout = 5000") < 0)
        goto out;
    double start = bench_now_s();
    if (exec(db, "BEGIN") < 0 || fill(db, "stuck", backlog, 0) < 0 ||
        fill(db, "healthy", HEALTHY_ROWS, backlog) < 0 || exec(db, "COMMIT") < 0)
        goto out;
    printf("filled %ld due deliveries for \"stuck\" and %d for \"healthy\" in %.1f s (%s)\n",
           backlog, HEALTHY_ROWS, bench_now_s() - start, path);

    if (measure(s, db, counts_sql_after, after) < 0)
        goto out;
    /* Schema version 2's index, as a store had it before migration 003. */
    start = bench_now_s();
    if (exec(db, "DROP INDEX IF EXISTS deliveries_due_by_receiver") < 0 ||
        exec(db, "DROP INDEX IF EXISTS deliveries_delivering") < 0 ||
        exec(db, "CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries "
                 "(status, next_attempt_at)") < 0)
        goto out;
    printf("switched to the old index in %.1f s\n", bench_now_s() - start);
    if (measure(s, db, counts_sql_before, before) < 0)
        goto out;

    printf("%-30s %12s %12s   (median of %d, LIMIT %d, %ld-row backlog)\n", "query", "before ms",
           "after ms", RUNS, SLOTS, backlog);
    for (int q = 0; q < N_QUERIES; q++)
        printf("%-30s %12.3f %12.3f\n", query_names[q], before[q] * 1e3, after[q] * 1e3);
    status = 0;
out:
    sqlite3_close(db);
    store_close(s);
    unlink(path);
    char wal[600];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path);
    unlink(wal);
    rmdir(dir);
    return status;
}
