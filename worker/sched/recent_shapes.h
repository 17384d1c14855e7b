/* recent_shapes: the request shapes asked for most lately, as headroom
 * shapes (headroom.h) named after their size, "recent:4c-8g-40g". No I/O:
 * the caller hands over each recent request's shape (the worker's metrics
 * read the newest tasks from the store at scrape time, never on the task
 * path).
 *
 * Names: vCPUs then "c"; memory in GiB then "g" when whole, else MiB then
 * "m"; disk in GiB then "g", left out when 0. */
#ifndef VF_RECENT_SHAPES_H
#define VF_RECENT_SHAPES_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define SCHED_SHAPE_NAME_LEN 64

typedef struct sched_shape_tally {
    config_shape *seen; /* every shape added, in no order; names unset */
    size_t n, cap;
} sched_shape_tally;

void sched_shape_tally_init(sched_shape_tally *tally);
void sched_shape_tally_close(sched_shape_tally *tally);

/* Count one request of cpu vCPUs, memory MiB and disk GiB. Returns 0, or -1
 * when out of memory (the tally unchanged). */
int sched_shape_tally_add(sched_shape_tally *tally, double cpu, int64_t memory, int64_t disk)
    __attribute__((warn_unused_result));

/* The at most `n` shapes counted most often into out[0..) (most first;
 * among equals the smaller shape first: by vCPUs, then memory, then disk),
 * each named "<prefix><size>" into names[i], out[i].name pointing there
 * (min_hosts 0). Sorts the tally. Returns how many. */
size_t sched_shape_tally_top(sched_shape_tally *tally, size_t n, const char *prefix,
                             config_shape *out, char (*names)[SCHED_SHAPE_NAME_LEN]);

/* "4c-8g-40g" for a shape, into buf (truncated to size). */
void sched_shape_name(double cpu, int64_t memory, int64_t disk, char *buf, size_t size);

#endif
