/* virtflowctl place: run the scheduling pipeline once, against the configured
 * inventory and the store's live reservations, and print the decision with
 * its explanation. Nothing is reserved or recorded; no broker is needed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "ctl.h"
#include "engine.h"
#include "inventory.h"
#include "json_util.h"
#include "never_fits.h"
#include "reservations.h"
#include "store.h"
#include "store_config.h"
#include "suggest.h"

static void place_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl place [-c CONFIG] (-f REQUEST.json | --cpu N --memory MiB\n"
            "                         [--disk GiB] [--pool NAME] [--dedicated] [--vm-name NAME]\n"
            "                         [--node-name HOST] [--scheduler PROFILE]\n"
            "                         [--annotation KEY=VALUE]...) [--no-reservations]\n"
            "                         [--why-not] [--json]\n"
            "\n"
            "Dry-run a placement: where would this request go now, and why. Reads the\n"
            "inventory from the configured source and, unless --no-reservations, the live\n"
            "reservations in the store (read-only), exactly as the worker would see them.\n"
            "Nothing is reserved or recorded.\n"
            "\n"
            "  -f FILE             the task.schedule request body as JSON ('-' for stdin)\n"
            "  --scheduler NAME    decide with scheduling profile NAME (scheduler.profiles)\n"
            "  --annotation K=V    e.g. node.qemu-scheduler/regex=node[0-9]+,\n"
            "                      vmid.qemu-scheduler/range=100-150\n"
            "  --no-reservations   decide over the inventory alone, as if nothing were\n"
            "                      reserved (the store is not read)\n"
            "  --why-not           also when placed: what would make each rejected host take\n"
            "                      it (shown anyway when nothing fits)\n"
            "  --json              print the result object a task records (with\n"
            "                      \"suggestions\" when not placed or with --why-not)\n"
            "\n"
            "examples:\n"
            "  virtflowctl place --cpu 4 --memory 8192 --pool default\n"
            "  virtflowctl place --cpu 8 --memory 16384 --annotation "
            "node.qemu-scheduler/regex='bm-00[12]' --why-not\n"
            "\n"
            "exit status: 0 placed, 1 not placed (unschedulable), 2 invalid request, usage,\n"
            "or a request no host of the inventory could hold even empty (never_fits, unless\n"
            "scheduler.unfit_requests is wait),\n"
            "3 configuration error, 4 inventory or store unreachable.\n");
}

typedef struct place_options {
    const char *config_path;
    const char *request_path;
    bool json;
    bool use_reservations;
    bool why_not;
    json_t *flags; /* request built from flags */
    bool any_flag;
} place_options;

/* Returns 0, 1 for --help (printed), -1 on a usage error (printed). */
static int parse_options(int argc, char **argv, place_options *opt)
{
    const ctl_option options[] = {
        {"file", 'f', CTL_OPTION_PATH, &opt->request_path, NULL, NULL, NULL, NULL},
        CTL_REQUEST_OPTIONS(opt->flags),
        {"no-reservations", 0, CTL_OPTION_CLEAR, &opt->use_reservations, NULL, NULL, NULL, NULL},
        {"why-not", 0, CTL_OPTION_SET, &opt->why_not, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int rc = ctl_options_parse("place", argc, argv, options, place_usage, false, &args);
    if (rc >= 0)
        return rc == CTL_EXIT_OK ? 1 : -1;
    opt->config_path = args.config_path;
    opt->json = args.json;
    opt->any_flag = json_object_size(opt->flags) > 0;
    if (args.operand_count > 0) {
        ctl_error("place: unexpected argument '%s'", args.operands[0]);
        return -1;
    }
    if (opt->request_path && opt->any_flag) {
        ctl_error("place: give the request either with -f or with flags, not both");
        return -1;
    }
    if (!opt->request_path && !opt->any_flag) {
        ctl_error("place: no request: give -f REQUEST.json or --cpu N --memory MiB");
        return -1;
    }
    return 0;
}

/* The request body: from the file (or stdin) or from the flags. Owned. */
static json_t *load_body(const place_options *opt, vf_error *err)
{
    if (!opt->request_path)
        return json_incref(opt->flags);
    json_error_t jerr;
    json_t *body = strcmp(opt->request_path, "-") == 0
                       ? json_loadf(stdin, JSON_DECODE_ANY, &jerr)
                       : json_load_file(opt->request_path, JSON_DECODE_ANY, &jerr);
    if (!body)
        vf_error_set(err, VF_EINVAL, "%s:%d: not valid JSON: %s", opt->request_path, jerr.line,
                     jerr.text);
    return body;
}

/* Hold the store's live reservations in the engine. Returns how many, or -1
 * with err. A store that does not exist yet holds none. */
static long load_reservations(const vf_config *config, sched_engine *engine, bool *store_missing,
                              vf_error *err)
{
    *store_missing = store_config_missing(config);
    if (*store_missing)
        return 0;
    store *s = store_config_open(config, STORE_READ_ONLY, err);
    if (!s)
        return -1;
    /* The snapshot was fetched just now. */
    long count = reservations_hold_live(s, engine, clock_wall_ms(), err);
    store_close(s);
    return count;
}

static void print_human(const sched_decision *d, const hostset *hosts, long reservations,
                        bool store_missing, const char *store_path)
{
    if (d->placed) {
        printf("placed on %s (%s, pool %s), vmid %u, score %.2f\n", ctl_text(d->node->name),
               d->node->ip[0] ? ctl_text(d->node->ip) : "no ip", ctl_text(d->node->pool), d->vmid,
               d->score);
        printf("  %s\n", ctl_text(d->message));
        printf("  scores:");
        for (size_t i = 0; i < d->n_parts; i++)
            printf("%s %s %.2f (weight %g)", i ? "," : "", d->parts[i].plugin, d->parts[i].score,
                   d->parts[i].weight);
        printf("%s\n", d->n_parts ? "" : " none enabled; lowest name wins");
    } else {
        printf("not placed: %s\n", ctl_text(d->message));
    }
    if (reservations >= 0)
        printf("  live reservations considered: %ld (%s)\n", reservations, store_path);
    else if (store_missing)
        printf("  live reservations: none (no store at %s yet)\n", store_path);
    bool header = false;
    for (size_t i = 0; i < hosts->n_hosts; i++) {
        sched_reason reason = (sched_reason)d->host_reasons[i];
        if (reason == SCHED_REASON_NONE)
            continue;
        if (!header)
            printf("rejected:\n");
        header = true;
        char words[LABEL_KEY_LEN + 32];
        printf("  %-24s %s\n", ctl_text(hosts->hosts[i].name),
               sched_decision_reason_text(d, reason, words, sizeof words));
    }
}

static void print_amounts(const json_t *amounts)
{
    char text[160];
    ctl_amounts(amounts, text, sizeof text);
    printf("%s", text);
}

/* Why not, and what would fix it (worker/sched/suggest.h). */
static void print_suggestions(const json_t *s)
{
    const json_t *hosts = json_object_get(s, "hosts");
    if (json_object_size(hosts) > 0)
        printf("  what would make it fit:\n");
    const char *name;
    const json_t *entry;
    json_object_foreach((json_t *)hosts, name, entry)
    {
        printf("    %-24s ", ctl_text(name));
        const char *constraint = json_string_value(json_object_get(entry, "constraint"));
        if (constraint) {
            const char *detail = json_string_value(json_object_get(entry, "detail"));
            const char *pool = json_string_value(json_object_get(entry, "pool"));
            const char *state = json_string_value(json_object_get(entry, "status"));
            printf("%s in the way%s%s\n", ctl_text(constraint), detail || pool || state ? ": " : "",
                   ctl_text(detail  ? detail
                            : pool  ? pool
                            : state ? state
                                    : ""));
            continue;
        }
        const json_t *release = json_object_get(entry, "free");
        const json_t *fits = json_object_get(entry, "fits");
        printf("free ");
        print_amounts(release);
        if (fits) {
            printf("; or ask for at most ");
            print_amounts(fits);
        }
        printf("\n");
    }
    long long omitted = json_integer_value(json_object_get(s, "hosts_omitted"));
    if (omitted > 0)
        printf("    (%lld more hosts)\n", omitted);
    const json_t *pools = json_object_get(s, "pools");
    const char *pool;
    const json_t *shapes;
    json_object_foreach((json_t *)pools, pool, shapes)
    {
        const json_t *most = json_object_get(shapes, "most_cpu");
        const json_t *mem = json_object_get(shapes, "most_memory");
        printf("  largest that fits now in pool %s: ", ctl_text(pool));
        print_amounts(most);
        printf(" (%s)", ctl_text(json_string_value(json_object_get(most, "host"))));
        if (mem != most && json_integer_value(json_object_get(mem, "memory_mib")) >
                               json_integer_value(json_object_get(most, "memory_mib"))) {
            printf(", or ");
            print_amounts(mem);
            printf(" (%s)", ctl_text(json_string_value(json_object_get(mem, "host"))));
        }
        printf("\n");
    }
}

/* Every profile, as the worker builds them (one it would refuse to start
 * with is reported here too), into *engine (the caller's to free), and the
 * one that decides `req` into *decider (borrowed from it). 0, or -1 said. */
static int build_engines(const vf_config *config, const sched_request *req, sched_engine **engine,
                         sched_engine **decider)
{
    vf_error err;
    vf_error_init(&err);
    const char *path = config->path ? config->path : "";
    const char *colon = config->path ? ": " : "";
    *engine = sched_engine_from_config(config, NULL, &err);
    if (!*engine) {
        ctl_error("%s%s%s", path, colon, err.text);
        return -1;
    }
    *decider = sched_engine_profile(*engine, req->scheduler_name);
    if (!*decider) {
        ctl_error("%s%sscheduler.profiles has no profile %s (the worker keeps such a task "
                  "waiting, reason unknown_scheduler)",
                  path, colon, req->scheduler_name);
        return -1;
    }
    return 0;
}

/* What the engine decides over: the inventory (into *inv and *hosts, the
 * caller's to free) and, unless --no-reservations, the live reservations,
 * their count into *reservations (-1: not read, or no store yet:
 * *store_missing). Returns CTL_EXIT_OK, or the exit status with the error
 * said. */
static int load_picture(const place_options *opt, const vf_config *config, sched_engine *engine,
                        inventory **inv, hostset **hosts, long *reservations, bool *store_missing)
{
    vf_error err;
    vf_error_init(&err);
    *inv = inventory_new(config, &err);
    if (!*inv) {
        ctl_error("%s", err.text);
        return CTL_EXIT_CONFIG;
    }
    *hosts = inventory_fetch(*inv, &err);
    if (!*hosts) {
        ctl_error("inventory unavailable: %s", err.text);
        return CTL_EXIT_UNAVAILABLE;
    }
    if (sched_engine_set_hosts(engine, *hosts, NULL, NULL, &err) < 0) {
        ctl_error("%s", err.text);
        return CTL_EXIT_UNAVAILABLE;
    }
    *reservations = -1;
    *store_missing = false;
    if (!opt->use_reservations)
        return CTL_EXIT_OK;
    *reservations = load_reservations(config, engine, store_missing, &err);
    if (*reservations < 0) {
        ctl_error("cannot read live reservations: %s (use --no-reservations to ignore them)",
                  err.text);
        return CTL_EXIT_UNAVAILABLE;
    }
    if (*store_missing)
        *reservations = -1;
    return CTL_EXIT_OK;
}

/* The decision, as JSON (--json) or text with the suggestions, and the
 * exit status: placed, not placed, or (scheduler.unfit_requests: fail) what
 * the worker would fail at once, said as the worker says it and exit 2 as
 * for an invalid request. */
static int report(const place_options *opt, const vf_config *config, sched_engine *decider,
                  const sched_request *req, const sched_decision *decision, const hostset *hosts,
                  long reservations, bool store_missing)
{
    char never[512];
    bool never_fits = !decision->placed && config->scheduler.unfit_requests == CONFIG_UNFIT_FAIL &&
                      sched_never_fits(decider, req, never, sizeof never);
    json_t *suggestions = !decision->placed || opt->why_not
                              ? sched_suggest(decider, req, decision, SCHED_SUGGEST_HOSTS)
                              : NULL;
    if (opt->json) {
        json_t *result = sched_decision_to_json(decision, hosts);
        if (suggestions)
            json_object_set(result, "suggestions", suggestions);
        if (req->scheduler_name[0])
            json_object_set_new(result, "scheduler", json_string(req->scheduler_name));
        if (never_fits) {
            json_object_set_new(result, "reason", json_string("never_fits"));
            json_object_set_new(result, "error", json_string(never));
        }
        ctl_print_json(result);
        json_decref(result);
    } else {
        print_human(decision, hosts, reservations, store_missing, ctl_store_name(config));
        if (req->scheduler_name[0])
            printf("  scheduler profile: %s\n", ctl_text(req->scheduler_name));
        if (suggestions)
            print_suggestions(suggestions);
    }
    json_decref(suggestions);
    if (!never_fits)
        return decision->placed ? CTL_EXIT_OK : CTL_EXIT_NEGATIVE;
    ctl_error("never fits: %s (the worker fails it at once; scheduler.unfit_requests: wait "
              "makes it wait)",
              never);
    return CTL_EXIT_USAGE;
}

/* A request the worker would refuse as invalid: said, exit 2. */
static int report_invalid(const place_options *opt, const char *why)
{
    if (opt->json) {
        json_t *result =
            json_pack("{s:s, s:s, s:s}", "status", "failed", "reason", "invalid", "error", why);
        ctl_print_json(result);
        json_decref(result);
    } else {
        ctl_error("invalid request: %s", why);
    }
    return CTL_EXIT_USAGE;
}

int ctl_place(int argc, char **argv)
{
    int status = CTL_EXIT_USAGE;
    place_options opt = {.use_reservations = true, .flags = json_object()};
    vf_config *config = NULL;
    json_t *body = NULL;
    inventory *inv = NULL;
    hostset *hosts = NULL;
    sched_engine *engine = NULL, *decider = NULL;
    vf_error err;
    vf_error_init(&err);

    int parsed = parse_options(argc, argv, &opt);
    if (parsed != 0) {
        status = parsed > 0 ? CTL_EXIT_OK : CTL_EXIT_USAGE;
        goto out;
    }
    sched_request req;
    body = load_body(&opt, &err);
    if (!body || sched_request_parse(body, &req, &err) < 0) {
        status = report_invalid(&opt, err.text);
        goto out;
    }
    config = ctl_load_config(opt.config_path);
    status = CTL_EXIT_CONFIG;
    if (!config || build_engines(config, &req, &engine, &decider) < 0)
        goto out;
    long reservations;
    bool store_missing;
    status = load_picture(&opt, config, engine, &inv, &hosts, &reservations, &store_missing);
    if (status != CTL_EXIT_OK)
        goto out;
    sched_decision decision;
    /* The "rejected:" list names every host, placed or not. */
    sched_decide_options explain = {.host_reasons = true};
    if (sched_engine_decide_with(decider, &req, &explain, &decision, &err) < 0)
        status = report_invalid(&opt, err.text);
    else
        status = report(&opt, config, decider, &req, &decision, hosts, reservations, store_missing);
out:
    sched_engine_free(engine);
    hostset_free(hosts);
    inventory_free(inv);
    config_free(config);
    json_decref(body);
    json_decref(opt.flags);
    return status;
}
