/* inventory_refresher: the thread that fetches an inventory every
 * inventory.refresh_s seconds, so that no caller ever waits for a fetch;
 * readers take the newest snapshot (inventory_view, inventory.h). The
 * worker runs one (its round follows the snapshots: service_follower.h), so
 * does virtflow-api (GET /v1/hosts). It owns its thread (job.h). */
#ifndef VF_INVENTORY_REFRESHER_H
#define VF_INVENTORY_REFRESHER_H

#include <stdbool.h>

#include "inventory.h"
#include "vf_error.h"

typedef struct inventory_refresher inventory_refresher;

/* Fetches `source` (borrowed, must outlive the refresher) every refresh_s
 * seconds: the first time at once when `fetch_first` (a program that did
 * not fetch before starting it), else after one interval. Returns an owned
 * refresher, or NULL with err set. */
inventory_refresher *inventory_refresher_start(inventory *source, int refresh_s, bool fetch_first,
                                               vf_error *err);

/* A reload: take refresh_s from now on and fetch at once. */
void inventory_refresher_fetch_now(inventory_refresher *r, int refresh_s);

/* Stops the thread, waits for it, frees it. NULL is a no-op. */
void inventory_refresher_stop(inventory_refresher *r);

#endif
