/* store: what the relay adds to deliveries — per-receiver due scan, requeue
 * after a crash, operator redelivery — and the indexes those queries use. */
#include "store.h"

#include <sqlite3.h>

#include "db_internal.h"
#include "store_deliveries.h"
#include "store_internal.h"
#include "store_fixture.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T0 "2026-11-22T01:00:00.000Z"
#define T1 "2026-11-22T01:00:01.000Z"
#define T2 "2026-11-22T01:00:02.000Z"

typedef struct seen {
    char items[16][64];
    char status[16][16];
    int attempts[16];
    int n;
} seen;

static int collect(const store_delivery *d, void *ctx)
{
    seen *s = ctx;
    if (s->n < 16) {
        snprintf(s->items[s->n], sizeof s->items[0], "%s/%s", d->event_id, d->receiver);
        snprintf(s->status[s->n], sizeof s->status[0], "%s", d->status);
        s->attempts[s->n] = d->attempts;
        s->n++;
    }
    return 0;
}

static void set_state(store *s, const char *event, const char *receiver, const char *status,
                      int attempts)
{
    store_delivery_change c = {.event_id = event,
                               .receiver = receiver,
                               .status = status,
                               .attempts = attempts,
                               .next_attempt_at = strcmp(status, "pending") == 0 ? T0 : NULL,
                               .last_code = 500,
                               .last_error = "HTTP 500"};
    CHECK(store_delivery_update(s, &c, NULL) == 0);
}

static const char *status_of(store *s, const char *event, const char *receiver, int *attempts)
{
    static seen out;
    memset(&out, 0, sizeof out);
    store_delivery_filter f = {.event_id = event, .receiver = receiver};
    CHECK(store_delivery_list(s, &f, collect, &out, NULL) == 0);
    if (attempts)
        *attempts = out.n ? out.attempts[0] : -1;
    return out.n ? out.status[0] : "(none)";
}

/* SQLite's plan for `sql` on the store's connection, its lines joined by
 * " | ". Static buffer. */
static const char *query_plan(store *s, const char *sql)
{
    static char plan[1024];
    char explain[2048];
    plan[0] = '\0';
    snprintf(explain, sizeof explain, "EXPLAIN QUERY PLAN %s", sql);
    sqlite3 *handle = db_sqlite_handle(s->db);
    sqlite3_stmt *st = NULL;
    CHECKF(sqlite3_prepare_v2(handle, explain, -1, &st, NULL) == SQLITE_OK, "%s",
           sqlite3_errmsg(handle));
    size_t len = 0;
    while (st && sqlite3_step(st) == SQLITE_ROW && len < sizeof plan)
        len += (size_t)snprintf(plan + len, sizeof plan - len, "%s%s", len ? " | " : "",
                                (const char *)sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
    return plan;
}

/* The plan of the statement the store prepared in `slot` (run it first). */
static const char *statement_plan(store *s, store_stmt_id slot)
{
    CHECKF(s->stmts[slot] != NULL, "statement %d not prepared yet", (int)slot);
    return s->stmts[slot] ? query_plan(s, sqlite3_sql(s->stmts[slot]->sqlite)) : "";
}

/* A receiver that is down piles up due rows; the relay's scan for another
 * receiver must not walk them (issue 13, finding 7: 0.2-0.6 s per scan at
 * 1,000,000 rows). tests/bench/bench_deliveries times it. */
static void test_indexes(store *s)
{
    seen due = {0};
    CHECK(store_deliveries_due_receiver(s, "fast", T2, 3, collect, &due, NULL) == 0);
    const char *plan = statement_plan(s, STORE_STMT_DELIVERIES_DUE_RECEIVER);
    CHECK_CONTAINS(plan, "USING INDEX deliveries_due_by_receiver (receiver=? AND status=? AND "
                         "next_attempt_at<?)");
    CHECK(store_deliveries_requeue(s, T2, NULL) >= 0);
    plan = statement_plan(s, STORE_STMT_DELIVERIES_REQUEUE);
    CHECK_CONTAINS(plan, "deliveries_delivering");
    /* virtflowctl stats: reads the index in order, never sorts the table. */
    plan = query_plan(s, "SELECT status, COUNT(*), MIN(created_at), event_id FROM deliveries "
                         "GROUP BY receiver, status");
    CHECK_CONTAINS(plan, "USING INDEX deliveries_due_by_receiver");
    CHECKF(!strstr(plan, "TEMP B-TREE"), "%s", plan);
    /* The index on status alone is gone: nothing needs it any more. */
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db_sqlite_handle(s->db),
                             "SELECT COUNT(*) FROM sqlite_master WHERE name = ?1", -1, &st,
                             NULL) == SQLITE_OK);
    sqlite3_bind_text(st, 1, "deliveries_due", -1, SQLITE_STATIC);
    CHECK(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 0);
    sqlite3_finalize(st);
}

/* Everything below on one store: an SQLite file or a PostgreSQL schema. */
static void run(const char *path)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    if (!s)
        return;

    /* Receiver "slow" has a backlog due first; "fast" still gets its rows. */
    for (int i = 0; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof id, "evt_%d", i);
        CHECK(store_delivery_add(s, id, "slow", "{}", T0, NULL) == 0);
    }
    CHECK(store_delivery_add(s, "evt_9", "fast", "{}", T1, NULL) == 0);
    seen due = {0};
    CHECK(store_deliveries_due(s, T2, 3, collect, &due, NULL) == 0);
    CHECK(due.n == 3 && strstr(due.items[0], "/slow"));
    memset(&due, 0, sizeof due);
    CHECK(store_deliveries_due_receiver(s, "fast", T2, 3, collect, &due, NULL) == 0);
    CHECK(due.n == 1);
    CHECK_STR(due.items[0], "evt_9/fast");
    memset(&due, 0, sizeof due);
    CHECK(store_deliveries_due_receiver(s, "fast", T0, 3, collect, &due, NULL) == 0);
    CHECK(due.n == 0); /* not due yet at T0 */

    /* A crash leaves rows 'delivering': requeue makes them due again and
     * leaves every other state alone. */
    set_state(s, "evt_0", "slow", "delivering", 2);
    set_state(s, "evt_1", "slow", "delivering", 0);
    set_state(s, "evt_2", "slow", "delivered", 1);
    set_state(s, "evt_3", "slow", "failed", 4);
    CHECK(store_deliveries_requeue(s, T2, NULL) == 2);
    int attempts = 0;
    CHECK_STR(status_of(s, "evt_0", "slow", &attempts), "pending");
    CHECK(attempts == 2);
    CHECK_STR(status_of(s, "evt_1", "slow", NULL), "pending");
    CHECK_STR(status_of(s, "evt_2", "slow", NULL), "delivered");
    CHECK_STR(status_of(s, "evt_3", "slow", NULL), "failed");
    CHECK(store_deliveries_requeue(s, T2, NULL) == 0);

    /* Redeliver: failed and delivered rows restart their schedule; pending
     * ones are not touched; a receiver narrows it down. */
    CHECK(store_delivery_add(s, "evt_3", "fast", "{}", T0, NULL) == 0);
    set_state(s, "evt_3", "fast", "failed", 4);
    CHECK(store_delivery_redeliver(s, "evt_3", "fast", T2, NULL) == 1);
    CHECK_STR(status_of(s, "evt_3", "fast", &attempts), "pending");
    CHECK(attempts == 0);
    CHECK_STR(status_of(s, "evt_3", "slow", NULL), "failed");
    CHECK(store_delivery_redeliver(s, "evt_3", NULL, T2, NULL) == 1);
    CHECK_STR(status_of(s, "evt_3", "slow", NULL), "pending");
    CHECK(store_delivery_redeliver(s, "evt_2", NULL, T2, NULL) == 1);
    CHECK_STR(status_of(s, "evt_2", "slow", NULL), "pending");
    CHECK(store_delivery_redeliver(s, "evt_4", NULL, T2, NULL) == 0); /* pending already */
    CHECK(store_delivery_redeliver(s, "evt_nope", NULL, T2, NULL) == 0);
    memset(&due, 0, sizeof due);
    CHECK(store_deliveries_due_receiver(s, "slow", T2, 0, collect, &due, NULL) == 0);
    CHECK(due.n == 5);

    /* The console's filter by event type reads the type from the body, on
     * either dialect. */
    CHECK(store_delivery_add(s, "evt_t1", "typed", "{\"type\":\"task.failed\",\"data\":{}}", T0,
                             NULL) == 0);
    CHECK(store_delivery_add(s, "evt_t2", "typed", "{\"type\":\"task.completed\"}", T1, NULL) == 0);
    seen typed = {0};
    store_delivery_filter by_type = {.receiver = "typed", .type = "task.failed"};
    CHECK(store_delivery_list(s, &by_type, collect, &typed, NULL) == 0);
    CHECK(typed.n == 1);
    CHECK_STR(typed.items[0], "evt_t1/typed");

    if (!store_is_pg(s))
        test_indexes(s); /* SQLite's query plans */
    store_close(s);
}

int main(void)
{
    store_fixture f;
    if (store_fixture_init(&f, "store-deliveries") != 0)
        return 1;
    store_fixture_each(&f, "deliveries", run);
    store_fixture_close(&f);
    return test_summary();
}
