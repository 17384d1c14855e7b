/* console_forecast: the forecast picture of /hosts (headroom_forecast.h):
 * per pool and reference shape (worker.headroom_shapes, the last
 * spare.prepare's), the cumulative net demand of the window's days (the
 * past, solid), its projection at the fitted rate (dashed) and the level at
 * which no VM of the shape fits any more (red): where the projection meets
 * it is the day the pool runs out. Server-rendered SVG, no script. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "console.h"
#include "headroom.h"
#include "headroom_forecast.h"
#include "scrape_shapes.h"

#define CHART_W 560 /* the plot, px */
#define CHART_H 90
#define CHART_LEFT 60
#define HORIZON_MAX_DAYS 90 /* the projection drawn at most this far */

/* One chart: `daily` (window days) of net demand, `f` fitted over it. */
static void chart(html *page, const char *pool, const char *shape, const double *daily, int window,
                  const forecast *f, int index)
{
    double past = 0, low = 0, high = 0;
    for (int d = 0; d < window; d++) {
        past += daily[d];
        low = past < low ? past : low;
        high = past > high ? past : high;
    }
    double limit = past + f->headroom; /* where none fits any more */
    double horizon = isinf(f->days) ? HORIZON_MAX_DAYS : ceil(f->days * 1.2);
    horizon = horizon < 14 ? 14 : horizon > HORIZON_MAX_DAYS ? HORIZON_MAX_DAYS : horizon;
    double end = past + (f->rate > 0 ? f->rate : 0) * horizon;
    high = fmax(fmax(high, limit), end);
    double span_x = window + horizon, span_y = high - low > 0 ? high - low : 1;
#define X(day) (CHART_LEFT + ((day) + window) * CHART_W / span_x)
#define Y(units) (10 + CHART_H - ((units)-low) * CHART_H / span_y)
    char days[96], latest[32];
    snprintf(latest, sizeof latest, isinf(f->days_latest) ? "never" : "%.1f", f->days_latest);
    if (isinf(f->days))
        snprintf(days, sizeof days, "does not run out at this rate");
    else
        snprintf(days, sizeof days, "%.1f days left (%.1f-%s)", f->days, f->days_soonest, latest);
    html_raw(page, "<figure class=\"forecast\" id=\"forecast-%d\"><figcaption>", index);
    html_text(page, pool);
    html_raw(page, " / ");
    html_text(page, shape);
    html_raw(page,
             ": %s at %.2f a day</figcaption><svg width=\"%d\" height=\"%d\" role=\"img\" "
             "font-family=\"sans-serif\" font-size=\"11\">",
             days, f->rate, CHART_LEFT + CHART_W + 10, CHART_H + 30);
    /* The limit, today, and the axis labels. */
    html_raw(
        page,
        "<line class=\"limit\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#cc2222\"/>"
        "<text x=\"0\" y=\"%.1f\" fill=\"#cc2222\">full</text>"
        "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"10\" y2=\"%d\" stroke=\"#bbbbbb\"/>"
        "<text x=\"%.1f\" y=\"%d\">today</text><text x=\"%d\" y=\"%d\">-%dd</text>"
        "<text x=\"%d\" y=\"%d\">+%.0fd</text>",
        CHART_LEFT, CHART_LEFT + CHART_W, Y(limit), Y(limit), Y(limit) + 4, X(0), X(0),
        CHART_H + 10, X(0) - 12, CHART_H + 24, CHART_LEFT, CHART_H + 24, window,
        CHART_LEFT + CHART_W - 30, CHART_H + 24, horizon);
    html_raw(page, "<polyline class=\"past\" fill=\"none\" stroke=\"#3366aa\" stroke-width=\"2\" "
                   "points=\"");
    double y = 0;
    html_raw(page, "%.1f,%.1f", X(-window), Y(0));
    for (int d = 0; d < window; d++) {
        y += daily[d];
        html_raw(page, " %.1f,%.1f", X(d + 1 - window), Y(y));
    }
    html_raw(page,
             "\"/><line class=\"projection\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
             "stroke=\"#3366aa\" stroke-dasharray=\"6 4\"/></svg></figure>",
             X(0), Y(past), X(horizon), Y(end));
#undef X
#undef Y
}

void console_forecast_svg(console *c, html *page, const hostset *hosts,
                          const sched_host_load *loads, const sched_params *params)
{
    scrape_shapes last;
    scrape_shapes_init(&last);
    vf_error err;
    vf_error_init(&err);
    size_t n = 0, cap = c->config->worker.n_headroom_shapes + 1;
    config_shape *shapes = calloc(cap, sizeof *shapes);
    sched_headroom now;
    memset(&now, 0, sizeof now);
    headroom_flow flow;
    memset(&flow, 0, sizeof flow);
    forecast *f = NULL;
    double *daily = NULL;
    html_raw(page, "<h2>Forecast</h2>");
    if (!shapes || scrape_shapes_read(&last, c->store, clock_wall_ms(), &err) < 0 ||
        headroom_flow_read(&flow, c->store, clock_wall_ms(), HEADROOM_FORECAST_WINDOW_DAYS, &err) <
            0) {
        console_page_error(page, shapes ? err.text : "forecast: out of memory");
        goto out;
    }
    for (size_t k = 0; k < c->config->worker.n_headroom_shapes; k++)
        shapes[n++] = c->config->worker.headroom_shapes[k];
    if (last.have_spare)
        shapes[n++] = last.spare;
    if (n == 0) {
        html_raw(page, "<p class=\"muted\" id=\"forecast-none\">No shapes to forecast: no "
                       "worker.headroom_shapes and no spare.prepare.</p>");
        goto out;
    }
    if (sched_headroom_compute(&now, params, hosts, loads, shapes, n) < 0 ||
        !(f = calloc(now.n_pools * n, sizeof *f)) ||
        !(daily = calloc((size_t)flow.window_days, sizeof *daily)) ||
        headroom_forecast(&flow, hosts, &now, shapes, n, f) < 0) {
        console_page_error(page, "forecast: out of memory");
        goto out;
    }
    html_raw(page,
             "<p class=\"muted\">Per pool and shape (worker.headroom_shapes, the last "
             "spare.prepare's): the net demand of the last %d days in VMs of the shape "
             "(placements less releases, solid), projected at its least-squares rate "
             "(dashed) to the level where none fits any more (red). "
             "<code>virtflowctl headroom --forecast</code> states the method.</p>",
             flow.window_days);
    for (size_t p = 0; p < now.n_pools; p++)
        for (size_t k = 0; k < n; k++) {
            double placed, released;
            headroom_flow_daily(&flow, hosts, now.pools[p].pool, &shapes[k], daily, &placed,
                                &released);
            chart(page, now.pools[p].pool, shapes[k].name, daily, flow.window_days, &f[p * n + k],
                  (int)(p * n + k));
        }
out:
    free(daily);
    free(f);
    headroom_flow_close(&flow);
    sched_headroom_close(&now);
    free(shapes);
}
