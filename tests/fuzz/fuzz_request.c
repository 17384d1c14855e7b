/* fuzz_request: a task.schedule body (JSON) through sched_request_parse and,
 * when it parses, the engine's whole pipeline (pre-filter compiles the
 * regex annotations) over the fixed inventory, by the profile its
 * scheduler_name picks (default, or "packer"; another name finds none, as
 * the worker's unknown_scheduler wait); its priority / priority_class
 * resolved against classes high and low (queue_order). */
#include <stdlib.h>

#include "config.h"
#include "engine.h"
#include "fuzz_common.h"
#include "queue_order.h"
#include "request.h"

static hostset *hosts;
static sched_engine *engine;
static vf_config *classes;
static const char classes_yaml[] = "scheduler:\n"
                                   "  priority_classes:\n"
                                   "    high: {value: 1000}\n"
                                   "    low: {value: -10, preemption: never}\n";

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
        sched_decision decision;
        sched_engine *decider = sched_engine_profile(engine, req.scheduler_name);
        if (decider && sched_engine_decide(decider, &req, &decision, &err) == 0) {
            json_t *result = sched_decision_to_json(&decision, hosts);
            json_decref(result);
        }
        int32_t priority = 0;
        vf_error ignored;
        vf_error_init(&ignored);
        (void)!queue_order_priority(&req, classes, &priority, &ignored);
        json_t *echo = sched_request_to_json(&req);
        json_decref(echo);
    }
    json_decref(body);
    return 0;
}
