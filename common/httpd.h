/* httpd: a small HTTP/1.1 server for the programs' endpoints
 * (/metrics, /healthz, /readyz) and the operators' console, on top of
 * libmicrohttpd. We write routes and pages, never HTTP parsing.
 *
 * One internal thread accepts and answers every connection in turn, so a
 * handler runs on that thread only: it may keep thread-bound state (a store
 * connection) in its context without locks, but whatever it shares with the
 * program's other threads (counters, flags) must be atomic or locked. A
 * handler should answer in milliseconds; a slow one delays every client.
 *
 * Usage:
 *   static void handle(void *ctx, const httpd_request *req, httpd_response *resp)
 *   {
 *       if (strcmp(req->path, "/healthz") == 0)
 *           httpd_reply_text(resp, 200, "text/plain", "ok\n");
 *       else
 *           httpd_reply_text(resp, 404, "text/plain", "not found\n");
 *   }
 *   httpd *srv = httpd_start("127.0.0.1:9464", handle, ctx, &err);
 *   ...
 *   httpd_stop(srv);
 */
#ifndef VF_HTTPD_H
#define VF_HTTPD_H

#include <stdbool.h>
#include <stddef.h>

#include "vf_error.h"

/* Bodies of POST requests beyond this are refused with 413: the console's
 * forms are a few fields, nothing else posts. */
#define HTTPD_MAX_BODY (64 * 1024)

typedef struct httpd httpd;
typedef struct httpd_request httpd_request;

struct httpd_request {
    const char *method; /* "GET", "HEAD", "POST", ... */
    const char *path;   /* decoded, without the query string */
    const char *body;   /* POST body, NUL-terminated (empty for GET) */
    size_t body_len;
    void *conn_; /* private: the libmicrohttpd connection */
};

typedef struct httpd_response {
    int status;                /* 200 unless set */
    char content_type[96];     /* "text/plain; charset=utf-8" unless set */
    char location[512];        /* Location header for redirects, "" for none */
    char security_policy[256]; /* Content-Security-Policy header, "" for none */
    char authenticate[128];    /* WWW-Authenticate header (with a 401), "" for none */
    char *body;                /* malloc'd; the server frees it */
    size_t body_len;
} httpd_response;

typedef void (*httpd_handler)(void *ctx, const httpd_request *req, httpd_response *resp);

/* Listens on `listen` ("HOST:PORT", "[V6]:PORT"; port 0 picks a free one)
 * and answers every request through `handler`. NULL with `err` set when the
 * address is malformed or cannot be bound. */
httpd *httpd_start(const char *listen, httpd_handler handler, void *ctx, vf_error *err);

/* Stops accepting, finishes the request in progress, frees. NULL is fine. */
void httpd_stop(httpd *srv);

/* The port actually bound (the chosen one when `listen` said 0). */
int httpd_port(const httpd *srv);

/* True when `listen` names only a loopback address (127.0.0.0/8, ::1,
 * localhost): what a program listening without authentication must keep to. */
bool httpd_listen_is_loopback(const char *listen);

/* A query-string argument (?name=value, decoded), NULL when absent. */
const char *httpd_query(const httpd_request *req, const char *name);

/* A request header (case-insensitive name), NULL when absent. */
const char *httpd_header(const httpd_request *req, const char *name);

/* A field of an application/x-www-form-urlencoded POST body, decoded into
 * `out` (at most out_size - 1 bytes). false when absent or too long. */
bool httpd_form(const httpd_request *req, const char *name, char *out, size_t out_size);

/* Sets status, type and a copy of `text` as the body. */
void httpd_reply_text(httpd_response *resp, int status, const char *content_type, const char *text);

/* Takes ownership of a malloc'd body of `len` bytes. */
void httpd_reply_take(httpd_response *resp, int status, const char *content_type, char *body,
                      size_t len);

#endif
