#include "grow.h"
#include "http.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_result = CURLE_FAILED_INIT;

static void global_init_once(void)
{
    global_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int http_global_init(vf_error *err)
{
    pthread_once(&global_once, global_init_once);
    if (global_result != CURLE_OK) {
        vf_error_set(err, VF_EINTERNAL, "libcurl initialisation failed: %s",
                     curl_easy_strerror(global_result));
        return -1;
    }
    return 0;
}

void http_redact_url(const char *url, char *buf, size_t size)
{
    if (!size)
        return;
    if (!url) {
        snprintf(buf, size, "(no url)");
        return;
    }
    const char *scheme_end = strstr(url, "://");
    const char *authority = scheme_end ? scheme_end + 3 : url;
    size_t authority_len = strcspn(authority, "/?#");
    const char *at = memchr(authority, '@', authority_len);
    size_t scheme_len = (size_t)(authority - url);
    const char *host = at ? at + 1 : authority;
    size_t rest_len = strcspn(host, "?#");
    snprintf(buf, size, "%.*s%.*s%s", (int)scheme_len, url, (int)rest_len, host,
             host[rest_len] ? "?..." : "");
}

typedef struct body_buffer {
    char *data;
    size_t len;
    size_t cap;
    size_t max;
    bool too_large;
} body_buffer;

static size_t on_body(char *chunk, size_t size, size_t count, void *userdata)
{
    body_buffer *body = userdata;
    size_t n = size * count;
    if (n > body->max - body->len) {
        body->too_large = true;
        return 0; /* makes curl fail with CURLE_WRITE_ERROR */
    }
    if (grow_array((void **)&body->data, &body->cap, body->len + n + 1, 1) < 0)
        return 0;
    memcpy(body->data + body->len, chunk, n);
    body->len += n;
    body->data[body->len] = '\0';
    return n;
}

static bool has_control_chars(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 && *s != '\t')
            return true;
    return false;
}

/* The body of a form POST: name=value pairs joined by &, each encoded.
 * Owned (curl_free is not needed: built with malloc), NULL when out of memory. */
static char *encode_form(CURL *curl, const http_form_field *fields, size_t n_fields)
{
    size_t len = 0, cap = 256;
    char *body = malloc(cap);
    if (!body)
        return NULL;
    body[0] = '\0';
    for (size_t i = 0; i < n_fields; i++) {
        char *name = curl_easy_escape(curl, fields[i].name, 0);
        char *value = curl_easy_escape(curl, fields[i].value ? fields[i].value : "", 0);
        size_t need = (name ? strlen(name) : 0) + (value ? strlen(value) : 0) + 3;
        if (name && value && grow_array((void **)&body, &cap, len + need, 1) < 0) {
            curl_free(name);
            curl_free(value);
            free(body);
            return NULL;
        }
        if (!name || !value) {
            curl_free(name);
            curl_free(value);
            free(body);
            return NULL;
        }
        len += (size_t)snprintf(body + len, cap - len, "%s%s=%s", i ? "&" : "", name, value);
        curl_free(name);
        curl_free(value);
    }
    return body;
}

static int perform(const char *method, const http_request *request, const http_form_field *fields,
                   size_t n_fields, const char *raw, http_response *response, vf_error *err);

int http_get(const http_request *request, http_response *response, vf_error *err)
{
    return perform("GET", request, NULL, 0, NULL, response, err);
}

int http_post_form(const http_request *request, const http_form_field *fields, size_t n_fields,
                   http_response *response, vf_error *err)
{
    return perform("POST", request, fields, n_fields, NULL, response, err);
}

int http_send(const http_request *request, const char *method, const char *body,
              http_response *response, vf_error *err)
{
    return perform(method, request, NULL, 0, body ? body : "", response, err);
}

/* The request's headers as curl's list into *headers (the caller's to
 * free). A CR or LF in a header (say from a token file) would smuggle in
 * another header: refused rather than sent, its value not shown. 0, or -1
 * with err. */
static int header_list(const http_request *request, const char *method, const char *shown,
                       struct curl_slist **headers, vf_error *err)
{
    for (size_t i = 0; i < request->n_headers; i++) {
        if (has_control_chars(request->headers[i])) {
            vf_error_set(err, VF_EINVAL, "%s %s: header %zu contains control characters", method,
                         shown, i + 1);
            return -1;
        }
        struct curl_slist *appended = curl_slist_append(*headers, request->headers[i]);
        if (!appended) {
            vf_error_set(err, VF_ENOMEM, "%s %s: out of memory", method, shown);
            return -1;
        }
        *headers = appended;
    }
    return 0;
}

/* The method and its body: a form POST (its encoded body into *form, the
 * caller's to free), any method with a raw body, or a GET. 0, or -1 with
 * err. */
static int set_method(CURL *curl, const char *method, const http_form_field *fields,
                      size_t n_fields, const char *raw, char **form, const char *shown,
                      vf_error *err)
{
    if (strcmp(method, "POST") == 0 && !raw) {
        *form = encode_form(curl, fields, n_fields);
        if (!*form) {
            vf_error_set(err, VF_ENOMEM, "%s %s: out of memory", method, shown);
            return -1;
        }
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, *form);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(*form));
    } else if (raw) {
        /* Any other method, its body sent as given (the caller's headers
         * say its type); an empty body is sent as Content-Length: 0. */
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, raw);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(raw));
    } else {
        curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    }
    return 0;
}

/* What every request is sent with: no signals, no redirects, http and
 * https only, the timeout for connecting and for the whole exchange, TLS
 * checks, the headers, the body into `body`, curl's words into errbuf. */
static void set_options(CURL *curl, const http_request *request, long timeout_ms,
                        struct curl_slist *headers, body_buffer *body, char errbuf[CURL_ERROR_SIZE])
{
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM in threaded programs */
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85.0 */
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, request->tls_skip_verify ? 0L : 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, request->tls_skip_verify ? 0L : 2L);
    if (request->ca_file)
        curl_easy_setopt(curl, CURLOPT_CAINFO, request->ca_file);
    if (headers)
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "virtflow");
}

static int perform(const char *method, const http_request *request, const http_form_field *fields,
                   size_t n_fields, const char *raw, http_response *response, vf_error *err)
{
    char *form = NULL;
    int rc = -1;
    CURL *curl = NULL;
    struct curl_slist *headers = NULL;
    body_buffer body = {0};
    char errbuf[CURL_ERROR_SIZE] = "";
    char shown[256];

    memset(response, 0, sizeof *response);
    http_redact_url(request->url, shown, sizeof shown);
    if (!request->url ||
        (strncmp(request->url, "http://", 7) != 0 && strncmp(request->url, "https://", 8) != 0)) {
        vf_error_set(err, VF_EINVAL, "%s %s: only http:// and https:// URLs are supported", method,
                     shown);
        return -1;
    }
    if (http_global_init(err) < 0)
        return -1;

    body.max = request->max_body ? request->max_body : HTTP_DEFAULT_MAX_BODY;
    double timeout_s = request->timeout_s > 0 ? request->timeout_s : HTTP_DEFAULT_TIMEOUT_S;
    long timeout_ms = (long)(timeout_s * 1000.0);
    if (timeout_ms < 1)
        timeout_ms = 1;

    curl = curl_easy_init();
    if (!curl) {
        vf_error_set(err, VF_ENOMEM, "%s %s: cannot create a curl handle", method, shown);
        goto out;
    }
    if (header_list(request, method, shown, &headers, err) < 0)
        goto out;
    curl_easy_setopt(curl, CURLOPT_URL, request->url);
    if (set_method(curl, method, fields, n_fields, raw, &form, shown, err) < 0)
        goto out;
    set_options(curl, request, timeout_ms, headers, &body, errbuf);

    CURLcode result = curl_easy_perform(curl);
    if (result != CURLE_OK) {
        if (body.too_large)
            vf_error_set(err, VF_EUNAVAILABLE, "%s %s: response body exceeds %zu bytes", method,
                         shown, body.max);
        else if (result == CURLE_OPERATION_TIMEDOUT)
            vf_error_set(err, VF_EUNAVAILABLE, "%s %s: no answer within %g s", method, shown,
                         timeout_s);
        else
            vf_error_set(err, VF_EUNAVAILABLE, "%s %s: %s", method, shown,
                         errbuf[0] ? errbuf : curl_easy_strerror(result));
        goto out;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response->status);
    if (!body.data) { /* an empty body is still a string */
        body.data = calloc(1, 1);
        if (!body.data) {
            vf_error_set(err, VF_ENOMEM, "%s %s: out of memory", method, shown);
            goto out;
        }
    }
    response->body = body.data;
    response->body_len = body.len;
    body.data = NULL;
    rc = 0;
out:
    free(form);
    free(body.data);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return rc;
}

void http_response_close(http_response *response)
{
    if (!response)
        return;
    free(response->body);
    response->body = NULL;
    response->body_len = 0;
    response->status = 0;
}
