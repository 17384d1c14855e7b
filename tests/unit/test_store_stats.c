/* store_counts and store_task_reservations against a real SQLite file. */
#include "store.h"
#include "store_deliveries.h"
#include "store_outbox.h"
#include "store_reservations.h"
#include "store_stats.h"
#include "store_tasks.h"
#include "store_fixture.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct seen {
    char lines[16][160];
    int n;
} seen;

static int collect_count(const store_count *c, void *ctx)
{
    seen *s = ctx;
    if (s->n < 16)
        snprintf(s->lines[s->n++], sizeof s->lines[0], "%s %s %s %lld %s %s", c->table, c->status,
                 c->reason ? c->reason : "-", (long long)c->count, c->oldest_at, c->oldest_id);
    return 0;
}

static bool has_line(const seen *s, const char *line)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->lines[i], line) == 0)
            return true;
    return false;
}

static int collect_reservation(const store_reservation *r, void *ctx)
{
    seen *s = ctx;
    if (s->n < 16)
        snprintf(s->lines[s->n++], sizeof s->lines[0], "%s %s %lld %s", r->task_id, r->node,
                 (long long)r->vmid, r->released_at ? r->released_at : "held");
    return 0;
}

static void add_task(store *st, const char *id, const char *status, const char *reason,
                     const char *at)
{
    vf_error err;
    vf_error_init(&err);
    store_task_fields f = {.id = id,
                           .kind = "schedule",
                           .status = status,
                           .reason = reason,
                           .attempts = 1,
                           .request = "{}",
                           .vmid = -1,
                           .at = at};
    CHECKF(store_task_insert(st, &f, &err) == 0, "%s", err.text);
}

/* Everything below on one store: an SQLite file or a PostgreSQL schema. */
static void run(const char *path)
{
    vf_error err;
    vf_error_init(&err);
    store *st = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(st != NULL, "%s", err.text);
    if (!st)
        return;

    /* An empty store has no groups at all (not even an empty outbox). */
    seen empty = {0};
    CHECK(store_counts(st, collect_count, &empty, &err) == 0);
    CHECK(empty.n == 0);

    add_task(st, "t-new", "retrying", NULL, "2026-01-02T00:00:00.000Z");
    add_task(st, "t-old", "retrying", NULL, "2026-01-01T00:00:00.000Z");
    add_task(st, "t-ok", "completed", NULL, "2026-01-03T00:00:00.000Z");
    add_task(st, "t-bad", "failed", "invalid", "2026-01-04T00:00:00.000Z");
    add_task(st, "t-full", "failed", "unschedulable", "2026-01-05T00:00:00.000Z");
    CHECK(store_outbox_add(st, "evt_1", "event.task.completed", "{}", "2026-01-03T00:00:01.000Z",
                           &err) == 0);
    CHECK(store_delivery_add(st, "evt_1", "r1", "{}", "2026-01-03T00:00:02.000Z", &err) == 0);
    CHECK(store_reservation_add(st, "t-ok", "bm-1", 2, 1024, 10, 120, "2026-01-03T00:00:00.000Z",
                                "2026-01-03T00:15:00.000Z", &err) == 0);
    CHECK(store_reservation_add(st, "t-ok", "bm-2", 2, 1024, 10, -1, "2026-01-03T00:00:00.000Z",
                                "2099-01-03T00:15:00.000Z", &err) == 0);
    CHECK(store_reservation_release_vmid(st, 120, "bm-1", "2026-01-03T00:05:00.000Z",
                                         "2026-01-03T00:05:00.000Z", &err) == 1);
    store_close(st);

    /* Read-only, as virtflowctl opens it. */
    st = store_open(path, STORE_READ_ONLY, &err);
    CHECKF(st != NULL, "%s", err.text);
    if (!st)
        return;
    seen counts = {0};
    CHECKF(store_counts(st, collect_count, &counts, &err) == 0, "%s", err.text);
    CHECK(counts.n == 6);
    /* The oldest of a group names its own row, not any row of the group. */
    CHECK(has_line(&counts, "tasks retrying - 2 2026-01-01T00:00:00.000Z t-old"));
    CHECK(has_line(&counts, "tasks completed - 1 2026-01-03T00:00:00.000Z t-ok"));
    CHECK(has_line(&counts, "tasks failed invalid 1 2026-01-04T00:00:00.000Z t-bad"));
    CHECK(has_line(&counts, "tasks failed unschedulable 1 2026-01-05T00:00:00.000Z t-full"));
    CHECK(has_line(&counts, "deliveries pending - 1 2026-01-03T00:00:02.000Z evt_1"));
    CHECK(has_line(&counts, "outbox pending - 1 2026-01-03T00:00:01.000Z evt_1"));

    /* Released and held reservations both show, oldest first. */
    seen res = {0};
    CHECK(store_task_reservations(st, "t-ok", collect_reservation, &res, &err) == 0);
    CHECK(res.n == 2);
    CHECK_STR(res.lines[0], "t-ok bm-1 120 2026-01-03T00:05:00.000Z");
    CHECK_STR(res.lines[1], "t-ok bm-2 -1 held");
    seen none = {0};
    CHECK(store_task_reservations(st, "t-bad", collect_reservation, &none, &err) == 0);
    CHECK(none.n == 0);
    store_close(st);
}

int main(void)
{
    store_fixture f;
    if (store_fixture_init(&f, "store-stats") != 0)
        return 1;
    store_fixture_each(&f, "stats", run);
    store_fixture_close(&f);
    return test_summary();
}
