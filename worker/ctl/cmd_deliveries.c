/* virtflowctl deliveries / redeliver: the relay's webhook deliveries as the
 * store records them, and the operator's way to send one again. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "delivery_view.h"
#include "store.h"
#include "store_deliveries.h"

static void deliveries_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl deliveries [-c CONFIG] [--status S] [--receiver R] [--event ID]\n"
            "                              [--limit N] [--json]\n"
            "\n"
            "List webhook deliveries, newest first, from the store (opened read-only).\n"
            "\n"
            "  --status S    pending, delivering, delivered or failed\n"
            "  --receiver R  only the deliveries to receiver R (relay.receivers[].name)\n"
            "  --event ID    only the deliveries of event ID (evt_...)\n"
            "  --limit N     at most N deliveries\n"
            "\n"
            "examples:\n"
            "  virtflowctl deliveries --status failed --receiver upgradectrl\n"
            "  virtflowctl redeliver evt_019ab4c2d3e4f5a6b7c8d9e0f1a2b3c5\n"
            "\n"
            "exit status: 0 ok, 2 usage, 3 configuration error, 4 store unreachable.\n");
}

static void redeliver_usage(FILE *out)
{
    fprintf(out, "usage: virtflowctl redeliver [-c CONFIG] EVENT_ID [--receiver R]\n"
                 "\n"
                 "Send an event's webhook again: its failed or delivered deliveries (to R only,\n"
                 "if given) go back to pending, due now, with a fresh retry schedule. The running\n"
                 "virtflow-relay picks them up within a second.\n"
                 "\n"
                 "  -r, --receiver R  only the deliveries to receiver R\n"
                 "\n"
                 "exit status: 0 reset, 1 nothing to reset, 2 usage, 3 configuration error,\n"
                 "4 store unreachable.\n");
}

typedef struct list_ctx {
    bool json;
    json_t *array;
    size_t count;
} list_ctx;

static int print_delivery(const store_delivery *d, void *user)
{
    list_ctx *ctx = user;
    ctx->count++;
    if (ctx->json) {
        json_array_append_new(ctx->array, delivery_view_json(d));
        return 0;
    }
    char code[8] = "-";
    if (d->last_code)
        snprintf(code, sizeof code, "%d", d->last_code);
    const char *when = d->delivered_at      ? d->delivered_at
                       : d->next_attempt_at ? d->next_attempt_at
                                            : "-";
    printf("%-36s %-20s %-10s %8d %4s %-24s %.60s\n", ctl_text(d->event_id), ctl_text(d->receiver),
           ctl_text(d->status), d->attempts, code, ctl_text(when), ctl_text(d->last_error));
    return 0;
}

static store *open_store(const char *config_path, store_mode mode, vf_config **config_out,
                         int *exit_code)
{
    vf_config *config = mode == STORE_READ_WRITE ? ctl_load_config_writing(config_path, "redeliver")
                                                 : ctl_load_config(config_path);
    if (!config) {
        *exit_code = CTL_EXIT_CONFIG;
        return NULL;
    }
    store *s = ctl_open_store(config, mode);
    if (!s) {
        config_free(config);
        *exit_code = CTL_EXIT_UNAVAILABLE;
        return NULL;
    }
    *config_out = config;
    return s;
}

int ctl_deliveries(int argc, char **argv)
{
    store_delivery_filter filter = {0};
    long limit = 0;
    const ctl_option options[] = {
        {"status", 0, CTL_OPTION_CHOICE, &filter.status, delivery_view_statuses, NULL, NULL, NULL},
        {"receiver", 0, CTL_OPTION_STRING, &filter.receiver, NULL, NULL, NULL, "@receivers"},
        {"event", 0, CTL_OPTION_STRING, &filter.event_id, NULL, NULL, NULL, NULL},
        {"limit", 0, CTL_OPTION_POSITIVE, &limit, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed =
        ctl_options_parse("deliveries", argc, argv, options, deliveries_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    if (args.operand_count > 0) {
        ctl_error("unexpected argument '%s'", args.operands[0]);
        return CTL_EXIT_USAGE;
    }
    filter.limit = limit > INT_MAX ? INT_MAX : (int)limit;
    const char *config_path = args.config_path;
    list_ctx ctx = {.json = args.json};
    int rc = CTL_EXIT_OK;
    vf_config *config = NULL;
    store *s = open_store(config_path, STORE_READ_ONLY, &config, &rc);
    if (!s)
        return rc;
    if (ctx.json)
        ctx.array = json_array();
    else
        printf("%-36s %-20s %-10s %8s %4s %-24s %s\n", "EVENT", "RECEIVER", "STATUS", "ATTEMPTS",
               "CODE", "DELIVERED/NEXT", "LAST ERROR");
    vf_error err;
    vf_error_init(&err);
    if (store_delivery_list(s, &filter, print_delivery, &ctx, &err) < 0) {
        ctl_error("%s", err.text);
        rc = CTL_EXIT_UNAVAILABLE;
    } else if (ctx.json) {
        ctl_print_json(ctx.array);
    }
    json_decref(ctx.array);
    store_close(s);
    config_free(config);
    return rc;
}

int ctl_redeliver(int argc, char **argv)
{
    const char *receiver = NULL;
    const ctl_option options[] = {
        {"receiver", 'r', CTL_OPTION_STRING, &receiver, NULL, NULL, NULL, "@receivers"},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed = ctl_options_parse("redeliver", argc, argv, options, redeliver_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    if (args.operand_count != 1) {
        ctl_error("give exactly one EVENT_ID (try virtflowctl redeliver --help)");
        return CTL_EXIT_USAGE;
    }
    const char *config_path = args.config_path;
    const char *event_id = args.operands[0];
    int rc = CTL_EXIT_OK;
    vf_config *config = NULL;
    store *s = open_store(config_path, STORE_READ_WRITE, &config, &rc);
    if (!s)
        return rc;
    char now[STORE_TIME_SIZE];
    store_now(now);
    vf_error err;
    vf_error_init(&err);
    int changed = store_delivery_redeliver(s, event_id, receiver, now, &err);
    if (changed < 0) {
        ctl_error("%s", err.text);
        rc = CTL_EXIT_UNAVAILABLE;
    } else if (changed == 0) {
        ctl_error("no failed or delivered delivery of %s%s%s to reset", event_id,
                  receiver ? " to " : "", receiver ? receiver : "");
        rc = CTL_EXIT_NEGATIVE;
    } else {
        printf("%d deliver%s of %s reset to pending\n", changed, changed == 1 ? "y" : "ies",
               ctl_text(event_id));
    }
    store_close(s);
    config_free(config);
    return rc;
}
