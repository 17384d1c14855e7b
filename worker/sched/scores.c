/* Score plugins. Each rates a host 0..100 as it would be AFTER the request
 * is placed on it, from committed figures (allocated + reserved), so the
 * result does not swing with a momentary load spike and a burst of
 * decisions spreads out instead of piling onto one host. The engine computes
 * the CPU and memory fractions once per candidate (ctx->cpu_fraction). */
#include <math.h>

#include "plugins.h"

/* Spread: prefer the host with the most room left. */
void sched_score_free(const sched_ctx *ctx, const uint32_t *candidates, size_t n, double *out)
{
    (void)candidates;
    for (size_t i = 0; i < n; i++) {
        out[i] = 100.0 * ((1.0 - ctx->cpu_fraction[i]) + (1.0 - ctx->memory_fraction[i])) / 2.0;
    }
}

/* Pack: prefer the fullest host that still fits (off by default). */
void sched_score_most_allocated(const sched_ctx *ctx, const uint32_t *candidates, size_t n,
                                double *out)
{
    (void)candidates;
    for (size_t i = 0; i < n; i++) {
        out[i] = 100.0 * (ctx->cpu_fraction[i] + ctx->memory_fraction[i]) / 2.0;
    }
}

/* Prefer hosts whose CPU and memory fill evenly, so neither is stranded. */
void sched_score_balanced(const sched_ctx *ctx, const uint32_t *candidates, size_t n, double *out)
{
    (void)candidates;
    for (size_t i = 0; i < n; i++) {
        out[i] = 100.0 * (1.0 - fabs(ctx->cpu_fraction[i] - ctx->memory_fraction[i]));
    }
}

/* Prefer hosts with more guest slots left after placement. */
void sched_score_vm_slots(const sched_ctx *ctx, const uint32_t *candidates, size_t n, double *out)
{
    for (size_t i = 0; i < n; i++) {
        const sched_hot *h = &ctx->hot[candidates[i]];
        const sched_host_load *load = &ctx->load[candidates[i]];
        int32_t left = h->max_vms - (h->current_vms + load->vms + 1);
        out[i] = h->max_vms > 0 ? 100.0 * left / h->max_vms : 0.0;
    }
}
