#include "hash.h"

#define FNV1A_PRIME UINT64_C(1099511628211)

uint64_t hash_fnv1a(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * FNV1A_PRIME;
    return h;
}

uint64_t hash_fnv1a_text(const char *text)
{
    uint64_t h = HASH_FNV1A_BASIS;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        h = (h ^ *c) * FNV1A_PRIME;
    return h;
}
