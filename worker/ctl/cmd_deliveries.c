/* virtflowctl deliveries / redeliver: the relay's webhook deliveries as the
 * store records them, and the operator's way to send one again, or every
 * one that failed to a receiver since a time (deliveries redeliver). */
#include <jansson.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "delivery_view.h"
#include "store.h"
#include "store_deliveries.h"
#include "store_receivers.h"

static void deliveries_usage(FILE *out)
{
    fprintf(
        out,
        "usage: virtflowctl deliveries [-c CONFIG] [--status S] [--receiver R] [--event ID]\n"
        "                              [--limit N] [--json]\n"
        "       virtflowctl deliveries redeliver [-c CONFIG] --receiver R --since AGE\n"
        "                              [--status failed|exhausted] [--rate N] [--id ID]\n"
        "                              [--wait] [--json]\n"
        "\n"
        "List webhook deliveries, newest first, from the store (opened read-only).\n"
        "\n"
        "  --status S    pending, delivering, delivered or failed (exhausted: the same as failed)\n"
        "  --receiver R  only the deliveries to receiver R (relay.receivers[].name)\n"
        "  --event ID    only the deliveries of event ID (evt_...)\n"
        "  --limit N     at most N deliveries\n"
        "  --since AGE   redeliver: the deliveries created since AGE (30m, 2h, 1d, or an\n"
        "                RFC 3339 UTC time)\n"
        "  --rate N      redeliver: N deliveries per second instead of the receiver's pace\n"
        "  --id ID       redeliver: the redelivery's name, so that the same command again\n"
        "                resets nothing twice\n"
        "  --wait        redeliver: follow its progress until every delivery it reset is\n"
        "                delivered or failed again\n"
        "\n"
        "examples:\n"
        "  virtflowctl deliveries --status failed --receiver upgradectrl\n"
        "  virtflowctl redeliver evt_019ab4c2d3e4f5a6b7c8d9e0f1a2b3c5\n"
        "  virtflowctl deliveries redeliver --receiver upgradectrl --since 2h --status failed\n"
        "\n"
        "redeliver  send again, in bulk, the deliveries to receiver R created since AGE\n"
        "           (30m, 2h, 1d, or an RFC 3339 UTC time) whose last attempt failed:\n"
        "           those waiting for a retry and those with no attempt left (--status\n"
        "           exhausted: only those). They go back to pending with a fresh retry\n"
        "           schedule, oldest first, and the running virtflow-relay sends them at\n"
        "           the receiver's pace (relay.receivers[].rate_per_s), or at N per second\n"
        "           with --rate N. Prints the redelivery's id; --id ID names it instead,\n"
        "           so that running the same command again resets nothing twice (the\n"
        "           same ID with other filters is refused). --wait follows its progress\n"
        "           until every delivery it reset is delivered or failed again.\n"
        "\n"
        "exit status: 0 ok, 1 redeliver: nothing matched, or --wait: some failed again,\n"
        "2 usage, 3 configuration error, 4 store unreachable.\n");
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

/* How often --wait reads the redelivery's progress again. */
#define REDELIVER_POLL_US 500000

static void print_redelivery(const store_redelivery *r, bool json)
{
    if (json) {
        json_t *value = delivery_view_redelivery_json(r);
        ctl_print_json(value);
        json_decref(value);
        return;
    }
    printf("redelivery %s to %s: %lld reset; %lld pending, %lld delivering, %lld delivered, "
           "%lld failed\n",
           ctl_text(r->id), ctl_text(r->receiver), (long long)r->matched, (long long)r->pending,
           (long long)r->delivering, (long long)r->delivered, (long long)r->failed);
}

/* --wait: read the progress until nothing of it is pending or delivering. */
static int follow(store *s, store_redelivery *r, bool json)
{
    long long last_done = -1;
    for (;;) {
        vf_error err;
        vf_error_init(&err);
        if (store_redelivery_get(s, r->id, r, &err) != 0) {
            ctl_error("%s", err.text);
            return CTL_EXIT_UNAVAILABLE;
        }
        if (r->pending + r->delivering == 0)
            break;
        long long done = (long long)(r->delivered + r->failed);
        if (!json && done != last_done)
            print_redelivery(r, false);
        last_done = done;
        usleep(REDELIVER_POLL_US);
    }
    print_redelivery(r, json);
    return r->failed > 0 ? CTL_EXIT_NEGATIVE : CTL_EXIT_OK;
}

typedef struct redeliver_options {
    const char *receiver, *since, *status, *rate, *id;
    bool wait;
} redeliver_options;

static int redeliver_many(const redeliver_options *o, const ctl_args *args)
{
    double rate = 0;
    if (o->rate) {
        char *end = NULL;
        errno = 0;
        rate = strtod(o->rate, &end);
        if (errno || end == o->rate || *end || !(rate > 0)) {
            ctl_error("--rate: expected deliveries per second, a number above 0");
            return CTL_EXIT_USAGE;
        }
    }
    if (!o->receiver || !o->since) {
        ctl_error("deliveries redeliver: give --receiver and --since");
        return CTL_EXIT_USAGE;
    }
    int rc = CTL_EXIT_OK;
    vf_config *config = NULL;
    store *s = open_store(args->config_path, STORE_READ_WRITE, &config, &rc);
    if (!s)
        return rc;
    delivery_view_redeliver_ask ask = {.id = o->id,
                                       .receiver = o->receiver,
                                       .since = o->since,
                                       .status = o->status,
                                       .rate_per_s = rate,
                                       .requested_by = "virtflowctl"};
    store_redelivery r;
    vf_error err;
    vf_error_init(&err);
    int started = delivery_view_redeliver(s, config, &ask, &r, &err);
    if (started < 0) {
        ctl_error("%s", err.text);
        rc = err.code == VF_EINVAL ? CTL_EXIT_USAGE : CTL_EXIT_UNAVAILABLE;
    } else if (started == 2) {
        ctl_error("redelivery %s exists with other filters; give another --id", o->id);
        rc = CTL_EXIT_USAGE;
    } else if (r.matched == 0) {
        print_redelivery(&r, args->json);
        rc = CTL_EXIT_NEGATIVE;
    } else if (o->wait) {
        rc = follow(s, &r, args->json);
    } else {
        print_redelivery(&r, args->json);
    }
    store_close(s);
    config_free(config);
    return rc;
}

/* `deliveries` lists; `deliveries exhausted` is the store's failed. */
static const char *const statuses[] = {"pending", "delivering", "delivered",
                                       "failed",  "exhausted",  NULL};

int ctl_deliveries(int argc, char **argv)
{
    store_delivery_filter filter = {0};
    long limit = 0;
    redeliver_options again = {0};
    const ctl_option options[] = {
        {"status", 0, CTL_OPTION_CHOICE, &filter.status, statuses, NULL, NULL, NULL},
        {"receiver", 0, CTL_OPTION_STRING, &filter.receiver, NULL, NULL, NULL, "@receivers"},
        {"event", 0, CTL_OPTION_STRING, &filter.event_id, NULL, NULL, NULL, NULL},
        {"limit", 0, CTL_OPTION_POSITIVE, &limit, NULL, NULL, NULL, NULL},
        {"since", 0, CTL_OPTION_STRING, &again.since, NULL, NULL, NULL, NULL},
        {"rate", 0, CTL_OPTION_STRING, &again.rate, NULL, NULL, NULL, NULL},
        {"id", 0, CTL_OPTION_STRING, &again.id, NULL, NULL, NULL, NULL},
        {"wait", 0, CTL_OPTION_SET, &again.wait, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed =
        ctl_options_parse("deliveries", argc, argv, options, deliveries_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    if (args.operand_count == 1 && strcmp(args.operands[0], "redeliver") == 0) {
        if (filter.event_id || limit) {
            ctl_error("deliveries redeliver: --event and --limit are for listing (one event: "
                      "virtflowctl redeliver EVENT_ID)");
            return CTL_EXIT_USAGE;
        }
        if (filter.status && strcmp(filter.status, "failed") != 0 &&
            strcmp(filter.status, "exhausted") != 0) {
            ctl_error("deliveries redeliver: --status is failed or exhausted");
            return CTL_EXIT_USAGE;
        }
        again.receiver = filter.receiver;
        again.status = filter.status;
        return redeliver_many(&again, &args);
    }
    if (args.operand_count > 0) {
        ctl_error("unexpected argument '%s'", args.operands[0]);
        return CTL_EXIT_USAGE;
    }
    if (again.since || again.rate || again.id || again.wait) {
        ctl_error("deliveries: --since, --rate, --id and --wait go with redeliver");
        return CTL_EXIT_USAGE;
    }
    if (filter.status && strcmp(filter.status, "exhausted") == 0)
        filter.status = "failed";
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
