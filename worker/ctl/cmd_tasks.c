/* virtflowctl tasks: the store's tasks, newest first, with filters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_watch.h"
#include "ctl.h"
#include "store_tasks.h"
#include "task_view.h"

#define DEFAULT_LIMIT 50

static void tasks_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl tasks [-c CONFIG] [--status S] [--reason R] [--kind K]\n"
            "                         [--since WHEN] [--node NAME] [--vm-name NAME]\n"
            "                         [--submitter NAME] [--error TEXT] [--limit N] [--json]\n"
            "       virtflowctl tasks --watch [-c CONFIG] [--since WHEN|EVENT_ID] [--json]\n"
            "\n"
            "List tasks, newest first, from the store (opened read-only).\n"
            "\n"
            "  --status S   queued, processing, retrying, completed, failed (spare tasks:\n"
            "               provisioning, waiting_ready, ready, releasing, released)\n"
            "  --reason R   invalid, unschedulable, exhausted (failed tasks)\n"
            "  --kind K     schedule or spare\n"
            "  --since WHEN created since 30m, 1h, 2d, 45s ago, or an RFC 3339 UTC time\n"
            "               (2026-11-22T01:02:03Z)\n"
            "  --node NAME  placed on this host\n"
            "  --vm-name NAME  asked for a VM of this name (the request's vm_name)\n"
            "  --submitter NAME  submitted by this virtflow-api key (its name) or this\n"
            "               broker user (the AMQP user_id of the message a worker took)\n"
            "  --error TEXT its last error contains TEXT (ASCII case ignored)\n"
            "  --limit N    at most N tasks (default %d)\n"
            "  --json       an array of task objects: id, kind, status, reason, attempts,\n"
            "               node, vmid, error, created_at, updated_at, request, result\n"
            "  --watch      follow every event virtflow publishes instead (the outbox, as\n"
            "               GET /v1/events streams it): from --since (a time, or after an\n"
            "               event id), else from now, one line each (time, type, task,\n"
            "               status; --json: the event), until interrupted\n"
            "\n"
            "Filters combine (all must match).\n"
            "\n"
            "examples:\n"
            "  virtflowctl tasks --vm-name web-1\n"
            "  virtflowctl tasks --status failed --since 1h --error 'insufficient cpu'\n"
            "  virtflowctl tasks --submitter ci-pipeline --json\n"
            "\n"
            "exit status: 0 ok (also when nothing matches), 2 usage, 3 configuration error,\n"
            "4 store unreachable.\n",
            DEFAULT_LIMIT);
}

typedef struct list_ctx {
    bool json;
    json_t *array;
    int count;
} list_ctx;

static int print_task(const store_task *t, void *user)
{
    list_ctx *ctx = user;
    ctx->count++;
    if (ctx->json) {
        json_array_append_new(ctx->array, ctl_task_json(t));
        return 0;
    }
    char vmid[24] = "-";
    if (t->vmid >= 0)
        snprintf(vmid, sizeof vmid, "%lld", (long long)t->vmid);
    printf("%-40s %-8s %-10s %-13s %3d %-16s %6s %-24s %.60s\n", ctl_text(t->id), ctl_text(t->kind),
           ctl_text(t->status), t->reason ? ctl_text(t->reason) : "-", t->attempts,
           t->node ? ctl_text(t->node) : "-", vmid, ctl_text(t->created_at), ctl_text(t->error));
    return 0;
}

int ctl_tasks(int argc, char **argv)
{
    store_task_filter filter = {.limit = DEFAULT_LIMIT};
    const char *since_text = NULL;
    long limit = 0;
    bool watch = false;
    const ctl_option options[] = {
        {"status", 0, CTL_OPTION_CHOICE, &filter.status, task_view_statuses, NULL, NULL, NULL},
        {"reason", 0, CTL_OPTION_CHOICE, &filter.reason, task_view_reasons, NULL, NULL, NULL},
        {"kind", 0, CTL_OPTION_CHOICE, &filter.kind, task_view_kinds, NULL, NULL, NULL},
        {"since", 0, CTL_OPTION_STRING, &since_text, NULL, NULL, NULL, NULL},
        {"node", 0, CTL_OPTION_STRING, &filter.node, NULL, NULL, NULL, "@hosts"},
        {"vm-name", 0, CTL_OPTION_STRING, &filter.vm_name, NULL, NULL, NULL, NULL},
        {"submitter", 0, CTL_OPTION_STRING, &filter.submitter, NULL, NULL, NULL, NULL},
        {"error", 0, CTL_OPTION_STRING, &filter.error, NULL, NULL, NULL, NULL},
        {"limit", 0, CTL_OPTION_POSITIVE, &limit, NULL, NULL, NULL, NULL},
        {"watch", 'w', CTL_OPTION_SET, &watch, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed = ctl_options_parse("tasks", argc, argv, options, tasks_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    if (watch) {
        if (filter.status || filter.reason || filter.kind || filter.node || limit ||
            args.operand_count > 0) {
            ctl_error("tasks --watch: only --since goes with it (every event is shown)");
            return CTL_EXIT_USAGE;
        }
        return ctl_tasks_watch(args.config_path, since_text, args.json);
    }
    char since[STORE_TIME_SIZE];
    if (since_text) {
        if (ctl_parse_since(since_text, since) < 0) {
            ctl_error("--since: expected 30m, 1h, 2d, 45s or an RFC 3339 UTC time like "
                      "2026-11-22T01:02:03Z, got '%s'",
                      since_text);
            return CTL_EXIT_USAGE;
        }
        filter.since = since;
    }
    if (limit > 0)
        filter.limit = limit > 1000000 ? 1000000 : (int)limit;
    if (args.operand_count > 0) {
        ctl_error("tasks: unexpected argument '%s' (for one task: virtflowctl task ID)",
                  args.operands[0]);
        return CTL_EXIT_USAGE;
    }
    list_ctx ctx = {.json = args.json};
    const char *config_path = args.config_path;
    vf_config *config = ctl_load_config(config_path);
    if (!config)
        return CTL_EXIT_CONFIG;
    int rc = CTL_EXIT_UNAVAILABLE;
    store *s = ctl_open_store(config, STORE_READ_ONLY);
    if (!s)
        goto out;
    if (ctx.json)
        ctx.array = json_array();
    else
        printf("%-40s %-8s %-10s %-13s %3s %-16s %6s %-24s %s\n", "TASK", "KIND", "STATUS",
               "REASON", "ATT", "NODE", "VMID", "CREATED", "ERROR");
    vf_error err;
    vf_error_init(&err);
    if (store_task_list(s, &filter, print_task, &ctx, &err) < 0) {
        ctl_error("%s", err.text);
        goto out;
    }
    if (ctx.json)
        ctl_print_json(ctx.array);
    else if (ctx.count == filter.limit)
        fprintf(stderr, "(showing the newest %d; --limit N for more)\n", ctx.count);
    rc = CTL_EXIT_OK;
out:
    json_decref(ctx.array);
    store_close(s);
    config_free(config);
    return rc;
}
