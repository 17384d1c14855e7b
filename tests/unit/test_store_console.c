/* store_task_page and store_task_hours (the console's read-outs) against a
 * real SQLite file, and a PostgreSQL schema when VF_PG_URL is set: pages
 * follow each other without gaps or repeats (ties on created_at broken by
 * id), filters combine with the cursor, and tasks are counted per hour. */
#include "store_console.h"
#include "store_fixture.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct seen {
    char ids[32][32];
    char created[32][STORE_TIME_SIZE];
    int n;
} seen;

static int collect(const store_task *t, void *ctx)
{
    seen *s = ctx;
    if (s->n < 32) {
        snprintf(s->ids[s->n], sizeof s->ids[0], "%s", t->id);
        snprintf(s->created[s->n], sizeof s->created[0], "%s", t->created_at);
        s->n++;
    }
    return 0;
}

typedef struct hours {
    char lines[16][96];
    int n;
} hours;

static int collect_hour(const store_task_hour *h, void *ctx)
{
    hours *s = ctx;
    if (s->n < 16)
        snprintf(s->lines[s->n++], sizeof s->lines[0], "%s %s %s %lld", h->hour, h->status,
                 h->reason ? h->reason : "-", (long long)h->count);
    return 0;
}

static void add_task_on(store *st, const char *id, const char *status, const char *reason,
                        const char *at, const char *node)
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
                           .node = node,
                           .at = at};
    CHECKF(store_task_insert(st, &f, &err) == 0, "%s", err.text);
}

static void add_task(store *st, const char *id, const char *status, const char *reason,
                     const char *at)
{
    add_task_on(st, id, status, reason, at, NULL);
}

/* One page of q, comma-separated. */
static void search(store *st, const store_task_search *q, char *out, size_t size)
{
    vf_error err;
    vf_error_init(&err);
    seen page = {0};
    CHECKF(store_task_search_page(st, q, collect, &page, &err) == 0, "%s", err.text);
    out[0] = '\0';
    for (int i = 0; i < page.n; i++) {
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s", len ? "," : "", page.ids[i]);
    }
}

/* Every page of `filter` in turn, with the cursor of the previous page's
 * last row, joined into one comma-separated list. */
static void walk(store *st, store_task_filter *filter, char *out, size_t size)
{
    vf_error err;
    vf_error_init(&err);
    char before[STORE_TIME_SIZE] = "", before_id[32] = "";
    out[0] = '\0';
    for (int guard = 0; guard < 20; guard++) {
        seen page = {0};
        CHECKF(store_task_page(st, filter, before[0] ? before : NULL,
                               before_id[0] ? before_id : NULL, collect, &page, &err) == 0,
               "%s", err.text);
        for (int i = 0; i < page.n; i++) {
            size_t len = strlen(out);
            snprintf(out + len, size - len, "%s%s", len ? "," : "", page.ids[i]);
        }
        if (page.n < filter->limit)
            return;
        snprintf(before, sizeof before, "%s", page.created[page.n - 1]);
        snprintf(before_id, sizeof before_id, "%s", page.ids[page.n - 1]);
    }
    CHECK(!"walk ended");
}

static void run(const char *path)
{
    vf_error err;
    vf_error_init(&err);
    store *st = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(st != NULL, "%s", err.text);
    if (!st)
        return;
    /* Three tasks share one created_at: the id orders them. */
    add_task(st, "t-a", "completed", NULL, "2026-01-01T00:10:00.000Z");
    add_task(st, "t-b", "failed", "unschedulable", "2026-01-01T00:20:00.000Z");
    add_task(st, "t-c", "completed", NULL, "2026-01-01T01:00:00.000Z");
    add_task(st, "t-d", "failed", "unschedulable", "2026-01-01T01:00:00.000Z");
    add_task(st, "t-e", "completed", NULL, "2026-01-01T01:00:00.000Z");
    add_task(st, "t-f", "failed", "invalid", "2026-01-01T02:30:00.000Z");
    add_task(st, "t-g", "completed", NULL, "2026-01-01T02:40:00.000Z");

    char all[512];
    store_task_filter filter = {.limit = 2};
    walk(st, &filter, all, sizeof all);
    CHECK_STR(all, "t-g,t-f,t-e,t-d,t-c,t-b,t-a");
    filter.limit = 3;
    walk(st, &filter, all, sizeof all);
    CHECK_STR(all, "t-g,t-f,t-e,t-d,t-c,t-b,t-a");
    store_task_filter failed = {.status = "failed", .reason = "unschedulable", .limit = 1};
    walk(st, &failed, all, sizeof all);
    CHECK_STR(all, "t-d,t-b");
    store_task_filter since = {.since = "2026-01-01T01:00:00.000Z", .limit = 2};
    walk(st, &since, all, sizeof all);
    CHECK_STR(all, "t-g,t-f,t-e,t-d,t-c");

    /* A cursor past the last row: an empty page, not an error. */
    seen none = {0};
    CHECK(store_task_page(st, &filter, "2026-01-01T00:10:00.000Z", "t-a", collect, &none, &err) ==
          0);
    CHECK(none.n == 0);

    /* The console's searches: prefixes are ranges of the index, in byte
     * order; the count stops at its cap; newer-than pages read newest first. */
    add_task_on(st, "u-1", "completed", NULL, "2026-01-01T00:05:00.000Z", "bm-007");
    add_task_on(st, "u-2", "completed", NULL, "2026-01-01T00:06:00.000Z", "bm-070");
    add_task_on(st, "t", "completed", NULL, "2026-01-01T00:07:00.000Z", "bm-1");
    char found[256];
    store_task_search q = {.filter = {.limit = 10}, .id_prefix = "t-"};
    search(st, &q, found, sizeof found);
    CHECK_STR(found, "t-g,t-f,t-e,t-d,t-c,t-b,t-a");
    CHECK(store_task_search_count(st, &q, 100, &err) == 7);
    CHECK(store_task_search_count(st, &q, 3, &err) == 3);
    q.id_prefix = "t-d";
    search(st, &q, found, sizeof found);
    CHECK_STR(found, "t-d");
    q = (store_task_search){.filter = {.limit = 10}, .node_prefix = "bm-0"};
    search(st, &q, found, sizeof found);
    CHECK_STR(found, "u-2,u-1");
    q.node_prefix = "bm-07";
    search(st, &q, found, sizeof found);
    CHECK_STR(found, "u-2");
    q = (store_task_search){.filter = {.limit = 2, .status = "completed"},
                            .id_prefix = "t",
                            .after_created_at = "2026-01-01T00:10:00.000Z",
                            .after_id = "t-a"};
    search(st, &q, found, sizeof found);
    CHECK_STR(found, "t-e,t-c");
    CHECK(store_task_search_count(st, &q, 100, &err) == 5);

    hours h = {0};
    CHECKF(store_task_hours(st, "2026-01-01T01:00:00.000Z", collect_hour, &h, &err) == 0, "%s",
           err.text);
    CHECK(h.n == 4);
    CHECK_STR(h.lines[0], "2026-01-01T01 completed - 2");
    CHECK_STR(h.lines[1], "2026-01-01T01 failed unschedulable 1");
    CHECK_STR(h.lines[2], "2026-01-01T02 completed - 1");
    CHECK_STR(h.lines[3], "2026-01-01T02 failed invalid 1");
    store_close(st);
}

int main(void)
{
    store_fixture f;
    if (store_fixture_init(&f, "store-console") != 0)
        return 1;
    store_fixture_each(&f, "console", run);
    store_fixture_close(&f);
    return test_summary();
}
