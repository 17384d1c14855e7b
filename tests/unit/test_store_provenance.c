/* store_provenance on SQLite and PostgreSQL: a decision's record lands on
 * its task's row and reads back bit for bit (a digest with its top bit set
 * included); a task without one says so; a scheduler section is kept once
 * per content and named by the same row each time; a snapshot is found by
 * its content hash (the newest of that content); the reservations around a
 * decision are those created by then and not released before it, and a
 * group's rows are all of its rows. */
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_fixture.h"
#include "store_groups.h"
#include "store_inventory.h"
#include "store_provenance.h"
#include "store_reservations.h"
#include "store_tasks.h"
#include "testlib.h"

static store_fixture fixture;

static void add_task(store *s, const char *id, const char *at)
{
    vf_error err;
    vf_error_init(&err);
    store_task_fields t = {.id = id,
                           .kind = "schedule",
                           .status = "completed",
                           .attempts = 1,
                           .request = "{}",
                           .vmid = -1,
                           .at = at};
    CHECKF(store_task_insert(s, &t, &err) == 0, "%s", err.text);
}

static int collect(const store_reservation *row, void *ctx)
{
    char *ids = ctx;
    strcat(ids, row->task_id);
    strcat(ids, " ");
    return 0;
}

static void run(const char *location)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(location, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    if (!s)
        return;
    add_task(s, "t-1", "2026-11-01T00:00:00.000Z");
    add_task(s, "t-2", "2026-11-01T00:00:00.000Z");
    store_provenance p = {.snapshot_id = 7,
                          .holds = UINT64_C(0xfedcba9876543210),
                          .config_id = 3,
                          .clock_ms = 1795858356157,
                          .decided_ms = 1795858357000};
    CHECKF(store_provenance_record(s, "t-1", &p, &err) == 0, "%s", err.text);
    store_provenance back;
    CHECK(store_provenance_get(s, "t-1", &back, &err) == 0 && back.present);
    CHECK(back.snapshot_id == 7 && back.holds == p.holds && back.config_id == 3 &&
          back.clock_ms == p.clock_ms && back.decided_ms == p.decided_ms);
    p.snapshot_id = -1; /* a content not recorded */
    CHECK(store_provenance_record(s, "t-1", &p, &err) == 0);
    CHECK(store_provenance_get(s, "t-1", &back, &err) == 0 && back.snapshot_id == -1);
    CHECK(store_provenance_get(s, "t-2", &back, &err) == 0 && !back.present);
    CHECK(store_provenance_get(s, "nope", &back, &err) == 0 && !back.present);

    int64_t first = 0, again = 0, other = 0;
    CHECK(store_engine_config_record(s, "aaaa", "2026-11-01T00:00:00.000Z", "{\"scheduler\":{}}",
                                     &first, &err) == 0);
    CHECK(store_engine_config_record(s, "aaaa", "2026-11-02T00:00:00.000Z", "{\"scheduler\":{}}",
                                     &again, &err) == 0);
    CHECK(store_engine_config_record(s, "bbbb", "2026-11-02T00:00:00.000Z",
                                     "{\"scheduler\":{\"strategy\":\"pack\"}}", &other, &err) == 0);
    CHECK(first > 0 && again == first && other != first);
    char *body = NULL, *at = NULL;
    CHECK(store_engine_config_get(s, other, &body, &at, &err) == 1);
    CHECK(body && strstr(body, "pack") && at && strcmp(at, "2026-11-02T00:00:00.000Z") == 0);
    free(body);
    free(at);
    CHECK(store_engine_config_get(s, 999, &body, &at, &err) == 0);

    int64_t id = 0;
    CHECK(store_inventory_snapshot_record(s, "h1", "2026-11-01T00:00:00.000Z", "{\"nodes\":[]}",
                                          &err) == 1);
    CHECK(store_inventory_snapshot_record(s, "h2", "2026-11-01T00:01:00.000Z", "{\"nodes\":[1]}",
                                          &err) == 1);
    CHECK(store_inventory_snapshot_record(s, "h1", "2026-11-01T00:02:00.000Z", "{\"nodes\":[]}",
                                          &err) == 1);
    CHECK(store_inventory_snapshot_find(s, "h1", &id, &err) == 1);
    char *hosts = NULL;
    CHECK(store_inventory_snapshot_get(s, id, &hosts, &at, &err) == 1);
    CHECK(at && strcmp(at, "2026-11-01T00:02:00.000Z") == 0); /* the newest of that content */
    free(hosts);
    free(at);
    CHECK(store_inventory_snapshot_find(s, "h3", &id, &err) == 0);

    /* Around 00:10, over a view of 00:09:30: r-a held, r-b released after,
     * r-c released at it (in), r-d released before (out), r-e created after
     * (out), r-f released before bound to its VM (in: it may count still,
     * the caller judges), r-g the same but expired before the view (out). */
    static const struct {
        const char *task, *created, *released, *bound, *expires;
    } rows[] = {{"t-1", "2026-11-01T00:00:00.000Z", NULL, NULL, NULL},
                {"t-2", "2026-11-01T00:05:00.000Z", "2026-11-01T00:20:00.000Z", NULL, NULL},
                {"t-1", "2026-11-01T00:06:00.000Z", "2026-11-01T00:10:00.000Z", NULL, NULL},
                {"t-2", "2026-11-01T00:07:00.000Z", "2026-11-01T00:09:00.000Z", NULL, NULL},
                {"t-1", "2026-11-01T00:11:00.000Z", NULL, NULL, NULL},
                {"t-3", "2026-11-01T00:01:00.000Z", "2026-11-01T00:08:00.000Z",
                 "2026-11-01T00:08:00.000Z", NULL},
                {"t-4", "2026-11-01T00:01:00.000Z", "2026-11-01T00:08:00.000Z",
                 "2026-11-01T00:08:00.000Z", "2026-11-01T00:09:00.000Z"}};
    add_task(s, "t-3", "2026-11-01T00:00:00.000Z");
    add_task(s, "t-4", "2026-11-01T00:00:00.000Z");
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        const char *expires = rows[i].expires ? rows[i].expires : "2026-11-02T00:00:00.000Z";
        CHECKF(store_reservation_add(s, rows[i].task, "bm-001", 1, 512, 0, 100 + (int64_t)i,
                                     rows[i].created, expires, &err) == 0,
               "%s", err.text);
        if (rows[i].released)
            CHECK(store_reservation_release_vmid(s, 100 + (int64_t)i, "bm-001", rows[i].released,
                                                 rows[i].bound, &err) >= 0);
    }
    char ids[256] = "";
    CHECK(store_reservations_around(s, "2026-11-01T00:10:00.000Z", "2026-11-01T00:09:30.000Z",
                                    collect, ids, &err) == 0);
    CHECK_STR(ids, "t-1 t-2 t-1 t-3 ");
    CHECK(store_reservations_set_group(s, "t-1", "g1", &err) >= 0); /* its held rows */
    ids[0] = '\0';
    CHECK(store_group_reservations(s, "g1", collect, ids, &err) == 0);
    CHECK_STR(ids, "t-1 t-1 ");

    /* The batch's order within one millisecond: each task's first event of
     * it (t-2's events written first), none for a task without one then. */
    static const char *const ms = "2026-11-01T00:30:00.000Z";
    CHECK(store_task_event_add(s, "t-2", ms, "preempted", NULL, &err) == 0);
    CHECK(store_task_event_add(s, "t-1", ms, "processing", NULL, &err) == 0);
    CHECK(store_task_event_add(s, "t-2", ms, "processing", NULL, &err) == 0);
    CHECK(store_task_event_add(s, "t-1", "2026-11-01T00:30:00.001Z", "completed", NULL, &err) == 0);
    int64_t first_1 = 0, first_2 = 0, none = -7;
    CHECKF(store_task_event_first_at(s, "t-1", ms, &first_1, &err) == 1, "%s", err.text);
    CHECK(store_task_event_first_at(s, "t-2", ms, &first_2, &err) == 1);
    CHECK(first_2 > 0 && first_2 < first_1);
    CHECK(store_task_event_first_at(s, "t-1", "2026-11-01T00:31:00.000Z", &none, &err) == 0);
    CHECK(none == -7);
    store_close(s);
}

int main(void)
{
    if (store_fixture_init(&fixture, "provenance") != 0)
        return 1;
    store_fixture_each(&fixture, "provenance", run);
    store_fixture_close(&fixture);
    return test_summary();
}
