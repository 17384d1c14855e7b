/* recent_shapes: see recent_shapes.h. */
#include "recent_shapes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

void sched_shape_tally_init(sched_shape_tally *tally)
{
    memset(tally, 0, sizeof *tally);
}

void sched_shape_tally_close(sched_shape_tally *tally)
{
    free(tally->seen);
    memset(tally, 0, sizeof *tally);
}

int sched_shape_tally_add(sched_shape_tally *tally, double cpu, int64_t memory, int64_t disk)
{
    if (grow_array((void **)&tally->seen, &tally->cap, tally->n + 1, sizeof *tally->seen) < 0)
        return -1;
    /* min_hosts counts the requests of the shape (1 until folded). */
    tally->seen[tally->n++] =
        (config_shape){.cpu = cpu, .memory = memory, .disk = disk, .min_hosts = 1};
    return 0;
}

static int compare_size(const config_shape *a, const config_shape *b)
{
    if (a->cpu != b->cpu)
        return a->cpu < b->cpu ? -1 : 1;
    if (a->memory != b->memory)
        return a->memory < b->memory ? -1 : 1;
    return (a->disk > b->disk) - (a->disk < b->disk);
}

static int by_size(const void *a, const void *b)
{
    return compare_size(a, b);
}

/* A distinct shape and how often it came: min_hosts carries the count. */
static int by_count_then_size(const void *a, const void *b)
{
    const config_shape *x = a, *y = b;
    if (x->min_hosts != y->min_hosts)
        return x->min_hosts > y->min_hosts ? -1 : 1;
    return compare_size(x, y);
}

size_t sched_shape_tally_top(sched_shape_tally *tally, size_t n, const char *prefix,
                             config_shape *out, char (*names)[SCHED_SHAPE_NAME_LEN])
{
    if (!tally->n || !n)
        return 0;
    /* Equal shapes side by side, then each run folded into its first entry
     * (counts summed in min_hosts, so a second call finds them), then the
     * runs by count. */
    qsort(tally->seen, tally->n, sizeof *tally->seen, by_size);
    size_t runs = 0;
    for (size_t i = 0; i < tally->n; i++) {
        if (runs && compare_size(&tally->seen[runs - 1], &tally->seen[i]) == 0) {
            tally->seen[runs - 1].min_hosts += tally->seen[i].min_hosts;
            continue;
        }
        tally->seen[runs++] = tally->seen[i];
    }
    tally->n = runs; /* the tally now holds each shape once */
    qsort(tally->seen, runs, sizeof *tally->seen, by_count_then_size);
    size_t k = runs < n ? runs : n;
    for (size_t i = 0; i < k; i++) {
        char size[SCHED_SHAPE_NAME_LEN];
        sched_shape_name(tally->seen[i].cpu, tally->seen[i].memory, tally->seen[i].disk, size,
                         sizeof size);
        snprintf(names[i], SCHED_SHAPE_NAME_LEN, "%.16s%.40s", prefix, size);
        out[i] = tally->seen[i];
        out[i].min_hosts = 0;
        out[i].name = names[i];
    }
    return k;
}

void sched_shape_name(double cpu, int64_t memory, int64_t disk, char *buf, size_t size)
{
    char memory_text[32], disk_text[32] = "";
    if (memory % 1024 == 0)
        snprintf(memory_text, sizeof memory_text, "%lldg", (long long)(memory / 1024));
    else
        snprintf(memory_text, sizeof memory_text, "%lldm", (long long)memory);
    if (disk > 0)
        snprintf(disk_text, sizeof disk_text, "-%lldg", (long long)disk);
    snprintf(buf, size, "%gc-%s%s", cpu, memory_text, disk_text);
}
