/* relay_flow: a receiver's pace (a token bucket of rate_per_s) and its
 * circuit breaker (disabled after disable_after_s of failures, probed every
 * probe_s, enabled again by a probe's 2xx), on clocks the test moves. */
#include "relay_flow.h"
#include "testlib.h"

static config_receiver receiver(double rate, int disable_after_s, int probe_s)
{
    config_receiver rc = {0};
    rc.max_in_flight = 8;
    rc.rate_per_s = rate;
    rc.disable_after_s = disable_after_s;
    rc.probe_s = probe_s;
    return rc;
}

/* Claim what is allowed every `step_ms` for `ms`: the count claimed. */
static int run_paced(relay_flow *f, const config_receiver *rc, int64_t step_ms, int64_t ms)
{
    int total = 0;
    for (int64_t t = 1000; t <= 1000 + ms; t += step_ms) {
        bool probe = false;
        int n = relay_flow_allowance(f, rc, rc->max_in_flight, t, t, &probe);
        CHECK(!probe);
        relay_flow_claimed(f, n, false);
        total += n;
    }
    return total;
}

static void test_pace(void)
{
    /* 20/s over 10 s, asked every 10 ms or every 130 ms: 200, plus the
     * burst the bucket starts with (20 x 0.25 s = 5). */
    config_receiver rc = receiver(20, 0, 60);
    relay_flow f;
    relay_flow_init(&f);
    int fine = run_paced(&f, &rc, 10, 10000);
    CHECKF(fine >= 200 && fine <= 206, "claimed %d", fine);
    relay_flow_init(&f);
    int coarse = run_paced(&f, &rc, 130, 10000);
    CHECKF(coarse >= 198 && coarse <= 206, "claimed %d", coarse);
    /* The slots bound it too. */
    relay_flow_init(&f);
    bool probe;
    CHECK(relay_flow_allowance(&f, &rc, 2, 1000, 1000, &probe) == 2);
    CHECK(relay_flow_allowance(&f, &rc, 0, 1000, 1000, &probe) == 0);
    /* A slow pace still lets one through, then waits for the next token. */
    config_receiver slow = receiver(0.5, 0, 60);
    relay_flow_init(&f);
    CHECK(relay_flow_allowance(&f, &slow, 8, 1000, 1000, &probe) == 1);
    relay_flow_claimed(&f, 1, false);
    CHECK(relay_flow_allowance(&f, &slow, 8, 2500, 2500, &probe) == 0);
    CHECK(relay_flow_allowance(&f, &slow, 8, 3000, 3000, &probe) == 1);
    /* No pace: the free slots. */
    config_receiver open = receiver(0, 0, 60);
    relay_flow_init(&f);
    CHECK(relay_flow_allowance(&f, &open, 5, 1000, 1000, &probe) == 5);
}

static void test_breaker(void)
{
    config_receiver rc = receiver(0, 30, 10);
    relay_flow f;
    relay_flow_init(&f);
    bool probe;
    /* Failing, but not for 30 s yet: tried as usual. */
    CHECK(relay_flow_outcome(&f, &rc, false, false, 100000) == RELAY_FLOW_SAME);
    CHECK(f.changed && f.failing_since_ms == 100000);
    f.changed = false;
    CHECK(relay_flow_outcome(&f, &rc, false, false, 120000) == RELAY_FLOW_SAME);
    CHECK(!f.changed && !f.disabled);
    CHECK(relay_flow_allowance(&f, &rc, 8, 0, 120000, &probe) == 8 && !probe);
    /* A success in between starts the count again. */
    CHECK(relay_flow_outcome(&f, &rc, true, false, 125000) == RELAY_FLOW_SAME);
    CHECK(f.changed && f.failing_since_ms == 0);
    f.changed = false;
    CHECK(relay_flow_outcome(&f, &rc, false, false, 126000) == RELAY_FLOW_SAME);
    CHECK(relay_flow_outcome(&f, &rc, false, false, 150000) == RELAY_FLOW_SAME);
    /* 30 s of failures: disabled; nothing until the probe is due. */
    CHECK(relay_flow_outcome(&f, &rc, false, false, 156000) == RELAY_FLOW_DISABLED);
    CHECK(f.disabled && f.disabled_at_ms == 156000 && f.changed);
    CHECK(relay_flow_allowance(&f, &rc, 8, 0, 160000, &probe) == 0);
    CHECK(relay_flow_allowance(&f, &rc, 8, 0, 166000, &probe) == 1 && probe);
    relay_flow_claimed(&f, 1, true);
    /* One probe at a time. */
    CHECK(relay_flow_allowance(&f, &rc, 8, 0, 170000, &probe) == 0);
    /* A failed probe: the next one a probe_s later. */
    CHECK(relay_flow_outcome(&f, &rc, false, true, 167000) == RELAY_FLOW_SAME);
    CHECK(f.disabled && !f.probing);
    CHECK(relay_flow_allowance(&f, &rc, 8, 0, 176000, &probe) == 0);
    CHECK(relay_flow_allowance(&f, &rc, 8, 0, 177000, &probe) == 1 && probe);
    relay_flow_claimed(&f, 1, true);
    /* A 2xx: enabled, every slot again. */
    f.changed = false;
    CHECK(relay_flow_outcome(&f, &rc, true, true, 177500) == RELAY_FLOW_ENABLED);
    CHECK(!f.disabled && f.changed && f.failing_since_ms == 0);
    CHECK(relay_flow_allowance(&f, &rc, 8, 0, 177600, &probe) == 8 && !probe);
    /* disable_after_s 0: never disabled. */
    config_receiver never = receiver(0, 0, 10);
    relay_flow_init(&f);
    CHECK(relay_flow_outcome(&f, &never, false, false, 1000) == RELAY_FLOW_SAME);
    CHECK(relay_flow_outcome(&f, &never, false, false, 100000000) == RELAY_FLOW_SAME);
    CHECK(!f.disabled);
    /* Restored from the store: disabled, probed at once. */
    relay_flow_init(&f);
    relay_flow_restore(&f, true, 1000, 5000, 900000);
    CHECK(relay_flow_allowance(&f, &rc, 8, 0, 900000, &probe) == 1 && probe);
}

int main(void)
{
    test_pace();
    test_breaker();
    return test_summary();
}
