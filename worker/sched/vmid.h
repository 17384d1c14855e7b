/* vmid: parse the vmid annotations and pick the lowest free vmid. */
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

#endif
