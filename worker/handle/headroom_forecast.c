/* headroom_forecast: see headroom_forecast.h. */
#include "headroom_forecast.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "ids.h"
#include "store_inventory.h"

typedef struct reader {
    headroom_flow *flow;
    bool failed;
} reader;

static int keep_row(const store_flow *f, void *ctx)
{
    reader *r = ctx;
    headroom_flow *flow = r->flow;
    char at[STORE_TIME_SIZE];
    int64_t ms = 0;
    snprintf(at, sizeof at, "%.13s:00:00.000Z", f->hour ? f->hour : "");
    if (!f->node || ids_parse_time_ms(at, &ms) < 0)
        return 0;
    if (grow_array((void **)&flow->rows, &flow->cap, flow->n + 1, sizeof *flow->rows) < 0) {
        r->failed = true;
        return 1;
    }
    headroom_flow_row *row = &flow->rows[flow->n++];
    snprintf(row->node, sizeof row->node, "%s", f->node);
    row->at_ms = ms;
    row->cpu = f->cpu;
    row->memory = f->memory;
    row->count = (double)(f->sign * f->count);
    return 0;
}

int headroom_flow_read(headroom_flow *flow, store *s, int64_t now_ms, int window_days,
                       vf_error *err)
{
    memset(flow, 0, sizeof *flow);
    flow->window_days = window_days >= 2 ? window_days : 2;
    flow->since_ms = now_ms - (int64_t)flow->window_days * 86400000;
    char since[STORE_TIME_SIZE];
    if (store_format_time(flow->since_ms, since) < 0) {
        vf_error_set(err, VF_EINVAL, "a forecast window before 1970");
        return -1;
    }
    reader r = {flow, false};
    if (store_reservation_flow(s, since, keep_row, &r, err) < 0)
        return -1;
    if (r.failed) {
        vf_error_set(err, VF_ENOMEM, "out of memory reading placements and releases");
        return -1;
    }
    return 0;
}

void headroom_flow_close(headroom_flow *flow)
{
    free(flow->rows);
    memset(flow, 0, sizeof *flow);
}

void headroom_flow_daily(const headroom_flow *flow, const hostset *hosts, const char *pool,
                         const config_shape *shape, double *daily, double *placed, double *released)
{
    memset(daily, 0, (size_t)flow->window_days * sizeof *daily);
    *placed = *released = 0;
    for (size_t i = 0; i < flow->n; i++) {
        const headroom_flow_row *row = &flow->rows[i];
        const host *h = hostset_find(hosts, row->node);
        /* The hour's middle: an hour's rows fall in one day. */
        double day = (double)(row->at_ms - flow->since_ms) / 86400000.0 + 1.0 / 48;
        if (!h || strcmp(h->pool, pool) != 0 || day < 0 || day >= flow->window_days)
            continue;
        /* A row stands for `count` VMs of one size: their units add up. */
        double units = row->count * forecast_units(shape, row->cpu, row->memory);
        daily[(size_t)day] += units;
        *(units > 0 ? placed : released) += units > 0 ? units : -units;
    }
}

int headroom_forecast(const headroom_flow *flow, const hostset *hosts, const sched_headroom *now,
                      const config_shape *shapes, size_t n_shapes, forecast *out)
{
    double *daily = calloc((size_t)flow->window_days + 1, sizeof *daily);
    if (!daily)
        return -1;
    for (size_t p = 0; p < now->n_pools; p++)
        for (size_t k = 0; k < n_shapes; k++) {
            double placed, released;
            headroom_flow_daily(flow, hosts, now->pools[p].pool, &shapes[k], daily, &placed,
                                &released);
            forecast *f = &out[p * n_shapes + k];
            forecast_fit(daily, (size_t)flow->window_days, (double)now->pools[p].shapes[k].vms, f);
            f->placed = placed;
            f->released = released;
        }
    free(daily);
    return 0;
}
