/* forecast: see forecast.h. */
#include "forecast.h"

#include <math.h>
#include <string.h>

double forecast_units(const config_shape *shape, double cpu, int64_t memory)
{
    double by_cpu = shape->cpu > 0 ? cpu / shape->cpu : 0;
    double by_memory = shape->memory > 0 ? (double)memory / (double)shape->memory : 0;
    return by_cpu > by_memory ? by_cpu : by_memory;
}

/* headroom / rate, or infinity when the rate does not consume. */
static double days_at(double headroom, double rate)
{
    if (rate <= 0)
        return INFINITY;
    return headroom > 0 ? headroom / rate : 0;
}

void forecast_fit(const double *daily, size_t n, double headroom, forecast *out)
{
    memset(out, 0, sizeof *out);
    out->headroom = headroom;
    /* Least squares of the cumulative series y_i (end of day i) on x_i = i + 1. */
    double sx = 0, sy = 0, sxx = 0, sxy = 0, y = 0;
    for (size_t i = 0; i < n; i++) {
        y += daily[i];
        double x = (double)(i + 1);
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    double denominator = (double)n * sxx - sx * sx;
    if (n >= 2 && denominator > 0) {
        out->rate = ((double)n * sxy - sx * sy) / denominator;
        double intercept = (sy - out->rate * sx) / (double)n, residuals = 0;
        y = 0;
        for (size_t i = 0; i < n; i++) {
            y += daily[i];
            double e = y - (intercept + out->rate * (double)(i + 1));
            residuals += e * e;
        }
        double mean_x = sx / (double)n, spread_x = sxx - (double)n * mean_x * mean_x;
        if (n > 2 && spread_x > 0)
            out->rate_error = sqrt(residuals / (double)(n - 2) / spread_x);
    }
    out->days = days_at(headroom, out->rate);
    out->days_soonest = days_at(headroom, out->rate + 2 * out->rate_error);
    out->days_latest = days_at(headroom, out->rate - 2 * out->rate_error);
}
