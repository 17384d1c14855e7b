/* Score plugins. Each rates a host 0..100 as it would be AFTER the request
 * is placed on it, from committed figures (allocated + reserved), so the
 * result does not swing with a momentary load spike and a burst of
 * decisions spreads out instead of piling onto one host. */
#include <math.h>

#include "plugins.h"

typedef struct fractions {
    double cpu;    /* committed / capacity after placement, 0..1+ */
    double memory; /* same */
} fractions;

static fractions after_placement(const sched_ctx *ctx, uint32_t index)
{
    const host *h = &ctx->hosts->hosts[index];
    const sched_host_load *load = &ctx->load[index];
    double cpu_cap = sched_cpu_capacity(ctx->params, h);
    double mem_cap = sched_memory_capacity(ctx->params, h);
    fractions f;
    f.cpu = cpu_cap > 0 ? (h->allocated_cpu + load->cpu + ctx->req->cpu) / cpu_cap : 1.0;
    f.memory = mem_cap > 0
                   ? (double)(h->allocated_memory + load->memory + ctx->req->memory) / mem_cap
                   : 1.0;
    return f;
}

/* Spread: prefer the host with the most room left. */
void sched_score_free(const sched_ctx *ctx, const uint32_t *candidates, size_t n, double *out)
{
    for (size_t i = 0; i < n; i++) {
        fractions f = after_placement(ctx, candidates[i]);
        out[i] = 100.0 * ((1.0 - f.cpu) + (1.0 - f.memory)) / 2.0;
    }
}

/* Pack: prefer the fullest host that still fits (off by default). */
void sched_score_most_allocated(const sched_ctx *ctx, const uint32_t *candidates, size_t n,
                                double *out)
{
    for (size_t i = 0; i < n; i++) {
        fractions f = after_placement(ctx, candidates[i]);
        out[i] = 100.0 * (f.cpu + f.memory) / 2.0;
    }
}

/* Prefer hosts whose CPU and memory fill evenly, so neither is stranded. */
void sched_score_balanced(const sched_ctx *ctx, const uint32_t *candidates, size_t n, double *out)
{
    for (size_t i = 0; i < n; i++) {
        fractions f = after_placement(ctx, candidates[i]);
        out[i] = 100.0 * (1.0 - fabs(f.cpu - f.memory));
    }
}

/* Prefer hosts with more guest slots left after placement. */
void sched_score_vm_slots(const sched_ctx *ctx, const uint32_t *candidates, size_t n, double *out)
{
    for (size_t i = 0; i < n; i++) {
        const host *h = &ctx->hosts->hosts[candidates[i]];
        const sched_host_load *load = &ctx->load[candidates[i]];
        int32_t left = h->max_vms - (h->current_vms + load->vms + 1);
        out[i] = h->max_vms > 0 ? 100.0 * left / h->max_vms : 0.0;
    }
}
