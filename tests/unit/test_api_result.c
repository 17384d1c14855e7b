/* virtflow-api's answers without a server: the prototype's three shapes of
 * GET /result built from task rows (api_result_json), and the RFC 9457
 * problem every error takes (problem_reply). */
#include "api_internal.h"
#include "problem.h"
#include "json_util.h"
#include "testlib.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static char *dup_or_null(const char *text)
{
    return text ? strdup(text) : NULL;
}

/* A schedule task row as the store hands it out (owned strings). */
static store_task row(const char *id, const char *status, int attempts, const char *reason,
                      const char *error, const char *node, int64_t vmid, const char *result)
{
    store_task t = {.id = dup_or_null(id),
                    .kind = dup_or_null("schedule"),
                    .status = dup_or_null(status),
                    .reason = dup_or_null(reason),
                    .attempts = attempts,
                    .result = dup_or_null(result),
                    .error = dup_or_null(error),
                    .node = dup_or_null(node),
                    .vmid = vmid};
    return t;
}

/* The answer for `task`, serialised with sorted keys, compared whole. */
static void check_shape(store_task task, const char *want)
{
    json_t *got = api_result_json(&task);
    char *text = got ? json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    CHECKF(text && strcmp(text, want) == 0, "\n got  %s\n want %s", text ? text : "(null)", want);
    free(text);
    json_decref(got);
    store_task_clear(&task);
}

#define PLACED_RESULT                                                                              \
    "{\"status\":\"completed\",\"node\":{\"name\":\"bm-001\",\"ip\":\"10.0.0.1\","                 \
    "\"pool\":\"default\"},\"vmid\":120,\"score\":87.5,\"attempts\":1}"

static void test_shapes(void)
{
    check_shape(
        row("t-1", "queued", 0, NULL, NULL, NULL, -1, NULL),
        "{\"attempts\":0,\"state\":\"queued\",\"status\":\"processing\",\"task_id\":\"t-1\"}");
    check_shape(
        row("t-2", "retrying", 2, NULL, "0/3 nodes are available", NULL, -1, NULL),
        "{\"attempts\":2,\"state\":\"retrying\",\"status\":\"processing\",\"task_id\":\"t-2\"}");
    check_shape(row("t-3", "completed", 1, NULL, NULL, "bm-001", 120, PLACED_RESULT),
                "{\"attempts\":1,\"result\":{\"ip\":\"10.0.0.1\",\"name\":\"bm-001\",\"pool\":"
                "\"default\",\"vmid\":120},\"score\":87.5,\"status\":\"completed\",\"task_id\":"
                "\"t-3\"}");
    /* The prototype's members come first, in its order. */
    store_task placed = row("t-3", "completed", 1, NULL, NULL, "bm-001", 120, PLACED_RESULT);
    json_t *got = api_result_json(&placed);
    char *text = json_util_dump(got);
    static const char prefix[] =
        "{\"status\":\"completed\",\"result\":{\"name\":\"bm-001\",\"ip\":\"10.0.0.1\"";
    CHECKF(text && strncmp(text, prefix, sizeof prefix - 1) == 0, "%s", text ? text : "(null)");
    free(text);
    json_decref(got);
    store_task_clear(&placed);
    /* A row without its result text still names the host. */
    check_shape(row("t-4", "completed", 0, NULL, NULL, "bm-002", -1, NULL),
                "{\"attempts\":0,\"result\":{\"ip\":null,\"name\":\"bm-002\"},\"status\":"
                "\"completed\",\"task_id\":\"t-4\"}");
    check_shape(row("t-5", "failed", 5, "unschedulable",
                    "0/2 nodes are available: 2 insufficient cpu", NULL, -1, NULL),
                "{\"attempts\":5,\"error\":\"0/2 nodes are available: 2 insufficient cpu\","
                "\"reason\":\"unschedulable\",\"status\":\"failed\",\"task_id\":\"t-5\"}");
}

static void test_problem(void)
{
    httpd_response resp = {.status = 200};
    problem_reply(&resp, 503, "the broker did not take the request");
    CHECK(resp.status == 503);
    CHECK(strcmp(resp.content_type, "application/problem+json") == 0);
    CHECK(strcmp(resp.retry_after, "5") == 0);
    CHECKF(resp.body && strcmp(resp.body, "{\"type\":\"about:blank\",\"title\":\"Service "
                                          "Unavailable\",\"status\":503,\"detail\":\"the broker "
                                          "did not take the request\"}") == 0,
           "%s", resp.body ? resp.body : "(null)");
    free(resp.body);

    httpd_response plain = {.status = 200};
    problem_reply(&plain, 409, NULL);
    CHECK(plain.status == 409 && plain.retry_after[0] == '\0');
    CHECKF(plain.body && strcmp(plain.body, "{\"type\":\"about:blank\",\"title\":\"Conflict\","
                                            "\"status\":409}") == 0,
           "%s", plain.body ? plain.body : "(null)");
    free(plain.body);
}

int main(void)
{
    test_shapes();
    test_problem();
    return test_summary();
}
