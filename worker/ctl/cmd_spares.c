/* virtflowctl spares: spare VMs the store records, by default those never
 * released, so forgotten spares (an upgrade that never sent spare.release)
 * are easy to find. Read-only. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "ids.h"
#include "store.h"
#include "store_spares.h"

static void spares_usage(FILE *out)
{
    fprintf(out, "usage: virtflowctl spares [-c CONFIG] [--older-than AGE] [--all] [--json]\n"
                 "\n"
                 "List spare VMs from the store (opened read-only), oldest first: age, upgrade\n"
                 "id, name, host, vmid, state. Without --all only spares not yet released.\n"
                 "AGE is a number with s, m, h or d (e.g. 24h): only spares created earlier.\n"
                 "\n"
                 "  --older-than AGE  only spares created more than AGE ago\n"
                 "  --all             also the released ones\n"
                 "\n"
                 "exit status: 0 ok, 2 usage, 3 configuration error, 4 store unreachable.\n");
}

/* "24h" -> 86400. Returns -1 for anything else. */
static int64_t parse_age(const char *text)
{
    char *end = NULL;
    long long value = strtoll(text, &end, 10);
    if (end == text || value < 0 || !end[0] || end[1])
        return -1;
    switch (end[0]) {
    case 's':
        return value;
    case 'm':
        return value * 60;
    case 'h':
        return value * 3600;
    case 'd':
        return value * 86400;
    }
    return -1;
}

typedef struct list_ctx {
    bool json;
    bool all;
    int64_t now;
    int64_t min_age_s; /* -1: any */
    json_t *array;
    size_t count;
} list_ctx;

static int print_spare(const store_spare *s, void *user)
{
    list_ctx *ctx = user;
    if (!ctx->all && strcmp(s->state, "released") == 0)
        return 0;
    int64_t created = 0;
    if (ids_parse_time(s->created_at, &created) < 0)
        created = ctx->now;
    int64_t age = ctx->now - created;
    if (ctx->min_age_s >= 0 && age < ctx->min_age_s)
        return 0;
    ctx->count++;
    if (ctx->json) {
        json_array_append_new(
            ctx->array, json_pack("{s:I, s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:s?}", "age_s",
                                  (json_int_t)age, "upgrade_id", s->upgrade_id, "name", s->name,
                                  "host", s->node, "ip", s->ip ? s->ip : "", "vmid",
                                  (json_int_t)s->vmid, "state", s->state, "task_id", s->task_id,
                                  "created_at", s->created_at, "last_error", s->last_error));
        return 0;
    }
    char shown[32];
    if (age >= 86400)
        snprintf(shown, sizeof shown, "%lldd%lldh", (long long)(age / 86400),
                 (long long)(age % 86400 / 3600));
    else if (age >= 3600)
        snprintf(shown, sizeof shown, "%lldh%lldm", (long long)(age / 3600),
                 (long long)(age % 3600 / 60));
    else
        snprintf(shown, sizeof shown, "%lldm%llds", (long long)(age / 60), (long long)(age % 60));
    printf("%-10s %-24s %-32s %-20s %10lld %s\n", shown, ctl_text(s->upgrade_id), ctl_text(s->name),
           ctl_text(s->node), (long long)s->vmid, ctl_text(s->state));
    return 0;
}

int ctl_spares(int argc, char **argv)
{
    const char *older = NULL;
    list_ctx ctx = {.min_age_s = -1, .now = (int64_t)time(NULL)};
    const ctl_option options[] = {
        {"older-than", 0, CTL_OPTION_STRING, &older, NULL, NULL, NULL, NULL},
        {"all", 0, CTL_OPTION_SET, &ctx.all, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed = ctl_options_parse("spares", argc, argv, options, spares_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    const char *config_path = args.config_path;
    ctx.json = args.json;
    if (older) {
        ctx.min_age_s = parse_age(older);
        if (ctx.min_age_s < 0) {
            ctl_error("--older-than: expected a number with s, m, h or d, e.g. 24h");
            return CTL_EXIT_USAGE;
        }
    }
    if (args.operand_count > 0) {
        ctl_error("spares: unexpected argument '%s'", args.operands[0]);
        return CTL_EXIT_USAGE;
    }
    vf_config *config = ctl_load_config(config_path);
    if (!config)
        return CTL_EXIT_CONFIG;
    store *s = ctl_open_store(config, STORE_READ_ONLY);
    if (!s) {
        config_free(config);
        return CTL_EXIT_UNAVAILABLE;
    }
    ctx.array = json_array();
    if (!ctx.json)
        printf("%-10s %-24s %-32s %-20s %10s %s\n", "AGE", "UPGRADE", "NAME", "HOST", "VMID",
               "STATE");
    vf_error err;
    vf_error_init(&err);
    int rc = store_spare_list(s, STORE_SPARES_ALL, NULL, 0, print_spare, &ctx, &err);
    int exit_code = CTL_EXIT_OK;
    if (rc < 0) {
        ctl_error("%s", err.text);
        exit_code = CTL_EXIT_UNAVAILABLE;
    } else if (ctx.json) {
        ctl_print_json(ctx.array);
    }
    json_decref(ctx.array);
    store_close(s);
    config_free(config);
    return exit_code;
}
