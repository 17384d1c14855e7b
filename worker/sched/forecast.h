/* forecast: when a pool runs out of room for a reference shape, at the
 * recorded rate (issue 39). No I/O: the caller reads the placements and
 * releases of a window from the store and the headroom now (headroom.h).
 *
 * The method, stated where it is used (virtflowctl headroom --forecast, the
 * gauge virtflow_headroom_days_left, docs/operations.md):
 *   - demand in units of the shape: a placement of c vCPUs and m MiB is
 *     max(c / shape.cpu, m / shape.memory) units (the resource it binds on);
 *     a release (a reservation ended without its VM ever appearing:
 *     task.release, a failed task, expiry, a preemption) gives them back;
 *   - the net demand per day of the window, summed into a cumulative series,
 *     and its least-squares slope: the rate, units a day; its standard error
 *     from the residuals gives the spread (rate +- 2 standard errors);
 *   - days left = the VMs of the shape that fit now (headroom, packed per
 *     host) / the rate; none (infinity) when the rate is not positive.
 * What it ignores: VMs deleted after they appeared (the store does not see
 * them; the headroom now does), hosts added or removed later, the mix of
 * shapes changing, and fragmentation (a unit is counted as if it fitted
 * wherever room is left: the packed headroom counts per host). */
#ifndef VF_FORECAST_H
#define VF_FORECAST_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

typedef struct forecast {
    double headroom;                  /* VMs of the shape that fit now */
    double rate;                      /* units a day: the least-squares slope */
    double rate_error;                /* its standard error */
    double days;                      /* headroom / rate; INFINITY when rate <= 0 */
    double days_soonest, days_latest; /* at rate +- 2 standard errors (INFINITY: never) */
    double placed, released;          /* units over the window (the caller's) */
} forecast;

/* The shape's units of a VM of `cpu` vCPUs and `memory` MiB. */
double forecast_units(const config_shape *shape, double cpu, int64_t memory);

/* Fit a cumulative series: n daily totals (day i's net units), for a pool
 * with `headroom` VMs of the shape left. n >= 2 for a slope (else rate 0). */
void forecast_fit(const double *daily, size_t n, double headroom, forecast *out);

#endif
