/* httpd: a real server on loopback, asked by libcurl (common/http.c) as any
 * client would: routes, query arguments, form fields, limits, addresses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "httpd.h"
#include "testlib.h"

static void handle(void *ctx, const httpd_request *req, httpd_response *resp)
{
    int *calls = ctx;
    (*calls)++;
    char text[512];
    if (strcmp(req->path, "/hello") == 0) {
        const char *who = httpd_query(req, "who");
        snprintf(text, sizeof text, "%s hello %s", req->method, who ? who : "(none)");
        httpd_reply_text(resp, 200, "text/plain; charset=utf-8", text);
    } else if (strcmp(req->path, "/form") == 0) {
        char token[64] = "", note[64] = "", missing[8] = "";
        bool has_token = httpd_form(req, "token", token, sizeof token);
        bool has_note = httpd_form(req, "note", note, sizeof note);
        bool has_missing = httpd_form(req, "missing", missing, sizeof missing);
        snprintf(text, sizeof text, "%d[%s] %d[%s] %d", has_token, token, has_note, note,
                 has_missing);
        httpd_reply_text(resp, 200, "text/plain", text);
    } else if (strcmp(req->path, "/go") == 0) {
        httpd_reply_text(resp, 303, "text/plain", "");
        snprintf(resp->location, sizeof resp->location, "/hello");
    } else {
        httpd_reply_text(resp, 404, "text/plain", "not found\n");
    }
}

static char *url_of(const httpd *srv, const char *path)
{
    static char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", httpd_port(srv), path);
    return url;
}

static void test_routes_and_arguments(void)
{
    int calls = 0;
    vf_error err;
    vf_error_init(&err);
    httpd *srv = httpd_start("127.0.0.1:0", handle, &calls, &err);
    CHECKF(srv != NULL, "%s", err.text);
    if (!srv)
        return;
    CHECK(httpd_port(srv) > 0);

    http_request get = {.url = url_of(srv, "/hello?who=a%20b%3Cc")};
    http_response resp = {0};
    CHECK(http_get(&get, &resp, &err) == 0);
    CHECK(resp.status == 200);
    CHECK_STR(resp.body, "GET hello a b<c");
    http_response_close(&resp);

    get.url = url_of(srv, "/nowhere");
    CHECK(http_get(&get, &resp, &err) == 0);
    CHECK(resp.status == 404);
    http_response_close(&resp);

    get.url = url_of(srv, "/go");
    CHECK(http_get(&get, &resp, &err) == 0);
    CHECK(resp.status == 303); /* redirects are the client's to follow (it does not) */
    http_response_close(&resp);

    http_request post = {.url = url_of(srv, "/form")};
    http_form_field fields[] = {{"note", "x y&z=1+2%"}, {"token", "s3cret"}};
    CHECK(http_post_form(&post, fields, 2, &resp, &err) == 0);
    CHECK_STR(resp.body, "1[s3cret] 1[x y&z=1+2%] 0");
    http_response_close(&resp);

    /* A body over the limit is refused before the handler sees it. */
    size_t big_len = HTTPD_MAX_BODY + 100;
    char *big = malloc(big_len + 1);
    memset(big, 'a', big_len);
    big[big_len] = '\0';
    http_form_field huge[] = {{"note", big}};
    int before = calls;
    CHECK(http_post_form(&post, huge, 1, &resp, &err) == 0);
    CHECK(resp.status == 413);
    CHECK(calls == before);
    http_response_close(&resp);
    free(big);

    httpd_stop(srv);
}

static void test_addresses(void)
{
    vf_error err;
    int calls = 0;
    const char *bad[] = {
        "", "9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:http", "1.2.3.4.5:80", "127.0.0.1:70000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vf_error_init(&err);
        httpd *srv = httpd_start(bad[i], handle, &calls, &err);
        CHECKF(srv == NULL && err.code == VF_ECONFIG, "'%s' accepted", bad[i]);
        httpd_stop(srv);
    }
    /* A port in use is an error, not a silent second listener. */
    vf_error_init(&err);
    httpd *first = httpd_start("127.0.0.1:0", handle, &calls, &err);
    CHECK(first != NULL);
    if (first) {
        char again[64];
        snprintf(again, sizeof again, "127.0.0.1:%d", httpd_port(first));
        vf_error_init(&err);
        httpd *second = httpd_start(again, handle, &calls, &err);
        CHECK(second == NULL && err.code == VF_EIO);
        httpd_stop(second);
        httpd_stop(first);
    }
    /* IPv6 loopback, when the machine has it. */
    vf_error_init(&err);
    httpd *v6 = httpd_start("[::1]:0", handle, &calls, &err);
    if (v6) {
        char url[128];
        snprintf(url, sizeof url, "http://[::1]:%d/hello", httpd_port(v6));
        http_request get = {.url = url};
        http_response resp = {0};
        CHECK(http_get(&get, &resp, &err) == 0 && resp.status == 200);
        http_response_close(&resp);
        httpd_stop(v6);
    } else {
        printf("note: no IPv6 loopback here (%s)\n", err.text);
    }

    CHECK(httpd_listen_is_loopback("127.0.0.1:8080"));
    CHECK(httpd_listen_is_loopback("127.1.2.3:8080"));
    CHECK(httpd_listen_is_loopback("[::1]:8080"));
    CHECK(httpd_listen_is_loopback("localhost:8080"));
    CHECK(!httpd_listen_is_loopback("0.0.0.0:8080"));
    CHECK(!httpd_listen_is_loopback("[::]:8080"));
    CHECK(!httpd_listen_is_loopback("10.0.0.1:8080"));
    CHECK(!httpd_listen_is_loopback("127.example.com:8080"));
    CHECK(!httpd_listen_is_loopback("8080"));
}

int main(void)
{
    test_routes_and_arguments();
    test_addresses();
    return test_summary();
}
