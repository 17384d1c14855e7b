/* virtflowctl simulate: what-if replay (issue 25 item 2). Reads the recorded
 * history and inventory snapshots from the store (read-only), decides every
 * recorded request again under the current configuration and a candidate one
 * (worker/sched/replay.h), and reports the difference; past --max-moved or
 * --max-new-failures it exits 1, so a policy change can be gated like code. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "ctl.h"
#include "ctl_simulation.h"
#include "host_json.h"
#include "ids.h"
#include "replay.h"
#include "request.h"
#include "spare_place.h"
#include "store_inventory.h"

static void simulate_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl simulate --candidate FILE [-c CONFIG] [--since D]\n"
            "                            [--max-moved N] [--max-new-failures N] [--json]\n"
            "\n"
            "Decide the schedule requests recorded in the store since D ago again, in\n"
            "their recorded order, over the inventory as it was then (the worker's\n"
            "inventory snapshots), under the current configuration (-c) and under the\n"
            "candidate FILE, each with its own reservations; report the placements that\n"
            "move, the requests that become unschedulable or schedulable, the hosts used\n"
            "and the peak committed CPU and memory per host. Recorded spare.prepare\n"
            "requests are placed again as the worker places them (every spare on a host\n"
            "of its own, spare.anti_affinity_strict of each configuration) and reported\n"
            "apart; their moved spares and newly unschedulable requests count towards\n"
            "the thresholds. With the same configuration the difference is zero. Reads\n"
            "the store only.\n"
            "\n"
            "  --candidate FILE      the configuration to compare (its scheduler section)\n"
            "  --since D             how far back: 90s, 45m, 12h, 7d (default 7d)\n"
            "  --max-moved N         exit 1 when more than N placements (and spares) move\n"
            "  --max-new-failures N  exit 1 when more than N requests (task or spare.prepare)\n"
            "                        become unschedulable\n"
            "  --json                the report as one JSON object\n"
            "\n"
            "examples:\n"
            "  virtflowctl simulate --since 7d --candidate candidate.yaml --max-moved 10\n"
            "\n"
            "exit status: 0 within the thresholds, 1 past one, 2 usage, 3 configuration\n"
            "error, 4 store unreachable.\n");
}

static int parse_count(const char *name, const char *text, long *out)
{
    char *end = NULL;
    errno = 0;
    long value = text ? strtol(text, &end, 10) : -1;
    if (!text || errno || end == text || *end || value < 0) {
        ctl_error("--%s: expected a number >= 0, got '%s'", name, text ? text : "");
        return -1;
    }
    *out = value;
    return 0;
}

/* Shown in the text report; --json lists every one. */
#define CHANGES_SHOWN 20

/* Each request whose outcome differs, and why (the candidate's side). */
static json_t *changes_json(replay *r)
{
    size_t n = 0;
    const replay_change *ch = replay_changes(r, &n);
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++)
        json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s}", "task_id", ch[i].task_id,
                                              "current", ch[i].outcome[0], "candidate",
                                              ch[i].outcome[1], "why", ch[i].why));
    return list;
}

static void print_changes(replay *r)
{
    size_t n = 0;
    const replay_change *ch = replay_changes(r, &n);
    if (!n)
        return;
    printf("changed requests (current -> candidate: why), %zu in all:\n", n);
    for (size_t i = 0; i < n && i < CHANGES_SHOWN; i++)
        printf("  %-28s %s -> %s: %s\n", ch[i].task_id, ch[i].outcome[0], ch[i].outcome[1],
               ch[i].why[0] ? ch[i].why : "-");
    if (n > CHANGES_SHOWN)
        printf("  ... %zu more (--json lists every one)\n", n - CHANGES_SHOWN);
}

static void report(const replay_totals *t, replay *r, const char *since, const ctl_simulation *sim,
                   const replay_stranded *stranded, bool as_json, bool past)
{
    size_t n = 0;
    const replay_host_peak *peaks = replay_peaks(r, &n);
    if (as_json) {
        json_t *hosts = json_array();
        for (size_t i = 0; i < n; i++) {
            const replay_host_peak *p = &peaks[i];
            json_array_append_new(
                hosts, json_pack("{s:s, s:{s:f, s:I, s:i}, s:{s:f, s:I, s:i}}", "name", p->name,
                                 "current", "peak_cpu", p->cpu[0], "peak_memory",
                                 (json_int_t)p->memory[0], "placements", (int)p->placements[0],
                                 "candidate", "peak_cpu", p->cpu[1], "peak_memory",
                                 (json_int_t)p->memory[1], "placements", (int)p->placements[1]));
        }
        json_t *all = json_pack(
            "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:o}", "since",
            since, "snapshots", (json_int_t)sim->snapshots, "decisions", (json_int_t)t->decisions,
            "invalid_skipped", (json_int_t)sim->invalid, "moved", (json_int_t)t->moved,
            "newly_unschedulable", (json_int_t)t->newly_unschedulable, "newly_schedulable",
            (json_int_t)t->newly_schedulable, "placed_current", (json_int_t)t->placed[0],
            "placed_candidate", (json_int_t)t->placed[1], "hosts_used_current",
            (json_int_t)t->hosts_used[0], "hosts_used_candidate", (json_int_t)t->hosts_used[1],
            "refused", (json_int_t)t->errors, "past_threshold", past, "hosts", hosts);
        for (int c = 0; c < 2; c++)
            json_object_set_new(all, c ? "stranded_candidate" : "stranded_current",
                                json_pack("{s:f, s:f, s:I}", "cpu", stranded[c].cpu, "memory",
                                          stranded[c].memory, "hosts",
                                          (json_int_t)stranded[c].hosts));
        json_object_set_new(
            all, "spares",
            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "prepares", (json_int_t)t->spare_prepares,
                      "placed_current", (json_int_t)t->spares_placed[0], "placed_candidate",
                      (json_int_t)t->spares_placed[1], "moved", (json_int_t)t->spares_moved,
                      "newly_unschedulable", (json_int_t)t->spares_newly_unschedulable,
                      "newly_schedulable", (json_int_t)t->spares_newly_schedulable));
        json_object_set_new(all, "changes", changes_json(r));
        json_object_set_new(all, "median_request",
                            json_pack("{s:f, s:f}", "cpu", stranded[0].median_cpu, "memory",
                                      stranded[0].median_memory));
        ctl_print_json(all);
        json_decref(all);
        return;
    }
    printf("replayed %" PRIu64 " requests since %s over %zu inventory snapshots", t->decisions,
           since, sim->snapshots);
    if (sim->invalid)
        printf(" (%zu invalid requests skipped)", sim->invalid);
    printf("\n");
    printf("  placed:               current %" PRIu64 ", candidate %" PRIu64 "\n", t->placed[0],
           t->placed[1]);
    printf("  moved:                %" PRIu64 "\n", t->moved);
    printf("  newly unschedulable:  %" PRIu64 "\n", t->newly_unschedulable);
    printf("  newly schedulable:    %" PRIu64 "\n", t->newly_schedulable);
    printf("  hosts used:           current %zu, candidate %zu\n", t->hosts_used[0],
           t->hosts_used[1]);
    if (t->spare_prepares)
        printf("  spare.prepare:        %" PRIu64 " replayed; all spares placed: current %" PRIu64
               ", candidate %" PRIu64 "; spares moved %" PRIu64 "; newly unschedulable %" PRIu64
               ", newly schedulable %" PRIu64 "\n",
               t->spare_prepares, t->spares_placed[0], t->spares_placed[1], t->spares_moved,
               t->spares_newly_unschedulable, t->spares_newly_schedulable);
    if (t->errors)
        printf("  refused by an engine: %" PRIu64 "\n", t->errors);
    printf("  stranded at the end:  current %.1f vCPUs, %.0f MiB on %zu hosts; candidate %.1f "
           "vCPUs, %.0f MiB on %zu hosts (pieces smaller than the median request, %.0f vCPUs "
           "and %.0f MiB)\n",
           stranded[0].cpu, stranded[0].memory, stranded[0].hosts, stranded[1].cpu,
           stranded[1].memory, stranded[1].hosts, stranded[0].median_cpu,
           stranded[0].median_memory);
    print_changes(r);
    printf("peak committed per host (vCPUs, MiB): current -> candidate\n");
    for (size_t i = 0; i < n; i++) {
        const replay_host_peak *p = &peaks[i];
        printf("  %-24s cpu %8.1f -> %8.1f   memory %10" PRId64 " -> %10" PRId64 "\n", p->name,
               p->cpu[0], p->cpu[1], p->memory[0], p->memory[1]);
    }
}

/* The options' values checked: --since into *since_s, the thresholds into
 * *max_moved and *max_failures (-1: none). CTL_EXIT_OK, or CTL_EXIT_USAGE
 * said. */
static int check_options(const char *since_text, const char *max_moved_text,
                         const char *max_failures_text, const char *candidate_path,
                         const ctl_args *args, int64_t *since_s, long *max_moved,
                         long *max_failures)
{
    if (since_text && config_parse_duration(since_text, since_s) < 0) {
        ctl_error("--since: expected an age like 90s, 45m, 12h or 7d, got '%s'", since_text);
        return CTL_EXIT_USAGE;
    }
    if ((max_moved_text && parse_count("max-moved", max_moved_text, max_moved) < 0) ||
        (max_failures_text && parse_count("max-new-failures", max_failures_text, max_failures) < 0))
        return CTL_EXIT_USAGE;
    if (args->operand_count > 0) {
        ctl_error("simulate: unexpected argument '%s'", args->operands[0]);
        return CTL_EXIT_USAGE;
    }
    if (!candidate_path) {
        ctl_error("simulate: --candidate FILE is required");
        return CTL_EXIT_USAGE;
    }
    return CTL_EXIT_OK;
}

/* A replay of `engine[0]` (the configuration in force) against
 * `engine[1]` (the candidate), each side with its own policy: reservation
 * lifetimes, the spares' anti-affinity and how long a spare's provisioning
 * may hold its host. Owned, or NULL with err. */
static replay *new_replay(const vf_config *config, const vf_config *candidate,
                          sched_engine *engine[2], vf_error *err)
{
    replay *r = replay_new(engine[0], engine[1], config->scheduler.reservation_ttl_s,
                           candidate->scheduler.reservation_ttl_s, err);
    if (!r)
        return NULL;
    for (int c = 0; c < 2; c++) {
        const vf_config *side = c ? candidate : config;
        replay_spare_policy(r, c, side->spare.anti_affinity_strict,
                            (int64_t)side->scheduler.reservation_ttl_s +
                                (int64_t)side->spare.provisioner.timeout_s *
                                    (side->retry.max_attempts + 1));
    }
    replay_policy(r, 0, config);
    replay_policy(r, 1, candidate);
    return r;
}

int ctl_simulate(int argc, char **argv)
{
    const char *candidate_path = NULL, *since_text = NULL, *max_moved_text = NULL,
               *max_failures_text = NULL;
    const ctl_option options[] = {
        {"candidate", 0, CTL_OPTION_PATH, &candidate_path, NULL, NULL, NULL, NULL},
        {"since", 0, CTL_OPTION_STRING, &since_text, NULL, NULL, NULL, NULL},
        {"max-moved", 0, CTL_OPTION_STRING, &max_moved_text, NULL, NULL, NULL, NULL},
        {"max-new-failures", 0, CTL_OPTION_STRING, &max_failures_text, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed = ctl_options_parse("simulate", argc, argv, options, simulate_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    int64_t since_s = 7 * 86400;
    long max_moved = -1, max_failures = -1;
    if (check_options(since_text, max_moved_text, max_failures_text, candidate_path, &args,
                      &since_s, &max_moved, &max_failures) != CTL_EXIT_OK)
        return CTL_EXIT_USAGE;
    int rc = CTL_EXIT_CONFIG;
    vf_config *config = ctl_load_config(args.config_path);
    vf_config *candidate = NULL;
    store *s = NULL;
    sched_engine *engine[2] = {NULL, NULL};
    ctl_simulation sim;
    memset(&sim, 0, sizeof sim);
    vf_error err;
    vf_error_init(&err);
    if (!config)
        goto out;
    candidate = config_load(candidate_path, &err);
    if (!candidate) {
        ctl_error("--candidate: %s", err.text);
        goto out;
    }
    engine[0] = sched_engine_from_config(config, NULL, &err);
    engine[1] = engine[0] ? sched_engine_from_config(candidate, NULL, &err) : NULL;
    if (!engine[1]) {
        ctl_error("%s", err.text);
        goto out;
    }
    rc = CTL_EXIT_UNAVAILABLE;
    s = ctl_open_store(config, STORE_READ_ONLY);
    if (!s)
        goto out;
    sim.r = new_replay(config, candidate, engine, &err);
    char since[STORE_TIME_SIZE];
    if (store_format_time(clock_wall_ms() - since_s * 1000, since) < 0)
        snprintf(since, sizeof since, "1970-01-01T00:00:00.000Z");
    /* No reordering: a task's created_at is its first decision's time, so
     * the recorded order is the order the worker decided in, priorities
     * (queue_order.h) already applied. */
    if (!sim.r || ctl_simulation_history(&sim, s, since, &err) < 0 ||
        ctl_simulation_replay(&sim, s, since, &err) < 0) {
        if (!sim.failed)
            ctl_error("%s", err.text[0] ? err.text : "out of memory");
        goto out;
    }
    replay_totals t;
    replay_result(sim.r, &t);
    bool past = (max_moved >= 0 && t.moved + t.spares_moved > (uint64_t)max_moved) ||
                (max_failures >= 0 &&
                 t.newly_unschedulable + t.spares_newly_unschedulable > (uint64_t)max_failures);
    replay_stranded stranded[2];
    for (int c = 0; c < 2; c++)
        if (replay_stranded_now(sim.r, c, &stranded[c], &err) < 0) {
            ctl_error("%s", err.text);
            goto out;
        }
    report(&t, sim.r, since, &sim, stranded, args.json, past);
    if (past && !args.json)
        printf("past a threshold (--max-moved %ld, --max-new-failures %ld)\n", max_moved,
               max_failures);
    rc = past ? CTL_EXIT_NEGATIVE : CTL_EXIT_OK;
out:
    replay_free(sim.r);
    sched_engine_free(engine[0]);
    sched_engine_free(engine[1]);
    ctl_simulation_close(&sim);
    store_close(s);
    config_free(candidate);
    config_free(config);
    return rc;
}
