/* virtflowctl: for operators and clients (DESIGN.md "Programs"). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "log.h"

static const ctl_command commands[] = {
    {"place", "dry-run a placement: where would this request go, and why", ctl_place},
    {"verify", "check a webhook signature (secret, headers, body)", ctl_verify},
    {"deliveries", "list webhook deliveries and their state", ctl_deliveries},
    {"redeliver", "send an event's webhook again", ctl_redeliver},
    {"submit", "publish a task.schedule request (--wait for its result)", ctl_submit},
    {"tasks", "list tasks, newest first, with filters", ctl_tasks},
    {"task", "one task: request, result, reservations, full history", ctl_task},
    {"dead", "list or redrive the messages parked in virtflow.dead", ctl_dead},
    {"nodes", "hosts, their live reservations and what is free", ctl_nodes},
    {"stats", "counts by status and reason, queue depths, oldest pending work", ctl_stats},
    {"health", "probe: the store answers (and --broker: the broker accepts a login)", ctl_health},
    {"spares", "list spare VMs not yet released (age, upgrade, host, vmid, state)", ctl_spares},
    {"spare", "publish spare.prepare or spare.release (--wait to follow it to its end)", ctl_spare},
    {"prune", "delete (--dry-run: count) final rows older than --older-than D", ctl_prune},
    {"serve", "web console over the store (read-only unless --allow-actions)", ctl_serve},
};

void ctl_error(const char *fmt, ...)
{
    /* Errors quote message ids, task ids and the store's texts: escaped
     * like everything else shown to an operator. */
    char message[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fprintf(stderr, "virtflowctl: %s\n", ctl_text(message));
}

vf_config *ctl_load_config(const char *path)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *config = config_resolve(path, &err);
    if (!config)
        ctl_error("%s", err.text);
    return config;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: virtflowctl COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nEvery command takes -c FILE (else $VIRTFLOW_CONFIG, else built-in defaults),\n"
                 "--json for machine-readable output, and --help.\n"
                 "\nexit status: 0 ok, 1 a negative answer (e.g. not placed), 2 usage or invalid\n"
                 "request, 3 configuration error, 4 broker, store or inventory unreachable.\n");
}

int main(int argc, char **argv)
{
    vf_log_set_program("virtflowctl");
    vf_log_set_level(VF_LOG_WARN);
    if (argc < 2) {
        usage(stderr);
        return CTL_EXIT_USAGE;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return CTL_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    ctl_error("unknown command '%s' (try virtflowctl --help)", argv[1]);
    return CTL_EXIT_USAGE;
}
