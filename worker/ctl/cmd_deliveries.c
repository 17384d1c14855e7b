/* virtflowctl deliveries / redeliver: the relay's webhook deliveries as the
 * store records them, and the operator's way to send one again. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "store.h"
#include "store_deliveries.h"

static void deliveries_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl deliveries [-c CONFIG] [--status S] [--receiver R] [--event ID]\n"
            "                              [--limit N] [--json]\n"
            "\n"
            "List webhook deliveries, newest first, from the store (opened read-only).\n"
            "Status: pending, delivering, delivered, failed.\n"
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
        json_t *obj = json_object();
        json_object_set_new(obj, "event_id", json_string(d->event_id));
        json_object_set_new(obj, "receiver", json_string(d->receiver));
        json_object_set_new(obj, "status", json_string(d->status));
        json_object_set_new(obj, "attempts", json_integer(d->attempts));
        json_object_set_new(obj, "next_attempt_at",
                            d->next_attempt_at ? json_string(d->next_attempt_at) : json_null());
        json_object_set_new(obj, "last_code",
                            d->last_code ? json_integer(d->last_code) : json_null());
        json_object_set_new(obj, "last_error",
                            d->last_error ? json_string(d->last_error) : json_null());
        json_object_set_new(obj, "delivered_at",
                            d->delivered_at ? json_string(d->delivered_at) : json_null());
        json_object_set_new(obj, "created_at", json_string(d->created_at));
        json_array_append_new(ctx->array, obj);
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
    vf_config *config = ctl_load_config(config_path);
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
    enum { OPT_STATUS = 256, OPT_RECEIVER, OPT_EVENT, OPT_LIMIT, OPT_JSON };
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"status", required_argument, NULL, OPT_STATUS},
        {"receiver", required_argument, NULL, OPT_RECEIVER},
        {"event", required_argument, NULL, OPT_EVENT},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = NULL;
    store_delivery_filter filter = {0};
    list_ctx ctx = {0};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config_path = optarg;
            break;
        case OPT_STATUS:
            if (strcmp(optarg, "pending") && strcmp(optarg, "delivering") &&
                strcmp(optarg, "delivered") && strcmp(optarg, "failed")) {
                ctl_error("--status: expected pending, delivering, delivered or failed");
                return CTL_EXIT_USAGE;
            }
            filter.status = optarg;
            break;
        case OPT_RECEIVER:
            filter.receiver = optarg;
            break;
        case OPT_EVENT:
            filter.event_id = optarg;
            break;
        case OPT_LIMIT:
            filter.limit = atoi(optarg);
            if (filter.limit <= 0) {
                ctl_error("--limit: expected a positive number");
                return CTL_EXIT_USAGE;
            }
            break;
        case OPT_JSON:
            ctx.json = true;
            break;
        case 'h':
            deliveries_usage(stdout);
            return CTL_EXIT_OK;
        default:
            deliveries_usage(stderr);
            return CTL_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        ctl_error("unexpected argument '%s'", argv[optind]);
        return CTL_EXIT_USAGE;
    }
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
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"receiver", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = NULL, *receiver = NULL;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "c:r:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config_path = optarg;
            break;
        case 'r':
            receiver = optarg;
            break;
        case 'h':
            redeliver_usage(stdout);
            return CTL_EXIT_OK;
        default:
            redeliver_usage(stderr);
            return CTL_EXIT_USAGE;
        }
    }
    if (optind + 1 != argc) {
        ctl_error("give exactly one EVENT_ID (try virtflowctl redeliver --help)");
        return CTL_EXIT_USAGE;
    }
    const char *event_id = argv[optind];
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
