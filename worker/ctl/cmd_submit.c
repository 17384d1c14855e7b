/* virtflowctl submit: publish one task.schedule request, confirmed by the
 * broker, and optionally wait for the worker's answer through reply_to. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amqp_link_admin.h"
#include "clock.h"
#include "ctl.h"
#include "ids.h"

#define CONFIRM_TIMEOUT_MS 30000
#define DEFAULT_WAIT_S 60

static void submit_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl submit [-c CONFIG] (-f REQUEST.json | --cpu N --memory MiB\n"
            "                          [--disk GiB] [--pool NAME] [--dedicated] [--vm-name NAME]\n"
            "                          [--node-name HOST]\n"
            "                          [--annotation KEY=VALUE]...) [--task-id ID]\n"
            "                          [--wait [--timeout S]] [--json]\n"
            "\n"
            "Publish a task.schedule request to exchange virtflow, wait for the broker's\n"
            "confirm, and print the task id (the body's task_id, else --task-id, else a new\n"
            "tsk_... id; it is also the message_id).\n"
            "\n"
            "  -f FILE             the request body as JSON ('-' for stdin), sent as it is\n"
            "  --wait              wait for the worker's result (through a private reply queue,\n"
            "                      reply_to + correlation_id) and print the decision\n"
            "  --timeout S         how long --wait waits (default %d s); a task that is being\n"
            "                      retried answers only when it is final\n"
            "  --json              print {\"task_id\": ...}, or with --wait the result object\n"
            "\n"
            "exit status: 0 submitted (with --wait: completed), 1 failed (unschedulable,\n"
            "exhausted), 2 usage or invalid request, 3 configuration error, 4 broker\n"
            "unreachable, publish not confirmed, or no answer within --timeout.\n",
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
        {"file", 'f', CTL_OPTION_PATH, &opt->request_path, NULL, NULL, NULL},
        CTL_REQUEST_OPTIONS(opt->flags),
        {"task-id", 0, CTL_OPTION_STRING, &opt->task_id, NULL, NULL, NULL},
        {"wait", 0, CTL_OPTION_SET, &opt->wait, NULL, NULL, NULL},
        {"timeout", 0, CTL_OPTION_POSITIVE, &opt->timeout_s, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL},
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
    amqp_link *link = NULL;
    char *body = NULL;
    char task_id[CTL_TASK_ID_SIZE];
    vf_error err;
    vf_error_init(&err);

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
    status = CTL_EXIT_CONFIG;
    if (!(config = ctl_load_config(opt.config_path)))
        goto out;
    status = CTL_EXIT_UNAVAILABLE;
    if (!(link = ctl_connect(config, "submit")))
        goto out;
    ctl_confirm confirm = {0};
    amqp_link_set_confirm_callback(link, ctl_on_confirm, &confirm);
    char reply_queue[256] = "";
    if (opt.wait && amqp_link_reply_queue(link, reply_queue, sizeof reply_queue, &err) < 0) {
        ctl_error("cannot set up a reply queue: %s", err.text);
        goto out;
    }
    amqp_link_message msg = {.body = body,
                             .body_len = strlen(body),
                             .message_id = task_id,
                             .correlation_id = opt.wait ? task_id : NULL,
                             .reply_to = opt.wait ? reply_queue : NULL};
    if (amqp_link_publish(link, AMQP_TOPOLOGY_EXCHANGE, AMQP_TOPOLOGY_KEY_SCHEDULE, &msg, NULL,
                          &err) < 0 ||
        amqp_link_wait_confirms(link, CONFIRM_TIMEOUT_MS, &err) < 0) {
        ctl_error("publishing task %s: %s", task_id, err.text);
        goto out;
    }
    if (!confirm.ok) {
        ctl_error("the broker did not accept task %s: %s", task_id, confirm.reason);
        goto out;
    }
    if (!opt.wait) {
        if (opt.json) {
            json_t *obj = json_pack("{s:s}", "task_id", task_id);
            ctl_print_json(obj);
            json_decref(obj);
        } else {
            printf("%s\n", ctl_text(task_id));
        }
        status = CTL_EXIT_OK;
        goto out;
    }
    if (!opt.json) {
        printf("%s\n", ctl_text(task_id));
        fflush(stdout);
    }
    int64_t deadline = clock_mono_us() / 1000 + opt.timeout_s * 1000;
    for (;;) {
        int64_t left = deadline - clock_mono_us() / 1000;
        if (left <= 0) {
            ctl_error("no result for task %s within %ld s (it may still be retrying): see "
                      "virtflowctl task %s",
                      task_id, opt.timeout_s, task_id);
            goto out;
        }
        amqp_link_delivery reply;
        int got = amqp_link_next(link, &reply, (int)left, &err);
        if (got < 0) {
            ctl_error("waiting for task %s: %s (see virtflowctl task %s)", task_id, err.text,
                      task_id);
            goto out;
        }
        if (got == 0)
            continue;
        bool ours = reply.correlation_id && strcmp(reply.correlation_id, task_id) == 0;
        json_t *result = ours && reply.body ? json_loads((const char *)reply.body, 0, NULL) : NULL;
        /* The reply queue dies with the connection; an ack only keeps it tidy. */
        if (amqp_link_ack(link, reply.delivery_tag, false, NULL) < 0)
            ctl_error("could not ack the reply (harmless)");
        amqp_link_delivery_close(&reply);
        if (!ours)
            continue;
        if (!json_is_object(result)) {
            ctl_error("task %s: the worker's reply is not a JSON object", task_id);
            json_decref(result);
            goto out;
        }
        status = report_result(result, opt.json);
        json_decref(result);
        goto out;
    }
out:
    amqp_link_free(link);
    config_free(config);
    free(body);
    json_decref(opt.flags);
    return status;
}
