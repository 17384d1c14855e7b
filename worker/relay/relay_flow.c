/* relay_flow: a receiver's pace and circuit breaker (see relay_flow.h). */
#include "relay_flow.h"

#include <string.h>

void relay_flow_init(relay_flow *f)
{
    memset(f, 0, sizeof *f);
}

/* Tokens earned since the last refill, at most the burst. */
static void refill(relay_flow *f, double rate, int64_t mono_ms)
{
    double burst = rate * RELAY_FLOW_BURST_S;
    if (burst < 1)
        burst = 1;
    if (f->refilled_ms == 0) {
        f->tokens = burst;
    } else if (mono_ms > f->refilled_ms) {
        f->tokens += (double)(mono_ms - f->refilled_ms) * rate / 1000.0;
        if (f->tokens > burst)
            f->tokens = burst;
    }
    f->refilled_ms = mono_ms;
}

int relay_flow_allowance(relay_flow *f, const config_receiver *rc, int free_slots, int64_t mono_ms,
                         int64_t wall_ms, bool *probe)
{
    *probe = false;
    if (free_slots <= 0)
        return 0;
    if (f->disabled) {
        if (f->probing || wall_ms < f->next_probe_ms)
            return 0;
        *probe = true;
        return 1;
    }
    if (rc->rate_per_s <= 0)
        return free_slots;
    refill(f, rc->rate_per_s, mono_ms);
    int whole = (int)f->tokens;
    return whole < free_slots ? whole : free_slots;
}

void relay_flow_claimed(relay_flow *f, int n, bool probe)
{
    if (probe && n > 0) {
        f->probing = true;
        return;
    }
    f->tokens -= n;
    if (f->tokens < 0)
        f->tokens = 0;
}

relay_flow_change relay_flow_outcome(relay_flow *f, const config_receiver *rc, bool success,
                                     bool probe, int64_t wall_ms)
{
    if (probe)
        f->probing = false;
    if (success) {
        bool was_disabled = f->disabled;
        if (f->failing_since_ms || was_disabled)
            f->changed = true;
        f->failing_since_ms = 0;
        f->disabled = false;
        f->disabled_at_ms = 0;
        return was_disabled ? RELAY_FLOW_ENABLED : RELAY_FLOW_SAME;
    }
    if (!f->failing_since_ms) {
        f->failing_since_ms = wall_ms;
        f->changed = true;
    }
    int64_t probe_ms = (int64_t)(rc->probe_s > 0 ? rc->probe_s : 1) * 1000;
    if (f->disabled) {
        if (probe)
            f->next_probe_ms = wall_ms + probe_ms;
        return RELAY_FLOW_SAME;
    }
    if (rc->disable_after_s > 0 &&
        wall_ms - f->failing_since_ms >= (int64_t)rc->disable_after_s * 1000) {
        f->disabled = true;
        f->disabled_at_ms = wall_ms;
        f->next_probe_ms = wall_ms + probe_ms;
        f->changed = true;
        return RELAY_FLOW_DISABLED;
    }
    return RELAY_FLOW_SAME;
}

void relay_flow_restore(relay_flow *f, bool disabled, int64_t failing_since_ms,
                        int64_t disabled_at_ms, int64_t wall_ms)
{
    f->disabled = disabled;
    f->failing_since_ms = failing_since_ms;
    f->disabled_at_ms = disabled ? disabled_at_ms : 0;
    f->next_probe_ms = wall_ms;
    f->probing = false;
    f->changed = false;
}
