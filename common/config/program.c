#include "program.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hangup.h"
#include "http.h"
#include "log.h"
#include "version.h"

volatile sig_atomic_t program_stop_requested;

static void on_stop_signal(int signo)
{
    (void)signo;
    program_stop_requested = 1;
}

static void handle_signals(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void warn_rule(const config_rule *rule, const char *why, void *user)
{
    (void)user;
    log_warn("configuration: %s (%s: docs/configuration.md, \"Keys that must agree\")", why,
             rule->outcome == CONFIG_RULE_KEEPS ? "kept longer" : "not refused");
}

vf_config *program_start(const char *name, const char *usage, program_hangup hangup, int argc,
                         char **argv, int *exit_status)
{
    vf_log_set_program(name);
    static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                             {"help", no_argument, NULL, 'h'},
                                             {"defaults", no_argument, NULL, 'D'},
                                             {"version", no_argument, NULL, 'V'},
                                             {NULL, 0, NULL, 0}};
    const char *config_path = NULL;
    bool use_defaults = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config_path = optarg;
            break;
        case 'h':
            fputs(usage, stdout);
            *exit_status = PROGRAM_EXIT_OK;
            return NULL;
        case 'D':
            use_defaults = true;
            break;
        case 'V':
            vf_version_print(name);
            *exit_status = PROGRAM_EXIT_OK;
            return NULL;
        default: /* getopt_long said what */
            fputs(usage, stderr);
            *exit_status = PROGRAM_EXIT_USAGE;
            return NULL;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", name, argv[optind]);
        fputs(usage, stderr);
        *exit_status = PROGRAM_EXIT_USAGE;
        return NULL;
    }

    vf_error err;
    vf_error_init(&err);
    vf_config *config = config_resolve(config_path, &err);
    if (!config) {
        log_error("configuration: %s", err.text);
        *exit_status = PROGRAM_EXIT_CONFIG;
        return NULL;
    }
    if (config_is_builtin(config) && !use_defaults) {
        log_error("no configuration file (no -c, no $VIRTFLOW_CONFIG, no %s): refusing to start "
                  "on the built-in defaults; give -c FILE, or --defaults to use them on purpose",
                  CONFIG_SYSTEM_PATH);
        config_free(config);
        *exit_status = PROGRAM_EXIT_CONFIG;
        return NULL;
    }
    vf_log_set_level(config->log.level);
    vf_log_set_format(config->log.format);
    /* Refusals were config_resolve's; what is kept or only warned of is
     * said here (a refusal cannot come again: the same rules, the same
     * configuration). */
    if (config_check_rules(config, name, warn_rule, NULL, &err) < 0)
        log_error("configuration: %s", err.text);
    /* Before any thread starts, so that none keeps SIGHUP's default action. */
    if ((hangup == PROGRAM_RELOADS ? hangup_watch_start(&err) : hangup_notice_start(&err)) < 0)
        log_warn("%s", err.text);
    if (http_global_init(&err) < 0) {
        log_error("%s", err.text);
        config_free(config);
        *exit_status = PROGRAM_EXIT_FAILED;
        return NULL;
    }
    handle_signals();
    return config;
}
