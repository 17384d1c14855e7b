/* forecast: on a synthetic history with a known linear rate (5 VMs of the
 * shape a day, net: 6 placed and 1 released, the placements jittering by up
 * to 2 a day) the days to exhaustion come within 10% of the truth (100 VMs
 * left: 20 days), and the truth lies between the soonest and the latest; a
 * pool that does not consume never runs out; units bind on the scarcer
 * resource. */
#include <math.h>
#include <string.h>

#include "forecast.h"
#include "testlib.h"

static void linear_history(void)
{
    /* 6 placed a day, jittering by up to 2 (undone the next day), 1 released. */
    double daily[28];
    unsigned seed = 12345;
    for (int day = 0; day < 28; day++) {
        if (day % 2 == 0)
            seed = seed * 1103515245u + 12345u;
        int jitter = (int)((seed >> 16) % 5) - 2;
        daily[day] = 6 + (day % 2 ? jitter : -jitter) - 1;
    }
    forecast f;
    forecast_fit(daily, 28, 100, &f);
    CHECKF(fabs(f.days - 20) <= 2, "days %.2f, rate %.3f +- %.3f", f.days, f.rate, f.rate_error);
    CHECKF(f.days_soonest <= 20 && f.days_latest >= 20, "soonest %.2f, latest %.2f", f.days_soonest,
           f.days_latest);
}

static void never(void)
{
    double flat[7] = {0};
    forecast f;
    forecast_fit(flat, 7, 10, &f);
    CHECK(f.rate == 0 && isinf(f.days) && isinf(f.days_latest));
    double shrinking[7] = {-1, -1, -1, -1, -1, -1, -1};
    forecast_fit(shrinking, 7, 10, &f);
    CHECK(f.rate < 0 && isinf(f.days));
    double steady[7] = {2, 2, 2, 2, 2, 2, 2}; /* exactly linear: no spread */
    forecast_fit(steady, 7, 10, &f);
    CHECK(fabs(f.rate - 2) < 1e-9 && f.rate_error < 1e-9 && fabs(f.days - 5) < 1e-9);
    forecast_fit(steady, 7, 0, &f); /* nothing left: out now */
    CHECK(f.days == 0);
}

static void units(void)
{
    char name[] = "s";
    config_shape shape = {.name = name, .cpu = 8, .memory = 32768};
    CHECK(forecast_units(&shape, 2, 32768) == 1); /* memory binds */
    CHECK(forecast_units(&shape, 16, 4096) == 2); /* CPU binds */
}

int main(void)
{
    linear_history();
    never();
    units();
    return test_summary();
}
