/* console_deliveries: /deliveries (webhook deliveries grouped by receiver,
 * each with its attempts, last answer and what comes next) and /dead (the
 * messages parked in virtflow.dead with their reasons, as the store records
 * them: store_dead_letters.h, what GET /v1/dead-letters and `virtflowctl dead
 * list` read). A page never takes a message off the queue: each look would
 * count a delivery against every parked message, and a foreign page's GETs
 * could then drop them all; only the Redrive action (a POST with the token)
 * touches the queue. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console.h"
#include "delivery_view.h"
#include "event_types.h"
#include "store_dead_letters.h"
#include "store_deliveries.h"
#include "../ctl.h"

#define DELIVERIES_SHOWN 300
#define DEAD_SHOWN 100

/* Rows as virtflowctl deliveries --json and GET /v1/deliveries show them,
 * the event's type and task included. */
static int collect_delivery(const store_delivery *d, void *user)
{
    json_t *row = delivery_view_json(d);
    if (row)
        json_array_append_new(user, row);
    return 0;
}

static const char *field(const json_t *row, const char *name)
{
    return json_string_value(json_object_get(row, name));
}

static void redeliver_form(html *page, const char *event_id, const char *receiver)
{
    html_raw(page, "<form class=\"inline\" method=\"post\" action=\"/actions/redeliver\">"
                   "<input type=\"hidden\" name=\"event_id\" value=\"");
    html_text(page, event_id);
    html_raw(page, "\"><input type=\"hidden\" name=\"receiver\" value=\"");
    html_text(page, receiver);
    html_raw(page, "\">");
    console_token_field(page);
    html_raw(page, "<button>Redeliver</button></form>");
}

static const char *nonempty(const char *value)
{
    return value && value[0] ? value : NULL;
}

static void choice(html *page, const char *name, const char *current, const char *const *choices,
                   size_t n)
{
    html_raw(page, "<label>%s <select name=\"%s\"><option value=\"\">any</option>", name, name);
    for (size_t i = 0; i < n; i++)
        html_raw(page, "<option%s>%s</option>",
                 current && strcmp(current, choices[i]) == 0 ? " selected" : "", choices[i]);
    html_raw(page, "</select></label>");
}

static void keep(html *page, const char *name, const char *value)
{
    if (!value)
        return;
    html_raw(page, "&amp;%s=", name);
    html_url_part(page, value);
}

/* Newest and Older under the tables: the filters kept, Older after the last
 * row of a full page (its created_at, event_id and receiver). */
static void deliveries_pages(html *page, const store_delivery_filter *f, const json_t *rows,
                             int refresh)
{
    size_t n = json_array_size(rows);
    const json_t *last = n ? json_array_get(rows, n - 1) : NULL;
    html_raw(page, "<p class=\"pages\">");
    for (int older = 0; older < 2; older++) {
        if (older ? n < (size_t)f->limit || !last : !f->before_created_at)
            continue;
        html_raw(page, "<a id=\"%s\" href=\"/deliveries?limit=%d", older ? "older" : "newest",
                 f->limit);
        keep(page, "receiver", f->receiver);
        keep(page, "status", f->status);
        keep(page, "type", f->type);
        if (refresh > 0)
            html_raw(page, "&amp;refresh=%d", refresh);
        if (older) {
            keep(page, "before", field(last, "created_at"));
            keep(page, "before_event", field(last, "event_id"));
            keep(page, "before_receiver", field(last, "receiver"));
        }
        html_raw(page, "\">%s</a> ", older ? "Older &rarr;" : "&larr;&larr; Newest");
    }
    html_raw(page, "</p>");
}

static size_t count_of(const char *const *names)
{
    size_t n = 0;
    while (names[n])
        n++;
    return n;
}

/* The filters as a form, filled with the query's values. */
static void filter_form(html *page, const store_delivery_filter *filter, int refresh)
{
    const char *types[EVENT_TYPE_COUNT];
    for (int i = 0; i < EVENT_TYPE_COUNT; i++)
        types[i] = event_types_name((event_type)i);
    html_raw(page, "<form class=\"filters\" method=\"get\" action=\"/deliveries\">"
                   "<label>receiver <input name=\"receiver\" size=\"14\" value=\"");
    html_text(page, filter->receiver);
    html_raw(page, "\"></label>");
    choice(page, "status", filter->status, delivery_view_statuses,
           count_of(delivery_view_statuses));
    choice(page, "type", filter->type, types, EVENT_TYPE_COUNT);
    if (refresh > 0)
        html_raw(page, "<input type=\"hidden\" name=\"refresh\" value=\"%d\">", refresh);
    html_raw(page, "<button>Filter</button></form>\n");
}

/* What is wrong with the query (the 400's text), NULL when nothing: then
 * the limit is in the filter. */
static const char *check_filter(store_delivery_filter *filter, const char *limit_text, int refresh)
{
    const char *problem = NULL;
    if (filter->status) {
        problem = "status: expected pending, delivering, delivered or failed";
        for (size_t i = 0; delivery_view_statuses[i]; i++)
            if (strcmp(filter->status, delivery_view_statuses[i]) == 0)
                problem = NULL;
    }
    if (filter->type && event_types_find(filter->type) < 0)
        problem = "type: not an event type virtflow publishes (docs/contracts.md, Events)";
    if (refresh < 0)
        problem = "refresh: expected off, 5 or 30";
    if ((filter->before_created_at != NULL) != (filter->before_event_id != NULL) ||
        (filter->before_created_at != NULL) != (filter->before_receiver != NULL))
        problem = "before, before_event and before_receiver go together: the last row of the "
                  "page before";
    if (limit_text) {
        char *end;
        long limit = strtol(limit_text, &end, 10);
        if (*end || limit < 1 || limit > 1000)
            problem = "limit: expected a number from 1 to 1000";
        else
            filter->limit = (int)limit;
    }
    return problem;
}

/* One delivery of `receiver`'s table, with Redeliver when actions are on
 * and it is over (failed or delivered). */
static void delivery_row(console *c, html *page, const json_t *row, const char *receiver)
{
    const char *st = field(row, "status");
    html_raw(page, "<tr class=\"");
    html_text(page, st);
    html_raw(page, "\"><td><code>");
    html_text(page, field(row, "event_id"));
    html_raw(page, "</code></td><td>");
    html_text(page, field(row, "event_type"));
    html_raw(page, "</td><td>");
    const char *task = field(row, "task_id");
    if (task) {
        html_raw(page, "<a class=\"task\" href=\"/task?id=");
        html_url_part(page, task);
        html_raw(page, "\">");
        html_text(page, task);
        html_raw(page, "</a>");
    }
    html_raw(page, "</td><td class=\"status\">");
    html_text(page, st);
    html_raw(page, "</td><td>%lld</td><td>",
             (long long)json_integer_value(json_object_get(row, "attempts")));
    json_int_t code = json_integer_value(json_object_get(row, "last_code"));
    if (code)
        html_raw(page, "%lld", (long long)code);
    html_raw(page, "</td><td class=\"reason\">");
    html_text(page, field(row, "last_error"));
    html_raw(page, "</td><td>");
    html_text(page, field(row, "delivered_at") ? field(row, "delivered_at")
                                               : field(row, "next_attempt_at"));
    html_raw(page, "</td><td>");
    html_text(page, field(row, "created_at"));
    html_raw(page, "</td>");
    if (c->allow_actions) {
        html_raw(page, "<td>");
        if (st && (strcmp(st, "failed") == 0 || strcmp(st, "delivered") == 0))
            redeliver_form(page, field(row, "event_id"), receiver);
        html_raw(page, "</td>");
    }
    html_raw(page, "</tr>\n");
}

/* One table per receiver, receivers in the order of their newest row. */
static void receiver_tables(console *c, html *page, const json_t *rows)
{
    json_t *done = json_object();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *name = field(row, "receiver");
        if (!name || json_object_get(done, name))
            continue;
        json_object_set_new(done, name, json_true());
        html_raw(page, "<h2 class=\"receiver\">");
        html_text(page, name);
        html_raw(page,
                 "</h2><table class=\"deliveries\"><thead><tr><th>Event</th><th>Type</th>"
                 "<th>Task</th><th>Status</th>"
                 "<th>Attempts</th><th>Last code</th><th>Last error</th><th>Delivered / "
                 "next attempt</th><th>Created</th>%s</tr></thead><tbody>",
                 c->allow_actions ? "<th></th>" : "");
        size_t k;
        json_t *other;
        json_array_foreach(rows, k, other)
        {
            if (k >= i && strcmp(field(other, "receiver"), name) == 0)
                delivery_row(c, page, other, name);
        }
        html_raw(page, "</tbody></table>");
    }
    json_decref(done);
}

int console_deliveries_page(console *c, const httpd_request *req, html *page)
{
    store_delivery_filter filter = {.limit = DELIVERIES_SHOWN};
    filter.receiver = nonempty(httpd_query(req, "receiver"));
    filter.status = nonempty(httpd_query(req, "status"));
    filter.type = nonempty(httpd_query(req, "type"));
    /* Pages, as /tasks has them: a keyset cursor (the last row shown). */
    filter.before_created_at = nonempty(httpd_query(req, "before"));
    filter.before_event_id = nonempty(httpd_query(req, "before_event"));
    filter.before_receiver = nonempty(httpd_query(req, "before_receiver"));
    const char *limit_text = nonempty(httpd_query(req, "limit"));
    int refresh = console_refresh_arg(httpd_query(req, "refresh"));
    console_page_start_refresh(page, "Deliveries", "/deliveries", refresh > 0 ? refresh : 0);
    filter_form(page, &filter, refresh);
    const char *problem = check_filter(&filter, limit_text, refresh);
    if (problem) {
        console_page_error(page, problem);
        console_page_end(page);
        return 400;
    }
    json_t *rows = json_array();
    vf_error err;
    vf_error_init(&err);
    if (store_delivery_list(c->store, &filter, collect_delivery, rows, &err) < 0) {
        console_page_error(page, err.text);
        console_page_end(page);
        json_decref(rows);
        return 503;
    }
    html_raw(page, "<p class=\"muted\">%s %d deliveries%s, by receiver.</p>",
             filter.before_created_at ? "Older: the next" : "The newest", filter.limit,
             filter.status || filter.receiver || filter.type ? " matching the filter" : "");
    if (json_array_size(rows) == 0)
        html_raw(page, "<p class=\"muted\" id=\"empty\">No deliveries recorded.</p>");
    receiver_tables(c, page, rows);
    deliveries_pages(page, &filter, rows, refresh);
    json_decref(rows);
    console_page_end(page);
    return 200;
}

static void dead_row(console *c, html *page, const json_t *m)
{
    const char *id = field(m, "message_id");
    html_raw(page, "<tr><td><code>");
    html_text(page, id ? id : "(no id)");
    html_raw(page, "</code></td><td class=\"reason\">");
    html_text(page, field(m, "reason"));
    html_raw(page, "</td><td>");
    html_text(page, field(m, "routing_key"));
    html_raw(page, "</td><td>");
    html_text(page, field(m, "parked_at"));
    html_raw(page, " by ");
    html_text(page, field(m, "parked_by"));
    html_raw(page, "</td><td><code>");
    html_text(page, field(m, "body_excerpt"));
    html_raw(page, "</code></td>");
    if (c->allow_actions) {
        html_raw(page, "<td>");
        if (id) {
            html_raw(page, "<form class=\"inline\" method=\"post\" "
                           "action=\"/actions/redrive\"><input type=\"hidden\" "
                           "name=\"message_id\" value=\"");
            html_text(page, id);
            html_raw(page, "\">");
            console_token_field(page);
            html_raw(page, "<button>Redrive</button></form>");
        }
        html_raw(page, "</td>");
    }
    html_raw(page, "</tr>\n");
}

static int collect_dead_letter(const store_dead_letter *row, void *user)
{
    json_t *m =
        json_pack("{s:s?, s:s, s:s, s:s, s:s, s:s?}", "message_id", row->message_id, "reason",
                  row->reason, "routing_key", row->routing_key, "parked_at", row->parked_at,
                  "parked_by", row->parked_by, "body_excerpt", row->body_excerpt);
    if (m)
        json_array_append_new(user, m);
    return 0;
}

int console_dead_page(console *c, const httpd_request *req, html *page)
{
    (void)req;
    console_page_start(page, "Dead letters", "/dead");
    json_t *messages = json_array();
    store_dead_letter_filter filter = {.parked = 1, .limit = DEAD_SHOWN};
    vf_error err;
    vf_error_init(&err);
    if (store_dead_letter_list(c->store, &filter, collect_dead_letter, messages, &err) < 0) {
        console_page_error(page, err.text);
        console_page_end(page);
        json_decref(messages);
        return 503;
    }
    html_raw(page,
             "<p class=\"muted\">%zu message(s) parked in virtflow.dead, as the store records "
             "them (at most %d shown, newest first; messages the broker dead-lettered on its "
             "own are not recorded: <code>virtflowctl dead list</code> counts them). Looking "
             "moves nothing; Redrive publishes one again as it was, with its attempt count "
             "starting over.</p>",
             json_array_size(messages), DEAD_SHOWN);
    html_raw(page,
             "<table id=\"dead\"><thead><tr><th>Message</th><th>Why</th><th>Routing "
             "key</th><th>Parked</th><th>Body</th>%s</tr></thead><tbody>",
             c->allow_actions ? "<th></th>" : "");
    size_t i;
    json_t *m;
    json_array_foreach(messages, i, m) dead_row(c, page, m);
    html_raw(page, "</tbody></table>");
    json_decref(messages);
    console_page_end(page);
    return 200;
}
