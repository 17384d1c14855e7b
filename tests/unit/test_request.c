/* Request parsing and annotation checks, driven by fixtures:
 *   fixtures/requests/valid/<case>.json    must parse and be decided
 *   fixtures/requests/invalid/<case>.json  must be refused with exactly
 *                                          the text in <case>.error
 * Annotations are checked by the engine's pre-filter, so each case goes
 * through parse and decide, as a task from the broker does. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_fixture.h"
#include "testlib.h"

static sched_engine *engine;
static hostset *hosts;

/* Parse and decide. Returns 0 with a decision, or -1 with err. */
static int run_case(const char *text, sched_request *req, sched_decision *d, vf_error *err)
{
    json_error_t jerr;
    json_t *body = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!body) {
        vf_error_set(err, VF_EINVAL, "not JSON: %s", jerr.text);
        return -1;
    }
    int rc = sched_request_parse(body, req, err);
    json_decref(body);
    if (rc < 0)
        return -1;
    return sched_engine_decide(engine, req, d, err);
}

static void run_folder(const char *folder, bool valid)
{
    char path[512];
    snprintf(path, sizeof path, "fixtures/requests/%s", folder);
    DIR *dir = opendir(path);
    CHECKF(dir != NULL, "cannot open %s", path);
    if (!dir)
        return;
    int cases = 0;
    struct dirent *entry;
    while ((entry = readdir(dir))) {
        size_t len = strlen(entry->d_name);
        if (len < 6 || strcmp(entry->d_name + len - 5, ".json") != 0)
            continue;
        cases++;
        char file[768];
        snprintf(file, sizeof file, "%s/%s", path, entry->d_name);
        char *text = test_read_file(file, NULL);
        CHECKF(text != NULL, "cannot read %s", file);
        if (!text)
            continue;
        sched_request req;
        sched_decision d;
        vf_error err;
        vf_error_init(&err);
        int rc = run_case(text, &req, &d, &err);
        if (valid) {
            CHECKF(rc == 0, "%s: %s", file, err.text);
        } else {
            snprintf(file + strlen(file) - 5, 8, ".error");
            char *want = test_read_file(file, NULL);
            CHECKF(want != NULL, "missing %s", file);
            CHECKF(rc == -1, "%s was accepted", entry->d_name);
            CHECKF(err.code == VF_EINVAL, "%s: code %d", entry->d_name, err.code);
            if (want) {
                want[strcspn(want, "\n")] = '\0';
                CHECKF(strcmp(err.text, want) == 0, "%s: got \"%s\", want \"%s\"", entry->d_name,
                       err.text, want);
            }
            free(want);
        }
        free(text);
    }
    closedir(dir);
    CHECKF(cases >= 5, "only %d cases in %s", cases, path);
}

static void test_full_request_fields(void)
{
    char *text = test_read_file("fixtures/requests/valid/full.json", NULL);
    json_t *body = json_loads(text, 0, NULL);
    sched_request req;
    vf_error err;
    vf_error_init(&err);
    CHECK(sched_request_parse(body, &req, &err) == 0);
    CHECK_STR(req.task_id, "team-a:build.42_x");
    CHECK(req.cpu == 4 && req.memory == 8192 && req.disk == 40);
    CHECK_STR(req.pool, "default");
    CHECK(!req.dedicated);
    CHECK_STR(req.vm_name, "worker-7");
    CHECK_STR(req.node_regex, "node[0-9]+");
    CHECK_STR(req.vmid_range, "100-150");
    CHECK_STR(req.vmid_regex, "(12[0-9]|130)");
    /* Round trip through the JSON the task row records. */
    json_t *again = sched_request_to_json(&req);
    sched_request copy;
    CHECK(sched_request_parse(again, &copy, &err) == 0);
    CHECK(memcmp(&copy, &req, sizeof req) == 0);
    json_decref(again);
    json_decref(body);
    free(text);

    /* Defaults for what the prototype's clients leave out. */
    body = json_loads("{\"requested_cpu\": 2, \"requested_memory\": 1024}", 0, NULL);
    CHECK(sched_request_parse(body, &req, &err) == 0);
    CHECK_STR(req.pool, "default");
    CHECK(req.disk == 0 && !req.dedicated && req.task_id[0] == '\0');
    json_decref(body);
}

/* priority and priority_class: kept as given (queue_order resolves them),
 * echoed in the recorded request; null is absent. */
static void test_priority_fields(void)
{
    static const struct {
        const char *text;
        bool has_priority;
        int32_t priority;
        const char *priority_class;
    } cases[] = {
        {"{\"requested_cpu\":1,\"requested_memory\":1,\"priority\":-3}", true, -3, ""},
        {"{\"requested_cpu\":1,\"requested_memory\":1,\"priority_class\":\"high\","
         "\"priority\":1000}",
         true, 1000, "high"},
        {"{\"requested_cpu\":1,\"requested_memory\":1,\"priority_class\":\"high\"}", false, 0,
         "high"},
        {"{\"requested_cpu\":1,\"requested_memory\":1,\"priority\":null}", false, 0, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *body = json_loads(cases[i].text, 0, NULL);
        sched_request req, copy;
        vf_error err;
        vf_error_init(&err);
        CHECKF(sched_request_parse(body, &req, &err) == 0, "%s: %s", cases[i].text, err.text);
        CHECK(req.has_priority == cases[i].has_priority && req.priority == cases[i].priority);
        CHECK_STR(req.priority_class, cases[i].priority_class);
        json_t *again = sched_request_to_json(&req);
        CHECK(sched_request_parse(again, &copy, &err) == 0);
        CHECK(memcmp(&copy, &req, sizeof req) == 0);
        json_decref(again);
        json_decref(body);
    }
}

int main(void)
{
    vf_error err;
    vf_error_init(&err);
    hosts = hostset_new();
    host h = fixture_host("node1");
    CHECK(hostset_add(hosts, &h, &err) == 0);
    CHECK(hostset_finish(hosts, &err) == 0);
    sched_params params;
    fixture_params(&params);
    engine = sched_engine_new(&params, &err);
    CHECK(sched_engine_set_hosts(engine, hosts, NULL, NULL, &err) == 0);

    run_folder("valid", true);
    run_folder("invalid", false);
    test_full_request_fields();
    test_priority_fields();

    sched_engine_free(engine);
    hostset_free(hosts);
    return test_summary();
}
