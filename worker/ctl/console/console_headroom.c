/* console_headroom: the headroom picture of /hosts, per pool and shape, as
 * the worker's virtflow_headroom_* metrics count it (headroom.h): the
 * shapes of worker.headroom_shapes, the most requested recent ones and the
 * last spare.prepare's (scrape_shapes.h), each a bar of the pool's online
 * hosts that still take one VM of it, with how many VMs fit in all; the
 * last spare.prepare's row marks how many spares it asked for and says
 * whether they fit. Server-rendered SVG, no script. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "console.h"
#include "headroom.h"
#include "scrape_shapes.h"

/* Online hosts per pool of `hosts` into online[pool_id]. */
static void count_online(const hostset *hosts, int64_t *online)
{
    for (size_t i = 0; i < hosts->n_hosts; i++)
        if (hosts->hosts[i].status == HOST_ONLINE && hosts->hosts[i].pool_id < hosts->n_pools)
            online[hosts->hosts[i].pool_id]++;
}

void console_headroom_svg(console *c, html *page, const hostset *hosts,
                          const sched_host_load *loads, const sched_params *params)
{
    scrape_shapes recent;
    scrape_shapes_init(&recent);
    vf_error err;
    vf_error_init(&err);
    bool read = scrape_shapes_read(&recent, c->store, clock_wall_ms(), &err) == 0;
    size_t n_configured = c->config->worker.n_headroom_shapes;
    size_t cap = n_configured + SCRAPE_RECENT_SHAPES + 1, n = 0;
    config_shape *shapes = calloc(cap, sizeof *shapes);
    int64_t *online = calloc(hosts->n_pools ? hosts->n_pools : 1, sizeof *online);
    sched_headroom headroom;
    memset(&headroom, 0, sizeof headroom);
    if (!shapes || !online) {
        console_page_error(page, "headroom: out of memory");
        goto out;
    }
    for (size_t k = 0; k < n_configured; k++)
        shapes[n++] = c->config->worker.headroom_shapes[k];
    for (size_t k = 0; read && k < recent.n_recent; k++)
        shapes[n++] = recent.recent[k];
    bool spare = read && recent.have_spare;
    if (spare)
        shapes[n++] = recent.spare;
    html_raw(page, "<h2>Headroom</h2>");
    if (!read)
        console_page_error(page, err.text); /* the configured shapes are still drawn */
    if (n == 0) {
        html_raw(page, "<p class=\"muted\" id=\"headroom-none\">No shapes to count: no "
                       "worker.headroom_shapes, no schedule request in the last hour and no "
                       "spare.prepare.</p>");
        goto out;
    }
    if (sched_headroom_compute(&headroom, params, hosts, loads, shapes, n) < 0) {
        console_page_error(page, "headroom: out of memory");
        goto out;
    }
    count_online(hosts, online);

    const int label = 260, bar = 300, row = 22;
    int rows = (int)(headroom.n_pools * n);
    html_raw(page,
             "<p class=\"muted\">Per pool and request shape: of the pool's online hosts "
             "(grey), those that still take one VM of the shape (green): how many anti-affine "
             "spares fit; the figures say how many VMs fit packed. Shapes: "
             "worker.headroom_shapes, <code>recent:</code> the %d most requested in the last "
             "hour, <code>%s</code> the last spare.prepare's, the spares it asked for marked "
             "(red when they do not fit).</p>",
             SCRAPE_RECENT_SHAPES, SCRAPE_LAST_SPARE_SHAPE);
    html_raw(page,
             "<svg id=\"headroom\" width=\"%d\" height=\"%d\" role=\"img\" "
             "font-family=\"sans-serif\" font-size=\"12\">",
             label + bar + 420, 8 + row * rows);
    int y = 4;
    for (size_t p = 0; p < headroom.n_pools; p++) {
        const sched_headroom_pool *pool = &headroom.pools[p];
        /* One scale per pool: its online hosts, or the spares asked for
         * when more, so the mark stays on the picture. */
        int64_t span = online[p];
        if (spare && strcmp(pool->pool, recent.spare_pool) == 0 && recent.spare_count > span)
            span = recent.spare_count;
        double scale = span > 0 ? (double)bar / (double)span : 0;
        double pool_width = (double)online[p] * scale;
        for (size_t k = 0; k < n; k++, y += row) {
            const sched_headroom_count *fits = &pool->shapes[k];
            bool is_spare = spare && k == n - 1;
            html_raw(page, "<g class=\"headroom-row\"><text x=\"0\" y=\"%d\">", y + 12);
            html_text(page, pool->pool);
            html_raw(page, " / ");
            html_text(page, shapes[k].name);
            double width = (double)fits->hosts * scale;
            html_raw(
                page,
                "</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"14\" fill=\"#e8e8e8\"/>"
                "<rect class=\"headroom-hosts\" x=\"%d\" y=\"%d\" width=\"%.1f\" "
                "height=\"14\" fill=\"#55aa77\"/>",
                label, y, pool_width, label, y, width > bar ? bar : width);
            if (is_spare && strcmp(pool->pool, recent.spare_pool) == 0) {
                bool ok = sched_headroom_spares_fit(fits, recent.spare_count,
                                                    c->config->spare.anti_affinity_strict);
                double at = (double)recent.spare_count * scale;
                html_raw(page,
                         "<line class=\"spares-wanted\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" "
                         "y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>"
                         "<text class=\"spares-%s\" x=\"%d\" y=\"%d\" fill=\"%s\">%lld VMs on "
                         "%lld of %lld hosts; %lld spares asked: %s</text>",
                         label + (at > bar ? bar : at), label + (at > bar ? bar : at), y - 2,
                         y + 16, ok ? "#333333" : "#cc2222", ok ? "fit" : "short", label + bar + 8,
                         y + 12, ok ? "#333333" : "#cc2222", (long long)fits->vms,
                         (long long)fits->hosts, (long long)online[p],
                         (long long)recent.spare_count, ok ? "they fit" : "they do not fit");
            } else {
                html_raw(page, "<text x=\"%d\" y=\"%d\">%lld VMs on %lld of %lld hosts</text>",
                         label + bar + 8, y + 12, (long long)fits->vms, (long long)fits->hosts,
                         (long long)online[p]);
            }
            html_raw(page, "</g>");
        }
    }
    html_raw(page, "</svg>");
out:
    sched_headroom_close(&headroom);
    free(shapes);
    free(online);
}
