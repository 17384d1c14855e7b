/* bench_replay: what-if replay speed (replay.h, virtflowctl simulate) at
 * 1,000 and 10,000 hosts: requests of three shapes decided under spread
 * (configuration A) and pack (B), each request's hold released 2,000
 * requests later (a steady state, not a fill-up), a new inventory snapshot
 * every 5,000 requests. Prints replayed requests per second (each is two
 * engine decisions and up to two reservations); asserts nothing. The store
 * reads and JSON parsing of virtflowctl simulate are not in these figures.
 *
 *   bench_replay [seconds-per-case]   (default 2.0) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchlib.h"
#include "config.h"
#include "engine.h"
#include "hostset.h"
#include "replay.h"

#define KEEP 2000
#define SNAPSHOT_EVERY 5000

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    const size_t sizes[] = {1000, 10000};
    const struct {
        int cpu;
        int64_t memory;
    } shapes[] = {{2, 4096}, {4, 16384}, {8, 32768}};
    printf("%-8s %12s %14s %10s %10s\n", "hosts", "requests", "requests/s", "moved", "hosts A/B");
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        vf_error err;
        vf_error_init(&err);
        vf_config *config[2] = {config_defaults(), config_defaults()};
        if (!config[0] || !config[1])
            return 1;
        config[1]->scheduler.strategy = CONFIG_STRATEGY_PACK;
        sched_engine *engine[2] = {sched_engine_from_config(config[0], NULL, &err),
                                   sched_engine_from_config(config[1], NULL, &err)};
        hostset *sets[2] = {bench_hosts(sizes[c], NULL), bench_hosts(sizes[c], NULL)};
        replay *r =
            engine[0] && engine[1] ? replay_new(engine[0], engine[1], 900, 900, &err) : NULL;
        if (!r) {
            fprintf(stderr, "bench: %s\n", err.text);
            return 1;
        }
        int64_t at_ms = 1800000000000LL;
        if (replay_inventory(r, sets[0], at_ms, &err) < 0)
            return 1;
        size_t done = 0;
        double start = bench_now_s(), elapsed = 0;
        while ((elapsed = bench_now_s() - start) < seconds) {
            for (int k = 0; k < 1000; k++, done++) {
                sched_request req;
                sched_request_init(&req);
                req.cpu = shapes[done % 3].cpu;
                req.memory = shapes[done % 3].memory;
                snprintf(req.task_id, sizeof req.task_id, "t-%zu", done);
                at_ms += 10; /* 100 requests a second of recorded time */
                if (replay_decide(r, &req, at_ms, &err) < 0) {
                    fprintf(stderr, "bench: %s\n", err.text);
                    return 1;
                }
                if (done >= KEEP) {
                    char id[32];
                    snprintf(id, sizeof id, "t-%zu", done - KEEP);
                    replay_release(r, id, 0);
                }
                if (done % SNAPSHOT_EVERY == SNAPSHOT_EVERY - 1 &&
                    replay_inventory(r, sets[(done / SNAPSHOT_EVERY + 1) % 2], at_ms, &err) < 0)
                    return 1;
            }
        }
        replay_totals t;
        replay_result(r, &t);
        printf("%-8zu %12zu %14.0f %10llu %5zu/%zu\n", sizes[c], done, (double)done / elapsed,
               (unsigned long long)t.moved, t.hosts_used[0], t.hosts_used[1]);
        replay_free(r);
        sched_engine_free(engine[0]);
        sched_engine_free(engine[1]);
        hostset_free(sets[0]);
        hostset_free(sets[1]);
        config_free(config[0]);
        config_free(config[1]);
    }
    return 0;
}
