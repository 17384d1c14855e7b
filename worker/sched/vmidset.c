#include "vmidset.h"

#include <stdlib.h>
#include <string.h>

void vmidset_init(vmidset *set)
{
    memset(set, 0, sizeof *set);
}

void vmidset_close(vmidset *set)
{
    free(set->slots);
    vmidset_init(set);
}

static size_t slot_of(uint32_t vmid, size_t cap)
{
    /* Fibonacci hashing spreads consecutive vmids across the table. */
    return (size_t)((vmid * 2654435769u) & (uint32_t)(cap - 1));
}

static void insert_unchecked(uint32_t *slots, size_t cap, uint32_t vmid)
{
    size_t i = slot_of(vmid, cap);
    while (slots[i] != 0 && slots[i] != vmid)
        i = (i + 1) & (cap - 1);
    slots[i] = vmid;
}

int vmidset_add(vmidset *set, uint32_t vmid)
{
    if (vmidset_has(set, vmid))
        return 0;
    if ((set->count + 1) * 2 > set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 64;
        uint32_t *slots = calloc(cap, sizeof(uint32_t));
        if (!slots)
            return -1;
        for (size_t i = 0; i < set->cap; i++)
            if (set->slots[i])
                insert_unchecked(slots, cap, set->slots[i]);
        free(set->slots);
        set->slots = slots;
        set->cap = cap;
    }
    insert_unchecked(set->slots, set->cap, vmid);
    set->count++;
    return 0;
}

bool vmidset_has(const vmidset *set, uint32_t vmid)
{
    if (set->cap == 0 || vmid == 0)
        return false;
    size_t i = slot_of(vmid, set->cap);
    while (set->slots[i] != 0) {
        if (set->slots[i] == vmid)
            return true;
        i = (i + 1) & (set->cap - 1);
    }
    return false;
}

bool vmidset_remove(vmidset *set, uint32_t vmid)
{
    if (set->cap == 0 || vmid == 0)
        return false;
    size_t mask = set->cap - 1;
    size_t i = slot_of(vmid, set->cap);
    while (set->slots[i] != vmid) {
        if (set->slots[i] == 0)
            return false;
        i = (i + 1) & mask;
    }
    /* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
    size_t hole = i;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (set->slots[j] == 0)
            break;
        size_t home = slot_of(set->slots[j], set->cap);
        /* Move slots[j] into the hole unless its home lies cyclically in (hole, j]. */
        bool home_between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!home_between) {
            set->slots[hole] = set->slots[j];
            hole = j;
        }
    }
    set->slots[hole] = 0;
    set->count--;
    return true;
}

void vmidset_clear(vmidset *set)
{
    if (set->slots)
        memset(set->slots, 0, set->cap * sizeof(uint32_t));
    set->count = 0;
}
