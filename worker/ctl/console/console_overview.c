/* console_overview: /overview, what `virtflowctl stats` prints, from
 * `virtflowctl stats --json` itself (which bounds a silent broker by the
 * console's deadline), each group drawn as bars. Its cost is stats': a scan
 * of the tasks table (seconds on a million tasks). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console.h"
#include "../ctl.h"

#define BAR_WIDTH 360

/* One table of `name -> count` rows (or name -> {key: count}), a bar each,
 * scaled to the largest. */
static void bars(html *page, const char *id, const char *title, const json_t *groups,
                 const char *key)
{
    html_raw(page, "<h2>%s</h2>", title);
    if (json_object_size(groups) == 0) {
        html_raw(page, "<p class=\"muted\" id=\"%s\">none</p>", id);
        return;
    }
    json_int_t most = 1;
    const char *name;
    const json_t *value;
    json_object_foreach((json_t *)groups, name, value)
    {
        json_int_t n = json_integer_value(key ? json_object_get(value, key) : value);
        if (n > most)
            most = n;
    }
    html_raw(page, "<table class=\"overview\" id=\"%s\"><tbody>", id);
    json_object_foreach((json_t *)groups, name, value)
    {
        json_int_t n = json_integer_value(key ? json_object_get(value, key) : value);
        html_raw(page, "<tr><th>");
        html_text(page, name);
        html_raw(page,
                 "</th><td><svg class=\"bar\" width=\"%d\" height=\"14\" role=\"img\">"
                 "<rect width=\"%d\" height=\"14\" fill=\"#eef\"/>"
                 "<rect class=\"count\" width=\"%.1f\" height=\"14\" fill=\"#5577aa\"/></svg>"
                 "</td><td class=\"count\">%lld</td></tr>",
                 BAR_WIDTH, BAR_WIDTH, (double)n * BAR_WIDTH / (double)most, (long long)n);
    }
    html_raw(page, "</tbody></table>");
}

static void oldest(html *page, const char *what, const json_t *row, const char *id_key)
{
    html_raw(page, "<p>Oldest pending %s: ", what);
    if (!json_is_object(row)) {
        html_raw(page, "none</p>");
        return;
    }
    const char *id = json_string_value(json_object_get(row, id_key));
    if (strcmp(id_key, "id") == 0) {
        html_raw(page, "<a class=\"task\" href=\"/task?id=");
        html_url_part(page, id);
        html_raw(page, "\">");
        html_text(page, id);
        html_raw(page, "</a>");
    } else {
        html_raw(page, "<code>");
        html_text(page, id);
        html_raw(page, "</code>");
    }
    html_raw(page, " since ");
    html_text(page, json_string_value(json_object_get(row, "created_at")));
    html_raw(page, "</p>");
}

int console_overview_page(console *c, const httpd_request *req, html *page)
{
    int refresh = console_refresh_arg(httpd_query(req, "refresh"));
    console_page_start_refresh(page, "Overview", "/overview", refresh > 0 ? refresh : 0);
    if (refresh < 0) {
        console_page_error(page, "refresh: expected off, 5 or 30");
        console_page_end(page);
        return 400;
    }
    /* One run of `virtflowctl stats --json`: both halves, each table scanned
     * once; the store's half on the console's own handle only when that run
     * gave none (it timed out, say), with stats' own code. */
    const char *args[] = {"stats", "--json", NULL};
    char *out = NULL, *errors = NULL;
    (void)console_run_ctl(c, args, &out, &errors);
    json_t *report = out ? json_loads(out, 0, NULL) : NULL;
    json_t *st = json_incref(json_object_get(report, "store"));
    if (!json_is_true(json_object_get(st, "ok"))) {
        json_decref(st);
        st = ctl_stats_store(c->store, "the console's store");
    }
    int status = 200;
    if (json_is_true(json_object_get(st, "ok"))) {
        const json_t *tasks = json_object_get(st, "tasks");
        html_raw(page, "<p id=\"total\">%lld tasks in the store.</p>",
                 (long long)json_integer_value(json_object_get(tasks, "total")));
        bars(page, "by-status", "Tasks by status", json_object_get(tasks, "by_status"), NULL);
        bars(page, "by-reason", "Failed tasks by reason", json_object_get(tasks, "by_reason"),
             NULL);
        bars(page, "deliveries", "Deliveries by status", json_object_get(st, "deliveries"), NULL);
        html_raw(page, "<p>Outbox events not yet confirmed: %lld</p>",
                 (long long)json_integer_value(json_object_get(st, "outbox_pending")));
        oldest(page, "task", json_object_get(st, "oldest_pending_task"), "id");
        oldest(page, "delivery", json_object_get(st, "oldest_pending_delivery"), "event_id");
    } else {
        console_page_error(page, json_string_value(json_object_get(st, "error")));
        status = 503;
    }
    json_decref(st);

    const json_t *broker = json_object_get(report, "broker");
    if (json_is_true(json_object_get(broker, "ok"))) {
        bars(page, "queues", "Messages per queue", json_object_get(broker, "queues"), "messages");
    } else {
        html_raw(page, "<h2>Messages per queue</h2>");
        const char *why = json_string_value(json_object_get(broker, "error"));
        console_page_error(page, why                   ? why
                                 : errors && errors[0] ? errors
                                                       : "the broker's queues could not be read");
    }
    json_decref(report);
    free(out);
    free(errors);
    console_page_end(page);
    return status;
}
