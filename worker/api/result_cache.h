/* result_cache: GET /result's answers kept beside the task rows they were
 * made from, so that a client polling a task is answered without parsing
 * the task's recorded result and building the answer again (that parse and
 * build was most of the route's cost: docs/benchmarks.md, virtflow-api).
 *
 * The store stays the truth: every request still reads the row, and an
 * answer is reused only when the row read now equals, in every field the
 * answer is made from, the row it was made from (api_result_json reads id,
 * status, reason, attempts, result, error, node, vmid). A changed row is a
 * miss, so nothing is ever stale and nothing needs invalidating.
 *
 * A fixed number of slots, one answer each, chosen by the task id's hash: a
 * task whose slot another task took is simply built again. Not locked: its
 * owner uses it from one thread (virtflow-api's HTTP thread). */
#ifndef VF_RESULT_CACHE_H
#define VF_RESULT_CACHE_H

#include <stddef.h>

#include "store_tasks.h"

typedef struct result_cache result_cache;

/* A cache of `slots` answers (at least 1); NULL when out of memory. */
result_cache *result_cache_new(size_t slots);

/* NULL is fine. */
void result_cache_free(result_cache *cache);

/* The answer made from a row equal to `task`, its length in *len; NULL when
 * there is none. Borrowed: valid until the next result_cache_put. */
const char *result_cache_get(const result_cache *cache, const store_task *task, size_t *len);

/* Keeps a copy of `body` (len bytes) as the answer for rows equal to `task`,
 * in place of what its slot held. Out of memory: keeps nothing (the cache
 * only saves work). */
void result_cache_put(result_cache *cache, const store_task *task, const char *body, size_t len);

#endif
