/* virtflowctl submit: publish one task.schedule request, confirmed by the
 * broker, and optionally wait for the worker's answer through reply_to. */
#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "engine.h"
#include "ids.h"
#include "inventory.h"
#include "never_fits.h"
#include "request.h"
#include "task_intake.h"
#include "queue_order.h"

#define DEFAULT_WAIT_S 60

static void submit_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl submit [-c CONFIG] (-f REQUEST.json | --cpu N --memory MiB\n"
            "                          [--disk GiB] [--pool NAME] [--dedicated] [--vm-name NAME]\n"
            "                          [--node-name HOST] [--scheduler PROFILE]\n"
            "                          [--annotation KEY=VALUE]...) [--task-id ID]\n"
            "                          [--wait [--timeout S]] [--json]\n"
            "\n"
            "Check the request as the worker will (exit 2 and the reason when it would\n"
            "fail as invalid, or as never_fits: no host of the configured inventory could\n"
            "hold it even empty; nothing is published), record it in the store as queued (so\n"
            "virtflowctl task ID finds it at once; without a store this machine can write,\n"
            "a note says so and the worker records it when it takes it), publish it to\n"
            "exchange virtflow, wait for the broker's confirm (refused: the queued row is\n"
            "removed again), and print the task id (the body's task_id, else --task-id, "
            "else a new\n"
            "tsk_... id; it is also the message_id).\n"
            "\n"
            "  -f FILE             the request body as JSON ('-' for stdin), sent as it is\n"
            "  --wait              wait for the worker's result (through a private reply queue,\n"
            "                      reply_to + correlation_id) and print the decision; each\n"
            "                      retry is printed as it is scheduled (not with --json)\n"
            "  --timeout S         how long --wait waits (default %d s); a task that is being\n"
            "                      retried answers only when it is final\n"
            "  --json              print {\"task_id\": ...}, or with --wait the result object\n"
            "\n"
            "examples:\n"
            "  virtflowctl submit --cpu 2 --memory 2048 --vm-name web-1 --wait\n"
            "  virtflowctl submit -f request.json --wait --timeout 60 --json\n"
            "\n"
            "exit status: 0 submitted (with --wait: completed), 1 failed (unschedulable,\n"
            "exhausted, never_fits), 2 usage, invalid or never-fitting request (nothing\n"
            "published), 3 configuration\n"
            "error, 4 broker unreachable or publish not confirmed (or the connection lost\n"
            "while waiting), 5 --wait timed out: published, but not final within --timeout\n"
            "(still queued, running or being retried; see virtflowctl task ID).\n",
            DEFAULT_WAIT_S);
}

typedef struct submit_options {
    const char *config_path;
    const char *request_path;
    const char *task_id;
    bool json;
    bool wait;
    long timeout_s;
    json_t *flags;
    bool any_flag;
} submit_options;

/* Returns 0, 1 for --help (printed), -1 on a usage error (printed). */
static int parse_options(int argc, char **argv, submit_options *opt)
{
    const ctl_option options[] = {
        {"file", 'f', CTL_OPTION_PATH, &opt->request_path, NULL, NULL, NULL, NULL},
        CTL_REQUEST_OPTIONS(opt->flags),
        {"task-id", 0, CTL_OPTION_STRING, &opt->task_id, NULL, NULL, NULL, NULL},
        {"wait", 0, CTL_OPTION_SET, &opt->wait, NULL, NULL, NULL, NULL},
        {"timeout", 0, CTL_OPTION_POSITIVE, &opt->timeout_s, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int rc = ctl_options_parse("submit", argc, argv, options, submit_usage, false, &args);
    if (rc >= 0)
        return rc == CTL_EXIT_OK ? 1 : -1;
    opt->config_path = args.config_path;
    opt->json = args.json;
    opt->any_flag = json_object_size(opt->flags) > 0;
    if (args.operand_count > 0) {
        ctl_error("submit: unexpected argument '%s'", args.operands[0]);
        return -1;
    }
    if (opt->request_path && opt->any_flag) {
        ctl_error("submit: give the request either with -f or with flags, not both");
        return -1;
    }
    if (!opt->request_path && !opt->any_flag) {
        ctl_error("submit: no request: give -f REQUEST.json or --cpu N --memory MiB");
        return -1;
    }
    return 0;
}

/* The worker's own check of a task.schedule body (sched_request_parse), so a
 * request it would fail as invalid is refused here, before it is published.
 * Returns 0, or -1 after printing why (as `place` does, --json too). */
static int check_request(const char *body, bool as_json)
{
    vf_error err;
    vf_error_init(&err);
    sched_request req;
    json_t *parsed = json_loads(body, 0, NULL);
    int rc = parsed ? sched_request_parse(parsed, &req, &err) : -1;
    json_decref(parsed);
    if (rc == 0)
        return 0;
    if (!parsed)
        vf_error_set(&err, VF_EINVAL, "not a JSON object");
    if (as_json) {
        json_t *result = json_pack("{s:s, s:s, s:s}", "status", "failed", "reason", "invalid",
                                   "error", err.text);
        ctl_print_json(result);
        json_decref(result);
    }
    ctl_error("invalid request: %s (not published)", err.text);
    return -1;
}

/* scheduler.unfit_requests: fail: a request no host of the inventory could
 * hold even empty (never_fits.h) is refused here, as the worker would fail
 * it at once. The inventory is read as `place` reads it; when it cannot be
 * (a remote source out of reach from here) the request goes out unchecked
 * and the worker decides. Returns 0, or -1 after printing why. */
static int check_fits(const vf_config *config, const char *body, bool as_json)
{
    if (config->scheduler.unfit_requests != CONFIG_UNFIT_FAIL)
        return 0;
    int rc = 0;
    vf_error err;
    vf_error_init(&err);
    sched_request req;
    sched_engine *engine = NULL;
    inventory *inv = NULL;
    hostset *hosts = NULL;
    json_t *parsed = json_loads(body, 0, NULL);
    if (!parsed || sched_request_parse(parsed, &req, &err) < 0)
        goto out; /* check_request said so already */
    /* The request's profile decides, with its own filters (as the worker). */
    engine = sched_engine_from_config(config, NULL, &err);
    if (!engine || !(inv = inventory_new(config, &err)) || !(hosts = inventory_fetch(inv, &err)) ||
        sched_engine_set_hosts(engine, hosts, NULL, NULL, &err) < 0) {
        fprintf(stderr, "virtflowctl: submit: not checked against the inventory (%s)\n",
                ctl_text(err.text));
        goto out;
    }
    /* An unknown profile waits at the worker (unknown_scheduler): not ours. */
    sched_engine *decider = sched_engine_profile(engine, req.scheduler_name);
    char never[512];
    if (!decider || !sched_never_fits(decider, &req, never, sizeof never))
        goto out;
    rc = -1;
    if (as_json) {
        json_t *result = json_pack("{s:s, s:s, s:s}", "status", "failed", "reason", "never_fits",
                                   "error", never);
        ctl_print_json(result);
        json_decref(result);
    }
    ctl_error("never fits: %s (not published; scheduler.unfit_requests: wait lets it wait for "
              "the inventory)",
              never);
out:
    json_decref(parsed);
    sched_engine_free(engine);
    hostset_free(hosts);
    inventory_free(inv);
    return rc;
}

/* Record the task as queued before it is published (task_intake_record, as
 * virtflow-api does), so virtflowctl task ID finds it at once. A store this
 * machine cannot write (none here, unreachable, no permission) only costs
 * that: the request is published anyway and the worker records the task when
 * it takes it, as before. Returns the open store when this call recorded the
 * task (the caller withdraws it if the publish is refused), else NULL. */
static store *record_queued(const vf_config *config, const char *task_id, const char *body)
{
    struct stat st;
    const char *path = config->store.url ? NULL : config->store.path;
    if (path && stat(path, &st) != 0) {
        ctl_error("%s: not recorded in the store (no store at %s, never created by a worker): "
                  "virtflowctl task %s answers once a worker has taken it",
                  task_id, path, task_id);
        return NULL;
    }
    store *s = ctl_open_store(config, STORE_READ_WRITE);
    vf_error err;
    vf_error_init(&err);
    int rc = s ? task_intake_record(s, task_id, body, "virtflowctl", NULL, &err) : -1;
    if (rc == 0)
        return s;
    if (rc < 0)
        ctl_error("%s: not recorded in the store (%s): virtflowctl task %s answers once a worker "
                  "has taken it",
                  task_id, s ? err.text : "cannot open it", task_id);
    store_close(s); /* rc 1: recorded before (a task id given again): the worker decides once */
    return NULL;
}

/* The publish was refused: no queued row may stay for a message that does
 * not exist (a worker that has taken it meanwhile keeps it). */
static void withdraw(store *s, const char *task_id)
{
    vf_error err;
    vf_error_init(&err);
    if (task_intake_withdraw(s, task_id, &err) < 0)
        ctl_error("%s: could not take the queued row back: %s", task_id, err.text);
}

/* Print the worker's result and turn it into the exit status. */
static int report_result(json_t *result, bool as_json)
{
    const char *status = json_string_value(json_object_get(result, "status"));
    const char *reason = json_string_value(json_object_get(result, "reason"));
    if (as_json) {
        ctl_print_json(result);
    } else if (status && strcmp(status, "completed") == 0) {
        json_t *node = json_object_get(result, "node");
        printf("completed: node %s (%s, pool %s), vmid %lld, score %.2f, attempts %lld\n",
               ctl_text(json_string_value(json_object_get(node, "name"))),
               ctl_text(json_string_value(json_object_get(node, "ip"))),
               ctl_text(json_string_value(json_object_get(node, "pool"))),
               (long long)json_integer_value(json_object_get(result, "vmid")),
               json_number_value(json_object_get(result, "score")),
               (long long)json_integer_value(json_object_get(result, "attempts")));
    } else {
        const char *error = json_string_value(json_object_get(result, "error"));
        printf("%s (%s): %s\n", status ? ctl_text(status) : "unknown",
               reason ? ctl_text(reason) : "no reason", ctl_text(error));
    }
    if (status && strcmp(status, "completed") == 0)
        return CTL_EXIT_OK;
    if (reason && strcmp(reason, "invalid") == 0)
        return CTL_EXIT_USAGE;
    return CTL_EXIT_NEGATIVE;
}

int ctl_submit(int argc, char **argv)
{
    int status = CTL_EXIT_USAGE;
    submit_options opt = {.timeout_s = DEFAULT_WAIT_S, .flags = json_object()};
    vf_config *config = NULL;
    store *recorded = NULL;
    char *body = NULL;
    char task_id[CTL_TASK_ID_SIZE];

    int parsed = parse_options(argc, argv, &opt);
    if (parsed != 0) {
        status = parsed > 0 ? CTL_EXIT_OK : CTL_EXIT_USAGE;
        goto out;
    }
    /* Flags build the body, so the id can travel in it too (readable in the
     * store's request column); a file's body is sent exactly as written. */
    if (!(body = ctl_request_body(opt.request_path, opt.flags, opt.task_id, !opt.request_path,
                                  task_id)))
        goto out;
    if (check_request(body, opt.json) < 0)
        goto out;
    status = CTL_EXIT_CONFIG;
    if (!(config = ctl_load_config_writing(opt.config_path, "submit")))
        goto out;
    status = CTL_EXIT_USAGE;
    if (check_fits(config, body, opt.json) < 0)
        goto out;
    recorded = record_queued(config, task_id, body);
    bool confirmed = false;
    ctl_request request = {.command = "submit",
                           .routing_key = queue_order_text_routing_key(body, strlen(body), config),
                           .body = body,
                           .id = task_id,
                           .wait_s = opt.wait ? opt.timeout_s : 0,
                           .announce = opt.json ? NULL : task_id,
                           .progress = !opt.json,
                           .confirmed = &confirmed};
    json_t *result = NULL;
    status = ctl_publish_request(config, &request, &result);
    if (recorded && !confirmed)
        withdraw(recorded, task_id);
    store_close(recorded);
    recorded = NULL;
    if (status != CTL_EXIT_OK)
        goto out;
    if (!opt.wait) {
        if (opt.json) {
            json_t *obj = json_pack("{s:s}", "task_id", task_id);
            ctl_print_json(obj);
            json_decref(obj);
        }
        goto out;
    }
    status = report_result(result, opt.json);
    json_decref(result);
out:
    store_close(recorded);
    config_free(config);
    free(body);
    json_decref(opt.flags);
    return status;
}
