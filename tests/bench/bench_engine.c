/* bench_engine: decisions/s and node evaluations/s of the scheduling engine
 * for 100, 1,000, 10,000 and 100,000 hosts, with default plugins, with a
 * node-regex annotation, and with every decision reserved (the worker's
 * pattern). One core, one engine. Prints figures and the process's peak RSS
 * so far; asserts nothing.
 *
 *   bench_engine [seconds-per-case] [max-hosts [case]]   (default 1.0, 100000, all)
 *   bench_engine --decisions N [max-hosts [case]]        exactly N decisions per case,
 *                                                        for callgrind instruction counts
 * case: plain, regex, reserve, varied, profiles, group, spread, whynot or preempt; with a case,
 * only max-hosts is run. profiles: decide+reserve with two scheduling profiles configured
 * (scheduler.profiles), every other decision by the pack profile: what the profiles' shared holds
 * cost. group: decide+reserve as members of one soft-anti-affinity group, the members per host
 * given to every decision (docs/scheduling.md "Groups"): what the group path costs. spread: the
 * same as members of a group with a hard topology spread over ten racks (every host labelled):
 * what the spread's domains, marks and the full pass cost. whynot: an
 * unschedulable request decided, then its suggestions (suggest.h): the cost of saying what would
 * make it fit, beside the decision's own (the decision leaving per-host reasons to the index,
 * sched_decide_options.lazy_host_reasons, as the worker asks). preempt: every host's free slots
 * held by reservations of priorities 0..40 (their VMs not yet there), so a request fits nowhere;
 * decided, then PostFilter's choice of host and victims (preempt.h): what a preempting decision
 * costs beside the unschedulable one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "engine.h"
#include "fixtext.h"
#include "hostset.h"
#include "preempt.h"
#include "suggest.h"
#include "benchlib.h"

/* `racks`: each host labelled rack r0..r9 (the spread case only: the
 * others keep hosts without labels, as most inventories are). */
static hostset *make_hosts(size_t n, bool racks)
{
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    for (size_t i = 0; i < n; i++) {
        host h;
        memset(&h, 0, sizeof h);
        snprintf(h.name, sizeof h.name, "bm-%05zu", i);
        snprintf(h.ip, sizeof h.ip, "10.%zu.%zu.%zu", i >> 16, (i >> 8) & 255, i & 255);
        /* Most hosts in the requested pool so the whole pipeline runs on them. */
        snprintf(h.pool, sizeof h.pool, "%s", i % 10 == 9 ? "gpu" : "default");
        h.status = i % 50 == 49 ? HOST_MAINTENANCE : HOST_ONLINE;
        h.cpu = 32 + (double)(i % 4) * 16;
        h.memory = 131072 + (int64_t)(i % 3) * 65536;
        h.storage = 2000;
        h.allocated_cpu = (double)(i * 7 % 64);
        h.allocated_memory = (int64_t)(i * 4099 % 65536);
        h.usage_cpu = (double)(i % 100) / 100.0;
        h.usage_mem = (double)(i % 90) / 100.0;
        h.max_vms = 60;
        h.current_vms = (int32_t)(i % 40);
        host_traits labels;
        memset(&labels, 0, sizeof labels);
        char rack[8];
        snprintf(rack, sizeof rack, "r%zu", i % 10);
        if (racks && label_set_put(&labels.labels, "rack", rack, &err) == 0)
            h.traits = &labels;
        if (hostset_add(set, &h, &err) < 0 ||
            hostset_add_vmid(set, (uint32_t)(100 + i * 3), &err) < 0) {
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

/* An engine with the benchmark's parameters over `hosts`, with `n_profiles`
 * scheduling profiles ("p1" pack, "p2" spread, ...); exits on error. */
static sched_engine *make_engine(const hostset *hosts, int n_profiles)
{
    sched_params params = {.overcommit_cpu = 4.0,
                           .overcommit_memory = 1.0,
                           .dedicated_exclusive = true,
                           .subset_size = 1,
                           .seed = 1};
    vf_error err;
    vf_error_init(&err);
    sched_engine *engine = sched_engine_new(&params, &err);
    for (int p = 1; engine && p <= n_profiles; p++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", p);
        sched_params profile = params;
        profile.pack = p % 2 == 1;
        if (sched_engine_add_profile(engine, name, &profile, &err) < 0) {
            fprintf(stderr, "bench: %s\n", err.text);
            exit(1);
        }
    }
    if (!engine || sched_engine_set_hosts(engine, hosts, NULL, NULL, &err) < 0) {
        fprintf(stderr, "bench: %s\n", err.text);
        exit(1);
    }
    return engine;
}

/* VARIED: decide + reserve with a different vCPU count each time (97 shapes,
 * more than the engine keeps scores for), the worst case for kept scores. */
typedef enum { PLAIN, REGEX, RESERVE, VARIED, PROFILES, GROUP, SPREAD } bench_mode;

/* "t<n>", without printf: the benchmark's own ids are not the engine's cost
 * (two snprintf calls were 1,600 instructions of a 9,400-instruction decision). */
static void task_name(char *out, size_t size, long n)
{
    fixtext t;
    fixtext_init(&t, out, size, 0);
    fixtext_put(&t, "t", 1);
    fixtext_uint(&t, (uint64_t)n);
}

static long peak_rss_kib(void)
{
    struct rusage usage;
    return getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_maxrss : -1;
}

static void run(size_t n_hosts, bench_mode mode, double seconds, long fixed_decisions)
{
    hostset *hosts = make_hosts(n_hosts, mode == SPREAD);
    vf_error err;
    vf_error_init(&err);
    sched_engine *engine = make_engine(hosts, mode == PROFILES ? 2 : 0);
    bool grouped = mode == GROUP || mode == SPREAD;
    sched_engine *packer = sched_engine_profile(engine, "p1");
    sched_request req;
    sched_request_init(&req);
    req.cpu = 2;
    req.memory = 2048;
    req.disk = 20;
    if (mode == REGEX)
        snprintf(req.node_regex, sizeof req.node_regex, "bm-[0-9]*[02468]");
    /* GROUP: the members per host, and where each of the last 500 went. */
    uint32_t *members = NULL;
    size_t member_host[500];
    if (grouped) {
        snprintf(req.group, sizeof req.group, "web");
        req.group_policy = mode == GROUP ? SCHED_GROUP_SOFT_ANTI_AFFINITY : SCHED_GROUP_NONE;
        if (mode == SPREAD) {
            snprintf(req.spread.key, sizeof req.spread.key, "rack");
            req.spread.max_skew = 1;
            req.spread.min_domains = 1;
        }
        members = calloc(n_hosts, sizeof *members);
        if (!members)
            exit(1);
    }
    sched_decide_options options = {.group_members = members};

    long decisions = 0, placed = 0;
    double start = bench_now_s(), elapsed = 0;
    sched_decision d;
    while (fixed_decisions > 0 ? decisions < fixed_decisions : elapsed < seconds) {
        for (int batch = 0; batch < 50; batch++) {
            if (mode == VARIED)
                req.cpu = 1 + (int32_t)(decisions % 97);
            sched_engine *decider = mode == PROFILES && decisions % 2 ? packer : engine;
            if ((grouped ? sched_engine_decide_with(decider, &req, &options, &d, &err)
                         : sched_engine_decide(decider, &req, &d, &err)) < 0) {
                fprintf(stderr, "bench: %s\n", err.text);
                exit(1);
            }
            decisions++;
            if (!d.placed)
                continue;
            placed++;
            if (grouped) {
                if (decisions > 500)
                    members[member_host[decisions % 500]]--;
                member_host[decisions % 500] = sched_decision_host_index(engine, &d);
                members[member_host[decisions % 500]]++;
            }
            if (mode == RESERVE || mode == VARIED || mode == PROFILES || grouped) {
                sched_reservation res;
                char task[32];
                task_name(task, sizeof task, decisions);
                sched_reservation_from_decision(&res, &d, &req, task, 0);
                if (sched_engine_reserve(engine, &res, &err) < 0) {
                    fprintf(stderr, "bench: %s\n", err.text);
                    exit(1);
                }
                /* Keep the inventory from filling: release what is 500 decisions old. */
                if (decisions > 500) {
                    task_name(task, sizeof task, decisions - 500);
                    sched_engine_release(engine, task);
                }
            }
        }
        elapsed = bench_now_s() - start;
    }
    /* What a refresh costs the consumer: the engine switching to a snapshot
     * (here the same one again) with the live reservations re-applied. */
    double set_start = bench_now_s();
    if (sched_engine_set_hosts(engine, hosts, NULL, NULL, &err) < 0) {
        fprintf(stderr, "bench: %s\n", err.text);
        exit(1);
    }
    double set_hosts_ms = (bench_now_s() - set_start) * 1e3;
    /* What a SIGHUP reload costs the consumer: other parameters (pack), the
     * same snapshot and reservations laid again. */
    sched_params pack = *sched_engine_params(engine);
    pack.pack = true;
    double params_start = bench_now_s();
    if (sched_engine_set_params(engine, &pack, &err) < 0) {
        fprintf(stderr, "bench: %s\n", err.text);
        exit(1);
    }
    double set_params_ms = (bench_now_s() - params_start) * 1e3;
    static const char *const names[] = {"default plugins", "node regex", "decide+reserve",
                                        "varied shapes",   "2 profiles", "group member",
                                        "spread member"};
    printf("%-16s hosts=%6zu  decisions/s=%10.0f  node-evaluations/s=%12.0f  us/decision=%8.2f  "
           "placed=%ld/%ld  set-hosts-ms=%.2f  set-params-ms=%.2f  peak-rss-kib=%ld\n",
           names[mode], n_hosts, (double)decisions / elapsed,
           (double)decisions * (double)n_hosts / elapsed, elapsed / (double)decisions * 1e6, placed,
           decisions, set_hosts_ms, set_params_ms, peak_rss_kib());
    /* Which path the index took (the decisions are the same either way). */
    sched_index_stats st;
    sched_engine_index_stats(engine, &st);
    printf("%-16s index: searches=%llu kept-scores=%llu bounds=%llu full-pass=%llu\n", "",
           (unsigned long long)st.searches, (unsigned long long)st.by_kept,
           (unsigned long long)st.by_bounds, (unsigned long long)st.gave_up);
    free(members);
    sched_engine_free(engine);
    hostset_free(hosts);
}

/* An unschedulable request (more vCPUs than any host has): the decision
 * alone, then the decision and its suggestions. */
static void run_whynot(size_t n_hosts, double seconds, long fixed_decisions)
{
    hostset *hosts = make_hosts(n_hosts, false);
    vf_error err;
    vf_error_init(&err);
    sched_engine *engine = make_engine(hosts, 0);
    sched_request req;
    sched_request_init(&req);
    req.cpu = 100000;
    req.memory = 2048;
    /* As the worker decides: per-host reasons left to the index. */
    sched_decide_options lazily = {.lazy_host_reasons = true};
    double per[2] = {0, 0};
    for (int with = 0; with < 2; with++) {
        long n = 0;
        double start = bench_now_s(), elapsed = 0;
        sched_decision d;
        while (fixed_decisions > 0 ? n < fixed_decisions : elapsed < seconds) {
            if (sched_engine_decide_with(engine, &req, &lazily, &d, &err) < 0) {
                fprintf(stderr, "bench: %s\n", err.text);
                exit(1);
            }
            if (with)
                json_decref(sched_suggest(engine, &req, &d, SCHED_SUGGEST_HOSTS));
            n++;
            elapsed = bench_now_s() - start;
        }
        per[with] = elapsed / (double)n * 1e6;
    }
    printf("%-16s hosts=%6zu  us/decision=%8.2f  us/decision+suggestions=%8.2f  "
           "suggestions-us=%8.2f\n",
           "why not", n_hosts, per[0], per[1], per[1] - per[0]);
    sched_engine_free(engine);
    hostset_free(hosts);
}

/* Every free slot of every host held (priorities 0..40, newest last), so
 * nothing fits: the decision alone, then with sched_preempt_choose. */
static void run_preempt(size_t n_hosts, double seconds, long fixed_decisions)
{
    hostset *hosts = make_hosts(n_hosts, false);
    vf_error err;
    vf_error_init(&err);
    sched_engine *engine = make_engine(hosts, 0);
    size_t n_holds = 0;
    for (size_t i = 0; i < n_hosts; i++) {
        const host *h = &hosts->hosts[i];
        for (int32_t k = 0; k < h->max_vms - h->current_vms; k++) {
            sched_reservation res = {0};
            snprintf(res.task_id, sizeof res.task_id, "hold-%zu-%d", i, (int)k);
            snprintf(res.node, sizeof res.node, "%s", h->name);
            res.cpu = 1;
            res.memory = 512;
            res.has_priority = true;
            res.priority = (int32_t)((i + (size_t)k) % 5) * 10;
            res.created = (int64_t)n_holds;
            if (sched_engine_reserve(engine, &res, &err) < 0) {
                fprintf(stderr, "bench: %s\n", err.text);
                exit(1);
            }
            n_holds++;
        }
    }
    sched_request req;
    sched_request_init(&req);
    req.cpu = 2;
    req.memory = 2048;
    sched_decide_options lazily = {.lazy_host_reasons = true};
    double per[2] = {0, 0};
    size_t victims = 0, examined = 0;
    for (int with = 0; with < 2; with++) {
        long n = 0;
        double start = bench_now_s(), elapsed = 0;
        sched_decision d;
        while (fixed_decisions > 0 ? n < fixed_decisions : elapsed < seconds) {
            if (sched_engine_decide_with(engine, &req, &lazily, &d, &err) < 0 || d.placed) {
                fprintf(stderr, "bench: %s\n",
                        d.placed ? "placed: the hosts are not full" : err.text);
                exit(1);
            }
            if (with) {
                sched_preemption p;
                if (sched_preempt_choose(engine, &req, 1000, INT64_MAX, &d, &p, &err) < 0 ||
                    !p.found) {
                    fprintf(stderr, "bench: no preemption: %s\n", err.text);
                    exit(1);
                }
                victims = p.n_victims;
                examined = p.hosts_examined;
                sched_preemption_close(&p);
            }
            n++;
            elapsed = bench_now_s() - start;
        }
        per[with] = elapsed / (double)n * 1e6;
    }
    printf("%-16s hosts=%6zu  holds=%zu  us/decision=%8.2f  us/decision+preemption=%8.2f  "
           "preemption-us=%8.2f  victims=%zu  hosts-examined=%zu\n",
           "preempt", n_hosts, n_holds, per[0], per[1], per[1] - per[0], victims, examined);
    sched_engine_free(engine);
    hostset_free(hosts);
}

int main(int argc, char **argv)
{
    double seconds = 1.0;
    long fixed_decisions = 0;
    int arg = 1;
    if (arg + 1 < argc && strcmp(argv[arg], "--decisions") == 0) {
        fixed_decisions = atol(argv[arg + 1]);
        arg += 2;
    } else if (arg < argc) {
        seconds = atof(argv[arg++]);
    }
    if (seconds <= 0)
        seconds = 1.0;
    size_t max_hosts = arg < argc ? (size_t)atol(argv[arg++]) : 100000;
    static const char *const cases[] = {"plain",    "regex", "reserve", "varied",
                                        "profiles", "group", "spread"};
    int only = -1;
    for (int m = 0; m < (int)(sizeof cases / sizeof cases[0]) && arg < argc; m++)
        if (strcmp(argv[arg], cases[m]) == 0)
            only = m;
    if (arg < argc && strcmp(argv[arg], "whynot") == 0) {
        run_whynot(max_hosts, seconds, fixed_decisions);
        return 0;
    }
    if (arg < argc && strcmp(argv[arg], "preempt") == 0) {
        run_preempt(max_hosts, seconds, fixed_decisions);
        return 0;
    }
    if (only >= 0) {
        run(max_hosts, (bench_mode)only, seconds, fixed_decisions);
        return 0;
    }
    static const size_t sizes[] = {100, 1000, 10000, 100000};
    for (size_t m = 0; m < 4; m++)
        for (size_t s = 0; s < 4; s++)
            if (sizes[s] <= max_hosts)
                run(sizes[s], (bench_mode)m, seconds, fixed_decisions);
    for (size_t s = 0; s < 4; s++)
        if (sizes[s] <= max_hosts)
            run_whynot(sizes[s], seconds, fixed_decisions);
    for (size_t s = 0; s < 3; s++)
        if (sizes[s] <= max_hosts)
            run_preempt(sizes[s], seconds, fixed_decisions);
    return 0;
}
