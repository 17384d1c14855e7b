/* headroom_forecast: the forecast (forecast.h) of each pool and shape from
 * the store's placements and releases (store_reservation_flow) and the
 * headroom now (headroom.h): what virtflowctl headroom --forecast prints and
 * the worker's gauge virtflow_headroom_days_left reads. The flow is read
 * into a small table (sums per node, hour and VM shape) that a caller may
 * keep between scrapes. */
#ifndef VF_HEADROOM_FORECAST_H
#define VF_HEADROOM_FORECAST_H

#include <stddef.h>
#include <stdint.h>

#include "forecast.h"
#include "headroom.h"
#include "hostset.h"
#include "store.h"

#define HEADROOM_FORECAST_WINDOW_DAYS 14 /* the default window */

typedef struct headroom_flow_row {
    char node[HOST_NAME_LEN];
    int64_t at_ms;  /* the hour's start, Unix ms */
    double cpu;     /* vCPUs of each VM */
    int64_t memory; /* MiB of each */
    double count;   /* signed: placed (+) or released (-) */
} headroom_flow_row;

typedef struct headroom_flow {
    headroom_flow_row *rows;
    size_t n, cap;
    int64_t since_ms; /* the window's start */
    int window_days;
} headroom_flow;

/* Read the flow of the `window_days` days before `now_ms` from s into *flow
 * (zeroed first). Returns 0 or -1 with err; headroom_flow_close either way. */
int headroom_flow_read(headroom_flow *flow, store *s, int64_t now_ms, int window_days,
                       vf_error *err) __attribute__((warn_unused_result));
void headroom_flow_close(headroom_flow *flow);

/* The net demand of each day of the window (flow->window_days values) in
 * `pool`, in units of `shape`, and what was placed and released in all. */
void headroom_flow_daily(const headroom_flow *flow, const hostset *hosts, const char *pool,
                         const config_shape *shape, double *daily, double *placed,
                         double *released);

/* out[pool * n_shapes + shape] for the pools of `now` (computed over
 * `hosts` for the same shapes). A row on a host the inventory no longer
 * lists counts nowhere. Returns 0 or -1 when out of memory. */
int headroom_forecast(const headroom_flow *flow, const hostset *hosts, const sched_headroom *now,
                      const config_shape *shapes, size_t n_shapes, forecast *out)
    __attribute__((warn_unused_result));

#endif
