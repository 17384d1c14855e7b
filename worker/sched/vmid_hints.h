/* vmid_hints: where an engine's next vmid search starts, so that picking
 * the lowest free vmid does not walk every id in use each time.
 *
 * `hint`: every id in [VMID_MIN, hint) is used by the snapshot or held by a
 * reservation. With several workers on one store (sched_params.vmid_stride
 * > 1 and a worker id), each worker also has its residue class `slot`
 * modulo `stride`, tried first while `spread` is on (the others are alive:
 * vmid_pick_strided), and its own hint over that class. A reservation steps
 * a hint past its own id only; the walk over the ids above waits for the
 * next pick (vmid_hints_advance), by which time a release has often lowered
 * the hint to a free id. No I/O. */
#ifndef VF_VMID_HINTS_H
#define VF_VMID_HINTS_H

#include <stdbool.h>
#include <stdint.h>

#include "hostset.h"
#include "vmid.h"
#include "vmidset.h"

/* A value type the engine embeds; its fields are for reading. */
typedef struct vmid_hints {
    uint32_t hint;      /* every id in [VMID_MIN, hint) is used or reserved */
    uint32_t stride;    /* 1: a worker alone (or a dry run): no class */
    uint32_t slot;      /* this worker's residue class, when stride > 1 */
    uint32_t slot_hint; /* every id of the class below it is used or reserved */
    bool spread;        /* other workers are alive: the class first */
    bool slot_given;    /* vmid_hints_set_slot chose the class, not the hash */
} vmid_hints;

/* The class for `stride` (scheduler.vmid_stride) and worker id `worker`
 * ("" for none: a dry run, which takes the lowest and has no class), the
 * hints at the bottom. `spread` is kept as it was, and so is a class
 * vmid_hints_set_slot gave while the stride stays. */
void vmid_hints_set_class(vmid_hints *h, uint32_t stride, const char *worker);
/* Take `slot` (modulo the stride) as the class instead of the hash's: the
 * one the worker holds a lease on (leases.h lease_take_slot); the class's
 * hint from the bottom. Nothing with a stride of 1. */
void vmid_hints_set_slot(vmid_hints *h, uint32_t slot);
/* Both hints back to the bottom (a new snapshot). */
void vmid_hints_reset(vmid_hints *h);
/* Move both hints past every id `hosts` (may be NULL) uses or `reserved`
 * holds. */
void vmid_hints_advance(vmid_hints *h, const hostset *hosts, const vmidset *reserved);
/* A reservation took `vmid`: step a hint that stood on it. */
void vmid_hints_taken(vmid_hints *h, uint32_t vmid);
/* A reservation of `vmid` (0: none) ended: the id is free again. */
void vmid_hints_freed(vmid_hints *h, uint32_t vmid);
/* The vmid a placement takes under `query` (vmid.h): the lowest free one
 * of the worker's class first while spreading, else the lowest free one.
 * Advances the hints first. 0 when none is free; *scanned as vmid_pick. */
uint32_t vmid_hints_pick(vmid_hints *h, const vmid_query *query, const hostset *hosts,
                         const vmidset *reserved, uint32_t *scanned);

#endif
