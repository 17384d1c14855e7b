/* api_docs: GET /docs, schema/openapi.json rendered on the server as an API
 * reference (routes, parameters, fields with types and limits, examples, a
 * form per GET route) in the console's style: no scripts, the console's
 * Content-Security-Policy. */
#ifndef VF_API_DOCS_H
#define VF_API_DOCS_H

#include <stddef.h>

#include "httpd.h"

/* The page (owned, *len bytes without the NUL), or NULL when out of memory. */
char *api_docs_page(size_t *len) __attribute__((warn_unused_result));

/* GET /docs: 200 text/html with the security policy set. */
void api_docs(const httpd_request *req, httpd_response *resp);

/* GET /docs.css: the stylesheet the page (and the console) use. */
void api_docs_style(httpd_response *resp);

/* GET /docs/try?route=TEMPLATE&NAME=VALUE...: the form of a documented GET
 * route, as a 303 to the route with its {NAME} parts filled from the
 * values (percent-encoded) and its other documented query parameters that
 * have one; 400 for a route the document does not have as a GET, or a
 * path part without a value. */
void api_docs_try(const httpd_request *req, httpd_response *resp);

#endif
