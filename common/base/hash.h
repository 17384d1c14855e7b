/* hash: 64-bit FNV-1a, for in-memory tables and for the choices that must be
 * stable across runs, machines and versions (near_best.h). Not for
 * anything an adversary chooses keys for in bulk, nor for security. */
#ifndef VF_HASH_H
#define VF_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV1A_BASIS UINT64_C(14695981039346656037)

/* `h` (HASH_FNV1A_BASIS to begin) carried on over `n` bytes: several pieces
 * hash as their concatenation. */
uint64_t hash_fnv1a(uint64_t h, const void *bytes, size_t n);

/* The FNV-1a hash of a NUL-terminated string. */
uint64_t hash_fnv1a_text(const char *text);

#endif
