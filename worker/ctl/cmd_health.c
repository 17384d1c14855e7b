/* virtflowctl health: a probe for Kubernetes and systemd. Opens the store
 * read-only and runs one query; with --broker also logs in to the broker.
 * Writes nothing, prints one line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "store_tasks.h"

static void health_usage(FILE *out)
{
    fprintf(out, "usage: virtflowctl health [-c CONFIG] [--store PATH] [--broker [--no-store]]\n"
                 "\n"
                 "Exit 0 when the store (PATH or a postgresql:// URL, else store.path or\n"
                 "store.url) opens read-only and answers a query, and, with --broker, when the\n"
                 "broker (amqp.urls) accepts a login (declaring nothing). --no-store checks\n"
                 "the broker alone: before a worker has made the store, say.\n"
                 "Otherwise exit non-zero with a one-line reason. Writes nothing; meant for\n"
                 "liveness and readiness probes (deploy/kubernetes/*.yaml).\n"
                 "\n"
                 "  --store PATH  this store (an SQLite path or a postgresql:// URL) rather\n"
                 "                than the configured one; no config needed then\n"
                 "  --broker      also log in to the broker, declaring nothing\n"
                 "  --no-store    with --broker: the broker alone\n"
                 "\n"
                 "examples:\n"
                 "  virtflowctl health --broker\n"
                 "  virtflowctl health --broker --no-store\n"
                 "\n"
                 "exit status: 0 healthy, 2 usage, 3 configuration error, 4 store or broker\n"
                 "unavailable.\n");
}

static int first_task(const store_task *task, void *user)
{
    (void)task;
    (void)user;
    return 1;
}

int ctl_health(int argc, char **argv)
{
    const char *store_path = NULL;
    bool broker = false, check_store = true;
    const ctl_option options[] = {
        {"store", 0, CTL_OPTION_STRING, &store_path, NULL, NULL, NULL, NULL},
        {"broker", 0, CTL_OPTION_SET, &broker, NULL, NULL, NULL, NULL},
        {"no-store", 0, CTL_OPTION_CLEAR, &check_store, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed = ctl_options_parse("health", argc, argv, options, health_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    if (args.operand_count > 0) {
        ctl_error("health: unexpected argument '%s'", args.operands[0]);
        return CTL_EXIT_USAGE;
    }
    if (!check_store && (!broker || store_path)) {
        ctl_error("health: --no-store goes with --broker, without --store");
        return CTL_EXIT_USAGE;
    }
    const char *config_path = args.config_path;
    vf_config *config = NULL;
    /* A probe with --store needs no config unless it also checks the broker. */
    if ((!store_path || broker) && !(config = ctl_load_config(config_path)))
        return CTL_EXIT_CONFIG;
    /* --store takes a path or a postgresql:// URL; the configured store comes
     * with its password file and TLS keys. */
    bool configured = !store_path;
    if (configured)
        store_path = ctl_store_name(config);
    int rc = CTL_EXIT_UNAVAILABLE;
    amqp_link *link = NULL;
    store *s = NULL;
    vf_error err;
    vf_error_init(&err);
    if (!check_store)
        goto broker_only;
    s = configured ? ctl_open_store(config, STORE_READ_ONLY)
                   : ctl_open_store_at(store_path, STORE_READ_ONLY);
    /* Probes' output ends up in logs: never a password from --store URL. */
    char shown[512];
    if (!configured && store_is_url(store_path)) {
        store_url_for_messages(store_path, shown, sizeof shown);
        store_path = shown;
    }
    if (!s)
        goto out;
    store_task_filter one = {.limit = 1};
    if (store_task_list(s, &one, first_task, NULL, &err) < 0) {
        ctl_error("unhealthy: store %s does not answer: %s", store_path, err.text);
        goto out;
    }
broker_only:
    if (broker && !(link = ctl_connect(config, "health", CTL_BROKER_READ, &rc)))
        goto out;
    if (check_store)
        printf("ok: store %s answers%s\n", store_path, broker ? "; broker accepts a login" : "");
    else
        printf("ok: broker accepts a login\n");
    rc = CTL_EXIT_OK;
out:
    amqp_link_free(link);
    store_close(s);
    config_free(config);
    return rc;
}
