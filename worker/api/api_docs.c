/* GET /docs: schema/openapi.json as a page to read, rendered here (no
 * scripts, the console's Content-Security-Policy): each route with its
 * summary, scope, parameters, request body and answers. Every string of the
 * document goes through html_text. */
#include "api_docs.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api_documents.h"
#include "html.h"
#include "problem.h"

/* The console's (worker/ctl/console/console.c): no script, nothing from
 * elsewhere; this page needs no style or picture at all. */
static const char security_policy[] =
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'";

static const char *const methods[] = {"get", "post", "put", "patch", "delete", NULL};

/* `value`, or what its "$ref": "#/components/..." names. */
static const json_t *resolve(const json_t *doc, const json_t *value)
{
    const char *ref = json_string_value(json_object_get(value, "$ref"));
    if (!ref || strncmp(ref, "#/", 2) != 0)
        return value;
    const json_t *at = doc;
    char path[256];
    snprintf(path, sizeof path, "%s", ref + 2);
    for (char *save = NULL, *part = strtok_r(path, "/", &save); part && at;
         part = strtok_r(NULL, "/", &save))
        at = json_object_get(at, part);
    return at ? at : value;
}

/* A schema in a few words: its $ref's last part, type, enum or const. */
static void schema_words(html *page, const json_t *schema)
{
    const char *ref = json_string_value(json_object_get(schema, "$ref"));
    if (ref) {
        const char *slash = strrchr(ref, '/');
        html_text(page, slash ? slash + 1 : ref);
        return;
    }
    const json_t *type = json_object_get(schema, "type");
    if (json_is_string(type))
        html_text(page, json_string_value(type));
    const json_t *choices = json_object_get(schema, "enum");
    if (json_is_array(choices)) {
        html_raw(page, " one of ");
        size_t i;
        const json_t *v;
        json_array_foreach(choices, i, v)
        {
            char *text = json_dumps(v, JSON_ENCODE_ANY);
            html_raw(page, "%s<code>", i ? ", " : "");
            html_text(page, text);
            html_raw(page, "</code>");
            free(text);
        }
    }
}

static void parameters(html *page, const json_t *doc, const json_t *list)
{
    if (!json_is_array(list) || json_array_size(list) == 0)
        return;
    html_raw(page, "<h4>Parameters</h4>\n<table><tr><th>name</th><th>in</th><th>required</th>"
                   "<th>schema</th><th>description</th></tr>\n");
    size_t i;
    const json_t *p;
    json_array_foreach(list, i, p)
    {
        p = resolve(doc, p);
        html_raw(page, "<tr><td><code>");
        html_text(page, json_string_value(json_object_get(p, "name")));
        html_raw(page, "</code></td><td>");
        html_text(page, json_string_value(json_object_get(p, "in")));
        html_raw(page, "</td><td>%s</td><td>",
                 json_is_true(json_object_get(p, "required")) ? "yes" : "no");
        schema_words(page, json_object_get(p, "schema"));
        html_raw(page, "</td><td>");
        html_text(page, json_string_value(json_object_get(p, "description")));
        html_raw(page, "</td></tr>\n");
    }
    html_raw(page, "</table>\n");
}

/* The media types of a content object, and each one's schema. */
static void content(html *page, const json_t *content_map)
{
    const char *type;
    const json_t *media;
    bool first = true;
    json_object_foreach((json_t *)content_map, type, media)
    {
        html_raw(page, "%s<code>", first ? "" : "; ");
        html_text(page, type);
        html_raw(page, "</code>");
        const json_t *schema = json_object_get(media, "schema");
        if (schema) {
            html_raw(page, " (");
            schema_words(page, schema);
            html_raw(page, ")");
        }
        first = false;
    }
}

static void operation(html *page, const json_t *doc, const char *path, const char *method,
                      const json_t *op, const json_t *shared_parameters)
{
    html_raw(page, "<h3 id=\"");
    html_url_part(page, method);
    html_url_part(page, path);
    html_raw(page, "\"><code>");
    for (const char *c = method; *c; c++) {
        char upper[2] = {(char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c), '\0'};
        html_text(page, upper);
    }
    html_raw(page, " ");
    html_text(page, path);
    html_raw(page, "</code></h3>\n<p>");
    html_text(page, json_string_value(json_object_get(op, "summary")));
    html_raw(page, "</p>\n");
    const char *description = json_string_value(json_object_get(op, "description"));
    if (description) {
        html_raw(page, "<p>");
        html_text(page, description);
        html_raw(page, "</p>\n");
    }
    const char *scope = json_string_value(json_object_get(op, "x-scope"));
    html_raw(page, "<p>Scope: ");
    if (scope) {
        html_raw(page, "<code>");
        html_text(page, scope);
        html_raw(page, "</code> (with api.keys_file)");
    } else {
        html_raw(page, "none: open to all");
    }
    html_raw(page, "</p>\n");
    parameters(page, doc, shared_parameters);
    parameters(page, doc, json_object_get(op, "parameters"));
    const json_t *body = resolve(doc, json_object_get(op, "requestBody"));
    if (body) {
        html_raw(page, "<h4>Request body</h4>\n<p>");
        content(page, json_object_get(body, "content"));
        html_raw(page, "</p>\n");
    }
    const json_t *responses = json_object_get(op, "responses");
    html_raw(page, "<h4>Answers</h4>\n<table><tr><th>status</th><th>description</th>"
                   "<th>content</th></tr>\n");
    const char *status;
    const json_t *answer;
    json_object_foreach((json_t *)responses, status, answer)
    {
        answer = resolve(doc, answer);
        html_raw(page, "<tr><td>");
        html_text(page, status);
        html_raw(page, "</td><td>");
        html_text(page, json_string_value(json_object_get(answer, "description")));
        html_raw(page, "</td><td>");
        content(page, json_object_get(answer, "content"));
        html_raw(page, "</td></tr>\n");
    }
    html_raw(page, "</table>\n");
}

char *api_docs_page(size_t *len)
{
    json_error_t error;
    json_t *doc = json_loadb(api_openapi_json, api_openapi_json_len, 0, &error);
    if (!doc)
        return NULL;
    html page;
    html_init(&page);
    const json_t *info = json_object_get(doc, "info");
    html_raw(&page, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<title>");
    html_text(&page, json_string_value(json_object_get(info, "title")));
    html_raw(&page, " API</title></head>\n<body>\n<h1>");
    html_text(&page, json_string_value(json_object_get(info, "title")));
    html_raw(&page, " ");
    html_text(&page, json_string_value(json_object_get(info, "version")));
    html_raw(&page, "</h1>\n<p>");
    html_text(&page, json_string_value(json_object_get(info, "description")));
    html_raw(&page, "</p>\n<p>The machine-readable document: <a href=\"/openapi.json\">"
                    "/openapi.json</a> (OpenAPI 3.1).</p>\n<h2>Routes</h2>\n<ul>\n");
    const json_t *paths = json_object_get(doc, "paths");
    const char *path;
    const json_t *item;
    json_object_foreach((json_t *)paths, path, item)
    {
        for (int m = 0; methods[m]; m++) {
            if (!json_object_get(item, methods[m]))
                continue;
            html_raw(&page, "<li><a href=\"#");
            html_url_part(&page, methods[m]);
            html_url_part(&page, path);
            html_raw(&page, "\"><code>");
            html_text(&page, path);
            html_raw(&page, "</code></a> ");
            html_text(&page, methods[m]);
            html_raw(&page, "</li>\n");
        }
    }
    html_raw(&page, "</ul>\n");
    json_object_foreach((json_t *)paths, path, item)
    {
        for (int m = 0; methods[m]; m++) {
            const json_t *op = json_object_get(item, methods[m]);
            if (op)
                operation(&page, doc, path, methods[m], op, json_object_get(item, "parameters"));
        }
    }
    html_raw(&page, "</body></html>\n");
    json_decref(doc);
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
