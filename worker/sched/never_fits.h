/* never_fits: whether a request is one no host of the snapshot could ever
 * hold, so waiting for room is pointless (scheduler.unfit_requests: fail).
 *
 * A host could hold the request when it passes every enabled filter that
 * the inventory alone decides, and holds the request when empty:
 *   pool, dedicated     the host's pool and dedicated flag
 *   node name, regex    the host's name (node_name, node.qemu-scheduler/regex)
 *   slots, cpu, memory  max_vms >= 1, and the vCPUs and MiB of the request
 *                       within the host's capacity after scheduler.reserve and
 *                       overcommit (nothing allocated, nothing reserved)
 * What changes while a request waits never counts against it: a host's
 * status (offline, maintenance and unknown hosts come back), its guests and
 * reservations, and its disk (the inventory gives free storage, which grows
 * as guests go, not a total). An empty snapshot never says never: it is more
 * likely a source gone blank than a cluster without hosts.
 *
 * No I/O; reads the engine's snapshot and parameters (plugin arguments
 * applied) and compiles the node regex afresh, under the engine's budget: a
 * pattern too costly to finish counts as matching. */
#ifndef VF_NEVER_FITS_H
#define VF_NEVER_FITS_H

#include <stdbool.h>
#include <stddef.h>

#include "engine.h"
#include "request.h"

/* True when no host of the engine's snapshot could ever hold `req`, with
 * `why` (at most `size` bytes) saying what is missing, e.g.
 *   no host is in pool "gpu"; the inventory's pools: default, fast
 *   asks for 96 vCPUs; the most any host of pool "default" holds empty is
 *   64 (bm-003, after scheduler.reserve and overcommit)
 * False when some host could, when there is no snapshot or an empty one, and
 * when the node regex does not compile (the decision reports that). */
bool sched_never_fits(const sched_engine *engine, const sched_request *req, char *why, size_t size);

#endif
