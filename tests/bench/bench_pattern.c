/* bench_pattern: CPU seconds one decision costs with a hostile or useless
 * pattern annotation, the cost a single message can impose on a worker.
 * Cases: a vmid pattern that matches no free id (the scan examines up to
 * VMID_REGEX_SCAN_LIMIT candidates), a vmid pattern that backtracks
 * exponentially, and a node pattern that backtracks exponentially on 1,000
 * 60-character host names. Prints figures; asserts nothing.
 *
 *   bench_pattern [repetitions [case]]   (default 3, every case; case 1..8
 *   runs that one alone, e.g. under valgrind --tool=callgrind) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "hostset.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static hostset *make_hosts(size_t n)
{
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    for (size_t i = 0; i < n; i++) {
        host h;
        memset(&h, 0, sizeof h);
        /* 60 characters: long names are where backtracking explodes. */
        snprintf(h.name, sizeof h.name,
                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-%05u",
                 (unsigned)(i % 100000));
        snprintf(h.ip, sizeof h.ip, "10.0.%zu.%zu", i >> 8, i & 255);
        snprintf(h.pool, sizeof h.pool, "default");
        h.status = HOST_ONLINE;
        h.cpu = 64;
        h.memory = 262144;
        h.storage = 2000;
        h.max_vms = 100;
        if (hostset_add(set, &h, &err) < 0) {
            fprintf(stderr, "bench: %s\n", err.text);
            exit(1);
        }
    }
    if (hostset_finish(set, &err) < 0) {
        fprintf(stderr, "bench: %s\n", err.text);
        exit(1);
    }
    return set;
}

static int only_case, case_no;

static void run(const char *label, const char *node_pattern, const char *vmid_pattern, int reps)
{
    if (only_case && ++case_no != only_case)
        return;
    vf_error err;
    vf_error_init(&err);
    hostset *hosts = make_hosts(1000);
    sched_params params;
    memset(&params, 0, sizeof params);
    params.overcommit_cpu = 4;
    params.overcommit_memory = 1;
    params.subset_size = 1;
    params.seed = 1;
    double worst = 0, total = 0;
    const char *outcome = "";
    static char message[512];
    for (int r = 0; r < reps; r++) {
        /* A fresh engine per repetition: no cached match helps. */
        sched_engine *engine = sched_engine_new(&params, &err);
        if (!engine || sched_engine_set_hosts(engine, hosts, NULL, NULL, &err) < 0) {
            fprintf(stderr, "bench: %s\n", err.text);
            exit(1);
        }
        sched_request req;
        sched_request_init(&req);
        req.cpu = 1;
        req.memory = 1024;
        snprintf(req.node_regex, sizeof req.node_regex, "%s", node_pattern);
        snprintf(req.vmid_regex, sizeof req.vmid_regex, "%s", vmid_pattern);
        sched_decision d;
        double start = cpu_s();
        int rc = sched_engine_decide(engine, &req, &d, &err);
        double spent = cpu_s() - start;
        total += spent;
        if (spent > worst)
            worst = spent;
        snprintf(message, sizeof message, "%s", rc < 0 ? err.text : d.message);
        outcome = message;
        sched_engine_free(engine);
    }
    printf("%-34s cpu/decision: mean %.4f s, worst %.4f s\n    -> %.150s\n", label, total / reps,
           worst, outcome);
    hostset_free(hosts);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    if (reps < 1)
        reps = 1;
    only_case = argc > 2 ? atoi(argv[2]) : 0;
    run("vmid pattern matching nothing", "", "(12[0-9]|130)x", reps);
    run("vmid pattern, nested repetition", "", "([0-9]|[0-9]|[0-9])*x", reps);
    run("vmid pattern, 2^9 paths per id", "", "([0-9]|[0-9])*(a|b)", reps);
    run("vmid pattern, 3^9 paths per id", "", "([0-9]|[0-9]|[0-9])*(a|b)", reps);
    run("node pattern, nested repetition", "(a|a|aa)*b", "", reps);
    run("node pattern, (a|aa)+(b|c)", "(a|aa)+(b|c)", "", reps);
    run("node pattern, polynomial .*a.*a.*a", ".*a.*a.*a.*-0", "", reps);
    run("node pattern, plain", "a+-0[0-9]+", "", reps);
    return 0;
}
