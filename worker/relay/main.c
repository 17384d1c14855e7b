/* virtflow-relay: delivers events as signed webhooks (docs/contracts.md "Programs"). */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "http.h"
#include "hangup.h"
#include "log.h"
#include "relay.h"
#include "version.h"

enum { EXIT_OK = 0, EXIT_FAILURE_RUN = 1, EXIT_USAGE = 2, EXIT_CONFIG = 3 };

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: virtflow-relay [-c FILE | --defaults]\n"
                 "       virtflow-relay --version\n\n"
                 "Consumes events from virtflow.relay and delivers them as signed webhooks\n"
                 "to the receivers in relay.receivers. -c FILE, else $VIRTFLOW_CONFIG, else\n"
                 "/etc/virtflow/config.yaml when it exists; without any of them it refuses to\n"
                 "start unless --defaults asks for the built-in defaults.\n"
                 "SIGTERM/SIGINT: finish requests in flight, then exit 0.\n"
                 "SIGHUP: read the file again; apply relay.receivers (secrets read again),\n"
                 "relay.schedule_s and log.level; log other changed keys as needing a restart.\n"
                 "exit status: 0 stopped, 1 runtime failure, 2 usage, 3 configuration error.\n");
}

int main(int argc, char **argv)
{
    vf_log_set_program("virtflow-relay");
    const char *config_path = NULL;
    bool use_defaults = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return EXIT_OK;
        }
        if (strcmp(argv[i], "--version") == 0) {
            vf_version_print("virtflow-relay");
            return EXIT_OK;
        }
        if (strcmp(argv[i], "--defaults") == 0) {
            use_defaults = true;
            continue;
        }
        if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
            config_path = argv[++i];
            continue;
        }
        fprintf(stderr, "virtflow-relay: unexpected argument '%s'\n", argv[i]);
        usage(stderr);
        return EXIT_USAGE;
    }

    vf_error err;
    vf_error_init(&err);
    vf_config *config = config_resolve(config_path, &err);
    if (!config) {
        log_error("%s", err.text);
        return EXIT_CONFIG;
    }
    if (config_is_builtin(config) && !use_defaults) {
        log_error("no configuration file (no -c, no $VIRTFLOW_CONFIG, no %s): refusing to start "
                  "on the built-in defaults; give -c FILE, or --defaults to use them on purpose",
                  CONFIG_SYSTEM_PATH);
        config_free(config);
        return EXIT_CONFIG;
    }
    vf_log_set_level(config->log.level);
    vf_log_set_format(config->log.format);
    /* Before any thread starts, so that none keeps SIGHUP's default action:
     * SIGHUP asks for a reload (relay.c). */
    if (hangup_watch_start(&err) < 0)
        log_warn("%s", err.text);
    if (http_global_init(&err) < 0) {
        log_error("%s", err.text);
        config_free(config);
        return EXIT_FAILURE_RUN;
    }
    relay *r = relay_new(config, &err);
    if (!r) {
        if (err.code == VF_ECONFIG && config->path)
            log_error("%s: %s", config->path, err.text);
        else
            log_error("%s", err.text);
        int code = err.code == VF_ECONFIG ? EXIT_CONFIG : EXIT_FAILURE_RUN;
        config_free(config);
        return code;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rc = relay_run(r, &stop_requested, &err);
    relay_free(r);
    config_free(config);
    return rc == 0 ? EXIT_OK : EXIT_FAILURE_RUN;
}
