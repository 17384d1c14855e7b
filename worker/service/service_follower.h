/* service_follower: the worker's inventory follower. Each round it takes
 * the newest snapshot the refresh thread fetched (inventory_refresher.h),
 * switches the engine to it, ends the holds whose VMs it shows and those
 * whose time ran out, and records the snapshot in the store. It owns the
 * snapshot the engine decides over, the reservation clock, the hash of the
 * last recorded snapshot and the note that says why placements stopped;
 * the round reads them only through these functions. */
#ifndef VF_SERVICE_FOLLOWER_H
#define VF_SERVICE_FOLLOWER_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "hostset.h"
#include "inventory.h"
#include "store.h"
#include "vf_error.h"

typedef struct service_follower service_follower;

/* Borrows `source`, `engine`, `store` and `config` (inventory.max_age_s,
 * which does not reload), which must outlive the follower. Holds no snapshot
 * until the first follow. Returns an owned follower, or NULL with err set. */
service_follower *service_follower_new(inventory *source, sched_engine *engine, store *store,
                                       const vf_config *config, vf_error *err);

/* Seam for tests: replace the monotonic clock (milliseconds) that spaces
 * the recorded snapshots. NULL restores it. */
void service_follower_set_clock(service_follower *f, int64_t (*mono_ms)(void *context),
                                void *context);

/* Releases the snapshot it holds and frees it. NULL is a no-op. */
void service_follower_free(service_follower *f);

/* At start, outside any transaction: decide over the newest snapshot, if
 * any (the holds it shows materialised are left to the first sync). Returns
 * 0 or -1 with err set. */
int service_follower_start(service_follower *f, vf_error *err);

/* Every round, busy or idle: switch to the newest snapshot if there is one,
 * end the holds whose VMs it shows on their own hosts, then those whose time
 * ran out by the time it was fetched (the reservation clock), and record
 * that time and (at most once in record_every_s seconds, 0: never) the
 * snapshot, in a transaction of its own. Sets *room_changed when holds ended
 * or a new snapshot came (the engine's room may have grown). Returns 0, or
 * -1 with err set when the store failed (rolled back: the next round ends
 * them again). */
int service_follower_sync(service_follower *f, int record_every_s, bool *room_changed,
                          vf_error *err) __attribute__((warn_unused_result));

/* The inventory_snapshots row holding exactly the content decided over now,
 * or -1 when it was not recorded (decision provenance, provenance.h). */
int64_t service_follower_snapshot_id(const service_follower *f);

/* inventory.record_decided as reloaded: record every content decided over
 * (at most one row per change), whatever record_every_s says. */
void service_follower_record_decided(service_follower *f, bool on);

/* The hosts to place on: the snapshot's, or NULL while it is older than
 * inventory.max_age_s (then tasks retry as if there were no inventory).
 * Valid until the next sync. */
const hostset *service_follower_placeable(const service_follower *f);

/* The reservation clock: when the snapshot decided over was fetched (Unix
 * ms, wall clock; 0 before the first). Reservations expire against it, not
 * against the wall clock, so that none ends while the inventory cannot show
 * whether its VM exists. */
int64_t service_follower_clock_ms(const service_follower *f);

/* What the handlers say about the inventory ("inventory is ... old", or
 * ""). Borrowed until the follower is freed; each sync rewrites it. */
const char *service_follower_note(const service_follower *f);

#endif
