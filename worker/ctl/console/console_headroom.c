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

/* The picture's geometry, in pixels: the label column, the bar, a row. */
enum { LABEL_WIDTH = 260, BAR_WIDTH = 300, ROW_HEIGHT = 22 };

/* What every row of the picture is drawn with. */
typedef struct headroom_picture {
    html *page;
    const config_shape *shapes;
    size_t n_shapes;
    const scrape_shapes *recent;
    bool spare;  /* the last shape is the last spare.prepare's */
    bool strict; /* spare.anti_affinity_strict */
} headroom_picture;

/* The shapes counted, into `shapes` (room for the configured ones, the
 * recent ones and the spare's): the configured ones, then (`recent` read)
 * the recent ones and the last spare.prepare's. Returns how many. */
static size_t picture_shapes(const console *c, const scrape_shapes *recent, bool read,
                             config_shape *shapes)
{
    size_t n = 0;
    for (size_t k = 0; k < c->config->worker.n_headroom_shapes; k++)
        shapes[n++] = c->config->worker.headroom_shapes[k];
    for (size_t k = 0; read && k < recent->n_recent; k++)
        shapes[n++] = recent->recent[k];
    if (read && recent->have_spare)
        shapes[n++] = recent->spare;
    return n;
}

/* The last spare.prepare's row: the spares it asked for marked on the bar,
 * and whether they fit. */
static void draw_spares(const headroom_picture *pic, const sched_headroom_count *fits,
                        int64_t online, double scale, int y)
{
    bool ok = sched_headroom_spares_fit(fits, pic->recent->spare_count, pic->strict);
    double at = (double)pic->recent->spare_count * scale;
    if (at > BAR_WIDTH)
        at = BAR_WIDTH;
    const char *colour = ok ? "#333333" : "#cc2222";
    html_raw(pic->page,
             "<line class=\"spares-wanted\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" "
             "stroke=\"%s\" stroke-width=\"2\"/>"
             "<text class=\"spares-%s\" x=\"%d\" y=\"%d\" fill=\"%s\">%lld VMs on "
             "%lld of %lld hosts; %lld spares asked: %s</text>",
             LABEL_WIDTH + at, LABEL_WIDTH + at, y - 2, y + 16, colour, ok ? "fit" : "short",
             LABEL_WIDTH + BAR_WIDTH + 8, y + 12, colour, (long long)fits->vms,
             (long long)fits->hosts, (long long)online, (long long)pic->recent->spare_count,
             ok ? "they fit" : "they do not fit");
}

/* One row: pool / shape, the pool's online hosts (grey) and those that
 * still take one VM of shape k (green), and the figures. */
static void draw_row(const headroom_picture *pic, const char *pool, size_t k,
                     const sched_headroom_count *fits, int64_t online, double scale, int y)
{
    html *page = pic->page;
    html_raw(page, "<g class=\"headroom-row\"><text x=\"0\" y=\"%d\">", y + 12);
    html_text(page, pool);
    html_raw(page, " / ");
    html_text(page, pic->shapes[k].name);
    double width = (double)fits->hosts * scale;
    html_raw(page,
             "</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"14\" fill=\"#e8e8e8\"/>"
             "<rect class=\"headroom-hosts\" x=\"%d\" y=\"%d\" width=\"%.1f\" "
             "height=\"14\" fill=\"#55aa77\"/>",
             LABEL_WIDTH, y, (double)online * scale, LABEL_WIDTH, y,
             width > BAR_WIDTH ? BAR_WIDTH : width);
    bool is_spare = pic->spare && k == pic->n_shapes - 1;
    if (is_spare && strcmp(pool, pic->recent->spare_pool) == 0)
        draw_spares(pic, fits, online, scale, y);
    else
        html_raw(page, "<text x=\"%d\" y=\"%d\">%lld VMs on %lld of %lld hosts</text>",
                 LABEL_WIDTH + BAR_WIDTH + 8, y + 12, (long long)fits->vms, (long long)fits->hosts,
                 (long long)online);
    html_raw(page, "</g>");
}

/* A pool's rows from `y` down; returns the y after them. */
static int draw_pool(const headroom_picture *pic, const sched_headroom_pool *pool, int64_t online,
                     int y)
{
    /* One scale per pool: its online hosts, or the spares asked for when
     * more, so the mark stays on the picture. */
    int64_t span = online;
    if (pic->spare && strcmp(pool->pool, pic->recent->spare_pool) == 0 &&
        pic->recent->spare_count > span)
        span = pic->recent->spare_count;
    double scale = span > 0 ? (double)BAR_WIDTH / (double)span : 0;
    for (size_t k = 0; k < pic->n_shapes; k++, y += ROW_HEIGHT)
        draw_row(pic, pool->pool, k, &pool->shapes[k], online, scale, y);
    return y;
}

/* The caption, then the picture: a row per pool and shape. */
static void draw_picture(const headroom_picture *pic, const sched_headroom *headroom,
                         const int64_t *online)
{
    html_raw(pic->page,
             "<p class=\"muted\">Per pool and request shape: of the pool's online hosts "
             "(grey), those that still take one VM of the shape (green): how many anti-affine "
             "spares fit; the figures say how many VMs fit packed. Shapes: "
             "worker.headroom_shapes, <code>recent:</code> the %d most requested in the last "
             "hour, <code>%s</code> the last spare.prepare's, the spares it asked for marked "
             "(red when they do not fit).</p>",
             SCRAPE_RECENT_SHAPES, SCRAPE_LAST_SPARE_SHAPE);
    int rows = (int)(headroom->n_pools * pic->n_shapes);
    html_raw(pic->page,
             "<svg id=\"headroom\" width=\"%d\" height=\"%d\" role=\"img\" "
             "font-family=\"sans-serif\" font-size=\"12\">",
             LABEL_WIDTH + BAR_WIDTH + 420, 8 + ROW_HEIGHT * rows);
    int y = 4;
    for (size_t p = 0; p < headroom->n_pools; p++)
        y = draw_pool(pic, &headroom->pools[p], online[p], y);
    html_raw(pic->page, "</svg>");
}

void console_headroom_svg(console *c, html *page, const hostset *hosts,
                          const sched_host_load *loads, const sched_params *params)
{
    scrape_shapes recent;
    scrape_shapes_init(&recent);
    vf_error err;
    vf_error_init(&err);
    bool read = scrape_shapes_read(&recent, c->store, clock_wall_ms(), &err) == 0;
    size_t cap = c->config->worker.n_headroom_shapes + SCRAPE_RECENT_SHAPES + 1;
    config_shape *shapes = calloc(cap, sizeof *shapes);
    int64_t *online = calloc(hosts->n_pools ? hosts->n_pools : 1, sizeof *online);
    sched_headroom headroom;
    memset(&headroom, 0, sizeof headroom);
    if (!shapes || !online) {
        console_page_error(page, "headroom: out of memory");
        goto out;
    }
    headroom_picture pic = {page,
                            shapes,
                            picture_shapes(c, &recent, read, shapes),
                            &recent,
                            read && recent.have_spare,
                            c->config->spare.anti_affinity_strict};
    html_raw(page, "<h2>Headroom</h2>");
    if (!read)
        console_page_error(page, err.text); /* the configured shapes are still drawn */
    if (pic.n_shapes == 0) {
        html_raw(page, "<p class=\"muted\" id=\"headroom-none\">No shapes to count: no "
                       "worker.headroom_shapes, no schedule request in the last hour and no "
                       "spare.prepare.</p>");
        goto out;
    }
    if (sched_headroom_compute(&headroom, params, hosts, loads, shapes, pic.n_shapes) < 0) {
        console_page_error(page, "headroom: out of memory");
        goto out;
    }
    count_online(hosts, online);
    draw_picture(&pic, &headroom, online);
out:
    sched_headroom_close(&headroom);
    free(shapes);
    free(online);
}
