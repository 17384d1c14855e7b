/* virtflowctl stats: the store's counts beside the broker's queue depths, and
 * the oldest work still pending. Either half may be missing; both are said. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp_link_admin.h"
#include "ctl.h"
#include "store_stats.h"

static void stats_usage(FILE *out)
{
    fprintf(
        out,
        "usage: virtflowctl stats [-c CONFIG] [--json]\n"
        "\n"
        "Tasks by status and failure reason, deliveries by status and unconfirmed\n"
        "outbox events (store, read-only); the oldest pending task (processing or\n"
        "retrying) and the oldest pending delivery; messages waiting in each queue\n"
        "(broker; read-only: it declares nothing, and a queue no program declared\n"
        "yet shows as absent). If one side cannot be reached, says so and prints the\n"
        "other.\n"
        "\n"
        "  --json   {\"store\": {\"ok\": bool, \"error\"?, \"tasks\": {\"total\", \"by_status\",\n"
        "           \"by_reason\"}, \"deliveries\": {status: n}, \"outbox_pending\",\n"
        "           \"oldest_pending_task\": {id, status, created_at} | null,\n"
        "           \"oldest_pending_delivery\": {event_id, created_at} | null},\n"
        "           \"broker\": {\"ok\": bool, \"error\"?, \"queues\": {name: {messages,\n"
        "           consumers} | {\"absent\": true}}}}\n"
        "\n"
        "examples:\n"
        "  virtflowctl stats\n"
        "  virtflowctl stats --json | jq .broker.queues\n"
        "\n"
        "exit status: 0 both the store and the broker read, 2 usage, 3 configuration\n"
        "error, 4 the store or the broker (or both) could not be read: the side that\n"
        "answered is printed all the same.\n");
}

typedef struct count_ctx {
    json_t *by_status, *by_reason, *deliveries;
    json_int_t total, outbox;
    const char *oldest_task_at;
    json_t *oldest_task, *oldest_delivery;
    const char *oldest_delivery_at;
    char task_at[STORE_TIME_SIZE], delivery_at[STORE_TIME_SIZE];
} count_ctx;

static void add_to(json_t *obj, const char *key, json_int_t n)
{
    json_object_set_new(obj, key, json_integer(json_integer_value(json_object_get(obj, key)) + n));
}

static int on_count(const store_count *c, void *user)
{
    count_ctx *ctx = user;
    if (strcmp(c->table, "tasks") == 0) {
        ctx->total += c->count;
        add_to(ctx->by_status, c->status, c->count);
        if (c->reason)
            add_to(ctx->by_reason, c->reason, c->count);
        bool pending = strcmp(c->status, "processing") == 0 || strcmp(c->status, "retrying") == 0;
        if (pending && (!ctx->oldest_task || strcmp(c->oldest_at, ctx->task_at) < 0)) {
            json_decref(ctx->oldest_task);
            ctx->oldest_task = json_pack("{s:s, s:s, s:s}", "id", c->oldest_id, "status", c->status,
                                         "created_at", c->oldest_at);
            snprintf(ctx->task_at, sizeof ctx->task_at, "%s", c->oldest_at);
        }
    } else if (strcmp(c->table, "deliveries") == 0) {
        add_to(ctx->deliveries, c->status, c->count);
        if (strcmp(c->status, "pending") == 0 || strcmp(c->status, "delivering") == 0) {
            if (!ctx->oldest_delivery || strcmp(c->oldest_at, ctx->delivery_at) < 0) {
                json_decref(ctx->oldest_delivery);
                ctx->oldest_delivery =
                    json_pack("{s:s, s:s}", "event_id", c->oldest_id, "created_at", c->oldest_at);
                snprintf(ctx->delivery_at, sizeof ctx->delivery_at, "%s", c->oldest_at);
            }
        }
    } else if (strcmp(c->table, "outbox") == 0) {
        ctx->outbox += c->count;
    }
    return 0;
}

json_t *ctl_stats_store(store *s, const char *path)
{
    count_ctx ctx = {
        .by_status = json_object(), .by_reason = json_object(), .deliveries = json_object()};
    vf_error err;
    vf_error_init(&err);
    json_t *out;
    if (store_counts(s, on_count, &ctx, &err) < 0) {
        ctl_error("%s", err.text);
        out = json_pack("{s:b, s:s, s:s}", "ok", 0, "path", path, "error", err.text);
        json_decref(ctx.by_status);
        json_decref(ctx.by_reason);
        json_decref(ctx.deliveries);
        json_decref(ctx.oldest_task);
        json_decref(ctx.oldest_delivery);
    } else {
        out = json_pack("{s:b, s:s, s:{s:I, s:o, s:o}, s:o, s:I, s:o, s:o}", "ok", 1, "path", path,
                        "tasks", "total", ctx.total, "by_status", ctx.by_status, "by_reason",
                        ctx.by_reason, "deliveries", ctx.deliveries, "outbox_pending", ctx.outbox,
                        "oldest_pending_task", ctx.oldest_task ? ctx.oldest_task : json_null(),
                        "oldest_pending_delivery",
                        ctx.oldest_delivery ? ctx.oldest_delivery : json_null());
    }
    return out;
}

/* The store half of the report: {"ok": true, ...} or {"ok": false, "error"}. */
static json_t *store_stats(const vf_config *config)
{
    store *s = ctl_open_store(config, STORE_READ_ONLY);
    if (!s)
        return json_pack("{s:b, s:s, s:s}", "ok", 0, "path", ctl_store_name(config), "error",
                         "cannot open the store (see the message above)");
    json_t *out = ctl_stats_store(s, ctl_store_name(config));
    store_close(s);
    return out;
}

static json_t *broker_stats(const vf_config *config)
{
    char url[256] = "(no amqp.urls)";
    if (config->amqp.n_urls > 0)
        (void)amqp_link_redact_url(config->amqp.urls[0], url, sizeof url);
    int status;
    amqp_link *link = ctl_connect(config, "stats", CTL_BROKER_READ, &status);
    if (!link)
        return json_pack("{s:b, s:s, s:s}", "ok", 0, "url", url, "error",
                         status == CTL_EXIT_CONFIG ? "broker refuses this configuration"
                                                   : "broker unreachable");
    json_t *queues = json_object();
    const char *names[] = {BROKER_SCHEDULE_QUEUE, BROKER_PRIORITY_QUEUE, BROKER_SPARE_QUEUE,
                           BROKER_RELAY_QUEUE, BROKER_DEAD_QUEUE};
    size_t n_fixed = sizeof names / sizeof names[0];
    vf_error err;
    vf_error_init(&err);
    for (size_t i = 0; i < n_fixed + config->retry.n_delays; i++) {
        char tier[BROKER_NAME_MAX];
        const char *name = names[i < n_fixed ? i : 0];
        if (i >= n_fixed) {
            if (broker_names_retry(config->retry.delays_s[i - n_fixed], tier, sizeof tier) < 0)
                continue;
            name = tier;
        }
        uint32_t messages = 0, consumers = 0;
        if (amqp_link_queue_depth(link, name, &messages, &consumers, &err) < 0) {
            bool absent = err.code == VF_EINVAL && amqp_link_is_connected(link);
            if (absent) /* no program declared it yet: that is an answer */
                json_object_set_new(queues, name, json_pack("{s:b}", "absent", 1));
            else
                ctl_error("queue %s: %s", name, err.text);
            vf_error_init(&err);
            if (!amqp_link_is_connected(link)) {
                amqp_link_free(link);
                json_decref(queues);
                return json_pack("{s:b, s:s, s:s}", "ok", 0, "url", url, "error",
                                 "broker connection lost while reading queue depths");
            }
            continue;
        }
        json_object_set_new(queues, name,
                            json_pack("{s:I, s:I}", "messages", (json_int_t)messages, "consumers",
                                      (json_int_t)consumers));
    }
    amqp_link_free(link);
    return json_pack("{s:b, s:s, s:o}", "ok", 1, "url", url, "queues", queues);
}

static void print_counts(const char *title, const json_t *obj)
{
    printf("%s:", title);
    if (json_object_size(obj) == 0)
        printf(" none");
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)obj, key, value)
        printf(" %s %lld", ctl_text(key), (long long)json_integer_value(value));
    printf("\n");
}

static void print_human(const json_t *report)
{
    const json_t *st = json_object_get(report, "store");
    if (json_is_true(json_object_get(st, "ok"))) {
        const json_t *tasks = json_object_get(st, "tasks");
        printf("store %s\n", json_string_value(json_object_get(st, "path")));
        printf("  tasks: %lld\n", (long long)json_integer_value(json_object_get(tasks, "total")));
        print_counts("  by status", json_object_get(tasks, "by_status"));
        print_counts("  failed by reason", json_object_get(tasks, "by_reason"));
        print_counts("  deliveries", json_object_get(st, "deliveries"));
        printf("  outbox events not yet confirmed: %lld\n",
               (long long)json_integer_value(json_object_get(st, "outbox_pending")));
        const json_t *t = json_object_get(st, "oldest_pending_task");
        if (json_is_object(t))
            printf("  oldest pending task: %s (%s since %s)\n",
                   ctl_text(json_string_value(json_object_get(t, "id"))),
                   ctl_text(json_string_value(json_object_get(t, "status"))),
                   ctl_text(json_string_value(json_object_get(t, "created_at"))));
        else
            printf("  oldest pending task: none\n");
        const json_t *d = json_object_get(st, "oldest_pending_delivery");
        if (json_is_object(d))
            printf("  oldest pending delivery: %s (since %s)\n",
                   ctl_text(json_string_value(json_object_get(d, "event_id"))),
                   ctl_text(json_string_value(json_object_get(d, "created_at"))));
        else
            printf("  oldest pending delivery: none\n");
    } else {
        printf("store %s: not readable (%s)\n",
               ctl_text(json_string_value(json_object_get(st, "path"))),
               ctl_text(json_string_value(json_object_get(st, "error"))));
    }
    const json_t *br = json_object_get(report, "broker");
    if (json_is_true(json_object_get(br, "ok"))) {
        printf("broker %s\n", json_string_value(json_object_get(br, "url")));
        printf("  %-32s %9s %9s\n", "QUEUE", "MESSAGES", "CONSUMERS");
        const char *name;
        const json_t *q;
        json_object_foreach(json_object_get(br, "queues"), name, q)
        {
            if (json_is_true(json_object_get(q, "absent")))
                printf("  %-32s %9s %9s  (not declared yet)\n", name, "-", "-");
            else
                printf("  %-32s %9lld %9lld\n", name,
                       (long long)json_integer_value(json_object_get(q, "messages")),
                       (long long)json_integer_value(json_object_get(q, "consumers")));
        }
    } else {
        printf("broker %s: %s, no queue depths\n", json_string_value(json_object_get(br, "url")),
               json_string_value(json_object_get(br, "error")));
    }
}

int ctl_stats(int argc, char **argv)
{
    const char *config_path;
    bool as_json;
    int early = ctl_only_common_options(argc, argv, "stats", stats_usage, &config_path, &as_json);
    if (early >= 0)
        return early;
    vf_config *config = ctl_load_config(config_path);
    if (!config)
        return CTL_EXIT_CONFIG;
    json_t *report =
        json_pack("{s:o, s:o}", "store", store_stats(config), "broker", broker_stats(config));
    if (as_json)
        ctl_print_json(report);
    else
        print_human(report);
    /* As kubectl does with a partial answer: printed, and not 0, so a
     * script or a probe notices the side that is missing. */
    bool both = json_is_true(json_object_get(json_object_get(report, "store"), "ok")) &&
                json_is_true(json_object_get(json_object_get(report, "broker"), "ok"));
    json_decref(report);
    config_free(config);
    return both ? CTL_EXIT_OK : CTL_EXIT_UNAVAILABLE;
}
