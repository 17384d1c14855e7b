/* virtflowctl headroom [--forecast] [--window D]: per pool and reference
 * shape (worker.headroom_shapes and the last spare.prepare's), how many VMs
 * still fit now, and with --forecast in how many days none will at the rate
 * the store recorded (forecast.h states the method). Reads the inventory
 * and the store only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctl.h"
#include "engine.h"
#include "headroom.h"
#include "headroom_forecast.h"
#include "inventory.h"
#include "reservations.h"
#include "scrape_shapes.h"
#include "store_config.h"

#define METHOD                                                                                     \
    "rate: least-squares slope of the net daily demand (placements less releases of "              \
    "reservations whose VM never appeared), each VM counted in units of the shape on the "         \
    "resource it binds; spread: +-2 standard errors of the slope; ignores VMs deleted after "      \
    "they appeared, hosts added or removed later, a changing mix of shapes, fragmentation"

static void headroom_usage(FILE *out)
{
    fprintf(out, "usage: virtflowctl headroom [--forecast] [--window D] [-c CONFIG] [--json]\n"
                 "       virtflowctl headroom --plan --hosts-like HOST [--days N] [--max-hosts N]\n"
                 "                            [--window D] [-c CONFIG] [--json]\n"
                 "\n"
                 "Per pool and reference shape (worker.headroom_shapes and the last\n"
                 "spare.prepare's), the VMs of the shape that still fit, packed per host, over\n"
                 "the configured inventory less the store's live reservations. With\n"
                 "--forecast, the recorded rate of demand for the shape over the window and\n"
                 "the days until none fits at that rate, with its spread. With --plan, the\n"
                 "fewest hosts like HOST to add so that the window's history, replayed under\n"
                 "the configuration's policy and repeated over the next N days, fails no more\n"
                 "requests than with the most.\n"
                 "\n"
                 "  --forecast      the days left at the recorded rate\n"
                 "  --window D      the window the rate is measured over (and --plan replays):\n"
                 "                  2d to 366d, default 14d; a whole number and a unit,\n"
                 "                  s, m, h or d, counted in whole days (60h is 2d)\n"
                 "  --plan          how many hosts like --hosts-like to add\n"
                 "  --hosts-like HOST  the kind of host to add: a host of the inventory\n"
                 "  --days N        --plan: the days the demand is projected over (default 90)\n"
                 "  --max-hosts N   --plan: the most hosts tried (default 64)\n"
                 "  --json          one JSON object\n"
                 "\n" METHOD ".\n"
                 "\n"
                 "exit status: 0, 2 usage (--plan without --hosts-like, or a host not in the\n"
                 "inventory), 3 configuration error, 4 inventory or store unreachable.\n");
}

/* The shapes: the configured ones, then the last spare.prepare's. */
static size_t reference_shapes(const vf_config *config, const scrape_shapes *last,
                               config_shape *out)
{
    size_t n = 0;
    for (size_t k = 0; k < config->worker.n_headroom_shapes; k++)
        out[n++] = config->worker.headroom_shapes[k];
    if (last->have_spare)
        out[n++] = last->spare;
    return n;
}

/* Infinity (never at this rate) as JSON null. */
static json_t *days_json(double days)
{
    return isinf(days) ? json_null() : json_real(round(days * 10) / 10);
}

static void days_text(double days, char *out, size_t size)
{
    if (isinf(days))
        snprintf(out, size, "never");
    else
        snprintf(out, size, "%.1f", days);
}

static void report(const sched_headroom *h, const config_shape *shapes, const forecast *f,
                   int window_days, bool as_json)
{
    json_t *rows = json_array();
    if (!as_json)
        printf("%-12s %-22s %8s %6s%s\n", "POOL", "SHAPE", "VMS", "HOSTS",
               f ? "   RATE/DAY   DAYS LEFT (SOONEST-LATEST)" : "");
    for (size_t p = 0; p < h->n_pools; p++)
        for (size_t k = 0; k < h->n_shapes; k++) {
            const sched_headroom_count *c = &h->pools[p].shapes[k];
            const forecast *one = f ? &f[p * h->n_shapes + k] : NULL;
            json_t *row =
                json_pack("{s:s, s:s, s:I, s:I}", "pool", h->pools[p].pool, "shape", shapes[k].name,
                          "vms", (json_int_t)c->vms, "hosts", (json_int_t)c->hosts);
            if (one)
                json_object_update_new(
                    row, json_pack("{s:f, s:f, s:o, s:o, s:o, s:f, s:f}", "rate_per_day", one->rate,
                                   "rate_error", one->rate_error, "days", days_json(one->days),
                                   "days_soonest", days_json(one->days_soonest), "days_latest",
                                   days_json(one->days_latest), "placed", one->placed, "released",
                                   one->released));
            json_array_append_new(rows, row);
            if (as_json)
                continue;
            printf("%-12s %-22s %8lld %6lld", h->pools[p].pool, shapes[k].name, (long long)c->vms,
                   (long long)c->hosts);
            if (one) {
                char days[32], soonest[32], latest[32];
                days_text(one->days, days, sizeof days);
                days_text(one->days_soonest, soonest, sizeof soonest);
                days_text(one->days_latest, latest, sizeof latest);
                printf("   %5.2f+-%-4.2f %6s (%s-%s)", one->rate, one->rate_error, days, soonest,
                       latest);
            }
            printf("\n");
        }
    if (as_json) {
        json_t *all = json_pack("{s:o}", "pools", rows);
        if (f)
            json_object_update_new(
                all, json_pack("{s:i, s:s}", "window_days", window_days, "method", METHOD));
        ctl_print_json(all);
        json_decref(all);
        return;
    }
    json_decref(rows);
    if (f)
        printf("window: %d days; %s\n", window_days, METHOD);
}

/* The load the store's live reservations put on each host. Owned array or
 * NULL with err. */
static sched_host_load *live_loads(const vf_config *config, const hostset *hosts, store *s,
                                   sched_engine **engine, vf_error *err)
{
    *engine = sched_engine_from_config(config, NULL, err);
    if (!*engine || sched_engine_set_hosts(*engine, hosts, NULL, NULL, err) < 0 ||
        (s && reservations_hold_live(s, *engine, 0, err) < 0))
        return NULL;
    sched_host_load *loads = calloc(hosts->n_hosts ? hosts->n_hosts : 1, sizeof *loads);
    if (!loads) {
        vf_error_set(err, VF_ENOMEM, "out of memory counting headroom");
        return NULL;
    }
    for (size_t i = 0; i < hosts->n_hosts; i++) {
        const sched_host_load *load = sched_engine_host_load(*engine, i);
        if (load)
            loads[i] = *load;
    }
    return loads;
}

/* The command line, checked. */
typedef struct headroom_args {
    bool forecast, plan;
    const char *like;
    long days, max_hosts;
    int window_days;
    ctl_args ctl;
} headroom_args;

/* Parse and check the command line into *a: -1 to go on, else the exit
 * status (usage printed, or an error). */
static int headroom_parse(int argc, char **argv, headroom_args *a)
{
    const char *window_text = NULL;
    *a = (headroom_args){.days = 90, .max_hosts = 64};
    const ctl_option options[] = {
        {"forecast", 0, CTL_OPTION_SET, &a->forecast, NULL, NULL, NULL, NULL},
        {"window", 0, CTL_OPTION_STRING, &window_text, NULL, NULL, NULL, NULL},
        {"plan", 0, CTL_OPTION_SET, &a->plan, NULL, NULL, NULL, NULL},
        {"hosts-like", 0, CTL_OPTION_STRING, &a->like, NULL, NULL, NULL, "@hosts"},
        {"days", 0, CTL_OPTION_POSITIVE, &a->days, NULL, NULL, NULL, NULL},
        {"max-hosts", 0, CTL_OPTION_POSITIVE, &a->max_hosts, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    int parsed = ctl_options_parse("headroom", argc, argv, options, headroom_usage, false, &a->ctl);
    if (parsed >= 0)
        return parsed;
    int64_t window_s = (int64_t)HEADROOM_FORECAST_WINDOW_DAYS * 86400;
    if (window_text && (config_parse_duration(window_text, &window_s) < 0 || window_s < 2 * 86400 ||
                        window_s > 366 * 86400)) {
        ctl_error("--window: expected 2d to 366d (a whole number and s, m, h or d), got '%s'",
                  window_text);
        return CTL_EXIT_USAGE;
    }
    a->window_days = (int)(window_s / 86400);
    if (a->ctl.operand_count > 0) {
        ctl_error("headroom: unexpected argument '%s'", a->ctl.operands[0]);
        return CTL_EXIT_USAGE;
    }
    if (a->plan && (!a->like || a->days > 3650 || a->max_hosts > 10000)) {
        ctl_error("headroom --plan: needs --hosts-like HOST, --days up to 3650, --max-hosts up "
                  "to 10000");
        return CTL_EXIT_USAGE;
    }
    return -1;
}

/* --plan: what to buy. Returns the exit status. */
static int headroom_plan(const vf_config *config, const hostset *hosts, store *s,
                         const headroom_args *a)
{
    if (!hostset_find(hosts, a->like)) {
        ctl_error("headroom --plan: no host %s in the inventory", a->like);
        return CTL_EXIT_USAGE;
    }
    if (!s) {
        ctl_error("headroom --plan: no store at %s yet: no history to replay",
                  ctl_store_name(config));
        return CTL_EXIT_CONFIG;
    }
    return ctl_plan(config, s, a->like, (int)a->days, a->window_days, (int)a->max_hosts,
                    a->ctl.json);
}

/* The VMs of each shape that still fit now over the live reservations of
 * `s` (NULL: no store yet) and, with --forecast, the days left; reported.
 * Returns the exit status. */
static int headroom_now(const vf_config *config, const hostset *hosts, store *s,
                        const headroom_args *a)
{
    int rc = CTL_EXIT_CONFIG;
    sched_engine *engine = NULL;
    sched_host_load *loads = NULL;
    sched_headroom h = {0};
    bool computed = false;
    headroom_flow flow = {0};
    forecast *f = NULL;
    scrape_shapes last;
    scrape_shapes_init(&last);
    config_shape *shapes = calloc(config->worker.n_headroom_shapes + 1, sizeof *shapes);
    vf_error err;
    vf_error_init(&err);
    if (!shapes) {
        ctl_error("out of memory");
        goto out;
    }
    int64_t now_ms = clock_wall_ms();
    if ((s && scrape_shapes_read(&last, s, now_ms, &err) < 0) ||
        !(loads = live_loads(config, hosts, s, &engine, &err))) {
        ctl_error("%s", err.text);
        goto out;
    }
    size_t n_shapes = reference_shapes(config, &last, shapes);
    computed = true;
    if (sched_headroom_compute(&h, sched_engine_params(engine), hosts, loads, shapes, n_shapes) <
        0) {
        ctl_error("out of memory counting headroom");
        goto out;
    }
    if (a->forecast && s &&
        (headroom_flow_read(&flow, s, now_ms, a->window_days, &err) < 0 ||
         !(f = calloc(h.n_pools * n_shapes + 1, sizeof *f)) ||
         headroom_forecast(&flow, hosts, &h, shapes, n_shapes, f) < 0)) {
        ctl_error("forecast: %s", err.text[0] ? err.text : "out of memory");
        goto out;
    }
    report(&h, shapes, f, a->window_days, a->ctl.json);
    rc = CTL_EXIT_OK;
out:
    free(shapes);
    free(f);
    headroom_flow_close(&flow);
    if (computed)
        sched_headroom_close(&h);
    free(loads);
    sched_engine_free(engine);
    return rc;
}

int ctl_headroom(int argc, char **argv)
{
    headroom_args a;
    int parsed = headroom_parse(argc, argv, &a);
    if (parsed >= 0)
        return parsed;
    vf_config *config = ctl_load_config(a.ctl.config_path);
    if (!config)
        return CTL_EXIT_CONFIG;
    int rc = CTL_EXIT_CONFIG;
    inventory *inv = NULL;
    hostset *hosts = NULL;
    store *s = NULL;
    if (!(hosts = ctl_fetch_hosts(config, &inv, &rc)))
        goto out;
    if (!store_config_missing(config) && !(s = ctl_open_store(config, STORE_READ_ONLY))) {
        rc = CTL_EXIT_UNAVAILABLE; /* as --help says */
        goto out;
    }
    rc = a.plan ? headroom_plan(config, hosts, s, &a) : headroom_now(config, hosts, s, &a);
out:
    store_close(s);
    hostset_free(hosts);
    inventory_free(inv);
    config_free(config);
    return rc;
}
