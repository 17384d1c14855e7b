/* backoff: the delays a reconnecting program actually sleeps. */
#include "backoff.h"
#include "testlib.h"

#include <math.h>
#include <string.h>

static double fixed_random(void *user)
{
    return *(const double *)user;
}

static void test_ceiling_doubles_then_caps(void)
{
    backoff b;
    backoff_init(&b, 0.5, 30);
    double almost_one = 0.999999;
    backoff_set_random(&b, fixed_random, &almost_one);
    double want[] = {0.5, 1, 2, 4, 8, 16, 30, 30, 30};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        double d = backoff_next(&b);
        CHECKF(d < want[i] && d > want[i] * 0.99, "attempt %zu: delay %g, ceiling %g", i, d,
               want[i]);
    }
}

static void test_full_jitter_reaches_zero(void)
{
    backoff b;
    backoff_init(&b, 1, 60);
    double zero = 0;
    backoff_set_random(&b, fixed_random, &zero);
    for (int i = 0; i < 10; i++)
        CHECK(backoff_next(&b) == 0);
    /* The failures still counted: the ceiling kept growing behind the jitter. */
    CHECK(backoff_ceiling(&b) == 60);
}

static void test_reset_starts_over(void)
{
    backoff b;
    backoff_init(&b, 2, 100);
    for (int i = 0; i < 5; i++)
        (void)backoff_next(&b);
    CHECK(backoff_ceiling(&b) == 64);
    backoff_reset(&b);
    CHECK(backoff_ceiling(&b) == 2);
}

static void test_many_failures_stay_finite(void)
{
    backoff b;
    backoff_init(&b, 1, 300);
    double d = 0;
    for (int i = 0; i < 5000; i++)
        d = backoff_next(&b);
    CHECK(isfinite(d) && d >= 0 && d < 300);
    CHECK(backoff_ceiling(&b) == 300);
}

static void test_bad_random_source_is_clamped(void)
{
    backoff b;
    backoff_init(&b, 1, 10);
    double too_big = 7.5, negative = -3, nan_value = NAN;
    backoff_set_random(&b, fixed_random, &too_big);
    double d = backoff_next(&b);
    CHECKF(d < 1 && d > 0.99, "delay %g", d);
    backoff_set_random(&b, fixed_random, &negative);
    CHECK(backoff_next(&b) == 0);
    backoff_set_random(&b, fixed_random, &nan_value);
    CHECK(backoff_next(&b) == 0);
}

static void test_bad_parameters_never_busy_loop(void)
{
    backoff b;
    backoff_init(&b, 0, -5);
    CHECK(backoff_ceiling(&b) > 0);
}

static void test_default_source_spreads(void)
{
    backoff b;
    backoff_init(&b, 100, 100);
    double lo = 1e9, hi = -1;
    for (int i = 0; i < 200; i++) {
        double d = backoff_next(&b);
        CHECK(d >= 0 && d < 100);
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    /* 200 uniform draws over [0,100) landing within a 50-wide band would mean
     * no jitter at all (chance ~2^-199 for a working generator). */
    CHECKF(hi - lo > 50, "draws between %g and %g", lo, hi);
    /* A copied backoff keeps working on its own state. */
    backoff copy = b;
    double d = backoff_next(&copy);
    CHECK(d >= 0 && d < 100);
}

int main(void)
{
    test_ceiling_doubles_then_caps();
    test_full_jitter_reaches_zero();
    test_reset_starts_over();
    test_many_failures_stay_finite();
    test_bad_random_source_is_clamped();
    test_bad_parameters_never_busy_loop();
    test_default_source_spreads();
    return test_summary();
}
