/* virtflowctl tasks: the store's tasks, newest first, with filters. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "store_tasks.h"

#define DEFAULT_LIMIT 50

static void tasks_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl tasks [-c CONFIG] [--status S] [--reason R] [--kind K]\n"
            "                         [--since WHEN] [--node NAME] [--limit N] [--json]\n"
            "\n"
            "List tasks, newest first, from the store (opened read-only).\n"
            "\n"
            "  --status S   processing, retrying, completed, failed (spare tasks:\n"
            "               provisioning, waiting_ready, ready, releasing, released)\n"
            "  --reason R   invalid, unschedulable, exhausted (failed tasks)\n"
            "  --kind K     schedule or spare\n"
            "  --since WHEN created since 30m, 1h, 2d, 45s ago, or an RFC 3339 UTC time\n"
            "               (2026-11-22T01:02:03Z)\n"
            "  --node NAME  placed on this host\n"
            "  --limit N    at most N tasks (default %d)\n"
            "  --json       an array of task objects: id, kind, status, reason, attempts,\n"
            "               node, vmid, error, created_at, updated_at, request, result\n"
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
    enum { OPT_STATUS = 256, OPT_REASON, OPT_KIND, OPT_SINCE, OPT_NODE, OPT_LIMIT, OPT_JSON };
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"status", required_argument, NULL, OPT_STATUS},
        {"reason", required_argument, NULL, OPT_REASON},
        {"kind", required_argument, NULL, OPT_KIND},
        {"since", required_argument, NULL, OPT_SINCE},
        {"node", required_argument, NULL, OPT_NODE},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = NULL;
    store_task_filter filter = {.limit = DEFAULT_LIMIT};
    char since[STORE_TIME_SIZE];
    list_ctx ctx = {0};
    long limit = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config_path = optarg;
            break;
        case OPT_STATUS:
            filter.status = optarg;
            break;
        case OPT_REASON:
            if (strcmp(optarg, "invalid") && strcmp(optarg, "unschedulable") &&
                strcmp(optarg, "exhausted")) {
                ctl_error("--reason: expected invalid, unschedulable or exhausted");
                return CTL_EXIT_USAGE;
            }
            filter.reason = optarg;
            break;
        case OPT_KIND:
            if (strcmp(optarg, "schedule") && strcmp(optarg, "spare")) {
                ctl_error("--kind: expected schedule or spare");
                return CTL_EXIT_USAGE;
            }
            filter.kind = optarg;
            break;
        case OPT_SINCE:
            if (ctl_parse_since(optarg, since) < 0) {
                ctl_error("--since: expected 30m, 1h, 2d, 45s or an RFC 3339 UTC time like "
                          "2026-11-22T01:02:03Z, got '%s'",
                          optarg);
                return CTL_EXIT_USAGE;
            }
            filter.since = since;
            break;
        case OPT_NODE:
            filter.node = optarg;
            break;
        case OPT_LIMIT:
            if (ctl_parse_positive("--limit", optarg, &limit) < 0)
                return CTL_EXIT_USAGE;
            filter.limit = limit > 1000000 ? 1000000 : (int)limit;
            break;
        case OPT_JSON:
            ctx.json = true;
            break;
        case 'h':
            tasks_usage(stdout);
            return CTL_EXIT_OK;
        default:
            tasks_usage(stderr);
            return CTL_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        ctl_error("tasks: unexpected argument '%s' (for one task: virtflowctl task ID)",
                  argv[optind]);
        return CTL_EXIT_USAGE;
    }
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
