#include "vmid_hints.h"

#include "near_best.h"

void vmid_hints_set_class(vmid_hints *h, uint32_t stride, const char *worker)
{
    /* Only a worker spreads: a dry run (no worker id) takes the lowest. */
    uint32_t next = stride > 1 && worker[0] ? stride : 1;
    bool keep = h->slot_given && next == h->stride;
    h->stride = next;
    h->slot = keep ? h->slot : (uint32_t)(near_best_hash(worker) % h->stride);
    h->slot_given = keep;
    vmid_hints_reset(h);
}

void vmid_hints_set_slot(vmid_hints *h, uint32_t slot)
{
    if (h->stride < 2)
        return;
    h->slot = slot % h->stride;
    h->slot_given = true;
    h->slot_hint = vmid_first_in_slot(VMID_MIN, h->stride, h->slot);
}

void vmid_hints_reset(vmid_hints *h)
{
    h->hint = VMID_MIN;
    h->slot_hint = vmid_first_in_slot(VMID_MIN, h->stride, h->slot);
}

/* Move *hint (over the ids hint, hint + step, ...) past every id the
 * snapshot uses or a reservation holds. */
static void advance_from(uint32_t *hint, uint32_t step, const hostset *hosts,
                         const vmidset *reserved)
{
    /* Walk the sorted used list alongside the hint, as vmid_pick does: after
     * the oldest reservation ends, the hint drops to its id and the next one
     * steps over every live reservation's id, one binary search each before. */
    const uint32_t *used = hosts ? hosts->used_vmids : NULL;
    size_t n_used = hosts ? hosts->n_used_vmids : 0;
    size_t lo = 0, hi = n_used;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (used[mid] < *hint)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (*hint <= VMID_MAX) {
        while (lo < n_used && used[lo] < *hint)
            lo++;
        bool taken = (lo < n_used && used[lo] == *hint) || vmidset_has(reserved, *hint);
        if (!taken)
            break;
        *hint = *hint > VMID_MAX - step ? VMID_MAX + 1u : *hint + step;
    }
}

void vmid_hints_advance(vmid_hints *h, const hostset *hosts, const vmidset *reserved)
{
    advance_from(&h->hint, 1, hosts, reserved);
    if (h->stride > 1)
        advance_from(&h->slot_hint, h->stride, hosts, reserved);
}

static bool in_own_slot(const vmid_hints *h, uint32_t vmid)
{
    return h->stride > 1 && vmid % h->stride == h->slot;
}

void vmid_hints_taken(vmid_hints *h, uint32_t vmid)
{
    if (vmid == h->hint)
        h->hint = vmid + 1;
    if (vmid == h->slot_hint && in_own_slot(h, vmid))
        h->slot_hint = vmid > VMID_MAX - h->stride ? VMID_MAX + 1u : vmid + h->stride;
}

void vmid_hints_freed(vmid_hints *h, uint32_t vmid)
{
    if (!vmid)
        return;
    if (vmid < h->hint)
        h->hint = vmid;
    if (in_own_slot(h, vmid) && vmid < h->slot_hint)
        h->slot_hint = vmid;
}

uint32_t vmid_hints_pick(vmid_hints *h, const vmid_query *query, const hostset *hosts,
                         const vmidset *reserved, uint32_t *scanned)
{
    vmid_hints_advance(h, hosts, reserved);
    *scanned = 0;
    if (!(h->spread && h->stride > 1))
        return vmid_pick(query, hosts, reserved, h->hint, scanned);
    /* Its own class first; when that has none free (a narrow range), the
     * lowest free id as with one worker. */
    uint32_t vmid =
        vmid_pick_strided(query, hosts, reserved, h->stride, h->slot, h->slot_hint, scanned);
    if (vmid == 0 && !(query->regex && pattern_too_costly(query->regex))) {
        uint32_t more = 0;
        vmid = vmid_pick(query, hosts, reserved, h->hint, &more);
        *scanned += more;
    }
    return vmid;
}
