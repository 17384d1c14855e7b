/* grow: the array helpers every module with a list of things needs: the
 * one growable array (doubling, for lists appended to) and the one resize
 * (an array sized to a count known at once: one slot per host, per pool,
 * per domain). Nothing else in the programs calls realloc. */
#ifndef VF_GROW_H
#define VF_GROW_H

#include <stddef.h>

/* Make *items (an array of *cap elements of item_size bytes, NULL when *cap
 * is 0) hold at least `need` elements, doubling its capacity. Returns 0, or
 * -1 when memory runs out or the size overflows (*items and *cap are then
 * unchanged, still owned by the caller). */
int grow_array(void **items, size_t *cap, size_t need, size_t item_size)
    __attribute__((warn_unused_result));

/* Make *items hold exactly `n` elements of item_size bytes (n may be 0:
 * one element's room is kept so the array stays non-NULL). Returns 0, or -1
 * when memory runs out or the size overflows (*items is then unchanged,
 * still owned by the caller). */
int resize_array(void **items, size_t n, size_t item_size) __attribute__((warn_unused_result));

#endif
