/* grow: the one growable-array helper (the realloc-doubling every module
 * with a list of things needs). */
#ifndef VF_GROW_H
#define VF_GROW_H

#include <stddef.h>

/* Make *items (an array of *cap elements of item_size bytes, NULL when *cap
 * is 0) hold at least `need` elements, doubling its capacity. Returns 0, or
 * -1 when memory runs out or the size overflows (*items and *cap are then
 * unchanged, still owned by the caller). */
int grow_array(void **items, size_t *cap, size_t need, size_t item_size)
    __attribute__((warn_unused_result));

#endif
