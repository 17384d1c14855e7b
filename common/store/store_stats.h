/* store_stats: operator read-outs. Part of the store: what store.h says about
 * durability, timestamps, strings, errors, threads and listing callbacks holds
 * here too. */
#ifndef VF_STORE_STATS_H
#define VF_STORE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "store_reservations.h"

/* ---- operator read-outs (store_stats.c) ---- */

/* One group of rows, borrowed during the callback. */
typedef struct store_count {
    const char *table;     /* "tasks", "deliveries" or "outbox" (unconfirmed events) */
    const char *status;    /* the group's status ("pending" for the outbox) */
    const char *reason;    /* tasks: the failure reason or NULL */
    int64_t count;         /* rows in the group */
    const char *oldest_at; /* the oldest row's created_at */
    const char *oldest_id; /* and its id (task id, or event id) */
} store_count;

typedef int (*store_count_fn)(const store_count *count, void *ctx);

/* Call fn once per group: tasks by (status, reason), deliveries by status,
 * and the outbox's unconfirmed events (only when there are some). One read
 * transaction, so the groups are consistent with each other. */
int store_counts(store *s, store_count_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* Call fn for every reservation task_id ever held, live or released, oldest
 * first (store_reservations_live only sees the live ones). */
int store_task_reservations(store *s, const char *task_id, store_reservation_fn fn, void *ctx,
                            vf_error *err) __attribute__((warn_unused_result));

#endif
