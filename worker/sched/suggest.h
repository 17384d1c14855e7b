/* suggest: why not, and what would fix it. For a decision (placed or not),
 * each rejected host gets the smallest change that would make the request
 * fit on it — the resources to free there, or the largest request it takes
 * now — or the constraint in the way (pool, dedicated, status, node name or
 * regex, anti-affinity); and each pool the largest request shapes that fit
 * now. "Smallest" is exact in the request's units (whole vCPUs, MiB, GiB,
 * slots): freeing what a suggestion says makes the request fit, one unit less
 * does not. No I/O.
 *
 * {"hosts": {"bm-001": {"reason": "insufficient cpu",
 *                       "free": {"cpu": 2},              resources to free
 *                       "fits": {"cpu": 2, "memory_mib": 4096, "disk_gib": 0}},
 *                                                        a smaller request it takes
 *            "bm-002": {"reason": "pool mismatch", "constraint": "pool", "pool": "gpu"}},
 *  "hosts_omitted": 12,
 *  "pools": {"default": {"most_cpu": {"host": "bm-003", "cpu": 6, "memory_mib": 2048,
 *                                     "disk_gib": 100},
 *                        "most_memory": {...}}}}
 *
 * Hosts whose change is smallest (relative to the request) come first, then
 * the ones held by a constraint; at most `max_hosts` are listed. A pool with
 * no room for any request (no free slot, under one vCPU or one MiB) is left
 * out of "pools". */
#ifndef VF_SUGGEST_H
#define VF_SUGGEST_H

#include <jansson.h>
#include <stddef.h>

#include "engine.h"
#include "request.h"

/* Suggestions for `req` after `decision` (made by `engine` on its current
 * snapshot: with per-host reasons, or a failure the free-capacity index
 * decided without them, sched_decide_options.lazy_host_reasons, whose
 * suggestions come from the index and are the same). A placed decision
 * without per-host reasons lists no hosts. Owned; NULL when out of memory
 * or there is no snapshot. */
json_t *sched_suggest(const sched_engine *engine, const sched_request *req,
                      const sched_decision *decision, size_t max_hosts);

/* The hosts a failed task's result and event list. */
#define SCHED_SUGGEST_HOSTS 10

#endif
