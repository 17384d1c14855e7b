/* inventory: the worker's view of the hosts, from the configured source
 * (inventory.source: file | http | proxmox), with a last-good cache.
 *
 * Two ways to use it:
 *   - inventory_fetch: fetch now, get an owned hostset (virtflowctl, tests).
 *   - inventory_refresh + inventory_acquire/inventory_release: the worker
 *     refreshes on an interval (say from its own thread); decisions acquire
 *     the current snapshot and never wait for a fetch. A failed refresh keeps
 *     the previous good snapshot in use and records why, so a decision can say
 *     "inventory is stale (N s old): <error>".
 *
 * A refresh whose source (file or http) answers with the very bytes the
 * current snapshot was built from keeps that snapshot, fetched anew, instead
 * of parsing them into the same hosts again.
 *
 * Snapshots are reference counted: acquire takes a reference that stays
 * valid (and unchanged) until released, even if a refresh swaps in a newer
 * one meanwhile. inventory_refresh and inventory_acquire may be called from
 * different threads; one handle must not be freed while views are held or
 * calls are running. */
#ifndef VF_INVENTORY_H
#define VF_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "hostset.h"
#include "vf_error.h"

typedef struct inventory inventory;
typedef struct inventory_snapshot inventory_snapshot; /* opaque, reference counted */

/* What a decision sees. Fill with inventory_acquire, give back with
 * inventory_release. */
typedef struct inventory_view {
    const hostset *hosts;         /* NULL when no fetch has ever succeeded */
    double age_s;                 /* seconds since `hosts` was fetched; 0 when hosts is NULL */
    uint64_t fetch;               /* counts the handle's successful refreshes: the same hosts
                                     with a higher count were fetched again (the same bytes) */
    bool stale;                   /* the latest refresh failed (or none has succeeded yet) */
    char error[VF_ERROR_TEXT];    /* why, when stale; "" otherwise */
    inventory_snapshot *snapshot; /* the reference held; internal */
} inventory_view;

/* Copies what it needs from config->inventory (the config may be freed
 * afterwards) and checks it: file needs path, http needs url, proxmox needs
 * url and token_file. Does not fetch. Returns an owned handle, or NULL with
 * err filled (VF_ECONFIG naming the key, VF_ENOMEM). */
inventory *inventory_new(const vf_config *config, vf_error *err)
    __attribute__((warn_unused_result));
/* NULL is a no-op. */
void inventory_free(inventory *inventory);

/* A reload: fetch from `from`'s source from the next fetch on (a fetch
 * running keeps the settings it started with), keeping the current
 * snapshot until then. `from` (from inventory_new, which checked the
 * settings) is freed. */
void inventory_adopt_settings(inventory *into, inventory *from);

/* Fetch from the source now (blocking up to inventory.timeout_s for remote
 * sources). Does not touch the cache. Returns an owned, finished hostset,
 * or NULL with err filled. */
hostset *inventory_fetch(inventory *inventory, vf_error *err) __attribute__((warn_unused_result));

/* Fetch and, on success, make the result the current snapshot; on failure
 * keep the previous one, remember the error and log it (a warning the first
 * time, so an outage is one line, not one per interval). Returns 0, or -1 with
 * err filled. Only one refresh should run at a time. */
int inventory_refresh(inventory *inventory, vf_error *err);

/* Take a reference to the current snapshot into *view. Never blocks on I/O. */
void inventory_acquire(inventory *inventory, inventory_view *view);
/* Drop the reference; *view is cleared. A cleared view is fine. */
void inventory_release(inventory_view *view);

/* When the view is stale, write "inventory is stale (N s old): <error>" (or
 * "no inventory yet: <error>" without hosts) into buf and return true;
 * otherwise write "" and return false. */
bool inventory_view_describe(const inventory_view *view, char *buf, size_t size);

/* Seam for tests: replace the monotonic clock (seconds). NULL restores it. */
void inventory_set_clock(inventory *inventory, double (*now_s)(void *context), void *context);

#endif
