/* ctl_plan: virtflowctl headroom --plan (ctl.h): the fewest hosts like one
 * of the inventory's that keep the replayed and projected demand as
 * schedulable as such hosts can make it. The history of the window is
 * replayed (ctl_simulation.h, under the current configuration's policy) and
 * repeated forward over --days, with k copies of the host added to every
 * snapshot; the fewest k whose unschedulable requests are no more than with
 * --max-hosts copies is searched for by bisection (fewer failures with more
 * hosts of one kind: the count does not grow with k). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl.h"
#include "ctl_simulation.h"
#include "engine.h"

/* Holds of the plan's replay live until released: a projected VM stays. */
#define PLAN_HOLD_S (10LL * 365 * 86400)

typedef struct plan_run {
    int added;
    uint64_t decisions, placed, unschedulable;
    size_t hosts_used;
} plan_run;

/* Replay with `added` copies; fills *out. Returns 0 or -1 (reported). */
static int run_with(ctl_simulation *sim, store *s, const char *since, const vf_config *config,
                    int added, plan_run *out)
{
    vf_error err;
    vf_error_init(&err);
    sched_engine *engine[2] = {sched_engine_from_config(config, NULL, &err),
                               sched_engine_from_config(config, NULL, &err)};
    replay *r =
        engine[0] && engine[1]
            ? replay_new(engine[0], engine[1],
                         (int)(PLAN_HOLD_S > INT32_MAX ? INT32_MAX : PLAN_HOLD_S), INT32_MAX, &err)
            : NULL;
    int rc = -1;
    if (r) {
        for (int c = 0; c < 2; c++) {
            replay_policy(r, c, config);
            replay_spare_policy(r, c, config->spare.anti_affinity_strict, INT32_MAX);
        }
        ctl_simulation_rewind(sim);
        sim->r = r;
        sim->added = added;
        rc = ctl_simulation_replay(sim, s, since, &err);
    }
    if (rc < 0 && !sim->failed)
        ctl_error("%s", err.text[0] ? err.text : "out of memory");
    if (rc == 0) {
        replay_totals t;
        replay_result(r, &t);
        *out = (plan_run){.added = added,
                          .decisions = t.decisions + t.spare_prepares,
                          .placed = t.placed[0] + t.spares_placed[0],
                          .hosts_used = t.hosts_used[0]};
        out->unschedulable = out->decisions - out->placed;
    }
    sim->r = NULL;
    replay_free(r);
    sched_engine_free(engine[0]);
    sched_engine_free(engine[1]);
    return rc;
}

static json_t *run_json(const plan_run *p)
{
    return json_pack("{s:i, s:I, s:I, s:I, s:I}", "added", p->added, "requests",
                     (json_int_t)p->decisions, "placed", (json_int_t)p->placed, "unschedulable",
                     (json_int_t)p->unschedulable, "hosts_used", (json_int_t)p->hosts_used);
}

static void report(const char *like, int days, int window_days, const ctl_simulation *sim,
                   const plan_run *none, const plan_run *best, const plan_run *most, bool as_json)
{
    if (as_json) {
        json_t *all = json_pack("{s:s, s:i, s:i, s:i, s:I, s:I, s:o, s:o, s:o}", "hosts_like", like,
                                "add", best->added, "days", days, "window_days", window_days,
                                "recorded_steps", (json_int_t)(sim->n - sim->projected),
                                "projected_steps", (json_int_t)sim->projected, "without",
                                run_json(none), "with", run_json(best), "most", run_json(most));
        ctl_print_json(all);
        json_decref(all);
        return;
    }
    printf("add %d host%s like %s: the fewest with which the demand of the last %d days,\n"
           "replayed and repeated over the next %d days, fails no more than with %d of them\n",
           best->added, best->added == 1 ? "" : "s", like, window_days, days, most->added);
    printf("  steps replayed:       %zu recorded, %zu projected\n", sim->n - sim->projected,
           sim->projected);
    const plan_run *rows[] = {none, best, most};
    for (int i = 0; i < 3; i++)
        printf("  with %3d added:       %llu of %llu requests placed, %llu unschedulable, %zu "
               "hosts used\n",
               rows[i]->added, (unsigned long long)rows[i]->placed,
               (unsigned long long)rows[i]->decisions, (unsigned long long)rows[i]->unschedulable,
               rows[i]->hosts_used);
}

int ctl_plan(const vf_config *config, store *s, const char *like, int days, int window_days,
             int max_hosts, bool as_json)
{
    ctl_simulation sim;
    memset(&sim, 0, sizeof sim);
    snprintf(sim.like, sizeof sim.like, "%s", like);
    char since[STORE_TIME_SIZE];
    int64_t now_ms = clock_wall_ms();
    vf_error err;
    vf_error_init(&err);
    int rc = CTL_EXIT_UNAVAILABLE;
    plan_run none, best, most;
    if (store_format_time(now_ms - (int64_t)window_days * 86400000, since) < 0 ||
        ctl_simulation_history(&sim, s, since, &err) < 0 ||
        ctl_simulation_project(&sim, now_ms + (int64_t)days * 86400000) < 0) {
        ctl_error("plan: %s", err.text[0] ? err.text : "out of memory");
        goto out;
    }
    if (run_with(&sim, s, since, config, 0, &none) < 0 ||
        run_with(&sim, s, since, config, max_hosts, &most) < 0)
        goto out;
    best = none;
    if (none.unschedulable > most.unschedulable) {
        int lo = 0, hi = max_hosts; /* lo fails more than most, hi does not */
        best = most;
        while (hi - lo > 1) {
            int mid = lo + (hi - lo) / 2;
            plan_run at;
            if (run_with(&sim, s, since, config, mid, &at) < 0)
                goto out;
            if (at.unschedulable <= most.unschedulable) {
                hi = mid;
                best = at;
            } else {
                lo = mid;
            }
        }
    }
    report(like, days, window_days, &sim, &none, &best, &most, as_json);
    rc = CTL_EXIT_OK;
out:
    ctl_simulation_close(&sim);
    return rc;
}
