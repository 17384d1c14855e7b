/* virtflowctl serve: the web console over the store (worker/ctl/console/),
 * read-only unless started with --allow-actions and a token. This file holds
 * only the command line and the safety checks made before listening. */
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

#define DEFAULT_LISTEN "127.0.0.1:8090"
/* Names given with --allow-host, and the listen host. */
#define MAX_ALLOWED_HOSTS 16

typedef struct allowed_hosts {
    const char *names[MAX_ALLOWED_HOSTS + 1];
    size_t count;
} allowed_hosts;

static int add_allowed_host(const ctl_option *option, const char *value)
{
    allowed_hosts *allowed = option->target;
    if (allowed->count == MAX_ALLOWED_HOSTS) {
        ctl_error("serve: at most %d --allow-host names", MAX_ALLOWED_HOSTS);
        return -1;
    }
    if (!value[0] || strchr(value, '/') || strchr(value, ' ')) {
        ctl_error("serve: --allow-host '%s' is not a host name (give NAME or an address, "
                  "without a scheme or a path)",
                  value);
        return -1;
    }
    allowed->names[allowed->count++] = value;
    return 0;
}

/* The host part of HOST:PORT into out; "" when it cannot be split. */
static void listen_host(const char *listen, char *out, size_t size)
{
    out[0] = '\0';
    const char *colon = strrchr(listen, ':');
    if (!colon || (size_t)(colon - listen) >= size)
        return;
    memcpy(out, listen, (size_t)(colon - listen));
    out[colon - listen] = '\0';
}

static void serve_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl serve [-c CONFIG] [--listen HOST:PORT]\n"
            "                         [--allow-actions] [--token-file FILE]\n"
            "                         [--allow-host NAME]...\n"
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
            "  --allow-actions     offer redrive (dead letters), redeliver (deliveries) and\n"
            "                      retry now / cancel (a retrying task's page), as POST\n"
            "                      forms that must carry the token\n"
            "  --allow-host NAME   a name (or address) browsers may use for the console,\n"
            "                      besides localhost, 127.0.0.1 and [::1] (any port) and\n"
            "                      the --listen host; repeatable. Any other Host header\n"
            "                      is answered 421 (DNS rebinding)\n"
            "\n"
            "Listening on anything but loopback needs --token-file; --allow-actions needs\n"
            "--token-file. Pages send a Content-Security-Policy that forbids scripts.\n"
            "\n"
            "examples:\n"
            "  virtflowctl serve\n"
            "  virtflowctl serve --allow-actions --token-file /etc/virtflow/console.token\n"
            "\n"
            "exit status: 0 stopped by a signal, 2 usage (or refused: see above), 3\n"
            "configuration error, 4 store or address unavailable.\n",
            DEFAULT_LISTEN);
}

/* The refusals made before anything is read: a console off loopback
 * without a token, actions without one. 0, or the exit status. */
static int check_safety(const char *listen, const char *token_file, bool allow_actions)
{
    if (!httpd_listen_is_loopback(listen) && !token_file) {
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
    return 0;
}

/* What the pages read: this program's path (for the actions), the
 * inventory and the store. 0, or the exit status (con's parts made so far
 * are freed by the caller). */
static int open_console(console *con, char *self_exe, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", self_exe, size - 1);
    if (n <= 0) {
        ctl_error("serve: cannot find this program's path (/proc/self/exe)");
        return CTL_EXIT_CONFIG;
    }
    self_exe[n] = '\0';
    vf_error err;
    vf_error_init(&err);
    if (!(con->inventory = inventory_new(con->config, &err))) {
        ctl_error("%s", err.text);
        return CTL_EXIT_CONFIG;
    }
    if (!(con->store = ctl_open_store(con->config, STORE_READ_ONLY)))
        return CTL_EXIT_UNAVAILABLE;
    return 0;
}

/* Serves the console until SIGINT or SIGTERM. */
static int serve_until_signal(console *con, const char *listen, allowed_hosts *allowed)
{
    /* The server's thread inherits this mask, so the signals come to
     * sigwait below and nowhere else. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    /* A page elsewhere can rebind its own name to this address, and the
     * browser then sends that name: only names the operator chose pass. An
     * address listened on (not a wildcard) is one the operator typed. */
    char own_host[256];
    listen_host(listen, own_host, sizeof own_host);
    if (own_host[0] && !httpd_listen_is_wildcard(listen))
        allowed->names[allowed->count++] = own_host;
    httpd_options http_options = {
        .check_host = true, .allowed_hosts = allowed->names, .n_allowed_hosts = allowed->count};
    vf_error err;
    vf_error_init(&err);
    httpd *srv = httpd_start_with(listen, &http_options, console_handle, con, &err);
    if (!srv) {
        ctl_error("serve: %s", err.text);
        return CTL_EXIT_UNAVAILABLE;
    }
    printf("virtflowctl serve: console on port %d (%s), store %s, %s\n", httpd_port(srv), listen,
           ctl_store_name(con->config),
           con->allow_actions ? "actions allowed with the token" : "read-only");
    /* Said at start, so an operator whose browser gets 421 sees why. */
    printf("virtflowctl serve: answering to Host localhost, 127.0.0.0/8, [::1]");
    for (size_t i = 0; i < allowed->count; i++)
        printf(", %s", allowed->names[i]);
    printf(" (any port); any other gets 421 (--allow-host NAME adds one)\n");
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    httpd_stop(srv);
    return CTL_EXIT_OK;
}

int ctl_serve(int argc, char **argv)
{
    const char *listen = DEFAULT_LISTEN, *token_file = NULL;
    bool allow_actions = false;
    allowed_hosts allowed = {.count = 0};
    const ctl_option options[] = {
        {"listen", 0, CTL_OPTION_STRING, &listen, NULL, NULL, NULL, NULL},
        {"allow-actions", 0, CTL_OPTION_SET, &allow_actions, NULL, NULL, NULL, NULL},
        {"token-file", 0, CTL_OPTION_PATH, &token_file, NULL, NULL, NULL, NULL},
        {"allow-host", 0, CTL_OPTION_CALL, &allowed, NULL, add_allowed_host, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed = ctl_options_parse("serve", argc, argv, options, serve_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    if (args.operand_count > 0) {
        ctl_error("serve: unexpected argument '%s'", args.operands[0]);
        return CTL_EXIT_USAGE;
    }
    int refused = check_safety(listen, token_file, allow_actions);
    if (refused)
        return refused;
    char token[SECRET_FILE_MAX];
    vf_error err;
    vf_error_init(&err);
    if (token_file && secret_file_read("--token-file", token_file, token, sizeof token, &err) < 0) {
        ctl_error("%s", err.text);
        return CTL_EXIT_USAGE;
    }
    vf_config *config = allow_actions
                            ? ctl_load_config_writing(args.config_path, "serve --allow-actions")
                            : ctl_load_config(args.config_path);
    if (!config) {
        explicit_bzero(token, sizeof token);
        return CTL_EXIT_CONFIG;
    }
    char self_exe[PATH_MAX];
    console con = {.config = config,
                   .config_path = args.config_path,
                   .allow_actions = allow_actions,
                   .token = token_file ? token : NULL,
                   .require_auth = !httpd_listen_is_loopback(listen),
                   .self_exe = self_exe};
    int rc = open_console(&con, self_exe, sizeof self_exe);
    if (rc == 0)
        rc = serve_until_signal(&con, listen, &allowed);
    store_close(con.store);
    inventory_free(con.inventory);
    config_free(config);
    explicit_bzero(token, sizeof token);
    return rc;
}
