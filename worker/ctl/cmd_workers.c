/* virtflowctl workers: every worker and relay working on the store, as each
 * last said (process_view.h): Flower's workers tab, Sidekiq's processes,
 * `celery inspect active`. */
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "human.h"
#include "process_view.h"

static void workers_usage(FILE *out)
{
    fprintf(out, "usage: virtflowctl workers [-c CONFIG] [--all] [--json]\n"
                 "\n"
                 "The workers and relays working on the configured store (opened read-only),\n"
                 "as each wrote its heartbeat (every 5 s): program, host, process id, version,\n"
                 "when it started, how long ago it was last heard from, what it holds (a\n"
                 "worker: messages received and not yet acked; a relay: webhooks being sent)\n"
                 "and the leases it holds (which worker drives the spares, the outbox sweep and\n"
                 "retention; which relay sends the webhooks). A process that stops cleanly\n"
                 "removes itself; one not heard from for 15 s is silent: dead, paused, or cut\n"
                 "off from the store.\n"
                 "\n"
                 "  --all    also the silent ones (heard from within the last day)\n"
                 "  --json   an array of {program, host, pid, version, started_at, beat_at,\n"
                 "           beat_age_s, alive, in_hand, owner, leases: [{name, epoch,\n"
                 "           acquired_at, expires_at}]}\n"
                 "\n"
                 "examples:\n"
                 "  virtflowctl workers\n"
                 "  virtflowctl workers --all --json | jq '.[] | select(.alive | not)'\n"
                 "\n"
                 "exit status: 0 ok (also when none is running), 2 usage, 3 configuration error,\n"
                 "4 store unreachable.\n");
}

/* "spares, housekeeping" from the leases' names, into out. */
static void lease_names(const json_t *leases, char *out, size_t size)
{
    size_t used = 0, i;
    const json_t *lease;
    snprintf(out, size, "-");
    json_array_foreach(leases, i, lease)
    {
        int n = snprintf(out + used, size - used, "%s%s", used ? ", " : "",
                         ctl_text(json_string_value(json_object_get(lease, "name"))));
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
}

static void print_table(const json_t *list)
{
    printf("%-16s %-20s %8s %-26s %-20s %-12s %7s  %s\n", "PROGRAM", "HOST", "PID", "VERSION",
           "STARTED", "HEARD", "IN-HAND", "LEASES");
    size_t i;
    const json_t *p;
    json_array_foreach(list, i, p)
    {
        char age[HUMAN_SIZE], heard[HUMAN_SIZE + 16], leases[512];
        human_duration(json_integer_value(json_object_get(p, "beat_age_s")), age);
        snprintf(heard, sizeof heard, "%s ago%s", age,
                 json_is_true(json_object_get(p, "alive")) ? "" : " (silent)");
        lease_names(json_object_get(p, "leases"), leases, sizeof leases);
        /* Seconds are enough for a start time: "2026-11-22T01:02:03". */
        printf("%-16s %-20s %8lld %-26s %-20.19s %-12s %7lld  %s\n",
               ctl_text(json_string_value(json_object_get(p, "program"))),
               ctl_text(json_string_value(json_object_get(p, "host"))),
               (long long)json_integer_value(json_object_get(p, "pid")),
               ctl_text(json_string_value(json_object_get(p, "version"))),
               ctl_text(json_string_value(json_object_get(p, "started_at"))), heard,
               (long long)json_integer_value(json_object_get(p, "in_hand")), leases);
    }
    if (json_array_size(list) == 0)
        printf("(none heard from within 15 s: is virtflow-worker running on this store?)\n");
}

int ctl_workers(int argc, char **argv)
{
    bool all = false;
    const ctl_option options[] = {
        {"all", 0, CTL_OPTION_SET, &all, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed = ctl_options_parse("workers", argc, argv, options, workers_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    if (args.operand_count > 0) {
        ctl_error("workers: unexpected argument '%s'", args.operands[0]);
        return CTL_EXIT_USAGE;
    }
    vf_config *config = ctl_load_config(args.config_path);
    if (!config)
        return CTL_EXIT_CONFIG;
    int rc = CTL_EXIT_UNAVAILABLE;
    json_t *list = NULL;
    store *s = ctl_open_store(config, STORE_READ_ONLY);
    if (!s)
        goto out;
    vf_error err;
    vf_error_init(&err);
    if (!(list = process_view_list(s, all, &err))) {
        ctl_error("%s", err.text);
        goto out;
    }
    if (args.json)
        ctl_print_json(list);
    else
        print_table(list);
    rc = CTL_EXIT_OK;
out:
    json_decref(list);
    store_close(s);
    config_free(config);
    return rc;
}
