/* bench_simulate: `virtflowctl simulate` over a week of recorded history,
 * the store read, the requests parsed and every one decided under two
 * configurations with the worker's policy (replay.h). Issue 39 asks for a
 * week of 10,000 tasks a day in 30 s on this machine.
 *
 *   bench_simulate [tasks_per_day] [days] [hosts] (default 10000 7 1000)
 *
 * Writes an SQLite store: one task.schedule request every 86,400 / n
 * seconds (1-8 vCPUs, 2-32 GiB; every 20th a count of 3, every 50th a
 * member of one of 10 anti-affine groups, every 10th with a priority), each
 * task's reservation released 4 hours later (the history's release step,
 * as task.release records it), and one inventory snapshot a day (the hosts
 * of benchlib, a day's allocations moved); then runs the virtflowctl found
 * at VF_CTL (or ./worker/virtflowctl) with the default configuration
 * against a candidate with strategy: pack, and prints the wall time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "host_json.h"
#include "log.h"
#include "store.h"
#include "store_inventory.h"
#include "store_reservations.h"
#include "store_tasks.h"

static void fail(const char *what, const vf_error *err)
{
    fprintf(stderr, "bench_simulate: %s: %s\n", what, err ? err->text : "");
    exit(1);
}

static void snapshot(store *s, hostset *hosts, int day, int64_t at_ms)
{
    for (size_t i = 0; i < hosts->n_hosts; i++) /* the day's allocations */
        hosts->hosts[i].allocated_cpu = (double)((i + (size_t)day) % 16);
    json_t *doc = host_json_from_hostset(hosts);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    char hash[STORE_INVENTORY_HASH_SIZE], at[STORE_TIME_SIZE];
    vf_error err;
    vf_error_init(&err);
    if (!text)
        fail("writing a snapshot", NULL);
    store_inventory_hash(text, strlen(text), hash);
    store_format_time(at_ms, at);
    if (store_inventory_snapshot_record(s, hash, at, text, &err) < 0)
        fail("recording a snapshot", &err);
    free(text);
}

static void request(char *body, size_t size, long i)
{
    int n = snprintf(body, size,
                     "{\"task_id\":\"s-%07ld\",\"requested_cpu\":%ld,"
                     "\"requested_memory\":%ld",
                     i, 1 + i % 8, 2048 * (1 + i % 16));
    if (i % 20 == 7)
        n += snprintf(body + n, size - (size_t)n, ",\"count\":3");
    if (i % 50 == 11)
        n += snprintf(body + n, size - (size_t)n,
                      ",\"group\":{\"name\":\"g%ld\",\"policy\":\"anti-affinity\"}", i % 10);
    if (i % 10 == 3)
        n += snprintf(body + n, size - (size_t)n, ",\"priority\":%ld", i % 7);
    snprintf(body + n, size - (size_t)n, "}");
}

static void fill(const char *path, long per_day, int days, size_t n_hosts, int64_t start_ms)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(path, STORE_READ_WRITE, &err);
    if (!s || store_begin(s, &err) < 0)
        fail("opening the store", &err);
    hostset *hosts = bench_hosts(n_hosts, NULL);
    int64_t step_ms = 86400000 / per_day;
    for (long i = 0; i < per_day * days; i++) {
        int64_t at_ms = start_ms + i * step_ms;
        if (i % per_day == 0)
            snapshot(s, hosts, (int)(i / per_day), at_ms - 1);
        char body[256], id[32], at[STORE_TIME_SIZE], released[STORE_TIME_SIZE];
        request(body, sizeof body, i);
        snprintf(id, sizeof id, "s-%07ld", i);
        store_format_time(at_ms, at);
        store_format_time(at_ms + 4 * 3600 * 1000, released);
        store_task_fields t = {.id = id,
                               .kind = "schedule",
                               .status = "completed",
                               .attempts = 1,
                               .request = body,
                               .node = "bm-000001",
                               .vmid = 100 + i,
                               .at = at};
        if (store_task_insert(s, &t, &err) < 0 ||
            store_reservation_add(s, id, "bm-000001", 1, 1024, 0, 100 + i, at,
                                  "2099-01-01T00:00:00.000Z", &err) < 0 ||
            store_reservation_release_task(s, id, released, &err) < 0)
            fail("recording a task", &err);
    }
    if (store_commit(s, &err) < 0)
        fail("committing", &err);
    store_close(s);
    hostset_free(hosts);
}

int main(int argc, char **argv)
{
    long per_day = argc > 1 ? strtol(argv[1], NULL, 10) : 10000;
    int days = argc > 2 ? atoi(argv[2]) : 7;
    long n_hosts = argc > 3 ? strtol(argv[3], NULL, 10) : 1000;
    if (per_day <= 0 || days <= 0 || n_hosts <= 0) {
        fprintf(stderr, "usage: %s [tasks_per_day] [days] [hosts]\n", argv[0]);
        return 2;
    }
    vf_log_set_level(VF_LOG_WARN);
    char dir[] = "/tmp/vf-bench-simulate-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char db[512], config[512], pack[512], cmd[2048];
    snprintf(db, sizeof db, "%s/virtflow.db", dir);
    snprintf(config, sizeof config, "%s/config.yaml", dir);
    snprintf(pack, sizeof pack, "%s/pack.yaml", dir);
    /* A week ending an hour ago: within --since 8d. */
    int64_t start_ms = (int64_t)(time(NULL) - (int64_t)days * 86400 - 3600) * 1000;
    double t0 = bench_now_s();
    fill(db, per_day, days, (size_t)n_hosts, start_ms);
    double filled = bench_now_s() - t0;
    FILE *f = fopen(config, "w"), *g = fopen(pack, "w");
    if (!f || !g)
        return 1;
    fprintf(f, "store:\n  path: %s\n", db);
    fprintf(g, "store:\n  path: %s\nscheduler:\n  strategy: pack\n", db);
    fclose(f);
    fclose(g);
    const char *ctl = getenv("VF_CTL") ? getenv("VF_CTL") : "./worker/virtflowctl";
    snprintf(cmd, sizeof cmd, "%s simulate -c %s --candidate %s --since %dd --json > %s/out.json",
             ctl, config, pack, days + 1, dir);
    t0 = bench_now_s();
    int rc = system(cmd);
    double took = bench_now_s() - t0;
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import json; d=json.load(open('%s/out.json')); print('  decisions', "
             "d['decisions'], 'moved', d['moved'], 'placed', d['placed_current'], "
             "d['placed_candidate'], 'changes', len(d['changes']))\"",
             dir);
    if (rc == 0 && system(cmd) != 0)
        rc = 1;
    printf("simulate: %ld tasks over %d days, %ld hosts: %.1f s (wall; the store written in "
           "%.1f s)\n",
           per_day * days, days, n_hosts, took, filled);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_simulate: could not remove %s\n", dir);
    return rc == 0 ? 0 : 1;
}
