/* service_inventory: the worker's inventory refresh thread. It fetches the
 * inventory every inventory.refresh_s seconds, so that the round never
 * waits for a fetch; the round takes the newest snapshot through its
 * follower (service_follower.h). It owns its thread, its lock and its
 * stopper; the service starts it, asks it to fetch at once after a reload,
 * and stops it. */
#ifndef VF_SERVICE_INVENTORY_H
#define VF_SERVICE_INVENTORY_H

#include "inventory.h"
#include "vf_error.h"

typedef struct inventory_refresher inventory_refresher;

/* The inventory refresh thread: fetches `source` (borrowed, must outlive
 * it) every refresh_s seconds. Returns an owned refresher, or NULL with err
 * set. */
inventory_refresher *service_inventory_refresher_start(inventory *source, int refresh_s,
                                                       vf_error *err);

/* A reload: take refresh_s from now on and fetch at once. */
void service_inventory_refresher_fetch_now(inventory_refresher *r, int refresh_s);

/* Stops the thread, waits for it, frees it. NULL is a no-op. */
void service_inventory_refresher_stop(inventory_refresher *r);

#endif
