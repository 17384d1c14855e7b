/* relay_flow: how much one receiver may be sent now, and when it is cut off
 * (docs/webhooks.md "Pace and circuit breaker"). No I/O: the relay feeds it
 * the clock and each attempt's outcome, and asks it how many due deliveries
 * to claim; kept apart so each rule is unit-tested (tests/unit/test_relay_flow.c).
 *
 *   pace     a token bucket of rate_per_s (0: none): a claim spends a token,
 *            tokens come back at that rate, at most RELAY_FLOW_BURST_S of
 *            them saved up, so a backlog (a receiver back from an outage, a
 *            bulk redelivery) goes out at the receiver's pace, whatever is due.
 *   breaker  every attempt failing for disable_after_s (0: never) disables
 *            the receiver: nothing is claimed for it but one probe every
 *            probe_s (its deliveries wait: a failed probe uses up no
 *            attempt); the first 2xx enables it again. The first failure's
 *            time and the state are what the store keeps (receiver_states),
 *            so a restarted relay goes on where this one was. */
#ifndef VF_RELAY_FLOW_H
#define VF_RELAY_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* Seconds of the pace saved up at most: what a receiver may get at once
 * after a quiet while (at least one delivery). */
#define RELAY_FLOW_BURST_S 0.25

typedef struct relay_flow {
    /* pace, on the monotonic clock */
    double tokens;
    int64_t refilled_ms; /* 0: never */
    /* breaker, on the wall clock (it outlives the process) */
    bool disabled;
    int64_t failing_since_ms; /* the first failure since the last success; 0: none */
    int64_t disabled_at_ms;
    int64_t next_probe_ms; /* while disabled */
    bool probing;          /* a probe is in flight */
    bool changed;          /* the breaker moved: the caller records it and clears this */
} relay_flow;

typedef enum {
    RELAY_FLOW_SAME,
    RELAY_FLOW_DISABLED, /* this outcome disabled the receiver */
    RELAY_FLOW_ENABLED,  /* this outcome (a probe's 2xx) enabled it again */
} relay_flow_change;

/* Enabled, not failing, the bucket full. */
void relay_flow_init(relay_flow *f);

/* How many due deliveries may be claimed now with `free_slots` free
 * (max_in_flight less those running): enabled, the free slots but no more
 * than the whole tokens there are (rate_per_s > 0); disabled, 1 when a
 * probe is due and none is running (*probe set), else 0. */
int relay_flow_allowance(relay_flow *f, const config_receiver *rc, int free_slots, int64_t mono_ms,
                         int64_t wall_ms, bool *probe);

/* `n` deliveries were claimed after relay_flow_allowance (n of its answer at
 * most): tokens spent; `probe`: the one claimed is the probe. */
void relay_flow_claimed(relay_flow *f, int n, bool probe);

/* One attempt's outcome (`probe`: it was the probe). Sets f->changed when
 * the breaker moved, and says whether this outcome disabled or enabled the
 * receiver. */
relay_flow_change relay_flow_outcome(relay_flow *f, const config_receiver *rc, bool success,
                                     bool probe, int64_t wall_ms);

/* The breaker as the store recorded it: wall-clock ms (0: none). A
 * disabled receiver is probed at once, whatever was due before. */
void relay_flow_restore(relay_flow *f, bool disabled, int64_t failing_since_ms,
                        int64_t disabled_at_ms, int64_t wall_ms);

#endif
