/* scrape_shapes: see scrape_shapes.h. */
#include "scrape_shapes.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "request.h"
#include "spare_place.h"
#include "store_spares.h"
#include "store_tasks.h"

void scrape_shapes_init(scrape_shapes *shapes)
{
    memset(shapes, 0, sizeof *shapes);
}

/* The placement fields of a recorded body; spare.prepare's count too
 * (0: none, a spare.release). Returns 0, or -1 when it does not parse. */
static int parse_body(const char *text, sched_request *req, int64_t *count)
{
    json_t *body = text ? json_loads(text, 0, NULL) : NULL;
    vf_error err;
    vf_error_init(&err);
    sched_request_init(req);
    int rc = body ? sched_request_parse_placement(body, req, &err) : -1;
    const json_t *n = json_object_get(body, "count");
    *count = json_is_integer(n) ? json_integer_value(n) : 0;
    json_decref(body);
    return rc;
}

static int tally_task(const store_task *task, void *ctx)
{
    sched_request req;
    int64_t unused;
    if (parse_body(task->request, &req, &unused) == 0 &&
        sched_shape_tally_add(ctx, req.cpu, req.memory, req.disk) < 0)
        return 1; /* out of memory: count what was tallied */
    return 0;
}

/* The newest spare.prepare of a listing, newest first; found stops it. */
typedef struct spare_search {
    scrape_shapes *shapes;
    bool found;
} spare_search;

static void take_spare(scrape_shapes *shapes, const store_task *task, const sched_request *req,
                       int64_t count)
{
    shapes->have_spare = true;
    memcpy(shapes->spare_name, SCRAPE_LAST_SPARE_SHAPE, sizeof shapes->spare_name);
    shapes->spare = (config_shape){
        .name = shapes->spare_name, .cpu = req->cpu, .memory = req->memory, .disk = req->disk};
    snprintf(shapes->spare_pool, sizeof shapes->spare_pool, "%s", req->pool);
    shapes->spare_count = count;
    snprintf(shapes->spare_task, sizeof shapes->spare_task, "%s", task->id);
    snprintf(shapes->spare_created_at, sizeof shapes->spare_created_at, "%s", task->created_at);
}

static int find_spare(const store_task *task, void *ctx)
{
    spare_search *search = ctx;
    sched_request req;
    int64_t count = 0;
    if (parse_body(task->request, &req, &count) < 0 || count < 1 || count > SCHED_SPARE_MAX_COUNT)
        return 0; /* a spare.release, or a body the worker refused */
    /* Not older than the one already known (two at the same instant: the
     * listing's newest). */
    if (!search->shapes->have_spare ||
        strcmp(task->created_at, search->shapes->spare_created_at) >= 0)
        take_spare(search->shapes, task, &req, count);
    search->found = true;
    return 1;
}

/* The newest spares row's task, for a first read that found no
 * spare.prepare in its window. */
typedef struct newest_spare {
    char task_id[128];
    char created_at[STORE_TIME_SIZE];
} newest_spare;

static int note_newest(const store_spare *spare, void *ctx)
{
    newest_spare *newest = ctx;
    if (spare->created_at && strcmp(spare->created_at, newest->created_at) > 0) {
        snprintf(newest->task_id, sizeof newest->task_id, "%s", spare->task_id);
        snprintf(newest->created_at, sizeof newest->created_at, "%s", spare->created_at);
    }
    return 0;
}

static int seed_from_spares(scrape_shapes *shapes, store *s, vf_error *err)
{
    newest_spare newest = {"", ""};
    if (store_spare_list(s, STORE_SPARES_ALL, NULL, 0, note_newest, &newest, err) < 0)
        return -1;
    if (!newest.task_id[0])
        return 0;
    store_task task = {0};
    int found = store_task_get(s, newest.task_id, &task, err);
    if (found < 0)
        return -1;
    sched_request req;
    int64_t count = 0;
    if (found == 0 && parse_body(task.request, &req, &count) == 0 && count >= 1 &&
        count <= SCHED_SPARE_MAX_COUNT)
        take_spare(shapes, &task, &req, count);
    store_task_clear(&task);
    return 0;
}

int scrape_shapes_read(scrape_shapes *shapes, store *s, int64_t now_ms, vf_error *err)
{
    char window[STORE_TIME_SIZE];
    if (store_format_time(now_ms - (int64_t)SCRAPE_RECENT_WINDOW_S * 1000, window) < 0)
        snprintf(window, sizeof window, "1970-01-01T00:00:00.000Z");

    sched_shape_tally tally;
    sched_shape_tally_init(&tally);
    store_task_filter recent = {.kind = "schedule", .since = window, .limit = SCRAPE_RECENT_TASKS};
    int rc = store_task_list(s, &recent, tally_task, &tally, err);
    if (rc == 0)
        shapes->n_recent = sched_shape_tally_top(&tally, SCRAPE_RECENT_SHAPES,
                                                 "recent:", shapes->recent, shapes->recent_names);
    sched_shape_tally_close(&tally);
    if (rc < 0)
        return -1;

    /* After the first read, the spare tasks of the last
     * SCRAPE_SPARE_MARGIN_S seconds: one short index range, wide enough for
     * a row committed a while after its created_at. */
    char recently[STORE_TIME_SIZE];
    if (store_format_time(now_ms - (int64_t)SCRAPE_SPARE_MARGIN_S * 1000, recently) < 0)
        snprintf(recently, sizeof recently, "%s", window);
    spare_search search = {shapes, false};
    store_task_filter spares = {
        .kind = "spare", .since = shapes->started ? recently : window, .limit = 64};
    if (store_task_list(s, &spares, find_spare, &search, err) < 0)
        return -1;
    if (!shapes->started && !search.found && seed_from_spares(shapes, s, err) < 0)
        return -1;
    shapes->started = true;
    return 0;
}
