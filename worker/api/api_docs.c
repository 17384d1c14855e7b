/* GET /docs: schema/openapi.json as a reference to read, rendered here in
 * the console's style (/docs.css, no scripts: the console's
 * Content-Security-Policy): every route with its summary, scope, parameters
 * (types and limits), the request body's and the answers' fields (from the
 * document's schemas and the request's own JSON Schema), an example of each
 * (the document's), and for the GET routes a form to try them (/docs/try,
 * for the routes a browser may call without a key). Every string of the
 * documents goes through html_text. */
#include "api_docs.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api_documents.h"
#include "api_routes.h"
#include "html.h"
#include "problem.h"

/* The console's (worker/ctl/console/console.c): no script, nothing from
 * elsewhere; the style from /docs.css. */
static const char security_policy[] =
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'";

static const char *const methods[] = {"get", "post", "put", "patch", "delete", NULL};

/* Nested objects are shown this deep (a.b.c), which every schema of ours fits. */
#define FIELD_DEPTH 4

/* The documents a page reads: the OpenAPI document and the request schema
 * its "$ref": "request.task.schedule.json" names. */
typedef struct docs {
    json_t *api;
    json_t *request;
} docs;

/* `value`, or what its "$ref" names: "#/components/..." in the OpenAPI
 * document, or the request's schema. */
static const json_t *resolve(const docs *d, const json_t *value)
{
    const char *ref = json_string_value(json_object_get(value, "$ref"));
    if (!ref)
        return value;
    if (strcmp(ref, "request.task.schedule.json") == 0 ||
        strcmp(ref, "/request.task.schedule.json") == 0)
        return d->request ? d->request : value;
    if (strncmp(ref, "#/", 2) != 0)
        return value;
    const json_t *at = d->api;
    char path[256];
    snprintf(path, sizeof path, "%s", ref + 2);
    for (char *save = NULL, *part = strtok_r(path, "/", &save); part && at;
         part = strtok_r(NULL, "/", &save))
        at = json_object_get(at, part);
    return at ? at : value;
}

/* A JSON value as compact text into the page, escaped. */
static void json_words(html *page, const json_t *value)
{
    char *text = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);
    html_text(page, text);
    free(text);
}

/* A schema's type in a few words: its $ref's last part, its type(s),
 * "array of ...", "map of ...", an enum's values or a const. */
static void type_words(html *page, const docs *d, const json_t *schema)
{
    const char *ref = json_string_value(json_object_get(schema, "$ref"));
    if (ref) {
        const char *slash = strrchr(ref, '/');
        html_text(page, slash ? slash + 1 : ref);
        return;
    }
    const json_t *type = json_object_get(schema, "type");
    const json_t *choices = json_object_get(schema, "enum");
    const json_t *constant = json_object_get(schema, "const");
    if (json_is_array(choices) || constant) {
        html_raw(page, json_is_array(choices) ? "one of " : "always ");
        if (constant)
            choices = NULL;
        size_t i;
        const json_t *v;
        html_raw(page, "<code>");
        if (constant)
            json_words(page, constant);
        json_array_foreach(choices, i, v)
        {
            if (i)
                html_raw(page, "</code>, <code>");
            json_words(page, v);
        }
        html_raw(page, "</code>");
        return;
    }
    if (json_is_array(type)) {
        size_t i;
        const json_t *t;
        json_array_foreach(type, i, t)
        {
            html_raw(page, "%s", i ? " or " : "");
            html_text(page, json_string_value(t));
        }
    } else if (json_is_string(type)) {
        html_text(page, json_string_value(type));
    } else if (json_object_get(schema, "oneOf")) {
        html_raw(page, "one of the shapes below");
    } else {
        html_raw(page, "any JSON");
    }
    const json_t *items = json_object_get(schema, "items");
    if (items) {
        html_raw(page, " of ");
        type_words(page, d, resolve(d, items));
    }
    const json_t *values = json_object_get(schema, "additionalProperties");
    if (json_is_object(values) && !json_object_get(schema, "properties")) {
        html_raw(page, " (name &rarr; ");
        type_words(page, d, resolve(d, values));
        html_raw(page, ")");
    }
}

/* The limits a schema sets, as "1 to 1024", "at most 63 characters",
 * "pattern ^...$", "default 0". */
static void limit_words(html *page, const json_t *schema)
{
    static const struct {
        const char *low, *high, *unit;
    } ranges[] = {{"minimum", "maximum", ""},
                  {"minLength", "maxLength", " characters"},
                  {"minItems", "maxItems", " items"},
                  {"minProperties", "maxProperties", " names"}};
    const char *sep = "";
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        const json_t *low = json_object_get(schema, ranges[i].low);
        const json_t *high = json_object_get(schema, ranges[i].high);
        if (!low && !high)
            continue;
        html_raw(page, "%s", sep);
        if (low && high) {
            json_words(page, low);
            html_raw(page, " to ");
            json_words(page, high);
        } else {
            html_raw(page, low ? "at least " : "at most ");
            json_words(page, low ? low : high);
        }
        html_raw(page, "%s", ranges[i].unit);
        sep = "; ";
    }
    static const char *const worded[][2] = {
        {"pattern", "pattern "}, {"format", "format "}, {"default", "default "}};
    for (size_t i = 0; i < sizeof worded / sizeof worded[0]; i++) {
        const json_t *v = json_object_get(schema, worded[i][0]);
        if (!v)
            continue;
        html_raw(page, "%s%s<code>", sep, worded[i][1]);
        if (json_is_string(v))
            html_text(page, json_string_value(v));
        else
            json_words(page, v);
        html_raw(page, "</code>");
        sep = "; ";
    }
    if (json_is_false(json_object_get(schema, "additionalProperties")))
        html_raw(page, "%sno other fields", sep);
}

static bool listed(const json_t *names, const char *name)
{
    size_t i;
    const json_t *n;
    json_array_foreach(names, i, n) if (json_string_value(n) &&
                                        strcmp(json_string_value(n), name) == 0) return true;
    return false;
}

/* One row per field of an object schema, nested objects (and arrays of
 * them) as dotted names below their parent. */
static void field_rows(html *page, const docs *d, const json_t *schema, const char *prefix,
                       int depth)
{
    schema = resolve(d, schema);
    const json_t *properties = json_object_get(schema, "properties");
    const json_t *required = json_object_get(schema, "required");
    const char *name;
    const json_t *field;
    json_object_foreach((json_t *)properties, name, field)
    {
        const json_t *shown = resolve(d, field);
        html_raw(page, "<tr><td><code>");
        html_text(page, prefix);
        html_text(page, name);
        html_raw(page, "</code></td><td>");
        type_words(page, d, field);
        html_raw(page, "</td><td>%s</td><td>", listed(required, name) ? "yes" : "no");
        limit_words(page, shown);
        html_raw(page, "</td><td>");
        html_text_code(page, json_string_value(json_object_get(shown, "description")));
        html_raw(page, "</td></tr>\n");
        if (depth + 1 >= FIELD_DEPTH)
            continue;
        char nested[256];
        const json_t *items = resolve(d, json_object_get(shown, "items"));
        if (json_object_get(shown, "properties")) {
            snprintf(nested, sizeof nested, "%s%s.", prefix, name);
            field_rows(page, d, shown, nested, depth + 1);
        } else if (json_object_get(items, "properties")) {
            snprintf(nested, sizeof nested, "%s%s[].", prefix, name);
            field_rows(page, d, items, nested, depth + 1);
        }
    }
}

/* A schema's fields as a table (object schemas), each shape of a oneOf as
 * its own; a schema without fields says its type. */
static void fields_table(html *page, const docs *d, const json_t *schema)
{
    schema = resolve(d, schema);
    const json_t *shapes = json_object_get(schema, "oneOf");
    if (json_is_array(shapes)) {
        size_t i;
        const json_t *shape;
        json_array_foreach(shapes, i, shape)
        {
            html_raw(page, "<p class=\"muted\">Shape %zu of %zu:</p>\n", i + 1,
                     json_array_size(shapes));
            fields_table(page, d, shape);
        }
        return;
    }
    if (!json_object_get(schema, "properties")) {
        html_raw(page, "<p>Type: ");
        type_words(page, d, schema);
        const char *description = json_string_value(json_object_get(schema, "description"));
        if (description) {
            html_raw(page, ": ");
            html_text_code(page, description);
        }
        html_raw(page, "</p>\n");
        return;
    }
    html_raw(page, "<table class=\"fields\"><tr><th>field</th><th>type</th><th>required</th>"
                   "<th>limits</th><th>meaning</th></tr>\n");
    field_rows(page, d, schema, "", 0);
    html_raw(page, "</table>\n");
}

static void example_block(html *page, const json_t *media)
{
    const json_t *example = json_object_get(media, "example");
    if (!example)
        return;
    html_raw(page, "<p>Example:</p><pre class=\"example\">");
    if (json_is_string(example)) {
        html_text(page, json_string_value(example));
    } else {
        char *text = json_dumps(example, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        html_text(page, text);
        free(text);
    }
    html_raw(page, "</pre>\n");
}

/* A content object: each media type, its fields and its example. */
static void content_block(html *page, const docs *d, const json_t *content_map)
{
    const char *type;
    const json_t *media;
    json_object_foreach((json_t *)content_map, type, media)
    {
        html_raw(page, "<p><code>");
        html_text(page, type);
        html_raw(page, "</code></p>\n");
        const json_t *schema = json_object_get(media, "schema");
        if (schema)
            fields_table(page, d, schema);
        example_block(page, media);
    }
}

static void parameters(html *page, const docs *d, const json_t *list)
{
    if (!json_is_array(list) || json_array_size(list) == 0)
        return;
    html_raw(page, "<h4>Parameters</h4>\n<table class=\"parameters\"><tr><th>name</th><th>in</th>"
                   "<th>required</th><th>type</th><th>limits</th><th>meaning</th></tr>\n");
    size_t i;
    const json_t *p;
    json_array_foreach(list, i, p)
    {
        p = resolve(d, p);
        const json_t *schema = resolve(d, json_object_get(p, "schema"));
        html_raw(page, "<tr><td><code>");
        html_text(page, json_string_value(json_object_get(p, "name")));
        html_raw(page, "</code></td><td>");
        html_text(page, json_string_value(json_object_get(p, "in")));
        html_raw(page, "</td><td>%s</td><td>",
                 json_is_true(json_object_get(p, "required")) ? "yes" : "no");
        type_words(page, d, schema);
        html_raw(page, "</td><td>");
        limit_words(page, schema);
        html_raw(page, "</td><td>");
        html_text_code(page, json_string_value(json_object_get(p, "description")));
        html_raw(page, "</td></tr>\n");
    }
    html_raw(page, "</table>\n");
}

/* Call fn with the name and place ("path", "query") of each parameter of
 * an operation, the path item's (`shared`) then its own, in a path or the
 * query: what a form of /docs and /docs/try deal in. */
static void each_parameter(const docs *d, const json_t *shared, const json_t *own,
                           void (*fn)(const char *name, const char *in, void *ctx), void *ctx)
{
    const json_t *lists[] = {shared, own};
    for (int k = 0; k < 2; k++) {
        size_t i;
        const json_t *p;
        json_array_foreach(lists[k], i, p)
        {
            p = resolve(d, p);
            const char *name = json_string_value(json_object_get(p, "name"));
            const char *in = json_string_value(json_object_get(p, "in"));
            if (name && in && (strcmp(in, "path") == 0 || strcmp(in, "query") == 0))
                fn(name, in, ctx);
        }
    }
}

static void form_field(const char *name, const char *in, void *ctx)
{
    html *page = ctx;
    html_raw(page, "<label>");
    html_text(page, name);
    html_raw(page, " <input name=\"");
    html_text(page, name);
    html_raw(page, "\"%s></label>", strcmp(in, "path") == 0 ? " required" : "");
}

/* A GET route's form: its parameters as fields, sent to /docs/try, which
 * fills the path and redirects there. */
static void try_form(html *page, const docs *d, const char *path, const json_t *shared,
                     const json_t *own)
{
    html_raw(page, "<h4>Try it</h4>\n<form class=\"try\" method=\"get\" action=\"/docs/try\">"
                   "<input type=\"hidden\" name=\"route\" value=\"");
    html_text(page, path);
    html_raw(page, "\">");
    each_parameter(d, shared, own, form_field, page);
    html_raw(page, "<button>Send</button></form>\n<p class=\"muted\">The browser sends no key: "
                   "this works for the routes open to all and on a virtflow-api without "
                   "api.keys_file; with keys, use <code>curl -H 'Authorization: Bearer "
                   "KEY'</code>.</p>\n");
}

static void method_badge(html *page, const char *method)
{
    html_raw(page, "<span class=\"method %s\">", method);
    for (const char *c = method; *c; c++)
        html_raw(page, "%c", *c >= 'a' && *c <= 'z' ? *c - 32 : *c);
    html_raw(page, "</span>");
}

static void anchor(html *page, const char *method, const char *path)
{
    html_url_part(page, method);
    html_url_part(page, path);
}

static void operation(html *page, const docs *d, const char *path, const char *method,
                      const json_t *op, const json_t *shared_parameters)
{
    html_raw(page, "<section class=\"operation\"><h2 id=\"");
    anchor(page, method, path);
    html_raw(page, "\">");
    method_badge(page, method);
    html_raw(page, " <code>");
    html_text(page, path);
    html_raw(page, "</code></h2>\n<p>");
    html_text_code(page, json_string_value(json_object_get(op, "summary")));
    html_raw(page, "</p>\n");
    const char *description = json_string_value(json_object_get(op, "description"));
    if (description) {
        html_raw(page, "<p>");
        html_text_code(page, description);
        html_raw(page, "</p>\n");
    }
    const char *scope = json_string_value(json_object_get(op, "x-scope"));
    html_raw(page, "<p>Scope: ");
    if (scope) {
        html_raw(page, "<code>");
        html_text(page, scope);
        html_raw(page, "</code> (with api.keys_file: <code>Authorization: Bearer KEY</code> of "
                       "a key with it)");
    } else {
        html_raw(page, "none: open to all");
    }
    html_raw(page, "</p>\n");
    parameters(page, d, shared_parameters);
    parameters(page, d, json_object_get(op, "parameters"));
    const json_t *body = resolve(d, json_object_get(op, "requestBody"));
    if (body) {
        html_raw(page, "<h4>Request body</h4>\n");
        content_block(page, d, json_object_get(body, "content"));
    }
    const json_t *responses = json_object_get(op, "responses");
    html_raw(page, "<h4>Answers</h4>\n<table class=\"answers\"><tr><th>status</th>"
                   "<th>when</th><th>content</th></tr>\n");
    const char *status;
    const json_t *answer;
    json_object_foreach((json_t *)responses, status, answer)
    {
        answer = resolve(d, answer);
        html_raw(page, "<tr><td>");
        html_text(page, status);
        html_raw(page, "</td><td>");
        html_text_code(page, json_string_value(json_object_get(answer, "description")));
        html_raw(page, "</td><td>");
        const char *type;
        const json_t *media;
        json_object_foreach(json_object_get(answer, "content"), type, media)
        {
            html_raw(page, "<code>");
            html_text(page, type);
            html_raw(page, "</code> ");
        }
        html_raw(page, "</td></tr>\n");
    }
    html_raw(page, "</table>\n");
    /* The successful answers' fields and examples; errors share one shape. */
    json_object_foreach((json_t *)responses, status, answer)
    {
        if (status[0] != '2')
            continue;
        answer = resolve(d, answer);
        html_raw(page, "<h4>Answer ");
        html_text(page, status);
        html_raw(page, "</h4>\n");
        content_block(page, d, json_object_get(answer, "content"));
    }
    if (strcmp(method, "get") == 0 && strcmp(path, "/docs/try") != 0) /* not the forms' own */
        try_form(page, d, path, shared_parameters, json_object_get(op, "parameters"));
    html_raw(page, "</section>\n");
}

static void routes_index(html *page, const docs *d)
{
    html_raw(page, "<h2 id=\"routes\">Routes</h2>\n<table class=\"routes\"><tr><th>route</th>"
                   "<th>what</th><th>scope</th></tr>\n");
    const char *path;
    const json_t *item;
    json_object_foreach(json_object_get(d->api, "paths"), path, item)
    {
        for (int m = 0; methods[m]; m++) {
            const json_t *op = json_object_get(item, methods[m]);
            if (!op)
                continue;
            html_raw(page, "<tr><td><a href=\"#");
            anchor(page, methods[m], path);
            html_raw(page, "\">");
            method_badge(page, methods[m]);
            html_raw(page, " <code>");
            html_text(page, path);
            html_raw(page, "</code></a></td><td>");
            html_text_code(page, json_string_value(json_object_get(op, "summary")));
            html_raw(page, "</td><td>");
            html_text(page, json_string_value(json_object_get(op, "x-scope")));
            html_raw(page, "</td></tr>\n");
        }
    }
    html_raw(page, "</table>\n");
}

static int docs_load(docs *d)
{
    d->api = json_loadb(api_openapi_json, api_openapi_json_len, 0, NULL);
    d->request = json_loadb(api_request_schema_json, api_request_schema_json_len, 0, NULL);
    return d->api && d->request ? 0 : -1;
}

static void docs_close(docs *d)
{
    json_decref(d->api);
    json_decref(d->request);
}

char *api_docs_page(size_t *len)
{
    docs d;
    if (docs_load(&d) < 0) {
        docs_close(&d);
        return NULL;
    }
    html page;
    html_init(&page);
    const json_t *info = json_object_get(d.api, "info");
    const char *title = json_string_value(json_object_get(info, "title"));
    html_raw(&page, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<link rel=\"stylesheet\" href=\"/docs.css\"><title>");
    html_text(&page, title);
    html_raw(&page, " API reference</title></head>\n<body><nav><strong class=\"muted\">");
    html_text(&page, title);
    html_raw(&page, "</strong> <a href=\"/docs\" class=\"on\">Reference</a>"
                    "<a href=\"#routes\">Routes</a><a href=\"/openapi.json\">openapi.json</a>"
                    "<a href=\"/request.task.schedule.json\">Request schema</a></nav><main>\n"
                    "<h1>");
    html_text(&page, title);
    html_raw(&page, " ");
    html_text(&page, json_string_value(json_object_get(info, "version")));
    html_raw(&page, "</h1>\n<p>");
    html_text_code(&page, json_string_value(json_object_get(info, "description")));
    html_raw(&page, "</p>\n<p>Every error is an RFC 9457 problem "
                    "(<code>application/problem+json</code>): <code>type</code>, "
                    "<code>title</code>, <code>status</code>, <code>detail</code> (what to "
                    "change). This page is <a href=\"/openapi.json\">/openapi.json</a> (OpenAPI "
                    "3.1) rendered.</p>\n");
    routes_index(&page, &d);
    const char *path;
    const json_t *item;
    json_object_foreach(json_object_get(d.api, "paths"), path, item)
    {
        for (int m = 0; methods[m]; m++) {
            const json_t *op = json_object_get(item, methods[m]);
            if (op)
                operation(&page, &d, path, methods[m], op, json_object_get(item, "parameters"));
        }
    }
    html_raw(&page, "</main></body></html>\n");
    docs_close(&d);
    return html_take(&page, len);
}

void api_docs(const httpd_request *req, httpd_response *resp)
{
    (void)req;
    snprintf(resp->security_policy, sizeof resp->security_policy, "%s", security_policy);
    size_t len = 0;
    char *body = api_docs_page(&len);
    if (!body) {
        problem_reply(resp, 500, "out of memory");
        return;
    }
    httpd_reply_take(resp, 200, "text/html; charset=utf-8", body, len);
}

void api_docs_style(httpd_response *resp)
{
    httpd_reply_text(resp, 200, "text/css; charset=utf-8", html_stylesheet);
}

/* The documented GET operation of `route` (a path template), or NULL. */
static const json_t *get_operation(const docs *d, const char *route, const json_t **shared)
{
    const json_t *item = json_object_get(json_object_get(d->api, "paths"), route);
    *shared = json_object_get(item, "parameters");
    return json_object_get(item, "get");
}

/* The query of /docs/try's redirect, a documented parameter at a time. */
typedef struct query_parts {
    const httpd_request *req;
    html *url;
    char sep; /* '?' before the first, then '&' */
} query_parts;

static void query_part(const char *name, const char *in, void *ctx)
{
    query_parts *q = ctx;
    const char *value = httpd_query(q->req, name);
    if (strcmp(in, "query") != 0 || !value || !value[0])
        return;
    html_raw(q->url, "%c", q->sep);
    html_url_part(q->url, name);
    html_raw(q->url, "=");
    html_url_part(q->url, value);
    q->sep = '&';
}

/* The URL of `route` with its {name} parts from the query (percent-encoded)
 * and the operation's other parameters that have a value as its query;
 * owned, or NULL with `why`. */
static char *try_url(const docs *d, const httpd_request *req, const char *route, char *why,
                     size_t size)
{
    const json_t *shared;
    const json_t *op = get_operation(d, route, &shared);
    if (!op) {
        snprintf(why, size, "route: not a documented GET route");
        return NULL;
    }
    html url; /* the percent-encoding helper; the text is a URL, not markup */
    html_init(&url);
    for (const char *c = route; *c; c++) {
        if (*c != '{') {
            html_raw(&url, "%c", *c);
            continue;
        }
        const char *end = strchr(c, '}');
        char name[64];
        snprintf(name, sizeof name, "%.*s", end ? (int)(end - c - 1) : 0, c + 1);
        const char *value = httpd_query(req, name);
        if (!end || !value || !value[0]) {
            snprintf(why, size, "%s: needed for this route", name);
            html_close(&url);
            return NULL;
        }
        html_url_part(&url, value);
        c = end;
    }
    query_parts parts = {.req = req, .url = &url, .sep = '?'};
    each_parameter(d, shared, json_object_get(op, "parameters"), query_part, &parts);
    size_t len;
    return html_take(&url, &len);
}

void api_docs_try(const httpd_request *req, httpd_response *resp)
{
    const char *route = httpd_query(req, "route");
    docs d;
    if (docs_load(&d) < 0) {
        docs_close(&d);
        problem_reply(resp, 500, "out of memory");
        return;
    }
    char why[160];
    char *url = route ? try_url(&d, req, route, why, sizeof why) : NULL;
    docs_close(&d);
    if (!url) {
        problem_reply(resp, 400,
                      route ? why : "route: which GET route to try (the forms of /docs)");
        return;
    }
    if (strlen(url) >= sizeof resp->location) {
        free(url);
        problem_reply(resp, 400, "the values are too long for a URL");
        return;
    }
    snprintf(resp->location, sizeof resp->location, "%s", url);
    free(url);
    httpd_reply_text(resp, 303, "text/plain; charset=utf-8", "see the Location\n");
}

void api_route_docs(api *a, const api_call *call, httpd_response *resp)
{
    (void)a;
    api_docs(call->req, resp);
}

void api_route_docs_style(api *a, const api_call *call, httpd_response *resp)
{
    (void)a;
    (void)call;
    api_docs_style(resp);
}

void api_route_docs_try(api *a, const api_call *call, httpd_response *resp)
{
    (void)a;
    api_docs_try(call->req, resp);
}
