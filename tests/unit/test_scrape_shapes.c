/* scrape_shapes on a real store (SQLite, and PostgreSQL when VF_PG_URL is
 * set): the recent shapes come from the last hour's schedule requests only,
 * most asked first; the last spare.prepare is the newest prepare (a
 * spare.release is no prepare), found at a first read in the spares table
 * when none is recent, and kept while no newer one comes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scrape_shapes.h"
#include "store_spares.h"
#include "store_tasks.h"
#include "store_fixture.h"
#include "testlib.h"

#define NOW_MS 1795000000000LL /* Unix ms */

static void add_task(store *st, const char *id, const char *kind, int64_t at_ms,
                     const char *request)
{
    vf_error err;
    vf_error_init(&err);
    char at[STORE_TIME_SIZE];
    CHECK(store_format_time(at_ms, at) == 0);
    store_task_fields f = {
        .id = id, .kind = kind, .status = "completed", .request = request, .vmid = -1, .at = at};
    CHECKF(store_task_insert(st, &f, &err) == 0, "%s: %s", id, err.text);
}

static void add_spare_row(store *st, const char *task_id, int64_t at_ms)
{
    vf_error err;
    vf_error_init(&err);
    char at[STORE_TIME_SIZE];
    CHECK(store_format_time(at_ms, at) == 0);
    store_spare row = {.task_id = task_id,
                       .upgrade_id = "upg-old",
                       .index = 1,
                       .name = "spare-upg-old-1",
                       .node = "bm-000",
                       .ip = "10.0.0.1",
                       .vmid = 100,
                       .cpu = 8,
                       .memory = 32768,
                       .disk = 100,
                       .state = "ready",
                       .ready_timeout_s = 600,
                       .pipeline_id = -1,
                       .created_at = at,
                       .updated_at = at};
    CHECKF(store_spare_add(st, &row, &err) == 0, "%s", err.text);
}

static void run(const char *location)
{
    vf_error err;
    vf_error_init(&err);
    store *st = store_open(location, STORE_READ_WRITE, &err);
    CHECKF(st != NULL, "%s", err.text);
    if (!st)
        return;
    const char *small = "{\"requested_cpu\": 2, \"requested_memory\": 4096}";
    const char *disk = "{\"requested_cpu\": 4, \"requested_memory\": 8192, \"requested_disk\": 40}";
    const char *old = "{\"requested_cpu\": 8, \"requested_memory\": 16384}";
    char id[32];
    for (int i = 0; i < 6; i++) { /* two hours ago: outside the window */
        snprintf(id, sizeof id, "old-%d", i);
        add_task(st, id, "schedule", NOW_MS - 7200 * 1000LL, old);
    }
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof id, "small-%d", i);
        add_task(st, id, "schedule", NOW_MS - 600 * 1000LL + i, small);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(id, sizeof id, "disk-%d", i);
        add_task(st, id, "schedule", NOW_MS - 300 * 1000LL + i, disk);
    }
    add_task(st, "broken", "schedule", NOW_MS - 200 * 1000LL, "not json");
    /* A prepare of three hours ago whose spares were placed. */
    add_task(st, "prep-old", "spare", NOW_MS - 3 * 3600 * 1000LL,
             "{\"upgrade_id\": \"upg-old\", \"count\": 2, \"requested_cpu\": 8, "
             "\"requested_memory\": 32768, \"requested_disk\": 100}");
    add_spare_row(st, "prep-old", NOW_MS - 3 * 3600 * 1000LL);

    scrape_shapes shapes;
    scrape_shapes_init(&shapes);
    CHECKF(scrape_shapes_read(&shapes, st, NOW_MS, &err) == 0, "%s", err.text);
    CHECK(shapes.n_recent == 2);
    CHECK_STR(shapes.recent[0].name, "recent:2c-4g");
    CHECK_STR(shapes.recent[1].name, "recent:4c-8g-40g");
    CHECK(shapes.recent[1].disk == 40);
    CHECK(shapes.have_spare && shapes.spare_count == 2);
    CHECK_STR(shapes.spare_task, "prep-old");
    CHECK_STR(shapes.spare.name, SCRAPE_LAST_SPARE_SHAPE);
    CHECK(shapes.spare.cpu == 8 && shapes.spare.memory == 32768 && shapes.spare.disk == 100);
    CHECK_STR(shapes.spare_pool, "default");

    /* A newer prepare in pool gp, then a release: the prepare is the last. */
    add_task(st, "prep-new", "spare", NOW_MS + 10 * 1000LL,
             "{\"upgrade_id\": \"upg-new\", \"count\": 4, \"requested_cpu\": 2, "
             "\"requested_memory\": 2048, \"requested_pool\": \"gp\"}");
    add_task(st, "rel-new", "spare", NOW_MS + 20 * 1000LL, "{\"upgrade_id\": \"upg-old\"}");
    CHECKF(scrape_shapes_read(&shapes, st, NOW_MS + 30 * 1000LL, &err) == 0, "%s", err.text);
    CHECK_STR(shapes.spare_task, "prep-new");
    CHECK(shapes.spare_count == 4 && shapes.spare.cpu == 2);
    CHECK_STR(shapes.spare_pool, "gp");
    /* Ten minutes on, nothing newer: still that one. An hour and more on:
     * no recent shapes any more, the prepare still known. */
    CHECKF(scrape_shapes_read(&shapes, st, NOW_MS + 600 * 1000LL, &err) == 0, "%s", err.text);
    CHECK_STR(shapes.spare_task, "prep-new");
    CHECK(shapes.n_recent == 2);
    CHECKF(scrape_shapes_read(&shapes, st, NOW_MS + 2 * 3600 * 1000LL, &err) == 0, "%s", err.text);
    CHECK(shapes.n_recent == 0 && shapes.have_spare);
    CHECK_STR(shapes.spare_task, "prep-new");

    /* A fresh reader (a restarted worker) two hours on finds it in the
     * spares table only if it placed spares: prep-new did not, prep-old did. */
    scrape_shapes fresh;
    scrape_shapes_init(&fresh);
    CHECKF(scrape_shapes_read(&fresh, st, NOW_MS + 2 * 3600 * 1000LL, &err) == 0, "%s", err.text);
    CHECK(fresh.have_spare);
    CHECK_STR(fresh.spare_task, "prep-old");
    store_close(st);
}

int main(void)
{
    store_fixture f;
    if (store_fixture_init(&f, "scrape-shapes") != 0)
        return 1;
    store_fixture_each(&f, "scrape_shapes", run);
    store_fixture_close(&f);
    return test_summary();
}
