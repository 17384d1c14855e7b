/* virtflowctl serve: the web console over the store (worker/ctl/console/),
 * read-only unless started with --allow-actions and a token. This file holds
 * only the command line and the safety checks made before listening. */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "console/console.h"
#include "ctl.h"
#include "httpd.h"
#include "secret_file.h"

#define DEFAULT_LISTEN "127.0.0.1:8080"

static void serve_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl serve [-c CONFIG] [--listen HOST:PORT]\n"
            "                         [--allow-actions] [--token-file FILE]\n"
            "\n"
            "A web console over the store (opened read-only): tasks with filters, each\n"
            "task's request, result, reservations and history; hosts with their capacity\n"
            "and reservations; webhook deliveries by receiver; the dead letters; pictures.\n"
            "Runs until interrupted (Ctrl-C, SIGTERM).\n"
            "\n"
            "  --listen HOST:PORT  where to listen (default %s; port 0 picks one,\n"
            "                      printed at start)\n"
            "  --token-file FILE   the token (one line; e.g. openssl rand -hex 32):\n"
            "                      needed by every action, and by every page when\n"
            "                      listening off loopback (HTTP Basic, token as password)\n"
            "  --allow-actions     offer redrive (dead letters) and redeliver (deliveries),\n"
            "                      as POST forms that must carry the token\n"
            "\n"
            "Listening on anything but loopback needs --token-file; --allow-actions needs\n"
            "--token-file. Pages send a Content-Security-Policy that forbids scripts.\n"
            "\n"
            "exit status: 0 stopped by a signal, 2 usage (or refused: see above), 3\n"
            "configuration error, 4 store or address unavailable.\n",
            DEFAULT_LISTEN);
}

int ctl_serve(int argc, char **argv)
{
    enum { OPT_LISTEN = 256, OPT_ALLOW_ACTIONS, OPT_TOKEN_FILE };
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"allow-actions", no_argument, NULL, OPT_ALLOW_ACTIONS},
        {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = NULL, *listen = DEFAULT_LISTEN, *token_file = NULL;
    bool allow_actions = false;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config_path = optarg;
            break;
        case OPT_LISTEN:
            listen = optarg;
            break;
        case OPT_ALLOW_ACTIONS:
            allow_actions = true;
            break;
        case OPT_TOKEN_FILE:
            token_file = optarg;
            break;
        case 'h':
            serve_usage(stdout);
            return CTL_EXIT_OK;
        default:
            serve_usage(stderr);
            return CTL_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        ctl_error("serve: unexpected argument '%s'", argv[optind]);
        return CTL_EXIT_USAGE;
    }
    bool loopback = httpd_listen_is_loopback(listen);
    if (!loopback && !token_file) {
        ctl_error("serve: refusing to listen on %s without a token: the console shows every "
                  "task to whoever can reach it. Listen on 127.0.0.1 (and use an SSH tunnel), "
                  "or give --token-file FILE",
                  listen);
        return CTL_EXIT_USAGE;
    }
    if (allow_actions && !token_file) {
        ctl_error("serve: --allow-actions needs --token-file FILE (every action must carry "
                  "the token)");
        return CTL_EXIT_USAGE;
    }
    char token[SECRET_FILE_MAX];
    vf_error err;
    vf_error_init(&err);
    if (token_file && secret_file_read("--token-file", token_file, token, sizeof token, &err) < 0) {
        ctl_error("%s", err.text);
        return CTL_EXIT_USAGE;
    }
    vf_config *config = ctl_load_config(config_path);
    if (!config) {
        explicit_bzero(token, sizeof token);
        return CTL_EXIT_CONFIG;
    }
    int rc = CTL_EXIT_CONFIG;
    httpd *srv = NULL;
    char self_exe[PATH_MAX];
    console con = {.config = config,
                   .config_path = config_path,
                   .allow_actions = allow_actions,
                   .token = token_file ? token : NULL,
                   .require_auth = !loopback,
                   .self_exe = self_exe};
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (n <= 0) {
        ctl_error("serve: cannot find this program's path (/proc/self/exe)");
        goto out;
    }
    self_exe[n] = '\0';
    if (!(con.inventory = inventory_new(config, &err))) {
        ctl_error("%s", err.text);
        goto out;
    }
    rc = CTL_EXIT_UNAVAILABLE;
    if (!(con.store = ctl_open_store(config, STORE_READ_ONLY)))
        goto out;

    /* The server's thread inherits this mask, so the signals come to
     * sigwait below and nowhere else. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    if (!(srv = httpd_start(listen, console_handle, &con, &err))) {
        ctl_error("serve: %s", err.text);
        goto out;
    }
    printf("virtflowctl serve: console on port %d (%s), store %s, %s\n", httpd_port(srv), listen,
           ctl_store_name(config), allow_actions ? "actions allowed with the token" : "read-only");
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    rc = CTL_EXIT_OK;
out:
    httpd_stop(srv);
    store_close(con.store);
    inventory_free(con.inventory);
    config_free(config);
    explicit_bzero(token, sizeof token);
    return rc;
}
