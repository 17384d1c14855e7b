/* bench_handler: the worker's own CPU cost per task, without the broker.
 *
 * Runs what the worker's main loop does for each message between taking it
 * off the queue and acking it — parse, idempotency lookup, decision over the
 * inventory, task row, history, reservation, outbox event, and one commit per
 * batch on a store with a deferred sync (one fdatasync per batch, as the
 * worker's sync thread does) — and prints CPU microseconds per task. The
 * broker's share (reading deliveries, publishing, acking) is not in it: the
 * worker figures in bench_worker.py include both.
 *
 *   bench_handler [tasks] [hosts] [batch] [book|nobook] [metrics|nometrics]
 *                 [sqlite|postgresql] [provenance|noprovenance]
 *   (default 20000 1000 100 book nometrics sqlite provenance)
 *
 * "noprovenance" leaves out each decision's record (provenance.h: one
 * UPDATE of the task's row), to measure what it costs.
 *
 * "metrics" adds what the worker's main loop does for worker.http_listen:
 * the per-message decision timing and the counters added after each commit
 * (worker_metrics.h), with the endpoints listening on a free loopback port
 * but not scraped. Compare the two under callgrind for the cost per task.
 *
 * "postgresql" puts the store in a fresh schema on VF_PG_URL's server
 * (dropped at the end), with the worker's deferred writes (store.h
 * store_defer_writes); the server's own CPU is not in the figure. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "config.h"
#include "engine.h"
#include "hostset.h"
#include "log.h"
#include "store.h"
#include "provenance.h"
#include "task_handler.h"
#include "worker_metrics.h"
#include "clock.h"
#include "store_fixture.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t wall_ms(void)
{
    return (int64_t)(clock_s(CLOCK_REALTIME) * 1000);
}

/* The inventory bench_worker.py gives the worker: identical roomy hosts. */
static hostset *make_hosts(size_t n, vf_error *err)
{
    hostset *set = hostset_new();
    for (size_t i = 0; set && i < n; i++) {
        host h;
        memset(&h, 0, sizeof h);
        snprintf(h.name, sizeof h.name, "bm-%03zu", i);
        snprintf(h.ip, sizeof h.ip, "10.9.%zu.%zu", (i + 1) / 256, (i + 1) % 256);
        snprintf(h.pool, sizeof h.pool, "default");
        h.status = HOST_ONLINE;
        h.cpu = 64;
        h.memory = 262144;
        h.storage = 10000;
        h.max_vms = 1000;
        if (hostset_add(set, &h, err) < 0) {
            hostset_free(set);
            return NULL;
        }
    }
    if (set && hostset_finish(set, err) < 0) {
        hostset_free(set);
        return NULL;
    }
    return set;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    long n_hosts = argc > 2 ? strtol(argv[2], NULL, 10) : 1000;
    long per_batch = argc > 3 ? strtol(argv[3], NULL, 10) : 100;
    /* "book" (default): as the worker runs, catching up with other writers
     * before each batch and claiming each host at its generation; "nobook":
     * neither, to measure what the shared-store checks cost one worker. */
    bool with_book = argc <= 4 || strcmp(argv[4], "nobook") != 0;
    bool with_metrics = argc > 5 && strcmp(argv[5], "metrics") == 0;
    bool on_postgresql = argc > 6 && strcmp(argv[6], "postgresql") == 0;
    bool with_provenance = argc <= 7 || strcmp(argv[7], "noprovenance") != 0;
    if (n <= 0 || n_hosts <= 0 || per_batch <= 0) {
        fprintf(stderr,
                "usage: %s [tasks] [hosts] [batch] [book|nobook] [metrics|nometrics] "
                "[sqlite|postgresql] [provenance|noprovenance]\n",
                argv[0]);
        return 2;
    }
    vf_log_set_level(VF_LOG_WARN);
    char dir[] = "/tmp/vf-bench-handler-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/virtflow.db", dir);
    store_fixture pg = {{0}};
    if (on_postgresql && (store_fixture_init(&pg, "bench_handler") != 0 ||
                          store_fixture_pg(&pg, "bench_handler", path, sizeof path) != 0)) {
        fprintf(stderr, "bench_handler: postgresql needs VF_PG_URL\n");
        store_fixture_close(&pg);
        return 2;
    }

    int status = 1;
    vf_error err;
    vf_error_init(&err);
    vf_config *config = config_defaults();
    hostset *hosts = make_hosts((size_t)n_hosts, &err);
    sched_params params;
    sched_engine *engine = NULL;
    store *s = NULL;
    reservation_book *book = NULL;
    store *claims = NULL;
    task_outcome *outcomes = calloc((size_t)per_batch, sizeof *outcomes);
    worker_metrics *wm = NULL;
    if (!config || !hosts || !outcomes)
        goto out;
    free(config->worker.http_listen);
    config->worker.http_listen = with_metrics ? strdup("127.0.0.1:0") : NULL;
    if (with_metrics && !(wm = worker_metrics_start(config, NULL, &err)))
        goto out;
    sched_params_from_config(&params, config);
    if (!(engine = sched_engine_new(&params, &err)) ||
        sched_engine_set_hosts(engine, hosts, NULL, NULL, &err) < 0)
        goto out;
    if (!(s = store_open(path, STORE_READ_WRITE, &err)) || store_defer_sync(s, &err) < 0)
        goto out;
    store_defer_writes(s); /* as the worker does; nothing changes on SQLite */
    /* PostgreSQL: claims run on a handle of their own, as the worker's. */
    if (with_book && on_postgresql && !(claims = store_open(path, STORE_READ_WRITE, &err)))
        goto out;
    if (with_book && (!(book = reservation_book_new(engine, claims, &err)) ||
                      reservation_book_load(book, s, 0, &err) < 0))
        goto out;

    decision_view view = {.snapshot_id = 1, .config_id = 1, .clock_ms = wall_ms()};
    task_handler handler = {s,
                            engine,
                            config,
                            hosts,
                            "",
                            wall_ms,
                            book,
                            "bench:1:w_bench",
                            NULL,
                            NULL,
                            with_provenance ? &view : NULL};
    double cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), wall0 = bench_now_s();
    char routing_key[] = "task.schedule";
    amqp_link_delivery delivery = {.routing_key = routing_key};
    for (long done = 0; done < n;) {
        long count = n - done < per_batch ? n - done : per_batch;
        int64_t started_at = wm ? clock_mono_us() : 0;
        if (store_begin(s, &err) < 0 || (book && reservation_book_catch_up(book, s, 0, &err) < 0))
            goto out;
        for (long i = 0; i < count; i++) {
            char body[160], id[48];
            snprintf(id, sizeof id, "bench-%07ld", done + i);
            int len =
                snprintf(body, sizeof body,
                         "{\"task_id\":\"%s\",\"requested_cpu\":1,\"requested_memory\":512}", id);
            task_message msg = {(const unsigned char *)body,
                                (size_t)len,
                                false,
                                (uint64_t)len,
                                "task.schedule",
                                id,
                                NULL,
                                false,
                                0,
                                NULL,
                                false,
                                NULL,
                                NULL};
            if (task_handler_handle(&handler, &msg, &outcomes[i], &err) < 0)
                goto out;
            if (wm) { /* as service.c's record_pass */
                int64_t decided_at = clock_mono_us();
                worker_metrics_decided(wm, (double)(decided_at - started_at) / 1e6);
                started_at = decided_at;
            }
        }
        int64_t handled_at = wm ? clock_mono_us() : 0;
        if (book) {
            /* Alone on the store: no claim misses. */
            reservation_misses misses = {0};
            int settled = reservation_book_settle(book, s, &misses, &err);
            size_t missed = misses.n;
            reservation_misses_close(&misses);
            if (settled < 0 || missed || reservation_book_send_with_commit(book, s, &err) < 0)
                goto out;
        }
        if (store_commit(s, &err) < 0)
            goto out;
        if (wm) {
            worker_metrics_batch(wm, (size_t)count, (double)(clock_mono_us() - handled_at) / 1e6);
            int64_t committed_ms = clock_wall_ms();
            for (long i = 0; i < count; i++)
                worker_metrics_outcome(wm, &delivery, &outcomes[i], committed_ms);
        }
        int64_t sync_at = wm ? clock_mono_us() : 0;
        if (store_sync(s, &err) < 0)
            goto out;
        if (wm) /* as wal_sync.c */
            metrics_observe(worker_metrics_fsync_series(wm),
                            (double)(clock_mono_us() - sync_at) / 1e6);
        if (book)
            reservation_book_committed(book);
        for (long i = 0; i < count; i++)
            task_outcome_close(&outcomes[i]);
        done += count;
    }
    double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    double wall = bench_now_s() - wall0;
    printf("handler: %ld tasks, %ld hosts, batches of %ld%s%s%s%s: %.1f us CPU per task, %.0f "
           "tasks/s (wall, one thread, %s)\n",
           n, n_hosts, per_batch, book ? "" : " (no claims: reservations written directly)",
           wm ? ", with the metrics hooks" : "", on_postgresql ? ", PostgreSQL" : "",
           with_provenance ? "" : ", no provenance", cpu / (double)n * 1e6, (double)n / wall,
           on_postgresql ? "one commit per batch" : "fdatasync per batch");
    status = 0;
out:
    if (status != 0)
        fprintf(stderr, "bench_handler: %s\n", err.text);
    for (long i = 0; outcomes && i < per_batch; i++)
        task_outcome_close(&outcomes[i]);
    free(outcomes);
    worker_metrics_stop(wm);
    reservation_book_free(book);
    store_close(claims);
    store_close(s);
    if (on_postgresql)
        store_fixture_close(&pg); /* drops the schema */
    sched_engine_free(engine);
    hostset_free(hosts);
    config_free(config);
    char cmd[sizeof dir + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_handler: could not remove %s\n", dir);
    return status;
}
