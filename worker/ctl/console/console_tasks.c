/* console_tasks: /tasks (filtered like `virtflowctl tasks`, newest first, a
 * page at a time with a keyset cursor) and /task?id= (one task: request,
 * result, reservations, the whole history with each attempt's per-host
 * reasons grouped as reason -> hosts). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console.h"
#include "store_console.h"
#include "task_view.h"
#include "store_stats.h"
#include "../ctl.h"

#define DEFAULT_PAGE 50
#define MAX_PAGE 500

typedef struct list_ctx {
    html *page;
    int count;
    char first_created[STORE_TIME_SIZE + 8];
    char first_id[512];
    char last_created[STORE_TIME_SIZE + 8];
    char last_id[512];
} list_ctx;

/* Counted no further than this: a header, not a scan of a big table. */
#define COUNT_CAP 10000

static void task_link(html *page, const char *id)
{
    html_raw(page, "<a class=\"task\" href=\"/task?id=");
    html_url_part(page, id);
    html_raw(page, "\">");
    html_text(page, id);
    html_raw(page, "</a>");
}

static int task_row(const store_task *t, void *user)
{
    list_ctx *ctx = user;
    html *page = ctx->page;
    if (ctx->count++ == 0) {
        snprintf(ctx->first_created, sizeof ctx->first_created, "%s",
                 t->created_at ? t->created_at : "");
        snprintf(ctx->first_id, sizeof ctx->first_id, "%s", t->id ? t->id : "");
    }
    snprintf(ctx->last_created, sizeof ctx->last_created, "%s", t->created_at ? t->created_at : "");
    snprintf(ctx->last_id, sizeof ctx->last_id, "%s", t->id ? t->id : "");
    html_raw(page, "<tr class=\"");
    html_text(page, t->status);
    html_raw(page, "\"><td>");
    task_link(page, t->id);
    html_raw(page, "</td><td class=\"vm\">");
    json_t *request = t->request ? json_loads(t->request, 0, NULL) : NULL;
    html_text(page, json_string_value(json_object_get(request, "vm_name")));
    json_decref(request);
    html_raw(page, "</td><td>");
    html_text(page, t->kind);
    html_raw(page, "</td><td class=\"status\">");
    html_text(page, t->status);
    html_raw(page, "</td><td class=\"reason\">");
    html_text(page, t->reason);
    html_raw(page, "</td><td>%d</td><td>", t->attempts);
    html_text(page, t->node);
    html_raw(page, "</td><td>");
    if (t->vmid >= 0)
        html_raw(page, "%lld", (long long)t->vmid);
    html_raw(page, "</td><td>");
    html_text(page, t->created_at);
    html_raw(page, "</td><td>");
    if (t->error) {
        /* The start of it: the whole error is on the task's page. */
        char shown[161];
        snprintf(shown, sizeof shown, "%s", t->error);
        html_text(page, shown);
        if (strlen(t->error) >= sizeof shown)
            html_raw(page, "&hellip;");
    }
    html_raw(page, "</td></tr>\n");
    return 0;
}

static void select_field(html *page, const char *name, const char *current,
                         const char *const *choices)
{
    html_raw(page, "<label>%s <select name=\"%s\"><option value=\"\">any</option>", name, name);
    for (size_t i = 0; choices[i]; i++) {
        html_raw(page, "<option%s>%s</option>",
                 current && strcmp(current, choices[i]) == 0 ? " selected" : "", choices[i]);
    }
    html_raw(page, "</select></label>");
}

static void text_field(html *page, const char *name, const char *current, const char *hint)
{
    html_raw(page, "<label>%s <input name=\"%s\" size=\"14\" placeholder=\"%s\" value=\"", name,
             name, hint);
    html_text(page, current);
    html_raw(page, "\"></label>");
}

static bool one_of(const char *value, const char *const *choices)
{
    for (size_t i = 0; choices[i]; i++)
        if (strcmp(value, choices[i]) == 0)
            return true;
    return false;
}

/* A query argument, NULL when absent or empty (an empty form field). */
static const char *arg(const httpd_request *req, const char *name)
{
    const char *value = httpd_query(req, name);
    return value && value[0] ? value : NULL;
}

static void keep_arg(html *page, const char *name, const char *value)
{
    if (!value)
        return;
    html_raw(page, "&amp;%s=", name);
    html_url_part(page, value);
}

/* The page's query arguments but its cursor, for its links: the filters,
 * the searches and the refresh the user chose ride along. */
typedef struct kept {
    const store_task_filter *filter;
    const char *id, *node, *since, *limit, *refresh;
} kept;

static void keep_all(html *page, const kept *k)
{
    keep_arg(page, "status", k->filter->status);
    keep_arg(page, "kind", k->filter->kind);
    keep_arg(page, "reason", k->filter->reason);
    keep_arg(page, "vm_name", k->filter->vm_name);
    keep_arg(page, "submitter", k->filter->submitter);
    keep_arg(page, "error", k->filter->error);
    keep_arg(page, "id", k->id);
    keep_arg(page, "node", k->node);
    keep_arg(page, "since", k->since);
    keep_arg(page, "limit", k->limit);
    keep_arg(page, "refresh", k->refresh);
}

static void page_link(html *page, const char *id, const char *cursor, const char *created,
                      const char *row_id, const kept *k, const char *label)
{
    html_raw(page, "<a id=\"%s\" href=\"/tasks?", id);
    if (cursor) {
        html_raw(page, "%s=", cursor);
        html_url_part(page, created);
        html_raw(page, "&amp;%s_id=", cursor);
        html_url_part(page, row_id);
    } else {
        html_raw(page, "newest=1");
    }
    keep_all(page, k);
    html_raw(page, "\">%s</a> ", label);
}

/* The page's reload choices besides off, in seconds. */
static const char *const refreshes[] = {"5", "30", NULL};

/* /tasks' query: the search as the store takes it, and the arguments as
 * given, which the form shows and the links keep. */
typedef struct tasks_query {
    store_task_search q;
    const char *node; /* as given: a host, or a prefix* */
    char node_prefix[256];
    const char *since_text, *limit_text, *refresh_text;
    int refresh; /* seconds; 0: off; -1: none of the choices */
    char since[STORE_TIME_SIZE];
} tasks_query;

static void read_query(const httpd_request *req, tasks_query *t)
{
    store_task_search *q = &t->q;
    *q = (store_task_search){.filter = {.limit = DEFAULT_PAGE}};
    q->filter.status = arg(req, "status");
    q->filter.kind = arg(req, "kind");
    q->filter.reason = arg(req, "reason");
    /* As `virtflowctl tasks --vm-name --submitter --error`: the names users
     * know their tasks by, and the error text they were shown. */
    q->filter.vm_name = arg(req, "vm_name");
    q->filter.submitter = arg(req, "submitter");
    q->filter.error = arg(req, "error");
    /* Searches: a prefix of the task id, of the node (the host it is on). */
    q->id_prefix = arg(req, "id");
    /* A host name is exact (the index tasks_by_node in created_at order:
     * no sort); "gp-*" is a prefix, an index range that is sorted. */
    t->node = arg(req, "node");
    size_t node_len = t->node ? strlen(t->node) : 0;
    if (node_len > 1 && t->node[node_len - 1] == '*' && node_len < sizeof t->node_prefix) {
        snprintf(t->node_prefix, sizeof t->node_prefix, "%.*s", (int)(node_len - 1), t->node);
        q->node_prefix = t->node_prefix;
    } else {
        q->filter.node = t->node;
    }
    t->since_text = arg(req, "since");
    q->before_created_at = arg(req, "before");
    q->before_id = arg(req, "before_id");
    q->after_created_at = arg(req, "after");
    q->after_id = arg(req, "after_id");
    t->limit_text = arg(req, "limit");
    t->refresh_text = arg(req, "refresh");
    t->refresh = console_refresh_arg(t->refresh_text);
}

/* The filters and searches as a form, filled with the query's values. The
 * filters' choices are task_view's, as virtflowctl tasks and GET /v1/tasks
 * have them (queued included). */
static void filter_form(html *page, const tasks_query *t)
{
    const store_task_filter *f = &t->q.filter;
    html_raw(page, "<form class=\"filters\" method=\"get\" action=\"/tasks\">");
    text_field(page, "id", t->q.id_prefix, "task id prefix");
    text_field(page, "node", t->node, "host, or prefix*");
    text_field(page, "vm_name", f->vm_name, "VM name");
    text_field(page, "submitter", f->submitter, "key or broker user");
    text_field(page, "error", f->error, "text in the error");
    select_field(page, "status", f->status, task_view_statuses);
    select_field(page, "kind", f->kind, task_view_kinds);
    select_field(page, "reason", f->reason, task_view_reasons);
    text_field(page, "since", t->since_text, "1h, 2d, RFC 3339");
    html_raw(page, "<label>refresh <select name=\"refresh\"><option value=\"off\">off</option>");
    for (size_t i = 0; refreshes[i]; i++)
        html_raw(page, "<option value=\"%s\"%s>every %s s</option>", refreshes[i],
                 t->refresh_text && strcmp(t->refresh_text, refreshes[i]) == 0 ? " selected" : "",
                 refreshes[i]);
    html_raw(page, "</select></label>");
    if (t->limit_text) {
        html_raw(page, "<input type=\"hidden\" name=\"limit\" value=\"");
        html_text(page, t->limit_text);
        html_raw(page, "\">");
    }
    html_raw(page, "<button>Search</button></form>\n");
}

/* What is wrong with the query (the 400's text), NULL when nothing: then
 * its limit and since are in the search. */
static const char *check_query(tasks_query *t)
{
    store_task_search *q = &t->q;
    const char *problem = NULL;
    if (q->filter.kind && !one_of(q->filter.kind, task_view_kinds))
        problem = "kind: expected schedule or spare";
    else if (q->filter.reason && !one_of(q->filter.reason, task_view_reasons))
        problem = "reason: expected invalid, unschedulable, never_fits, exhausted or lost";
    else if (t->since_text && ctl_parse_since(t->since_text, t->since) < 0)
        problem = "since: expected 30m, 1h, 2d, 45s or an RFC 3339 UTC time like "
                  "2026-11-22T01:02:03Z";
    else if ((q->before_created_at != NULL) != (q->before_id != NULL) ||
             (q->after_created_at != NULL) != (q->after_id != NULL))
        problem = "before and before_id (after and after_id) go together: a row of the "
                  "page next to this one";
    else if (q->before_created_at && q->after_created_at)
        problem = "before or after, not both";
    else if (t->refresh < 0)
        problem = "refresh: expected off, 5 or 30";
    if (t->limit_text) {
        char *end;
        long limit = strtol(t->limit_text, &end, 10);
        if (*end || limit < 1 || limit > MAX_PAGE)
            problem = "limit: expected a number from 1 to 500";
        else
            q->filter.limit = (int)limit;
    }
    if (!problem && t->since_text)
        q->filter.since = t->since;
    return problem;
}

/* Keyset both ways: Newer is the page above this one's first row, Older
 * the page below its last; a full page may have more beyond. */
static void page_links(html *page, const tasks_query *t, const list_ctx *ctx)
{
    const store_task_search *q = &t->q;
    kept k = {.filter = &q->filter,
              .id = q->id_prefix,
              .node = t->node,
              .since = t->since_text,
              .limit = t->limit_text,
              .refresh = t->refresh > 0 ? t->refresh_text : NULL};
    bool deeper = q->before_created_at != NULL, higher = q->after_created_at != NULL;
    bool newer = ctx->count > 0 && (deeper || (higher && ctx->count == q->filter.limit));
    bool older = ctx->count > 0 && (higher || ctx->count == q->filter.limit);
    html_raw(page, "<p class=\"pages\">");
    if (deeper || higher)
        page_link(page, "newest", NULL, NULL, NULL, &k, "&larr;&larr; Newest");
    if (newer)
        page_link(page, "newer", "after", ctx->first_created, ctx->first_id, &k, "&larr; Newer");
    if (older)
        page_link(page, "older", "before", ctx->last_created, ctx->last_id, &k, "Older &rarr;");
    html_raw(page, "</p>");
}

/* How many match, their table, the links to the pages beside; the status
 * to answer with. */
static int task_table(console *c, const tasks_query *t, html *page)
{
    vf_error err;
    vf_error_init(&err);
    int64_t matching = store_task_search_count(c->store, &t->q, COUNT_CAP, &err);
    if (matching < 0) {
        console_page_error(page, err.text);
        return 503;
    }
    html_raw(page, "<p id=\"count\">%lld%s task%s match.</p>\n", (long long)matching,
             matching >= COUNT_CAP ? "+" : "", matching == 1 ? "" : "s");
    html_raw(page,
             "<table id=\"tasks\"><thead><tr><th>Task</th><th>VM</th><th>Kind</th><th>Status</th>"
             "<th>Reason</th><th>Att.</th><th>Node</th><th>VMID</th><th>Created</th>"
             "<th>Error</th></tr></thead><tbody>\n");
    list_ctx ctx = {.page = page};
    if (store_task_search_page(c->store, &t->q, task_row, &ctx, &err) < 0) {
        html_raw(page, "</tbody></table>");
        console_page_error(page, err.text);
        return 503;
    }
    html_raw(page, "</tbody></table>\n");
    if (ctx.count == 0)
        html_raw(page, "<p class=\"muted\" id=\"empty\">No tasks match.</p>");
    page_links(page, t, &ctx);
    return 200;
}

int console_tasks_page(console *c, const httpd_request *req, html *page)
{
    tasks_query t;
    read_query(req, &t);
    console_page_start_refresh(page, "Tasks", "/tasks", t.refresh > 0 ? t.refresh : 0);
    filter_form(page, &t);
    const char *problem = check_query(&t);
    int status = 400;
    if (problem)
        console_page_error(page, problem);
    else
        status = task_table(c, &t, page);
    console_page_end(page);
    return status;
}

/* ---- one task ---- */

static char *pretty(const json_t *value)
{
    return json_dumps(value, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY |
                                 JSON_REAL_PRECISION(15));
}

static void json_block(html *page, const char *title, const char *id, const char *text)
{
    html_raw(page, "<h2>%s</h2>", title);
    if (!text) {
        html_raw(page, "<p class=\"muted\">none</p>");
        return;
    }
    json_t *value = json_loads(text, JSON_DECODE_ANY, NULL);
    char *shown = value ? pretty(value) : NULL;
    html_raw(page, "<pre id=\"%s\">", id);
    html_text(page, shown ? shown : text);
    html_raw(page, "</pre>");
    free(shown);
    json_decref(value);
}

static void field_row(html *page, const char *name, const char *value)
{
    if (!value)
        return;
    html_raw(page, "<tr><th>%s</th><td class=\"%s\">", name, name);
    html_text(page, value);
    html_raw(page, "</td></tr>");
}

/* The per-host reasons of one attempt as reason -> hosts: twelve hosts
 * rejected for three reasons read as three lines, not twelve. */
static void rejections_table(html *page, const json_t *rejections, json_int_t omitted)
{
    json_t *by_reason = json_object(); /* reason -> array of hosts, first seen first */
    const char *host;
    const json_t *why;
    json_object_foreach((json_t *)rejections, host, why)
    {
        char *text = json_is_string(why) ? NULL : json_dumps(why, JSON_COMPACT | JSON_ENCODE_ANY);
        const char *reason = text ? text : json_string_value(why);
        if (!reason)
            reason = "?";
        json_t *hosts = json_object_get(by_reason, reason);
        if (!hosts) {
            hosts = json_array();
            json_object_set_new(by_reason, reason, hosts);
        }
        json_array_append_new(hosts, json_string(host));
        free(text);
    }
    html_raw(page, "<table class=\"rejections\"><thead><tr><th>Reason</th><th>Hosts</th>"
                   "<th></th></tr></thead><tbody>");
    const char *reason;
    const json_t *hosts;
    json_object_foreach(by_reason, reason, hosts)
    {
        html_raw(page, "<tr><td class=\"reason\">");
        html_text(page, reason);
        html_raw(page, "</td><td>%zu</td><td class=\"hosts\">", json_array_size(hosts));
        size_t i;
        const json_t *h;
        json_array_foreach(hosts, i, h)
        {
            if (i)
                html_raw(page, ", ");
            html_text(page, json_string_value(h));
        }
        html_raw(page, "</td></tr>");
    }
    html_raw(page, "</tbody></table>");
    if (omitted > 0)
        html_raw(page, "<p class=\"muted\">%lld more hosts not recorded (counted below).</p>",
                 (long long)omitted);
    json_decref(by_reason);
}

static void amounts(html *page, const json_t *figures)
{
    char text[160];
    ctl_amounts(figures, text, sizeof text);
    html_text(page, text);
}

/* Why not, and what would fix it: per host the change, per pool the shapes. */
static void suggestions_table(html *page, const json_t *s)
{
    html_raw(page, "<table class=\"suggestions\"><thead><tr><th>Host</th><th>Rejected for</th>"
                   "<th>Free on it</th><th>Or ask for at most</th></tr></thead><tbody>");
    const char *host;
    const json_t *entry;
    json_object_foreach(json_object_get(s, "hosts"), host, entry)
    {
        html_raw(page, "<tr><td>");
        html_text(page, host);
        html_raw(page, "</td><td class=\"reason\">");
        html_text(page, json_string_value(json_object_get(entry, "reason")));
        html_raw(page, "</td><td>");
        const char *constraint = json_string_value(json_object_get(entry, "constraint"));
        if (constraint) {
            html_text(page, constraint);
            html_raw(page, " in the way");
            html_raw(page, "</td><td>");
        } else {
            amounts(page, json_object_get(entry, "free"));
            html_raw(page, "</td><td>");
            amounts(page, json_object_get(entry, "fits"));
        }
        html_raw(page, "</td></tr>");
    }
    html_raw(page, "</tbody></table>");
    json_int_t omitted = json_integer_value(json_object_get(s, "hosts_omitted"));
    if (omitted > 0)
        html_raw(page, "<p class=\"muted\">%lld more hosts.</p>", (long long)omitted);
    const char *pool;
    const json_t *shapes;
    json_object_foreach(json_object_get(s, "pools"), pool, shapes)
    {
        const json_t *most = json_object_get(shapes, "most_cpu");
        html_raw(page, "<p>Largest that fits now in pool <b>");
        html_text(page, pool);
        html_raw(page, "</b>: ");
        amounts(page, most);
        html_raw(page, " (");
        html_text(page, json_string_value(json_object_get(most, "host")));
        html_raw(page, ")</p>");
    }
}

static void detail_cell(html *page, const char *detail_text)
{
    json_t *detail = detail_text ? json_loads(detail_text, JSON_DECODE_ANY, NULL) : NULL;
    if (!json_is_object(detail)) {
        html_raw(page, "<code>");
        html_text(page, detail_text);
        html_raw(page, "</code>");
        json_decref(detail);
        return;
    }
    json_int_t omitted = json_integer_value(json_object_get(detail, "rejections_omitted"));
    const char *key;
    const json_t *value;
    html_raw(page, "<table class=\"detail\">");
    json_object_foreach(detail, key, value)
    {
        if (strcmp(key, "rejections_omitted") == 0)
            continue;
        html_raw(page, "<tr><th>");
        html_text(page, key);
        html_raw(page, "</th><td>");
        if (strcmp(key, "rejections") == 0 && json_is_object(value)) {
            rejections_table(page, value, omitted);
        } else if (strcmp(key, "suggestions") == 0 && json_is_object(value)) {
            suggestions_table(page, value);
        } else if (strcmp(key, "rejection_counts") == 0 && json_is_object(value)) {
            const char *reason;
            const json_t *count;
            html_raw(page, "<table class=\"counts\">");
            json_object_foreach((json_t *)value, reason, count)
            {
                html_raw(page, "<tr><td class=\"reason\">");
                html_text(page, reason);
                html_raw(page, "</td><td>%lld</td></tr>", (long long)json_integer_value(count));
            }
            html_raw(page, "</table>");
        } else if (json_is_string(value)) {
            html_text(page, json_string_value(value));
        } else {
            char *text = json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY |
                                               JSON_REAL_PRECISION(15));
            html_raw(page, "<code>");
            html_text(page, text);
            html_raw(page, "</code>");
            free(text);
        }
        html_raw(page, "</td></tr>");
    }
    html_raw(page, "</table>");
    json_decref(detail);
}

static int history_row(const store_task_event *e, void *user)
{
    html *page = user;
    html_raw(page, "<tr><td>");
    html_text(page, e->at);
    html_raw(page, "</td><td class=\"status\">");
    html_text(page, e->status);
    html_raw(page, "</td><td>");
    detail_cell(page, e->detail);
    html_raw(page, "</td></tr>\n");
    return 0;
}

static int reservation_row(const store_reservation *r, void *user)
{
    html *page = user;
    html_raw(page, "<tr><td>");
    html_text(page, r->node);
    html_raw(page, "</td><td>%g</td><td>%lld</td><td>%lld</td><td>", r->cpu, (long long)r->memory,
             (long long)r->disk);
    if (r->vmid >= 0)
        html_raw(page, "%lld", (long long)r->vmid);
    html_raw(page, "</td><td>");
    html_text(page, r->created_at);
    html_raw(page, "</td><td>");
    html_text(page, r->expires_at);
    html_raw(page, "</td><td>");
    html_text(page, r->released_at ? r->released_at : "held");
    html_raw(page, "</td></tr>");
    return 0;
}

/* A waiting task's buttons: POST /actions/retry-now (a retrying one) and
 * /actions/cancel (virtflowctl task retry-now | cancel, console.c). */
static void task_action_forms(html *page, const char *id, bool retrying)
{
    static const char *const actions[][2] = {{"retry-now", "Retry now"}, {"cancel", "Cancel"}};
    html_raw(page, "<p id=\"actions\">");
    for (size_t i = retrying ? 0 : 1; i < 2; i++) {
        html_raw(page,
                 "<form class=\"inline\" method=\"post\" action=\"/actions/%s\">"
                 "<input type=\"hidden\" name=\"task_id\" value=\"",
                 actions[i][0]);
        html_text(page, id);
        html_raw(page, "\">");
        console_token_field(page);
        html_raw(page, "<button id=\"%s\">%s</button></form> ", actions[i][0], actions[i][1]);
    }
    html_raw(page, "</p>");
}

/* A failed or cancelled task's button: its request again, as a new task
 * (POST /actions/resubmit: virtflowctl task resubmit, console.c). */
static void resubmit_form(html *page, const char *id)
{
    html_raw(page, "<p id=\"actions\"><form class=\"inline\" method=\"post\" "
                   "action=\"/actions/resubmit\"><input type=\"hidden\" name=\"task_id\" "
                   "value=\"");
    html_text(page, id);
    html_raw(page, "\">");
    console_token_field(page);
    html_raw(page, "<button id=\"resubmit\">Resubmit as a new task</button></form></p>");
}

int console_task_page(console *c, const httpd_request *req, html *page)
{
    const char *id = httpd_query(req, "id");
    if (!id || !id[0]) {
        console_page_start(page, "Task", "/tasks");
        console_page_error(page, "which task? /task?id=TASK_ID");
        console_page_end(page);
        return 400;
    }
    char title[600];
    snprintf(title, sizeof title, "Task %s", id);
    console_page_start(page, title, "/tasks");
    store_task task = {0};
    vf_error err;
    vf_error_init(&err);
    int found = store_task_get(c->store, id, &task, &err);
    if (found != 0) {
        console_page_error(page, found < 0 ? err.text : "No such task in the store.");
        console_page_end(page);
        return found < 0 ? 503 : 404;
    }
    html_raw(page, "<table id=\"summary\">");
    field_row(page, "id", task.id);
    field_row(page, "kind", task.kind);
    field_row(page, "status", task.status);
    field_row(page, "reason", task.reason);
    char number[32];
    snprintf(number, sizeof number, "%d", task.attempts);
    field_row(page, "attempts", number);
    field_row(page, "node", task.node);
    if (task.vmid >= 0) {
        snprintf(number, sizeof number, "%lld", (long long)task.vmid);
        field_row(page, "vmid", number);
    }
    field_row(page, "error", task.error);
    field_row(page, "created_at", task.created_at);
    field_row(page, "updated_at", task.updated_at);
    field_row(page, "operator action", task.action);
    json_t *detail = task_view_detail_json(c->store, &task, &err);
    json_t *retry = task_view_retry(detail, c->config->retry.max_attempts);
    if (retry) {
        char text[CTL_RETRY_TEXT];
        ctl_retry_text(retry, text, sizeof text);
        field_row(page, "retry", text);
    }
    json_decref(retry);
    json_decref(detail);
    html_raw(page, "</table>");
    bool waiting = strcmp(task.status, "retrying") == 0 || strcmp(task.status, "queued") == 0;
    if (c->allow_actions && strcmp(task.kind, "schedule") == 0 && waiting)
        task_action_forms(page, task.id, strcmp(task.status, "retrying") == 0);
    bool ended = strcmp(task.status, "failed") == 0 || strcmp(task.status, "cancelled") == 0;
    if (c->allow_actions && strcmp(task.kind, "schedule") == 0 && ended)
        resubmit_form(page, task.id);
    json_block(page, "Request", "request", task.request);
    json_block(page, "Result", "result", task.result);
    json_t *result = task.result ? json_loads(task.result, 0, NULL) : NULL;
    const json_t *why = json_object_get(result, "suggestions");
    if (json_is_object(why)) {
        html_raw(page, "<h2>What would make it fit</h2>");
        suggestions_table(page, why);
    }
    json_decref(result);

    int status = 200;
    html_raw(page, "<h2>Reservations</h2><table id=\"reservations\"><thead><tr><th>Node</th>"
                   "<th>vCPU</th><th>MiB</th><th>GiB</th><th>VMID</th><th>From</th>"
                   "<th>Expires</th><th>Released</th></tr></thead><tbody>");
    if (store_task_reservations(c->store, id, reservation_row, page, &err) < 0)
        status = 503;
    html_raw(page, "</tbody></table><h2>History</h2><table id=\"history\"><thead><tr>"
                   "<th>At</th><th>Status</th><th>Detail</th></tr></thead><tbody>");
    if (status == 200 && store_task_events(c->store, id, history_row, page, &err) < 0)
        status = 503;
    html_raw(page, "</tbody></table>");
    if (status != 200)
        console_page_error(page, err.text);
    console_page_end(page);
    store_task_clear(&task);
    return status;
}
