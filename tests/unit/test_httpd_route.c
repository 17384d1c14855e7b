/* httpd_route: the one route-table loop of the HTTP servers: which row takes
 * a request (exact paths, one {...} segment, HEAD on GET but for a stream),
 * and for a path known under other methods the Allow header (the 405), for
 * an unknown one nothing (the 404). */
#include <string.h>

#include "httpd_route.h"
#include "testlib.h"

/* A program's row: the route, then what the program needs. */
typedef struct row {
    httpd_route at;
    int id;
} row;

static const row rows[] = {
    {{"GET", "/healthz", false}, 1},
    {{"POST", "/tasks", false}, 2},
    {{"GET", "/tasks", false}, 3},
    {{"GET", "/tasks/{id}", false}, 4},
    {{"POST", "/tasks/{id}/release", false}, 5},
    {{"GET", "/events", true}, 6},
    {{"GET", "/tasks/{id}/events", true}, 7},
};

/* The id of the row that takes METHOD PATH (0: none), with the match and
 * the response as the loop left them. */
static int find(const char *method, const char *path, httpd_route_match *m, httpd_response *resp)
{
    httpd_request req = {.method = method, .path = path, .body = ""};
    *resp = (httpd_response){.status = 200};
    const row *r = HTTPD_ROUTE_FIND(rows, &req, resp, m);
    return r ? r->id : 0;
}

static void test_found(void)
{
    httpd_route_match m;
    httpd_response resp;
    CHECK(find("GET", "/healthz", &m, &resp) == 1 && strcmp(m.path, "/healthz") == 0);
    CHECK(find("HEAD", "/healthz", &m, &resp) == 1); /* GET answers HEAD */
    CHECK(find("POST", "/tasks", &m, &resp) == 2 && m.param[0] == '\0');
    CHECK(find("GET", "/tasks", &m, &resp) == 3);
    CHECK(find("GET", "/tasks/t-1", &m, &resp) == 4 && strcmp(m.path, "/tasks/{id}") == 0);
    CHECK_STR(m.param, "t-1");
    CHECK(find("POST", "/tasks/t 2/release", &m, &resp) == 5);
    CHECK_STR(m.param, "t 2");
    CHECK(find("GET", "/tasks/t-3/events", &m, &resp) == 7);
    CHECK_STR(m.param, "t-3");
    CHECK(resp.allow[0] == '\0' && resp.status == 200 && !resp.body); /* nothing answered */
}

static void test_not_allowed(void)
{
    httpd_route_match m;
    httpd_response resp;
    /* Every method of the path, HEAD beside GET. */
    CHECK(find("DELETE", "/tasks", &m, &resp) == 0 && m.path && strcmp(m.path, "/tasks") == 0);
    CHECK_STR(resp.allow, "POST, GET, HEAD");
    CHECK(!m.streams && resp.status == 200 && !resp.body); /* the program answers */
    CHECK(find("GET", "/tasks/t-1/release", &m, &resp) == 0);
    CHECK_STR(m.path, "/tasks/{id}/release");
    CHECK_STR(resp.allow, "POST");
    /* A stream has no HEAD: 405, Allow GET alone. */
    CHECK(find("HEAD", "/events", &m, &resp) == 0 && m.streams);
    CHECK_STR(resp.allow, "GET");
    CHECK(find("POST", "/tasks/t-1/events", &m, &resp) == 0 && m.streams);
    CHECK_STR(resp.allow, "GET");
}

static void test_not_found(void)
{
    httpd_route_match m;
    httpd_response resp;
    static const char *const paths[] = {
        "/nothing", "/tasks/", "/tasks/a/b", "/tasks//release", "/healthz/", "/Healthz", "",
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        CHECKF(find("GET", paths[i], &m, &resp) == 0 && !m.path, "GET '%s'", paths[i]);
        CHECKF(resp.allow[0] == '\0', "no Allow for '%s'", paths[i]);
    }
    /* A {...} segment past HTTPD_ROUTE_PARAM_MAX matches nothing. */
    char path[HTTPD_ROUTE_PARAM_MAX + 16] = "/tasks/";
    memset(path + 7, 'x', HTTPD_ROUTE_PARAM_MAX);
    path[7 + HTTPD_ROUTE_PARAM_MAX] = '\0';
    CHECK(find("GET", path, &m, &resp) == 0 && !m.path);
    path[7 + HTTPD_ROUTE_PARAM_MAX - 1] = '\0';
    CHECK(find("GET", path, &m, &resp) == 4 && strlen(m.param) == HTTPD_ROUTE_PARAM_MAX - 1);
}

int main(void)
{
    test_found();
    test_not_allowed();
    test_not_found();
    return test_summary();
}
