/* store_console: the console's read-outs (virtflowctl serve). Part of the
 * store: what store.h says about durability, timestamps, strings, errors,
 * threads and listing callbacks holds here too. */
#ifndef VF_STORE_CONSOLE_H
#define VF_STORE_CONSOLE_H

#include <stdint.h>

#include "store.h"
#include "store_tasks.h"

/* store_task_list one page at a time: the tasks matching `filter` that come
 * after the cursor in newest-first order, i.e. (created_at, id) below
 * (before_created_at, before_id), at most filter->limit of them. Both cursor
 * strings NULL: the first page. The next page's cursor is the last row's
 * created_at and id, so a page costs the same however deep it is. */
int store_task_page(store *s, const store_task_filter *filter, const char *before_created_at,
                    const char *before_id, store_task_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* The console's search: a filter, prefixes of the task id and of the node,
 * and a cursor on either side. Each prefix is an index range (the primary
 * key; tasks_by_node), not a LIKE: byte order on both backends, as the
 * PostgreSQL columns are COLLATE "C". */
typedef struct store_task_search {
    store_task_filter filter; /* node there is an exact match; limit applies */
    const char *id_prefix;    /* NULL: any */
    const char *node_prefix;  /* NULL: any */
    /* At most one cursor: older than (before_*), or newer than (after_*). */
    const char *before_created_at, *before_id;
    const char *after_created_at, *after_id;
} store_task_search;

/* The tasks of `q`, newest first either way: after a newer-than cursor the
 * page is the `limit` tasks just above it, shown newest first. */
int store_task_search_page(store *s, const store_task_search *q, store_task_fn fn, void *ctx,
                           vf_error *err) __attribute__((warn_unused_result));

/* How many tasks match q's filter and prefixes (the cursors ignored),
 * counting no further than `cap`: the count of a page header, which must not
 * cost a scan of millions of rows. Returns the count (cap when there are at
 * least cap), or -1 with err set. */
int64_t store_task_search_count(store *s, const store_task_search *q, int64_t cap, vf_error *err)
    __attribute__((warn_unused_result));

/* Tasks created in one hour with one status and reason, borrowed during the
 * callback. */
typedef struct store_task_hour {
    const char *hour; /* "YYYY-MM-DDTHH", UTC */
    const char *status;
    const char *reason; /* NULL unless failed */
    int64_t count;
} store_task_hour;

typedef int (*store_task_hour_fn)(const store_task_hour *hour, void *ctx);

/* Call fn per (hour, status, reason) of the tasks created since `since`,
 * oldest hour first. */
int store_task_hours(store *s, const char *since, store_task_hour_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

#endif
