#include "vmid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_bound(const char *start, size_t len, uint32_t *out)
{
    if (len == 0 || len > 9)
        return -1;
    uint32_t value = 0;
    for (size_t i = 0; i < len; i++) {
        if (start[i] < '0' || start[i] > '9')
            return -1;
        value = value * 10 + (uint32_t)(start[i] - '0');
    }
    *out = value;
    return 0;
}

int vmid_parse_range(const char *text, uint32_t *lo, uint32_t *hi, vf_error *err)
{
    const char *dash = strchr(text, '-');
    if (!dash || parse_bound(text, (size_t)(dash - text), lo) < 0 ||
        parse_bound(dash + 1, strlen(dash + 1), hi) < 0) {
        vf_error_set(err, VF_EINVAL,
                     "annotations.vmid.qemu-scheduler/range: \"%.64s\" is not START-END "
                     "(e.g. 100-150)",
                     text);
        return -1;
    }
    if (*lo > *hi) {
        vf_error_set(err, VF_EINVAL,
                     "annotations.vmid.qemu-scheduler/range: \"%.64s\": start %u is above end %u",
                     text, *lo, *hi);
        return -1;
    }
    if (*lo < VMID_MIN || *hi > VMID_MAX) {
        vf_error_set(err, VF_EINVAL,
                     "annotations.vmid.qemu-scheduler/range: \"%.64s\": vmids must lie within "
                     "%u-%u",
                     text, VMID_MIN, VMID_MAX);
        return -1;
    }
    return 0;
}

static pattern_result regex_allows(pattern *regex, uint32_t id)
{
    if (!regex)
        return PATTERN_MATCH;
    /* By hand: snprintf cost more than the match itself, a million times
     * per scan (callgrind: 60% of a scan's instructions). */
    /* Zeroed past the digits: PCRE2's JIT may look a few bytes beyond the
     * subject when searching unanchored (scheduler.regex_match: search), and
     * valgrind rightly calls an unset byte there an uninitialised read. */
    char digits[16] = {0};
    size_t len = 0;
    char reversed[10];
    do {
        reversed[len++] = (char)('0' + id % 10);
        id /= 10;
    } while (id && len < sizeof reversed);
    for (size_t i = 0; i < len; i++)
        digits[i] = reversed[len - 1 - i];
    return pattern_match(regex, digits, len);
}

/* The scan shared by both picks: candidates start, start + step, ... up to
 * the domain's end. */
static uint32_t scan(const vmid_query *query, const hostset *used, const vmidset *reserved,
                     uint64_t start, uint32_t step, uint32_t *scanned)
{
    /* Walk the sorted used list alongside the candidate instead of a
     * binary search per id: runs of used ids cost one step each. */
    size_t next_used = 0;
    {
        size_t lo = 0, hi = used->n_used_vmids;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (used->used_vmids[mid] < start)
                lo = mid + 1;
            else
                hi = mid;
        }
        next_used = lo;
    }
    uint32_t limit = query->regex ? VMID_REGEX_SCAN_LIMIT : UINT32_MAX;
    uint32_t count = 0;
    for (uint64_t id = start; id <= query->hi && count < limit; id += step) {
        count++;
        while (next_used < used->n_used_vmids && used->used_vmids[next_used] < id)
            next_used++;
        if (next_used < used->n_used_vmids && used->used_vmids[next_used] == id)
            continue;
        if (vmidset_has(reserved, (uint32_t)id))
            continue;
        pattern_result allowed = regex_allows(query->regex, (uint32_t)id);
        if (allowed == PATTERN_TOO_COSTLY)
            break;
        if (allowed == PATTERN_NO_MATCH)
            continue;
        *scanned = count;
        return (uint32_t)id;
    }
    *scanned = count;
    return 0;
}

uint32_t vmid_pick(const vmid_query *query, const hostset *used, const vmidset *reserved,
                   uint32_t hint, uint32_t *scanned)
{
    return scan(query, used, reserved, query->lo < hint ? hint : query->lo, 1, scanned);
}

uint32_t vmid_first_in_slot(uint32_t from, uint32_t stride, uint32_t slot)
{
    if (stride <= 1)
        return from;
    uint64_t first = (uint64_t)from - from % stride + slot % stride;
    if (first < from)
        first += stride;
    return first > VMID_MAX ? VMID_MAX + 1u : (uint32_t)first;
}

uint32_t vmid_pick_strided(const vmid_query *query, const hostset *used, const vmidset *reserved,
                           uint32_t stride, uint32_t slot, uint32_t slot_hint, uint32_t *scanned)
{
    uint32_t start =
        vmid_first_in_slot(query->lo < slot_hint ? slot_hint : query->lo, stride, slot);
    if (start > query->hi) {
        *scanned = 0;
        return 0;
    }
    return scan(query, used, reserved, start, stride > 1 ? stride : 1, scanned);
}
