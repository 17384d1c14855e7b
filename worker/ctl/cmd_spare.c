/* virtflowctl spare prepare|release: publish one spare.prepare or
 * spare.release request, confirmed by the broker, and with --wait follow it
 * to its end through the events the worker publishes (a spare's end comes
 * from the spare driver long after the request was acked, so reply_to never
 * carries it). The events are read from a private queue bound before the
 * request is published, so none is missed; only events whose AMQP user_id
 * is a trusted publisher (relay.trusted_publishers) are believed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_types.h"
#include "ctl.h"
#include "ids.h"

#define DEFAULT_WAIT_S 1800

static void spare_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl spare prepare [-c CONFIG] (-f REQUEST.json | --upgrade-id ID\n"
            "                         --count N --cpu N --memory MiB [--disk GiB] [--pool NAME]\n"
            "                         [--dedicated] [--annotation KEY=VALUE]... [--cluster NAME]\n"
            "                         [--ready-timeout S]) [--task-id ID] [--wait [--timeout S]]\n"
            "                         [--json]\n"
            "       virtflowctl spare release [-c CONFIG] --upgrade-id ID [--task-id ID]\n"
            "                         [--wait [--timeout S]] [--json]\n"
            "\n"
            "Publish a spare.prepare (provision spare nodes for a cluster upgrade) or a\n"
            "spare.release (deprovision them) to exchange virtflow, wait for the broker's\n"
            "confirm, and print the task id (the body's task_id, else --task-id, else a new\n"
            "tsk_... id; it is also the message_id).\n"
            "\n"
            "  --upgrade-id ID     the upgrade the spares are for (prepare and release)\n"
            "  --count N           how many spares, each on its own host when\n"
            "                      spare.anti_affinity_strict (prepare)\n"
            "  --cluster NAME      the cluster they join (spare.clusters) (prepare)\n"
            "  --ready-timeout S   how long a spare may take to become Ready (prepare)\n"
            "  --wait              follow the task through its events (spare.provisioning,\n"
            "                      spare.waiting_ready, task.retrying, one line each) until\n"
            "                      spare.ready, spare.released or spare.failed\n"
            "  --timeout S         how long --wait waits (default %d s)\n"
            "  --json              print {\"task_id\": ...}, or with --wait the final event\n"
            "\n"
            "exit status: 0 published (with --wait: ready or released), 1 failed\n"
            "(unschedulable, exhausted), 2 usage or invalid request, 3 configuration error,\n"
            "4 broker unreachable or publish not confirmed, 5 --wait timed out: published,\n"
            "but not ended within --timeout (see virtflowctl task ID).\n",
            DEFAULT_WAIT_S);
}

typedef struct spare_options {
    bool prepare; /* else release */
    const char *config_path;
    const char *request_path;
    const char *task_id;
    bool json;
    bool wait;
    long timeout_s;
    json_t *flags; /* the body built from flags */
    bool any_flag;
} spare_options;

/* Returns 0, 1 for --help (printed), -1 on a usage error (printed). */
static int parse_options(int argc, char **argv, spare_options *opt)
{
    const char *upgrade_id = NULL, *cluster = NULL;
    long count = 0, ready_timeout = 0;
    json_t *placement = opt->flags; /* what --cpu, --memory, ... set */
    const ctl_option options[] = {
        {"file", 'f', CTL_OPTION_PATH, &opt->request_path, NULL, NULL, NULL, NULL},
        CTL_REQUEST_OPTIONS(placement),
        {"task-id", 0, CTL_OPTION_STRING, &opt->task_id, NULL, NULL, NULL, NULL},
        {"wait", 0, CTL_OPTION_SET, &opt->wait, NULL, NULL, NULL, NULL},
        {"timeout", 0, CTL_OPTION_POSITIVE, &opt->timeout_s, NULL, NULL, NULL, NULL},
        {"upgrade-id", 0, CTL_OPTION_STRING, &upgrade_id, NULL, NULL, NULL, NULL},
        {"count", 0, CTL_OPTION_POSITIVE, &count, NULL, NULL, NULL, NULL},
        {"cluster", 0, CTL_OPTION_STRING, &cluster, NULL, NULL, NULL, NULL},
        {"ready-timeout", 0, CTL_OPTION_POSITIVE, &ready_timeout, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int rc = ctl_options_parse("spare", argc, argv, options, spare_usage, false, &args);
    if (rc >= 0)
        return rc == CTL_EXIT_OK ? 1 : -1;
    opt->config_path = args.config_path;
    opt->json = args.json;
    if (args.operand_count < 1) {
        spare_usage(stderr);
        return -1;
    }
    if (strcmp(args.operands[0], "prepare") != 0 && strcmp(args.operands[0], "release") != 0) {
        ctl_error("spare: unknown action '%s' (prepare or release)", args.operands[0]);
        return -1;
    }
    opt->prepare = strcmp(args.operands[0], "prepare") == 0;
    if (args.operand_count > 1) {
        ctl_error("spare: unexpected argument '%s'", args.operands[1]);
        return -1;
    }
    if (json_object_get(placement, "vm_name")) {
        ctl_error("spare: --vm-name does not apply: spare names come from spare.name_pattern");
        return -1;
    }
    if (json_object_get(placement, "node_name")) {
        ctl_error("spare: --node-name does not apply: name a host with --annotation "
                  "node.qemu-scheduler/name=HOST");
        return -1;
    }
    if (json_object_get(placement, "scheduler_name")) {
        ctl_error("spare: --scheduler does not apply: spares are placed by the default profile");
        return -1;
    }
    bool prepare_flags =
        json_object_size(placement) > 0 || count > 0 || cluster || ready_timeout > 0;
    if (!opt->prepare && prepare_flags) {
        ctl_error("spare release: takes only --upgrade-id (placement flags are for prepare)");
        return -1;
    }
    if (upgrade_id)
        json_object_set_new(placement, "upgrade_id", json_string(upgrade_id));
    if (cluster)
        json_object_set_new(placement, "cluster", json_string(cluster));
    if (count > 0)
        json_object_set_new(placement, "count", json_integer(count));
    if (ready_timeout > 0)
        json_object_set_new(placement, "ready_timeout_s", json_integer(ready_timeout));
    opt->any_flag = json_object_size(placement) > 0;
    if (opt->request_path && opt->any_flag) {
        ctl_error("spare: give the request either with -f or with flags, not both");
        return -1;
    }
    if (!opt->request_path && !upgrade_id) {
        ctl_error("spare: no request: give -f REQUEST.json or --upgrade-id ID");
        return -1;
    }
    return 0;
}

static void print_spares(json_t *spares)
{
    size_t i;
    json_t *spare;
    json_array_foreach(spares, i, spare)
    {
        if (json_is_string(spare)) {
            printf("  %s\n", ctl_text(json_string_value(spare)));
            continue;
        }
        printf("  %s on %s (%s), vmid %lld\n",
               ctl_text(json_string_value(json_object_get(spare, "name"))),
               ctl_text(json_string_value(json_object_get(spare, "host"))),
               ctl_text(json_string_value(json_object_get(spare, "ip"))),
               (long long)json_integer_value(json_object_get(spare, "vmid")));
    }
}

/* One event of our task (ctl_request.on_event; ctx: a bool, --json).
 * Returns -1 while the task goes on, else the exit status (the event was
 * final). */
static int follow_event(const char *type_name, json_t *data, void *ctx)
{
    bool as_json = *(const bool *)ctx;
    const char *error = json_string_value(json_object_get(data, "error"));
    const char *reason = json_string_value(json_object_get(data, "reason"));
    int type = event_types_find(type_name);
    bool final = type >= 0 && event_types_is_final((event_type)type);
    bool done = type == EVENT_SPARE_READY || type == EVENT_SPARE_RELEASED;
    if (as_json) {
        if (final)
            ctl_print_json(data);
    } else if (type == EVENT_SPARE_PROVISIONING) {
        printf("provisioning:\n");
        print_spares(json_object_get(data, "spares"));
    } else if (type == EVENT_SPARE_WAITING_READY) {
        printf("waiting_ready: %lld spares created, waiting for Kubernetes Ready\n",
               (long long)json_integer_value(json_object_get(data, "count")));
    } else if (type == EVENT_TASK_RETRYING) {
        ctl_print_retrying(data);
    } else if (done) {
        printf("%s:\n", type == EVENT_SPARE_READY ? "ready" : "released");
        print_spares(json_object_get(data, "spares"));
    } else if (final) {
        printf("failed (%s): %s\n", reason ? ctl_text(reason) : "no reason", ctl_text(error));
    }
    fflush(stdout);
    if (!final)
        return -1;
    if (done)
        return CTL_EXIT_OK;
    if (reason && strcmp(reason, "invalid") == 0)
        return CTL_EXIT_USAGE;
    return CTL_EXIT_NEGATIVE;
}

int ctl_spare(int argc, char **argv)
{
    int status = CTL_EXIT_USAGE;
    spare_options opt = {.timeout_s = DEFAULT_WAIT_S, .flags = json_object()};
    vf_config *config = NULL;
    char *body = NULL;
    char task_id[CTL_TASK_ID_SIZE];

    int parsed = parse_options(argc, argv, &opt);
    if (parsed != 0) {
        status = parsed > 0 ? CTL_EXIT_OK : CTL_EXIT_USAGE;
        goto out;
    }
    /* spare.release takes only upgrade_id: its task id travels as the
     * message_id. A prepare built from flags carries it in the body too. */
    if (!(body = ctl_request_body(opt.request_path, opt.flags, opt.task_id,
                                  !opt.request_path && opt.prepare, task_id)))
        goto out;
    status = CTL_EXIT_CONFIG;
    if (!(config = ctl_load_config_writing(opt.config_path, "spare")))
        goto out;
    static const char *const watched[] = {"event.spare.#", "event.task.retrying",
                                          "event.task.failed", NULL};
    ctl_request request = {.command = "spare",
                           .routing_key =
                               opt.prepare ? BROKER_KEY_SPARE_PREPARE : BROKER_KEY_SPARE_RELEASE,
                           .body = body,
                           .id = task_id,
                           .wait_s = opt.wait ? opt.timeout_s : 0,
                           .announce = opt.json ? NULL : task_id,
                           .event_keys = watched,
                           .on_event = follow_event,
                           .event_ctx = &opt.json};
    json_t *unused = NULL;
    status = ctl_publish_request(config, &request, &unused);
    json_decref(unused);
    if (status == CTL_EXIT_OK && opt.json && !opt.wait) {
        json_t *obj = json_pack("{s:s}", "task_id", task_id);
        ctl_print_json(obj);
        json_decref(obj);
    }
out:
    config_free(config);
    free(body);
    json_decref(opt.flags);
    return status;
}
