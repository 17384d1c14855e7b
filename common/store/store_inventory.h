/* store_inventory: inventory snapshots, the inventory as it was at each
 * decision, for what-if replay (virtflowctl simulate). Part of the store: what
 * store.h says about durability, timestamps, strings, errors, threads and
 * listing callbacks holds here too. */
#ifndef VF_STORE_INVENTORY_H
#define VF_STORE_INVENTORY_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* Hex SHA-256 and its terminating NUL. */
#define STORE_INVENTORY_HASH_SIZE 65

/* Record a snapshot fetched at `at` (store time format) with content
 * `hosts` (a JSON document, see schema/011_inventory_snapshots.sql) whose
 * hash is `content_hash` (the worker's host_json_content_hash; tests may
 * use store_inventory_hash of the text), unless the newest snapshot already has that hash.
 * One statement, so it is atomic on its own; two workers recording the same
 * change at once may both add it (the rows are the same content; a replay
 * takes the newest at each time). Returns 1 when a row was added, 0 when the
 * content was unchanged, -1 with err set. */
int store_inventory_snapshot_record(store *s, const char *content_hash, const char *at,
                                    const char *hosts, vf_error *err)
    __attribute__((warn_unused_result));

/* The hex SHA-256 of `len` bytes of `data` into out. */
void store_inventory_hash(const void *data, size_t len, char out[STORE_INVENTORY_HASH_SIZE]);

/* One snapshot, borrowed during the callback. */
typedef struct store_inventory_snapshot {
    int64_t id;
    const char *content_hash;
    const char *recorded_at;
    const char *hosts;
} store_inventory_snapshot;

/* Return non-zero to stop the listing. */
typedef int (*store_inventory_snapshot_fn)(const store_inventory_snapshot *snapshot, void *ctx);

/* Call fn for every snapshot in force at some time from `since` on, oldest
 * first: the newest recorded at or before `since` (in force at `since`), then
 * every later one. NULL `since`: all. One read; works on a READ_ONLY handle.
 * Returns 0 or -1 with err set. */
int store_inventory_snapshots(store *s, const char *since, store_inventory_snapshot_fn fn,
                              void *ctx, vf_error *err) __attribute__((warn_unused_result));

/* One step of the recorded history, borrowed during the callback. */
typedef struct store_history_step {
    bool release; /* false: a request decided; true: its hold ended */
    bool spare;   /* request: a spare task (spare.prepare or spare.release), not a schedule one */
    const char *task_id;
    const char *at;      /* request: the task's created_at; release: released_at */
    const char *request; /* request: the verbatim body; release: NULL */
    const char *reason;  /* request: the task's failure reason (invalid, ...) or NULL */
} store_history_step;

typedef int (*store_history_fn)(const store_history_step *step, void *ctx);

/* Call fn for the history a replay decides again, from `since` on, in time
 * order: every schedule task created since then (its request), and every end
 * of a reservation released since then that the inventory did not show as a
 * VM (bound_at unset: task.release, a failed task, expiry), but for the
 * vmid-only rows a preemption leaves (their end ends no placement: the
 * victim's was ended by the preemption, and it may be placed again since); a
 * request comes before a release at the same time (a preemption ends its
 * victims' holds in its own decision's millisecond). Spare tasks come too (`spare`; their
 * body tells spare.prepare from spare.release). The steps are
 * read in one query and held in memory (about the size of the requests).
 * Works on a READ_ONLY handle. Returns 0 or -1 with err set. */
int store_history(store *s, const char *since, store_history_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* Placements and releases since `since`, summed per node, hour and shape:
 * the demand a forecast reads (forecast.h). A placement is a reservation
 * created then; a release one ended then without its VM ever appearing
 * (bound_at unset: task.release, a failed task, expiry, a preemption). */
typedef struct store_flow {
    const char *node;
    const char *hour; /* "2026-11-28T09": the hour, store time text cut */
    double cpu;       /* vCPUs of each */
    int64_t memory;   /* MiB of each */
    int64_t count;
    int sign; /* +1 placed, -1 released */
} store_flow;

typedef int (*store_flow_fn)(const store_flow *flow, void *ctx);

/* Call fn for each sum, placements first. A pass over the reservations of
 * the retention window (no index on their times): for a scrape, cache it.
 * Works on a READ_ONLY handle. Returns 0 or -1 with err set. */
int store_reservation_flow(store *s, const char *since, store_flow_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

#endif
