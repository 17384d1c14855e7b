/* httpd_route: the one route-table loop of every HTTP server here
 * (virtflow-api, the console of `virtflowctl serve`, the /metrics endpoints
 * of the worker and the relay), after redis's command table. A program lists
 * its routes as rows (method, path, then what it needs: a scope, a handler);
 * httpd_route_find says which row takes a request, or why none does: the
 * path is known with other methods (405, with the Allow header that the
 * path's rows add up to) or not at all (404). The program then checks the
 * row's scope, calls its handler and counts the request, and answers 404
 * and 405 in its own format (problem+json, an HTML page, plain text).
 *
 * A row of GET answers HEAD too (libmicrohttpd sends no body then), unless
 * it is a stream (Server-Sent Events: a HEAD would open one).
 *
 * A program's row begins with an httpd_route and goes on with its own
 * fields; the rows are handed over with their count and size, as bsearch's
 * are:
 *
 *   typedef struct route { httpd_route at; page_fn page; } route;
 *   static const route routes[] = {{{"GET", "/healthz", false}, healthz}, ...};
 *
 *   httpd_route_match m;
 *   const route *r = HTTPD_ROUTE_FIND(routes, req, resp, &m);
 *   if (r)            r->page(ctx, m.param, resp);
 *   else if (m.path)  reply 405 (resp->allow is set)
 *   else              reply 404
 */
#ifndef VF_HTTPD_ROUTE_H
#define VF_HTTPD_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "httpd.h"

/* The first field of a program's route row. */
typedef struct httpd_route {
    const char *method; /* "GET" (and so HEAD), "POST", ... */
    /* Exact, or with one {...} segment standing for one path element (not
     * empty, no '/'): "/v1/tasks/{task_id}/release". */
    const char *path;
    bool stream; /* a GET that is a stream: no HEAD */
} httpd_route;

/* The longest {...} segment taken; a longer one matches nothing (404). */
#define HTTPD_ROUTE_PARAM_MAX 1024

typedef struct httpd_route_match {
    /* The path template of the row found; or, with no row, that of a row
     * whose path matches under another method (the 405); NULL: no row has
     * this path (the 404). Borrowed from the table. */
    const char *path;
    char param[HTTPD_ROUTE_PARAM_MAX]; /* the {...} segment; "" for a path without */
    bool streams; /* with a 405: every method of the path is a stream's (no HEAD) */
} httpd_route_match;

/* The first of `count` rows (each `row_size` bytes, beginning with an
 * httpd_route) whose path and method take `req`, with `match` filled; or
 * NULL, with match->path set when the path is known under other methods:
 * then resp->allow holds them all ("GET, HEAD, POST"), and the program
 * answers 405. Nothing else of `resp` is touched. */
const void *httpd_route_find(const void *rows, size_t count, size_t row_size,
                             const httpd_request *req, httpd_response *resp,
                             httpd_route_match *match);

/* httpd_route_find over a whole array of rows. */
#define HTTPD_ROUTE_FIND(rows, req, resp, match)                                                   \
    httpd_route_find((rows), sizeof(rows) / sizeof((rows)[0]), sizeof((rows)[0]), (req), (resp),   \
                     (match))

#endif
