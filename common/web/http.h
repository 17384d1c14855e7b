/* http: blocking HTTP GET and form POST through libcurl, for simple request/response calls
 * (inventory sources, readiness probes). Not for high-volume delivery: the
 * relay drives libcurl's multi interface itself.
 *
 * Safe defaults: TLS certificates are verified unless the request says
 * otherwise, redirects are never followed (a redirect is returned as its 3xx
 * status), only http:// and https:// are allowed, and the body is capped.
 *
 * Error texts name the URL with any user:password@ part and query string
 * removed, and never contain header values (they may carry API tokens). */
#ifndef VF_HTTP_H
#define VF_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "vf_error.h"

#define HTTP_DEFAULT_MAX_BODY ((size_t)16 * 1024 * 1024) /* bytes */
#define HTTP_DEFAULT_TIMEOUT_S 30.0

typedef struct http_request {
    const char *url;            /* http:// or https:// */
    const char *const *headers; /* "Name: value" lines, may hold secrets; never logged */
    size_t n_headers;
    double timeout_s;     /* whole request, seconds; <= 0 means HTTP_DEFAULT_TIMEOUT_S */
    const char *ca_file;  /* PEM trust anchors; NULL = system store */
    bool tls_skip_verify; /* false (zero-initialised) = verify peer and host name */
    size_t max_body;      /* bytes; 0 means HTTP_DEFAULT_MAX_BODY */
} http_request;

typedef struct http_response {
    long status;     /* HTTP status code, e.g. 200 */
    char *body;      /* owned, NUL-terminated (the body may contain NULs; see body_len) */
    size_t body_len; /* bytes */
} http_response;

/* Initialise libcurl once per process (idempotent and thread-safe; http_get
 * calls it too). Call early in main() before starting threads to be safe
 * with TLS libraries that are not. Returns 0, or -1 with err filled. */
int http_global_init(vf_error *err) __attribute__((warn_unused_result));

/* Perform a GET. On success returns 0 and fills *response (any HTTP status,
 * including 4xx/5xx, is success here: the caller judges the status); release
 * it with http_response_close. On failure (bad URL, connection refused,
 * timeout, TLS failure, body larger than the cap) returns -1 with err filled
 * (VF_EUNAVAILABLE, or VF_EINVAL for a malformed request) and *response empty. */
int http_get(const http_request *request, http_response *response, vf_error *err)
    __attribute__((warn_unused_result));

/* One field of an application/x-www-form-urlencoded body. Both strings are
 * borrowed and percent-encoded here; values may be secrets (a trigger token)
 * and never appear in an error text. */
typedef struct http_form_field {
    const char *name;
    const char *value;
} http_form_field;

/* Perform a POST with `fields` as an application/x-www-form-urlencoded body.
 * Same safe defaults, returns and errors as http_get. */
int http_post_form(const http_request *request, const http_form_field *fields, size_t n_fields,
                   http_response *response, vf_error *err) __attribute__((warn_unused_result));

/* Perform `method` (POST, PATCH, DELETE, ...) with `body` (NULL: empty) sent
 * as it is; put its Content-Type among the request's headers. Same safe
 * defaults, returns and errors as http_get. */
int http_send(const http_request *request, const char *method, const char *body,
              http_response *response, vf_error *err) __attribute__((warn_unused_result));

/* Free the body and reset. NULL and already-closed responses are fine. */
void http_response_close(http_response *response);

/* Copy `url` into buf (size bytes) without userinfo and query, for messages. */
void http_redact_url(const char *url, char *buf, size_t size);

#endif
