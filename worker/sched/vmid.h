/* vmid: parse the vmid annotations and pick the lowest free vmid (or, for
 * one of several workers sharing a store, the lowest free one of its own
 * residue class first: vmid_pick_strided). */
#ifndef VF_VMID_H
#define VF_VMID_H

#include <stdint.h>

#include "hostset.h"
#include "pattern.h"
#include "vf_error.h"
#include "vmidset.h"

/* A request with a vmid regex examines at most this many candidate ids, so
 * a pattern that matches nothing free costs bounded time (about 0.1 s). */
#define VMID_REGEX_SCAN_LIMIT 1000000u

/* Parse "100-150" (inclusive, within VMID_MIN..VMID_MAX, start <= end).
 * Returns 0, or -1 with a VF_EINVAL error quoting the text. */
int vmid_parse_range(const char *text, uint32_t *lo, uint32_t *hi, vf_error *err)
    __attribute__((warn_unused_result));

typedef struct vmid_query {
    uint32_t lo, hi; /* inclusive search domain */
    pattern *regex;  /* whole-number match; NULL = any */
} vmid_query;

/* Lowest id in the domain that matches the regex and is neither in
 * `used` nor in `reserved`. `hint`: every id in [VMID_MIN, hint) is known to
 * be taken, so the scan may start there. Returns the id, or 0 when none is
 * free (*scanned tells how many candidates were examined). The scan stops
 * early, returning 0, when the pattern hits its match limits
 * (pattern_too_costly then tells so). */
uint32_t vmid_pick(const vmid_query *query, const hostset *used, const vmidset *reserved,
                   uint32_t hint, uint32_t *scanned);

/* The lowest id in the domain that vmid_pick would accept and that is
 * congruent to `slot` modulo `stride` (> 1; slot < stride). `slot_hint`:
 * every such id below it is known to be taken. Returns 0 when none is free
 * (then vmid_pick over the whole domain is the fallback): several workers
 * deciding over one store at once, each with its own slot, then seldom pick
 * the same vmid, where all of them would pick the same lowest free one.
 * *scanned as vmid_pick. */
uint32_t vmid_pick_strided(const vmid_query *query, const hostset *used, const vmidset *reserved,
                           uint32_t stride, uint32_t slot, uint32_t slot_hint, uint32_t *scanned);

/* The lowest id >= `from` congruent to `slot` modulo `stride` (>= 1), or
 * VMID_MAX + 1 when there is none up to VMID_MAX. */
uint32_t vmid_first_in_slot(uint32_t from, uint32_t stride, uint32_t slot);

#endif
