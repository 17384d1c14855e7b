/* http_post_form against a one-shot HTTP server on loopback (a thread of this
 * test): the request line, the content type and the encoded body the server
 * receives, the status and body the client gets back, and error texts that
 * never carry a field value. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "testlib.h"

typedef struct server {
    int listener;
    int port;
    char request[8192]; /* what the client sent, headers and body */
    const char *reply;  /* whole HTTP response */
} server;

static void *serve_once(void *arg)
{
    server *srv = arg;
    int conn = accept(srv->listener, NULL, NULL);
    if (conn < 0)
        return NULL;
    size_t used = 0;
    for (;;) {
        ssize_t got = read(conn, srv->request + used, sizeof srv->request - 1 - used);
        if (got <= 0)
            break;
        used += (size_t)got;
        srv->request[used] = '\0';
        char *end = strstr(srv->request, "\r\n\r\n");
        const char *length = strstr(srv->request, "Content-Length: ");
        if (end && length && used >= (size_t)(end + 4 - srv->request) + (size_t)atol(length + 16))
            break;
    }
    if (write(conn, srv->reply, strlen(srv->reply)) < 0)
        perror("write");
    close(conn);
    return NULL;
}

static int server_start(server *srv, pthread_t *thread)
{
    srv->listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (srv->listener < 0 || bind(srv->listener, (struct sockaddr *)&addr, sizeof addr) < 0 ||
        listen(srv->listener, 1) < 0)
        return -1;
    socklen_t len = sizeof addr;
    getsockname(srv->listener, (struct sockaddr *)&addr, &len);
    srv->port = ntohs(addr.sin_port);
    return pthread_create(thread, NULL, serve_once, srv);
}

static void test_post_form(void)
{
    server srv = {.reply = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                           "Content-Length: 44\r\nConnection: close\r\n\r\n"
                           "{\"id\":4711,\"web_url\":\"http://x/p/4711\",\"a\":1}"};
    pthread_t thread;
    CHECK(server_start(&srv, &thread) == 0);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v4/projects/7/trigger/pipeline", srv.port);
    http_request req = {.url = url, .timeout_s = 5};
    http_form_field fields[] = {
        {"token", "s3cr&t=1"}, {"ref", "main"}, {"variables[VM_NAME]", "spare-upg 42-1"}};
    http_response resp;
    vf_error err;
    vf_error_init(&err);
    int rc = http_post_form(&req, fields, 3, &resp, &err);
    pthread_join(thread, NULL);
    close(srv.listener);
    CHECKF(rc == 0, "%s", err.text);
    CHECK(resp.status == 201);
    CHECK_CONTAINS(resp.body, "\"web_url\"");
    CHECK(strncmp(srv.request, "POST /api/v4/projects/7/trigger/pipeline HTTP/1.1\r\n", 51) == 0);
    CHECK_CONTAINS(srv.request, "Content-Type: application/x-www-form-urlencoded");
    CHECK_CONTAINS(srv.request, "\r\n\r\ntoken=s3cr%26t%3D1&ref=main&"
                                "variables%5BVM_NAME%5D=spare-upg%2042-1");
    http_response_close(&resp);
}

static void test_refused_names_no_value(void)
{
    /* A port nobody listens on: bind one, learn it, close it. */
    server srv = {0};
    pthread_t thread;
    CHECK(server_start(&srv, &thread) == 0);
    int port = srv.port;
    shutdown(srv.listener, SHUT_RDWR);
    close(srv.listener);
    pthread_join(thread, NULL);
    char url[128];
    snprintf(url, sizeof url, "http://user:pw@127.0.0.1:%d/trigger?private_token=abc", port);
    http_request req = {.url = url, .timeout_s = 2};
    http_form_field fields[] = {{"token", "topsecret-token"}};
    http_response resp;
    vf_error err;
    vf_error_init(&err);
    CHECK(http_post_form(&req, fields, 1, &resp, &err) == -1);
    CHECK(err.code == VF_EUNAVAILABLE);
    CHECK_CONTAINS(err.text, "POST http://127.0.0.1:");
    CHECK(strstr(err.text, "topsecret") == NULL);
    CHECK(strstr(err.text, "pw@") == NULL);
    CHECK(strstr(err.text, "abc") == NULL);
}

int main(void)
{
    test_post_form();
    test_refused_names_no_value();
    return test_summary();
}
