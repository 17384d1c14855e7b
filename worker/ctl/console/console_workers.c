/* console_workers: /workers, what `virtflowctl workers` prints
 * (process_view.h): each worker and relay working on the store, its host,
 * version, start, last heartbeat, what it holds and its leases, as
 * Flower's workers tab and Sidekiq's processes page show theirs. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "console.h"
#include "clock.h"
#include "human.h"
#include "ids.h"
#include "process_view.h"

static void age_cell(html *page, const char *at, int64_t age_s)
{
    char age[HUMAN_SIZE];
    human_duration(age_s, age);
    html_raw(page, "<td title=\"");
    html_text(page, at);
    html_raw(page, "\">%s ago</td>", age);
}

static void process_row(html *page, const json_t *p, int64_t now_s)
{
    bool alive = json_is_true(json_object_get(p, "alive"));
    html_raw(page, "<tr class=\"%s\"><td class=\"program\">", alive ? "alive" : "silent");
    html_text(page, json_string_value(json_object_get(p, "program")));
    html_raw(page, "</td><td class=\"host\">");
    html_text(page, json_string_value(json_object_get(p, "host")));
    html_raw(page, "</td><td>%lld</td><td class=\"version\">",
             (long long)json_integer_value(json_object_get(p, "pid")));
    html_text(page, json_string_value(json_object_get(p, "version")));
    html_raw(page, "</td>");
    const char *started = json_string_value(json_object_get(p, "started_at"));
    int64_t started_s = 0;
    age_cell(page, started, ids_parse_time(started, &started_s) == 0 ? now_s - started_s : 0);
    age_cell(page, json_string_value(json_object_get(p, "beat_at")),
             json_integer_value(json_object_get(p, "beat_age_s")));
    html_raw(
        page, "<td class=\"state\">%s</td><td class=\"in-hand\">%lld</td><td class=\"leases\">",
        alive ? "alive" : "silent", (long long)json_integer_value(json_object_get(p, "in_hand")));
    size_t i;
    const json_t *lease;
    json_array_foreach(json_object_get(p, "leases"), i, lease)
    {
        html_raw(page, "%s<span class=\"lease\" title=\"epoch %lld\">", i ? ", " : "",
                 (long long)json_integer_value(json_object_get(lease, "epoch")));
        html_text(page, json_string_value(json_object_get(lease, "name")));
        html_raw(page, "</span>");
    }
    html_raw(page, "</td></tr>\n");
}

int console_workers_page(console *c, const httpd_request *req, html *page)
{
    const char *all_arg = httpd_query(req, "all");
    bool all = all_arg && strcmp(all_arg, "1") == 0;
    console_page_start(page, "Workers", "/workers");
    html_raw(page, "<p class=\"muted\">Each worker and relay writes a heartbeat every 5 s; one "
                   "not heard from for 15 s is silent (dead, paused, or cut off from the "
                   "store). A clean stop removes it. In hand: messages received and not yet "
                   "acked (worker), webhooks being sent (relay). ");
    html_raw(page, all ? "<a id=\"live\" href=\"/workers\">Only the live ones</a>"
                       : "<a id=\"all\" href=\"/workers?all=1\">Also the silent ones (last "
                         "day)</a>");
    html_raw(page, "</p>\n");
    vf_error err;
    vf_error_init(&err);
    json_t *list = process_view_list(c->store, all, &err);
    if (!list) {
        console_page_error(page, err.text);
        console_page_end(page);
        return 503;
    }
    html_raw(page, "<table id=\"workers\"><thead><tr><th>Program</th><th>Host</th><th>PID</th>"
                   "<th>Version</th><th>Started</th><th>Last heartbeat</th><th>State</th>"
                   "<th>In hand</th><th>Leases</th></tr></thead><tbody>\n");
    int64_t now_s = clock_wall_ms() / 1000;
    size_t i;
    const json_t *p;
    json_array_foreach(list, i, p) process_row(page, p, now_s);
    html_raw(page, "</tbody></table>\n");
    if (json_array_size(list) == 0)
        html_raw(page, "<p class=\"muted\" id=\"empty\">No worker or relay heard from within 15 "
                       "s: is virtflow-worker running on this store?</p>");
    json_decref(list);
    console_page_end(page);
    return 200;
}
