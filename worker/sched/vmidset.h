/* vmidset: a set of vmids (open addressing, linear probing, backward-shift
 * deletion). Holds the vmids of live reservations, which change with every
 * decision, so membership, insert and delete are all O(1) on average. */
#ifndef VF_VMIDSET_H
#define VF_VMIDSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct vmidset {
    uint32_t *slots; /* 0 marks an empty slot: vmid 0 never exists */
    size_t cap;      /* power of two, or 0 */
    size_t count;
} vmidset;

void vmidset_init(vmidset *set);
void vmidset_close(vmidset *set);
/* Returns 0, or -1 when out of memory. Adding a present vmid is a no-op. */
int vmidset_add(vmidset *set, uint32_t vmid) __attribute__((warn_unused_result));
bool vmidset_has(const vmidset *set, uint32_t vmid);
/* Returns true when the vmid was present. */
bool vmidset_remove(vmidset *set, uint32_t vmid);
void vmidset_clear(vmidset *set);

#endif
