/* forecast: on a synthetic history with a known linear rate (5 VMs of the
 * shape a day, net: 6 placed and 1 released, the placements jittering by up
 * to 2 a day) the days to exhaustion come within 10% of the truth (100 VMs
 * left: 20 days), and the truth lies between the soonest and the latest; a
 * pool that does not consume never runs out; units bind on the scarcer
 * resource; events land in their pool and day. */
#include <math.h>
#include <string.h>

#include "forecast.h"
#include "testlib.h"

static void linear_history(void)
{
    char name[] = "s";
    config_shape shape = {.name = name, .cpu = 8, .memory = 32768};
    forecast_event events[400];
    size_t n = 0;
    unsigned seed = 12345;
    for (int day = 0; day < 28; day++) {
        if (day % 2 == 0)
            seed = seed * 1103515245u + 12345u;
        int jitter = (int)((seed >> 16) % 5) - 2; /* -2..2, undone the next day */
        int placed = 6 + (day % 2 ? jitter : -jitter);
        for (int i = 0; i < placed; i++)
            events[n++] = (forecast_event){0, day + 0.5, 8, 32768, +1};
        events[n++] = (forecast_event){0, day + 0.9, 8, 32768, -1};
    }
    double headroom = 100;
    forecast f;
    CHECK(forecast_pools(events, n, 1, &shape, 1, 28, &headroom, &f) == 0);
    CHECKF(fabs(f.days - 20) <= 2, "days %.2f, rate %.3f +- %.3f", f.days, f.rate, f.rate_error);
    CHECKF(f.days_soonest <= 20 && f.days_latest >= 20, "soonest %.2f, latest %.2f", f.days_soonest,
           f.days_latest);
    CHECK(f.released == 28);
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

static void units_and_pools(void)
{
    char name[] = "s";
    config_shape shape = {.name = name, .cpu = 8, .memory = 32768};
    CHECK(forecast_units(&shape, 2, 32768) == 1); /* memory binds */
    CHECK(forecast_units(&shape, 16, 4096) == 2); /* CPU binds */
    forecast_event events[] = {{0, 0.5, 8, 32768, +1},
                               {1, 1.5, 16, 32768, +1},
                               {1, 9.5, 8, 32768, +1}}; /* past a window of 7 days */
    double headroom[2] = {10, 10};
    forecast f[2];
    CHECK(forecast_pools(events, 3, 2, &shape, 1, 7, headroom, f) == 0);
    CHECK(f[0].placed == 1 && f[1].placed == 2);
}

int main(void)
{
    linear_history();
    never();
    units_and_pools();
    return test_summary();
}
