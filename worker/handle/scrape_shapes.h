/* scrape_shapes: the request shapes the worker's headroom metrics count
 * beside worker.headroom_shapes, read from the store at scrape time (never
 * on the task path), on the scrape thread's own handle; virtflowctl
 * headroom and the console read the same (hence here, beneath the worker's
 * service: it needs the store and the engine's shapes only):
 *   - the SCRAPE_RECENT_SHAPES shapes asked for most by the newest
 *     SCRAPE_RECENT_TASKS schedule tasks of the last SCRAPE_RECENT_WINDOW_S
 *     seconds, named "recent:4c-8g-40g" (recent_shapes.h);
 *   - the last spare.prepare: its shape (named "last_spare_prepare"), pool
 *     and count of spares. Found among the spare tasks created in the last
 *     SCRAPE_SPARE_MARGIN_S seconds (one short index range); at the first
 *     scrape, the newest spare.prepare of the last
 *     SCRAPE_RECENT_WINDOW_S seconds, or else the newest one that placed
 *     spares (the spares table), so a restarted worker still knows it. */
#ifndef VF_SCRAPE_SHAPES_H
#define VF_SCRAPE_SHAPES_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "hostset.h"
#include "recent_shapes.h"
#include "store.h"

#define SCRAPE_RECENT_SHAPES 3
#define SCRAPE_RECENT_TASKS 1000
#define SCRAPE_RECENT_WINDOW_S 3600
#define SCRAPE_SPARE_MARGIN_S 120
#define SCRAPE_LAST_SPARE_SHAPE "last_spare_prepare"

typedef struct scrape_shapes {
    config_shape recent[SCRAPE_RECENT_SHAPES]; /* names point into recent_names */
    char recent_names[SCRAPE_RECENT_SHAPES][SCHED_SHAPE_NAME_LEN];
    size_t n_recent;

    bool have_spare;
    config_shape spare; /* name points into spare_name: SCRAPE_LAST_SPARE_SHAPE */
    char spare_name[sizeof SCRAPE_LAST_SPARE_SHAPE];
    char spare_pool[HOST_POOL_LEN];
    int64_t spare_count;
    char spare_task[128];
    char spare_created_at[STORE_TIME_SIZE];

    bool started; /* the first read is done */
} scrape_shapes;

void scrape_shapes_init(scrape_shapes *shapes);

/* Read both from `s` (borrowed), at Unix ms `now_ms`. Returns 0, or -1
 * with err (the store failed): the shapes of the last good read stay. */
int scrape_shapes_read(scrape_shapes *shapes, store *s, int64_t now_ms, vf_error *err)
    __attribute__((warn_unused_result));

#endif
