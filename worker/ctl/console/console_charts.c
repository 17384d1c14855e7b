/* console_charts: /charts, pictures drawn on the server as SVG (no script):
 * placements and failures by reason per hour, and host utilisation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "console.h"
#include "store_console.h"

#define MAX_HOURS 168
#define HOUR_LEN 14 /* "YYYY-MM-DDTHH" and its NUL */

/* The series stacked in each hour's column, bottom first. */
enum { PLACED, UNSCHEDULABLE, INVALID, EXHAUSTED, SERIES };
static const char *const series_name[SERIES] = {"placed", "failed: unschedulable",
                                                "failed: invalid", "failed: exhausted"};
static const char *const series_colour[SERIES] = {"#55aa77", "#e0a030", "#aa5577", "#cc3333"};

typedef struct hours {
    int n;
    char label[MAX_HOURS][HOUR_LEN];
    int64_t count[MAX_HOURS][SERIES];
} hours;

static int add_hour(const store_task_hour *h, void *user)
{
    hours *all = user;
    int series = -1;
    if (strcmp(h->status, "completed") == 0 || strcmp(h->status, "ready") == 0 ||
        strcmp(h->status, "released") == 0)
        series = PLACED;
    else if (strcmp(h->status, "failed") == 0 && h->reason)
        /* never_fits is unschedulable decided at once */
        series = strcmp(h->reason, "unschedulable") == 0 || strcmp(h->reason, "never_fits") == 0
                     ? UNSCHEDULABLE
                 : strcmp(h->reason, "invalid") == 0 ? INVALID
                                                     : EXHAUSTED;
    if (series < 0)
        return 0; /* not final yet */
    for (int i = 0; i < all->n; i++) {
        if (strncmp(all->label[i], h->hour, HOUR_LEN - 1) == 0) {
            all->count[i][series] += h->count;
            break;
        }
    }
    return 0;
}

static void tasks_svg(html *page, const hours *all)
{
    const int left = 50, bottom = 40, top = 30, column = 24, plot_height = 220;
    int64_t highest = 1;
    for (int i = 0; i < all->n; i++) {
        int64_t sum = 0;
        for (int s = 0; s < SERIES; s++)
            sum += all->count[i][s];
        if (sum > highest)
            highest = sum;
    }
    int width = left + column * all->n + 20, height = top + plot_height + bottom;
    html_raw(page,
             "<svg id=\"tasks-over-time\" width=\"%d\" height=\"%d\" role=\"img\" "
             "font-family=\"sans-serif\" font-size=\"11\">",
             width, height + 20);
    /* Axis: the highest column and zero. */
    html_raw(page,
             "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>"
             "<text x=\"0\" y=\"%d\">%lld</text><text x=\"0\" y=\"%d\">0</text>",
             left - 4, top + plot_height, width - 10, top + plot_height, top + 4,
             (long long)highest, top + plot_height);
    for (int i = 0; i < all->n; i++) {
        int x = left + column * i;
        double y = top + plot_height;
        for (int s = 0; s < SERIES; s++) {
            double h = (double)all->count[i][s] * plot_height / (double)highest;
            if (all->count[i][s] == 0)
                continue;
            y -= h;
            html_raw(page,
                     "<rect class=\"s%d\" x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" "
                     "fill=\"%s\"><title>%s:00Z: %lld %s</title></rect>",
                     s, x + 2, y, column - 4, h, series_colour[s], all->label[i],
                     (long long)all->count[i][s], series_name[s]);
        }
        if (i % 3 == 0 || all->n <= 12)
            html_raw(page, "<text x=\"%d\" y=\"%d\">%.2s</text>", x + 4, top + plot_height + 14,
                     all->label[i] + 11);
    }
    html_raw(page, "<text x=\"%d\" y=\"%d\">hour of day (UTC); first hour %s</text>", left,
             top + plot_height + 30, all->n ? all->label[0] : "");
    for (int s = 0; s < SERIES; s++)
        html_raw(page,
                 "<rect x=\"%d\" y=\"8\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                 "<text x=\"%d\" y=\"17\">%s</text>",
                 left + 150 * s, series_colour[s], left + 150 * s + 14, series_name[s]);
    html_raw(page, "</svg>");
}

int console_charts_page(console *c, const httpd_request *req, html *page)
{
    int n_hours = 24;
    const char *text = httpd_query(req, "hours");
    console_page_start(page, "Pictures", "/charts");
    if (text && text[0]) {
        char *end;
        long value = strtol(text, &end, 10);
        if (*end || value < 1 || value > MAX_HOURS) {
            console_page_error(page, "hours: expected a number from 1 to 168");
            console_page_end(page);
            return 400;
        }
        n_hours = (int)value;
    }
    hours *all = calloc(1, sizeof *all);
    if (!all) {
        console_page_error(page, "out of memory");
        console_page_end(page);
        return 500;
    }
    int64_t now_hour = (int64_t)time(NULL) / 3600;
    all->n = n_hours;
    char since[STORE_TIME_SIZE] = "";
    for (int i = 0; i < n_hours; i++) {
        char stamp[STORE_TIME_SIZE];
        if (store_format_time((now_hour - (n_hours - 1) + i) * 3600 * 1000, stamp) == 0) {
            snprintf(all->label[i], HOUR_LEN, "%.13s", stamp);
            if (i == 0)
                snprintf(since, sizeof since, "%s", stamp);
        }
    }
    int status = 200;
    vf_error err;
    vf_error_init(&err);
    html_raw(page, "<h2>Placements and failures per hour, the last %d hours</h2>", n_hours);
    html_raw(page, "<p class=\"muted\">Tasks by the hour they arrived, by how they ended "
                   "(unfinished ones are not drawn). <a href=\"/charts?hours=72\">72 h</a> "
                   "<a href=\"/charts?hours=168\">7 days</a></p>");
    if (store_task_hours(c->store, since, add_hour, all, &err) < 0) {
        console_page_error(page, err.text);
        status = 503;
    } else {
        tasks_svg(page, all);
    }
    html_raw(page, "<h2>Host utilisation</h2>");
    char error[1024];
    if (console_hosts_svg(c, page, error, sizeof error) < 0)
        console_page_error(page, error);
    free(all);
    console_page_end(page);
    return status;
}
