#include "grow.h"

#include <stdint.h>
#include <stdlib.h>

int grow_array(void **items, size_t *cap, size_t need, size_t item_size)
{
    if (need <= *cap)
        return 0;
    size_t next = *cap ? *cap : 16;
    while (next < need) {
        if (next > SIZE_MAX / 2)
            return -1;
        next *= 2;
    }
    if (item_size && next > SIZE_MAX / item_size)
        return -1;
    void *grown = realloc(*items, next * item_size);
    if (!grown)
        return -1;
    *items = grown;
    *cap = next;
    return 0;
}

int resize_array(void **items, size_t n, size_t item_size)
{
    size_t count = n ? n : 1;
    if (item_size && count > SIZE_MAX / item_size)
        return -1;
    void *resized = realloc(*items, count * item_size);
    if (!resized)
        return -1;
    *items = resized;
    return 0;
}
