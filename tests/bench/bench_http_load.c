/* bench_http_load: an HTTP load generator light enough not to be what it
 * measures (bench_api.py's Python clients peak near 1,000 requests/s on a
 * shared core; this one, one thread on libcurl's multi interface, does
 * several times that). Prints one line of figures; asserts nothing.
 *
 *   bench_http_load URL [-X METHOD] [-d BODY] [-H HEADER]... [-c CONNECTIONS]
 *                   (-n REQUESTS | -r RATE -s SECONDS) [--spread-sources]
 *
 * Closed loop (-n): CONNECTIONS keep-alive connections, each sending its
 * next request when the last is answered, REQUESTS in all; a latency runs
 * from a request's start to its answer.
 *
 * Offered rate (-r): a request is due every 1/RATE s for SECONDS, whether
 * or not earlier ones are answered, sent on a free connection of at most
 * CONNECTIONS; a latency runs from when the request was due, so time spent
 * waiting for a free connection counts (no coordinated omission).
 *
 * --spread-sources: connection i from source address 127.0.0.(2 + i % 250)
 * (a loopback URL only): virtflow-api admits 16 connections per client
 * address (HTTPD_PER_ADDRESS_LIMIT).
 *
 * Output: "requests N ok N failed N seconds S rate R/s p50 X ms p99 X ms
 * max X ms", the rate counting answers of 200 only, and on failures one
 * more line with the first unexpected status (0: no answer). */
#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct slot {
    CURL *easy;
    bool busy;
    double due_s; /* when its request was due (offered) or started (closed) */
    char source[32];
} slot;

typedef struct run {
    const char *url, *method, *body;
    struct curl_slist *headers;
    int connections;
    long requests; /* closed loop: in all */
    double rate;   /* offered: per second; 0 for a closed loop */
    double seconds;
    bool spread;
    double *latencies; /* s, one per answered request */
    long n_latencies, ok, failed, first_bad_status;
} run;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t discard(char *data, size_t size, size_t n, void *user)
{
    (void)data;
    (void)user;
    return size * n;
}

static int setup_slot(run *r, slot *s, int i)
{
    if (!(s->easy = curl_easy_init()))
        return -1;
    curl_easy_setopt(s->easy, CURLOPT_URL, r->url);
    curl_easy_setopt(s->easy, CURLOPT_CUSTOMREQUEST, r->method);
    if (r->body) {
        curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, r->body);
        curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(r->body));
    }
    curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(s->easy, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
    if (r->spread) {
        snprintf(s->source, sizeof s->source, "host!127.0.0.%d", 2 + i % 250);
        curl_easy_setopt(s->easy, CURLOPT_INTERFACE, s->source);
    }
    return 0;
}

static void finish(run *r, slot *s, CURLcode result)
{
    long status = 0;
    if (result == CURLE_OK)
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status == 200) {
        r->ok++;
        r->latencies[r->n_latencies++] = now_s() - s->due_s;
    } else {
        if (r->failed++ == 0)
            r->first_bad_status = status;
        if (result != CURLE_OK && r->failed == 1)
            fprintf(stderr, "bench_http_load: %s\n", curl_easy_strerror(result));
    }
    s->busy = false;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(const run *r, double q)
{
    if (r->n_latencies == 0)
        return 0;
    long i = (long)(q * (double)r->n_latencies);
    if (i >= r->n_latencies)
        i = r->n_latencies - 1;
    return r->latencies[i] * 1e3;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_http_load URL [-X METHOD] [-d BODY] [-H HEADER]... "
                    "[-c CONNECTIONS] (-n REQUESTS | -r RATE -s SECONDS) [--spread-sources]\n");
    return 2;
}

int main(int argc, char **argv)
{
    run r = {.method = "GET", .connections = 16};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(a, "--spread-sources") == 0)
            r.spread = true;
        else if (strcmp(a, "-X") == 0 && has_value)
            r.method = argv[++i];
        else if (strcmp(a, "-d") == 0 && has_value)
            r.body = argv[++i];
        else if (strcmp(a, "-H") == 0 && has_value)
            r.headers = curl_slist_append(r.headers, argv[++i]);
        else if (strcmp(a, "-c") == 0 && has_value)
            r.connections = atoi(argv[++i]);
        else if (strcmp(a, "-n") == 0 && has_value)
            r.requests = atol(argv[++i]);
        else if (strcmp(a, "-r") == 0 && has_value)
            r.rate = atof(argv[++i]);
        else if (strcmp(a, "-s") == 0 && has_value)
            r.seconds = atof(argv[++i]);
        else if (a[0] != '-' && !r.url)
            r.url = a;
        else
            return usage();
    }
    if (!r.url || r.connections < 1 || r.connections > 4096 ||
        (r.rate > 0 ? r.seconds <= 0 : r.requests < 1))
        return usage();
    long total = r.rate > 0 ? (long)(r.rate * r.seconds) : r.requests;
    if (total < 1)
        return usage();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = 1;
    CURLM *multi = curl_multi_init();
    slot *slots = calloc((size_t)r.connections, sizeof *slots);
    r.latencies = calloc((size_t)total, sizeof *r.latencies);
    if (!multi || !slots || !r.latencies)
        goto out;
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)r.connections);
    for (int i = 0; i < r.connections; i++)
        if (setup_slot(&r, &slots[i], i) < 0)
            goto out;

    long sent = 0, answered = 0;
    double start = now_s();
    while (answered < total) {
        double now = now_s();
        /* Start what is due on free connections. */
        for (int i = 0; i < r.connections && sent < total; i++) {
            double due = r.rate > 0 ? start + (double)sent / r.rate : now;
            if (due > now)
                break;
            if (slots[i].busy)
                continue;
            slots[i].busy = true;
            slots[i].due_s = due;
            curl_multi_add_handle(multi, slots[i].easy);
            sent++;
        }
        int running;
        curl_multi_perform(multi, &running);
        CURLMsg *msg;
        int left;
        long answered_before = answered;
        while ((msg = curl_multi_info_read(multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            void *s = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &s);
            CURLcode result = msg->data.result;
            curl_multi_remove_handle(multi, msg->easy_handle);
            finish(&r, s, result);
            answered++;
        }
        /* Wait for I/O, or until the next request is due. */
        int wait_ms = 100;
        if (r.rate > 0 && sent < total) {
            double next = start + (double)sent / r.rate - now_s();
            bool free_slot = false;
            for (int i = 0; i < r.connections && !free_slot; i++)
                free_slot = !slots[i].busy;
            /* Overdue with every connection busy: wait for an answer, not spin. */
            wait_ms = next > 0 ? 1 + (int)(next * 1e3) : free_slot ? 0 : 100;
        }
        /* A connection freed: its next request goes out before any wait. */
        if (answered < total && wait_ms > 0 && answered == answered_before)
            curl_multi_poll(multi, NULL, 0, wait_ms, NULL);
    }
    double elapsed = now_s() - start;
    qsort(r.latencies, (size_t)r.n_latencies, sizeof *r.latencies, compare_double);
    printf("requests %ld ok %ld failed %ld seconds %.3f rate %.0f/s p50 %.2f ms p99 %.2f ms "
           "max %.2f ms\n",
           total, r.ok, r.failed, elapsed, (double)r.ok / elapsed, percentile(&r, 0.5),
           percentile(&r, 0.99), percentile(&r, 1.0));
    if (r.failed)
        printf("first unexpected status %ld\n", r.first_bad_status);
    rc = 0;
out:
    for (int i = 0; slots && i < r.connections; i++)
        curl_easy_cleanup(slots[i].easy);
    free(slots);
    free(r.latencies);
    curl_slist_free_all(r.headers);
    if (multi)
        curl_multi_cleanup(multi);
    curl_global_cleanup();
    return rc;
}
