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

int headroom_forecast(const headroom_flow *flow, const hostset *hosts, const sched_headroom *now,
                      const config_shape *shapes, size_t n_shapes, forecast *out)
{
    forecast_event *events = calloc(flow->n ? flow->n : 1, sizeof *events);
    double *headroom = calloc(now->n_pools * n_shapes + 1, sizeof *headroom);
    int rc = events && headroom ? 0 : -1;
    size_t n = 0;
    for (size_t i = 0; rc == 0 && i < flow->n; i++) {
        const headroom_flow_row *row = &flow->rows[i];
        const host *h = hostset_find(hosts, row->node);
        for (size_t p = 0; h && p < now->n_pools; p++) {
            if (strcmp(now->pools[p].pool, h->pool) != 0)
                continue;
            /* The hour's middle: an hour's rows fall in one day. A row
             * stands for `count` VMs of one size: their units add up. */
            double day = (double)(row->at_ms - flow->since_ms) / 86400000.0 + 1.0 / 48;
            double k = row->count < 0 ? -row->count : row->count;
            events[n++] = (forecast_event){p, day, row->cpu * k, (int64_t)((double)row->memory * k),
                                           row->count < 0 ? -1 : 1};
            break;
        }
    }
    for (size_t p = 0; rc == 0 && p < now->n_pools; p++)
        for (size_t k = 0; k < n_shapes; k++)
            headroom[p * n_shapes + k] = (double)now->pools[p].shapes[k].vms;
    if (rc == 0)
        rc = forecast_pools(events, n, now->n_pools, shapes, n_shapes, flow->window_days, headroom,
                            out);
    free(events);
    free(headroom);
    return rc;
}
