/* fuzz_request: a task.schedule body (JSON) through sched_request_parse and,
 * when it parses, the engine's whole pipeline (pre-filter compiles the
 * regex annotations) over the fixed inventory, by the profile its
 * scheduler_name picks (default, or "packer"; another name finds none, as
 * the worker's unknown_scheduler wait); its priority / priority_class
 * resolved against classes high and low (queue_order), and, when it fits
 * nowhere and its class may preempt, the PostFilter's choice over holds
 * of mixed priorities, some never preemptible (preempt.h). A request with a
 * group or a count > 1 is decided as the task handler does it: count
 * placements, all held then released, the group's members per host made up
 * from the input's bytes (as the store would give them). A placed request
 * is reserved and released (custom resources held and given back); one not
 * placed is asked never_fits and the why-not suggestions. */
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "engine.h"
#include "fuzz_common.h"
#include "never_fits.h"
#include "preempt.h"
#include "queue_order.h"
#include "request.h"
#include "suggest.h"

static hostset *hosts;
static sched_engine *engine;
static vf_config *classes;
static const char classes_yaml[] = "scheduler:\n"
                                   "  priority_classes:\n"
                                   "    high: {value: 1000}\n"
                                   "    low: {value: -10, preemption: never}\n";

/* The handler's place_all without a store: each placement held so the
 * next sees it, every hold ended afterwards. */
static void place_all(sched_engine *decider, const sched_request *req, const uint8_t *data,
                      size_t size)
{
    uint32_t *members = calloc(hosts->n_hosts ? hosts->n_hosts : 1, sizeof *members);
    if (!members)
        abort();
    for (size_t i = 0; i < hosts->n_hosts && size > 0; i++)
        members[i] = data[i % size] % 4;
    for (int i = 0; i < req->count; i++) {
        sched_decide_options options = {.group_members = req->group[0] ? members : NULL};
        sched_decision decision;
        if (sched_engine_decide_with(decider, req, &options, &decision, NULL) < 0 ||
            !decision.placed)
            break;
        members[sched_decision_host_index(decider, &decision)]++;
        sched_reservation res;
        sched_reservation_from_decision(&res, &decision, req, "fuzz", 0);
        if (sched_engine_reserve(engine, &res, NULL) < 0)
            break;
    }
    sched_engine_release(engine, "fuzz");
    free(members);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    vf_config *config = config_defaults();
    hosts = fuzz_hosts();
    if (!config || !hosts)
        abort();
    sched_params params;
    sched_params_from_config(&params, config);
    params.seed = 42;
    engine = sched_engine_new(&params, NULL);
    params.pack = true;
    if (!engine || sched_engine_add_profile(engine, "packer", &params, NULL) < 0)
        abort();
    config_free(config);
    vf_error cerr;
    vf_error_init(&cerr);
    classes = config_load_string(classes_yaml, sizeof classes_yaml - 1, "fuzz.yaml", &cerr);
    if (!classes)
        abort();
    if (sched_engine_set_hosts(engine, hosts, NULL, NULL, NULL) < 0)
        abort();
    /* Holds on every host, of mixed priorities, a quarter never preemptible
     * (a spare's, a bound one), so preemption has something to weigh. */
    for (size_t i = 0; i < hosts->n_hosts; i++) {
        for (int k = 0; k < 2; k++) {
            sched_reservation res = {0};
            snprintf(res.task_id, sizeof res.task_id, "hold-%zu-%d", i, k);
            snprintf(res.node, sizeof res.node, "%s", hosts->hosts[i].name);
            res.cpu = 4 + 4 * k;
            res.memory = 2048 << k;
            res.disk = 10;
            res.has_priority = (i + (size_t)k) % 4 != 0;
            res.priority = (int32_t)((i + (size_t)k) % 3) * 500 - 500;
            res.created = (int64_t)(i * 2 + (size_t)k);
            if (sched_engine_reserve(engine, &res, NULL) < 0)
                abort();
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *body = json_loadb((const char *)data, size, 0, &jerr);
    if (!body)
        return 0;
    sched_request req;
    sched_request_init(&req);
    vf_error err;
    vf_error_init(&err);
    if (sched_request_parse(body, &req, &err) == 0) {
        int32_t priority = 0;
        vf_error ignored;
        vf_error_init(&ignored);
        bool valid = queue_order_priority(&req, classes, &priority, &ignored) == 0;
        sched_decision decision;
        sched_engine *decider = sched_engine_profile(engine, req.scheduler_name);
        if (decider && (req.group[0] || req.count > 1))
            place_all(decider, &req, data, size);
        else if (decider && sched_engine_decide(decider, &req, &decision, &err) == 0) {
            json_t *result = sched_decision_to_json(&decision, hosts);
            json_decref(result);
            if (valid && !decision.placed && sched_preempt_allowed(&req, classes)) {
                sched_preemption preemption;
                if (sched_preempt_choose(decider, &req, priority, INT64_MAX, &decision, &preemption,
                                         &ignored) == 0 &&
                    preemption.found &&
                    (preemption.n_victims == 0 || preemption.max_priority >= priority))
                    abort(); /* a victim of equal or higher priority, or none at all */
                sched_preemption_close(&preemption);
            }
            /* Held and ended again, custom resources included, so the
             * engine starts each input from the same state. */
            if (decision.placed) {
                sched_reservation res;
                sched_reservation_from_decision(&res, &decision, &req, "fuzz", 0);
                if (sched_engine_reserve(engine, &res, NULL) == 0)
                    (void)sched_engine_release(engine, "fuzz");
            } else {
                char why[256];
                (void)sched_never_fits(decider, &req, why, sizeof why);
                json_t *suggestions = sched_suggest(decider, &req, &decision, 4);
                json_decref(suggestions);
            }
        }
        json_t *echo = sched_request_to_json(&req);
        json_decref(echo);
    }
    json_decref(body);
    return 0;
}
