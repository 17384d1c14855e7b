/* Filter plugins. Each keeps the hosts that can take the request and names
 * the reason for every host it removes. */
#include <stdio.h>

#include "plugins.h"

/* Compact `candidates` in place: keep those for which `passes` holds. */
#define FILTER_EACH(passes, reason_expr)                                                           \
    do {                                                                                           \
        size_t kept = 0;                                                                           \
        for (size_t i = 0; i < n; i++) {                                                           \
            uint32_t index = candidates[i];                                                        \
            const sched_hot *h = &ctx->hot[index];                                                 \
            const sched_host_load *load = &ctx->load[index];                                       \
            (void)h;                                                                               \
            (void)load;                                                                            \
            if (passes)                                                                            \
                candidates[kept++] = index;                                                        \
            else                                                                                   \
                reasons[index] = (uint8_t)(reason_expr);                                           \
        }                                                                                          \
        return kept;                                                                               \
    } while (0)

size_t sched_filter_pool(const sched_ctx *ctx, uint32_t *candidates, size_t n, uint8_t *reasons)
{
    int pool = ctx->pool_id;
    FILTER_EACH((int)h->pool_id == pool, SCHED_REASON_POOL);
}

size_t sched_filter_dedicated(const sched_ctx *ctx, uint32_t *candidates, size_t n,
                              uint8_t *reasons)
{
    if (ctx->req->dedicated)
        FILTER_EACH(h->dedicated, SCHED_REASON_NOT_DEDICATED);
    if (!ctx->params->dedicated_exclusive)
        return n;
    FILTER_EACH(!h->dedicated, SCHED_REASON_DEDICATED_HOST);
}

static sched_reason status_reason(host_status status)
{
    switch (status) {
    case HOST_ONLINE:
        return SCHED_REASON_NONE;
    case HOST_OFFLINE:
        return SCHED_REASON_OFFLINE;
    case HOST_MAINTENANCE:
        return SCHED_REASON_MAINTENANCE;
    case HOST_UNKNOWN:
        return SCHED_REASON_STATUS_UNKNOWN;
    }
    return SCHED_REASON_STATUS_UNKNOWN;
}

size_t sched_filter_status(const sched_ctx *ctx, uint32_t *candidates, size_t n, uint8_t *reasons)
{
    FILTER_EACH(h->status == HOST_ONLINE, status_reason((host_status)h->status));
}

/* Whole-name match; the result per host is cached across decisions that use
 * the same pattern on the same snapshot, so regex requests cost little more
 * than plain ones. */
static bool node_matches(const sched_ctx *ctx, uint32_t index)
{
    uint8_t cached = ctx->node_match[index];
    if (cached == 0) {
        const char *name = ctx->hosts->hosts[index].name;
        cached = regexec(ctx->node_regex, name, 0, NULL, 0) == 0 ? 1 : 2;
        ctx->node_match[index] = cached;
    }
    return cached == 1;
}

size_t sched_filter_node_regex(const sched_ctx *ctx, uint32_t *candidates, size_t n,
                               uint8_t *reasons)
{
    if (!ctx->node_regex)
        return n;
    FILTER_EACH(node_matches(ctx, index), SCHED_REASON_NODE_REGEX);
}

size_t sched_filter_vm_slots(const sched_ctx *ctx, uint32_t *candidates, size_t n, uint8_t *reasons)
{
    FILTER_EACH(h->current_vms + load->vms < h->max_vms, SCHED_REASON_VM_SLOTS);
}

/* A tolerance so that a request that exactly fills a host fits despite
 * floating-point rounding of the overcommitted capacity. */
#define FIT_EPSILON 1e-9

size_t sched_filter_cpu(const sched_ctx *ctx, uint32_t *candidates, size_t n, uint8_t *reasons)
{
    double want = ctx->req->cpu;
    FILTER_EACH(h->allocated_cpu + load->cpu + want <= h->cpu_capacity + FIT_EPSILON,
                SCHED_REASON_CPU);
}

size_t sched_filter_memory(const sched_ctx *ctx, uint32_t *candidates, size_t n, uint8_t *reasons)
{
    double want = (double)ctx->req->memory;
    FILTER_EACH(h->allocated_memory + (double)load->memory + want <=
                    h->memory_capacity + FIT_EPSILON,
                SCHED_REASON_MEMORY);
}

size_t sched_filter_disk(const sched_ctx *ctx, uint32_t *candidates, size_t n, uint8_t *reasons)
{
    int64_t want = ctx->req->disk;
    if (want == 0)
        return n;
    FILTER_EACH(h->storage - load->disk >= want, SCHED_REASON_DISK);
}
