/* api_docs: GET /docs, schema/openapi.json rendered on the server as a page
 * to read: no scripts, the console's Content-Security-Policy. */
#ifndef VF_API_DOCS_H
#define VF_API_DOCS_H

#include <stddef.h>

#include "httpd.h"

/* The page (owned, *len bytes without the NUL), or NULL when out of memory. */
char *api_docs_page(size_t *len) __attribute__((warn_unused_result));

/* GET /docs: 200 text/html with the security policy set. */
void api_docs(const httpd_request *req, httpd_response *resp);

#endif
