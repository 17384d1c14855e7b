/* virtflow-worker: consumes task.schedule, schedules, records, publishes
 * completion events (docs/contracts.md "Programs"). */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "http.h"
#include "hangup.h"
#include "log.h"
#include "service.h"
#include "version.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int signo)
{
    (void)signo;
    stop_requested = 1;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: virtflow-worker [-c CONFIG | --defaults]\n"
                 "       virtflow-worker --version\n"
                 "\n"
                 "Consumes task.schedule requests from RabbitMQ, places each VM, records the\n"
                 "task and its history in SQLite and publishes a completion event.\n"
                 "CONFIG defaults to $VIRTFLOW_CONFIG, else /etc/virtflow/config.yaml when it\n"
                 "exists. Without any of them it refuses to start unless --defaults asks for\n"
                 "the built-in defaults (a broker on 127.0.0.1:5672 as guest, store\n"
                 "virtflow.db in the current directory).\n"
                 "SIGTERM or SIGINT: stop consuming, finish the messages in hand, exit 0.\n"
                 "SIGHUP: read the file again; apply the scheduler and inventory sections and\n"
                 "log.level, log any other changed key as needing a restart\n"
                 "(docs/operations.md).\n");
}

int main(int argc, char **argv)
{
    vf_log_set_program("virtflow-worker");
    static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                             {"help", no_argument, NULL, 'h'},
                                             {"defaults", no_argument, NULL, 'D'},
                                             {"version", no_argument, NULL, 'V'},
                                             {NULL, 0, NULL, 0}};
    const char *config_path = NULL;
    bool use_defaults = false;
    int c;
    while ((c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config_path = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'D':
            use_defaults = true;
            break;
        case 'V':
            vf_version_print("virtflow-worker");
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "virtflow-worker: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    vf_error err;
    vf_error_init(&err);
    vf_config *config = config_resolve(config_path, &err);
    if (!config) {
        log_error("configuration: %s", err.text);
        return 3;
    }
    if (config_is_builtin(config) && !use_defaults) {
        log_error("no configuration file (no -c, no $VIRTFLOW_CONFIG, no %s): refusing to start "
                  "on the built-in defaults; give -c FILE, or --defaults to use them on purpose",
                  CONFIG_SYSTEM_PATH);
        config_free(config);
        return 3;
    }
    vf_log_set_level(config->log.level);
    vf_log_set_format(config->log.format);
    /* Before any thread starts, so that none keeps SIGHUP's default action:
     * SIGHUP asks for a reload (service.c). */
    if (hangup_watch_start(&err) < 0)
        log_warn("%s", err.text);
    if (http_global_init(&err) < 0) {
        log_error("%s", err.text);
        config_free(config);
        return 1;
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    signal(SIGPIPE, SIG_IGN);

    log_info("virtflow-worker %s%s%s starting with %s", vf_version(),
             vf_version_commit()[0] ? " commit " : "", vf_version_commit(),
             config->path ? config->path : "built-in defaults");
    int rc = service_run(config, &stop_requested);
    config_free(config);
    return rc == 0 ? 0 : 1;
}
