#include "httpd_route.h"

#include <stdio.h>
#include <string.h>

#include "strbuf.h"

static const httpd_route *row_at(const void *rows, size_t row_size, size_t i)
{
    return (const httpd_route *)((const char *)rows + i * row_size);
}

/* Whether `path` is `template`; its {...} segment (not empty, no '/') into
 * param. */
static bool path_matches(const char *template, const char *path, char param[HTTPD_ROUTE_PARAM_MAX])
{
    const char *open = strchr(template, '{');
    param[0] = '\0';
    if (!open)
        return strcmp(template, path) == 0;
    const char *suffix = strchr(open, '}') + 1;
    size_t prefix = (size_t)(open - template), suffix_len = strlen(suffix), len = strlen(path);
    if (len <= prefix + suffix_len || strncmp(path, template, prefix) != 0 ||
        strcmp(path + len - suffix_len, suffix) != 0)
        return false;
    size_t n = len - prefix - suffix_len;
    if (n >= HTTPD_ROUTE_PARAM_MAX || memchr(path + prefix, '/', n))
        return false;
    memcpy(param, path + prefix, n);
    param[n] = '\0';
    return true;
}

static bool method_matches(const httpd_route *r, const char *method)
{
    return strcmp(r->method, method) == 0 ||
           (!r->stream && strcmp(r->method, "GET") == 0 && strcmp(method, "HEAD") == 0);
}

/* The path `template` is known but not with this method: every method its
 * rows take, in Allow. */
static void allow_of(const void *rows, size_t count, size_t row_size, const char *template,
                     httpd_response *resp, httpd_route_match *match)
{
    strbuf allow = {0};
    match->streams = true;
    for (size_t i = 0; i < count; i++) {
        const httpd_route *r = row_at(rows, row_size, i);
        if (strcmp(r->path, template) != 0)
            continue;
        strbuf_printf(&allow, "%s%s%s", allow.len ? ", " : "", r->method,
                      strcmp(r->method, "GET") == 0 && !r->stream ? ", HEAD" : "");
        match->streams = match->streams && r->stream;
    }
    snprintf(resp->allow, sizeof resp->allow, "%s", allow.data ? allow.data : "");
    strbuf_close(&allow);
}

const void *httpd_route_find(const void *rows, size_t count, size_t row_size,
                             const httpd_request *req, httpd_response *resp,
                             httpd_route_match *match)
{
    match->path = NULL;
    match->streams = false;
    for (size_t i = 0; i < count; i++) {
        const httpd_route *r = row_at(rows, row_size, i);
        if (!path_matches(r->path, req->path, match->param))
            continue;
        if (method_matches(r, req->method)) {
            match->path = r->path;
            return r;
        }
        if (!match->path)
            match->path = r->path;
    }
    match->param[0] = '\0';
    if (match->path)
        allow_of(rows, count, row_size, match->path, resp, match);
    return NULL;
}
