/* process_view: the programs working on a store, as virtflowctl workers
 * (--json) and the console's Workers page show them, one definition for
 * both. */
#ifndef VF_PROCESS_VIEW_H
#define VF_PROCESS_VIEW_H

#include <jansson.h>
#include <stdbool.h>

#include "store.h"

/* The processes of the store's processes table as a JSON array, newest
 * heartbeat rules: each {program, host, pid, version, started_at, beat_at,
 * beat_age_s, alive, in_hand, owner, leases: [{name, epoch, acquired_at,
 * expires_at}]}, by program, host and start. alive: a heartbeat within
 * LEASE_TTL_S (a process that stopped cleanly has no row; one silent longer
 * died or cannot reach the store). `all`: also the silent ones (up to
 * STORE_PROCESS_FORGET_S), else only the live ones. The leases are those not
 * expired, but for the "worker:" ones that only announce a worker. Owned;
 * NULL with err. */
json_t *process_view_list(store *s, bool all, vf_error *err);

#endif
