/* metrics: the exposition text a Prometheus server parses. Label values and
 * help texts are escaped (a receiver name with a quote must not end the
 * label early), histogram buckets are cumulative and end with +Inf, _count
 * equals the +Inf bucket, and increments from several threads all count. A
 * cleared family renders no stale series, and takes new ones.
 * The endpoints are asked over real HTTP on loopback. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "metrics.h"
#include "metrics_http.h"
#include "process_metrics.h"
#include "testlib.h"

static char *render(metrics *m)
{
    char *text = NULL;
    size_t len = 0;
    CHECK(metrics_render(m, &text, &len) == 0);
    CHECK(text && strlen(text) == len);
    return text;
}

static void test_counters_and_escaping(void)
{
    vf_error err;
    vf_error_init(&err);
    metrics *m = metrics_new();
    const char *labels[] = {"receiver", "outcome"};
    metrics_family *f = metrics_family_add(m, METRICS_COUNTER, "virtflow_test_total",
                                           "Help with \\ and\nnewline", 2, labels, NULL, 0, &err);
    CHECKF(f != NULL, "%s", err.text);
    const char *hostile[] = {"a\"b\\c\nd", "ok"};
    metrics_add(metrics_series_get(f, hostile), 2);
    metrics_add(metrics_series_get(f, hostile), 3); /* the same series again */
    const char *plain[] = {"upgradectrl", "failed"};
    metrics_add(metrics_series_get(f, plain), 1);
    metrics_family *g = metrics_family_add(m, METRICS_GAUGE, "virtflow_test_gauge", "A gauge", 0,
                                           NULL, NULL, 0, &err);
    metrics_set(metrics_series_only(g), 2.5);
    char *text = render(m);
    CHECK_CONTAINS(text, "# HELP virtflow_test_total Help with \\\\ and\\nnewline\n"
                         "# TYPE virtflow_test_total counter\n");
    CHECK_CONTAINS(text, "virtflow_test_total{receiver=\"a\\\"b\\\\c\\nd\",outcome=\"ok\"} 5\n");
    CHECK_CONTAINS(text, "virtflow_test_total{receiver=\"upgradectrl\",outcome=\"failed\"} 1\n");
    CHECK_CONTAINS(text, "# TYPE virtflow_test_gauge gauge\nvirtflow_test_gauge 2.5\n");
    free(text);

    /* Invalid names never reach the output. */
    const char *bad_label[] = {"le:x"};
    CHECK(metrics_family_add(m, METRICS_COUNTER, "9bad", "x", 0, NULL, NULL, 0, &err) == NULL);
    CHECK(metrics_family_add(m, METRICS_COUNTER, "ok_name", "x", 1, bad_label, NULL, 0, &err) ==
          NULL);
    metrics_free(m);
}

static void test_family_clear(void)
{
    vf_error err;
    vf_error_init(&err);
    metrics *m = metrics_new();
    const char *labels[] = {"shape"};
    metrics_family *f = metrics_family_add(m, METRICS_GAUGE, "virtflow_test_shapes", "Shapes", 1,
                                           labels, NULL, 0, &err);
    const char *old[] = {"recent:2c-4g"}, *new[] = {"recent:4c-8g"};
    metrics_set(metrics_series_get(f, old), 7);
    metrics_family_clear(f);
    metrics_set(metrics_series_get(f, new), 3);
    char *text = render(m);
    CHECK(strstr(text, "recent:2c-4g") == NULL);
    CHECK_CONTAINS(text, "virtflow_test_shapes{shape=\"recent:4c-8g\"} 3\n");
    free(text);
    metrics_family_clear(f);
    metrics_family_clear(f); /* empty already */
    metrics_family_clear(NULL);
    text = render(m);
    CHECK(strstr(text, "recent:") == NULL);
    free(text);
    metrics_free(m);
}

/* A counter whose total is kept elsewhere (process_cpu_seconds_total, read
 * from the kernel) is set, fractions kept, and rendered as a counter; and
 * process_metrics reads /proc/self into the standard names. */
static void test_counter_set_and_process(void)
{
    vf_error err;
    vf_error_init(&err);
    metrics *m = metrics_new();
    metrics_family *f = metrics_family_add(m, METRICS_COUNTER, "virtflow_test_seconds_total",
                                           "Seconds", 0, NULL, NULL, 0, &err);
    metrics_set(metrics_series_only(f), 1.25);
    metrics_set(metrics_series_only(f), 2.75);
    process_metrics pm;
    CHECKF(process_metrics_define(m, &pm, &err) == 0, "%s", err.text);
    process_metrics_collect(&pm);
    char *text = render(m);
    CHECK_CONTAINS(text, "# TYPE virtflow_test_seconds_total counter\n"
                         "virtflow_test_seconds_total 2.75\n");
    CHECK_CONTAINS(text, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total ");
    CHECK_CONTAINS(text, "virtflow_build_info{version=\"");
    CHECK(metrics_value(pm.open_fds) >= 3);
    CHECK(metrics_value(pm.resident) > 0);
    CHECK(metrics_value(pm.start_time) > 1.7e9);
    free(text);
    metrics_free(m);
}

static void test_histogram_cumulative(void)
{
    vf_error err;
    vf_error_init(&err);
    metrics *m = metrics_new();
    const double bounds[] = {0.001, 0.01, 0.1};
    const char *labels[] = {"kind"};
    metrics_family *h = metrics_family_add(m, METRICS_HISTOGRAM, "virtflow_test_seconds",
                                           "Durations", 1, labels, bounds, 3, &err);
    CHECKF(h != NULL, "%s", err.text);
    const char *kind[] = {"schedule"};
    metrics_series *s = metrics_series_get(h, kind);
    metrics_observe(s, 0.0005); /* first bucket */
    metrics_observe(s, 0.001);  /* le is inclusive: still the first */
    metrics_observe(s, 0.05);   /* third */
    metrics_observe(s, 7);      /* only +Inf */
    char *text = render(m);
    CHECK_CONTAINS(text, "# TYPE virtflow_test_seconds histogram\n"
                         "virtflow_test_seconds_bucket{kind=\"schedule\",le=\"0.001\"} 2\n"
                         "virtflow_test_seconds_bucket{kind=\"schedule\",le=\"0.01\"} 2\n"
                         "virtflow_test_seconds_bucket{kind=\"schedule\",le=\"0.1\"} 3\n"
                         "virtflow_test_seconds_bucket{kind=\"schedule\",le=\"+Inf\"} 4\n"
                         "virtflow_test_seconds_sum{kind=\"schedule\"} 7.0515");
    CHECK_CONTAINS(text, "virtflow_test_seconds_count{kind=\"schedule\"} 4\n");
    free(text);

    const double unordered[] = {1, 1};
    CHECK(metrics_family_add(m, METRICS_HISTOGRAM, "virtflow_bad", "x", 0, NULL, unordered, 2,
                             &err) == NULL);
    metrics_free(m);
}

#define THREADS 4
#define PER_THREAD 100000

static void *hammer(void *arg)
{
    metrics_family *f = arg;
    const char *labels[] = {"x"};
    metrics_series *s = metrics_series_get(f, labels);
    for (int i = 0; i < PER_THREAD; i++)
        metrics_add(s, 1);
    return NULL;
}

static void test_threads_exact(void)
{
    vf_error err;
    vf_error_init(&err);
    metrics *m = metrics_new();
    const char *labels[] = {"k"};
    metrics_family *f = metrics_family_add(m, METRICS_COUNTER, "virtflow_hammer_total", "x", 1,
                                           labels, NULL, 0, &err);
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, hammer, f);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    const char *x[] = {"x"};
    CHECK(metrics_value(metrics_series_get(f, x)) == (double)THREADS * PER_THREAD);
    metrics_free(m);
}

static bool never_ready(void *ctx, char *why, size_t size)
{
    (void)ctx;
    snprintf(why, size, "broker not connected");
    return false;
}

static void collect(metrics *m, void *ctx)
{
    (void)m;
    metrics_set(ctx, 42);
}

static void test_endpoints(void)
{
    vf_error err;
    vf_error_init(&err);
    metrics *m = metrics_new();
    metrics_family *g = metrics_family_add(m, METRICS_GAUGE, "virtflow_scraped",
                                           "Set at scrape time", 0, NULL, NULL, 0, &err);
    metrics_set_collect(m, collect, metrics_series_only(g));
    metrics_http *srv = metrics_http_start("127.0.0.1:0", m, never_ready, NULL, &err);
    CHECKF(srv != NULL, "%s", err.text);
    if (!srv) {
        metrics_free(m);
        return;
    }
    static const struct {
        const char *path;
        int status;
        const char *body;
    } cases[] = {{"/metrics", 200, "virtflow_scraped 42\n"},
                 {"/healthz", 200, "ok\n"},
                 {"/readyz", 503, "not ready: broker not connected\n"},
                 {"/nothing", 404, "not found"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char url[128];
        snprintf(url, sizeof url, "http://127.0.0.1:%d%s", metrics_http_port(srv), cases[i].path);
        http_request req = {.url = url};
        http_response resp = {0};
        CHECKF(http_get(&req, &resp, &err) == 0, "%s", err.text);
        CHECKF(resp.status == cases[i].status, "%s: %ld", cases[i].path, (long)resp.status);
        CHECK_CONTAINS(resp.body ? resp.body : "", cases[i].body);
        http_response_close(&resp);
    }
    /* Another method on a known path: 405 naming the methods it takes
     * (httpd_route.h); HEAD is GET's. */
    char answer[2048];
    test_http_exchange(metrics_http_port(srv),
                       "POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
                       "Connection: close\r\n\r\n",
                       answer, sizeof answer);
    CHECKF(strncmp(answer, "HTTP/1.1 405 ", 13) == 0 &&
               strstr(answer, "\r\nAllow: GET, HEAD\r\n") && strstr(answer, "GET only\n"),
           "POST /metrics: %s", answer);
    test_http_exchange(metrics_http_port(srv),
                       "HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                       answer, sizeof answer);
    CHECKF(strncmp(answer, "HTTP/1.1 200 ", 13) == 0 && !strstr(answer, "\r\n\r\nok"),
           "HEAD /healthz: %s", answer);
    metrics_http_stop(srv);
    metrics_free(m);
}

int main(void)
{
    vf_error err;
    vf_error_init(&err);
    if (http_global_init(&err) < 0)
        return 1;
    test_counters_and_escaping();
    test_histogram_cumulative();
    test_counter_set_and_process();
    test_threads_exact();
    test_endpoints();
    test_family_clear();
    return test_summary();
}
