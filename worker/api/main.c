/* virtflow-api: the virtflow-scheduler prototype's HTTP interface
 * (docs/api.md) over virtflow's broker and store. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "api_keys.h"
#include "api_tls.h"
#include "config.h"
#include "hangup.h"
#include "httpd.h"
#include "notify.h"
#include "log.h"
#include "program.h"

static const char usage[] =
    "usage: virtflow-api [-c FILE | --defaults]\n"
    "       virtflow-api new-key NAME SCOPE[,SCOPE...]\n"
    "       virtflow-api --version\n\n"
    "Answers the virtflow-scheduler prototype's routes on api.listen:\n"
    "POST /schedule records the task as queued and publishes it to the worker,\n"
    "GET /result/{task_id} reads its state from the store; /healthz, /readyz,\n"
    "/metrics; the versioned API: /v1/tasks (submit, list, one task, ?wait=),\n"
    "/v1/hosts (docs/api.md).\n"
    "new-key prints a new random key and its line for api.keys_file (the key\n"
    "hashed); SCOPES: submit, read, release, admin. The key is shown once only.\n"
    "-c FILE, else $VIRTFLOW_CONFIG, else /etc/virtflow/config.yaml when it\n"
    "exists; without any of them it refuses to start unless --defaults asks for\n"
    "the built-in defaults.\n"
    "SIGTERM/SIGINT: finish the request in progress, then exit 0.\n"
    "exit status: 0 stopped, 1 runtime failure, 2 usage, 3 configuration error.\n";

/* The Host names to answer to besides loopback ones (a page elsewhere can
 * rebind its own name to this address: DNS rebinding): api.allowed_hosts and
 * the address listened on, which the operator typed. Owned array of
 * borrowed names (own_host among them); NULL when out of memory. */
static const char **allowed_hosts_new(const vf_config *config, char *own_host, size_t own_size,
                                      size_t *n)
{
    const char **hosts = calloc(config->api.n_allowed_hosts + 1, sizeof *hosts);
    if (!hosts)
        return NULL;
    *n = 0;
    for (size_t i = 0; i < config->api.n_allowed_hosts; i++)
        hosts[(*n)++] = config->api.allowed_hosts[i];
    const char *listen = config->api.listen;
    const char *colon = strrchr(listen, ':');
    if (colon && (size_t)(colon - listen) < own_size && !httpd_listen_is_wildcard(listen)) {
        memcpy(own_host, listen, (size_t)(colon - listen));
        own_host[colon - listen] = '\0';
        hosts[(*n)++] = own_host;
    }
    return hosts;
}

/* virtflow-api new-key NAME SCOPES */
static int new_key(int argc, char **argv)
{
    if (argc != 4) {
        fputs(usage, stderr);
        return PROGRAM_EXIT_USAGE;
    }
    char key[128], line[256];
    vf_error err;
    vf_error_init(&err);
    if (api_keys_new_key(argv[2], argv[3], key, sizeof key, line, sizeof line, &err) < 0) {
        fprintf(stderr, "virtflow-api: new-key: %s\n", err.text);
        return PROGRAM_EXIT_USAGE;
    }
    printf("# the key, for the client (Authorization: Bearer KEY); it is kept nowhere else:\n"
           "%s\n"
           "# its line for api.keys_file:\n"
           "%s\n",
           key, line);
    explicit_bzero(key, sizeof key);
    return PROGRAM_EXIT_OK;
}

/* The HTTP server for `a` on api.listen: TLS when configured, Host checked
 * against `hosts` (borrowed: they must outlive the server), the probes
 * answered under any host. The server, or NULL logged with *status the
 * exit status. */
static httpd *start_server(const vf_config *config, api *a, const char **hosts, size_t n_hosts,
                           int *status)
{
    char *tls_cert = NULL, *tls_key = NULL;
    vf_error err;
    vf_error_init(&err);
    if (api_tls_load(config, &tls_cert, &tls_key, &err) < 0) {
        log_error("%s", err.text);
        *status = err.code == VF_ECONFIG ? PROGRAM_EXIT_CONFIG : PROGRAM_EXIT_FAILED;
        return NULL;
    }
    /* What the kubelet and Prometheus ask for under the pod's address,
     * which no configuration names (metrics_http.h answers them the same
     * way on the worker and the relay). */
    static const char *const probes[] = {"/metrics", "/healthz", "/readyz", NULL};
    httpd_options options = {.check_host = true,
                             .allowed_hosts = hosts,
                             .n_allowed_hosts = n_hosts,
                             .any_host_paths = probes,
                             .answer_oversized = true,
                             .max_waiting = API_MAX_WAITING,
                             .tls_cert_pem = tls_cert,
                             .tls_key_pem = tls_key,
                             .trusted_proxies = (const char *const *)config->api.trusted_proxies,
                             .n_trusted_proxies = config->api.n_trusted_proxies};
    httpd *server = httpd_start_with(config->api.listen, &options, api_handle, a, &err);
    /* httpd keeps copies: ours go now, the key wiped. */
    api_tls_free_key(tls_key);
    free(tls_cert);
    if (!server) {
        log_error("api.listen %s: %s", config->api.listen, err.text);
        *status = err.code == VF_ECONFIG ? PROGRAM_EXIT_CONFIG : PROGRAM_EXIT_FAILED;
    }
    return server;
}

/* Serve until SIGTERM or SIGINT; each SIGHUP reads the keys again. SIGHUP
 * is taken by a thread of its own (hangup.h), so this loop polls for it;
 * SIGTERM ends the sleep at once. */
static void serve(const vf_config *config, api *a, httpd *server)
{
    if (api_key_count(a) > 0)
        log_info("%zu keys from %s", api_key_count(a), config->api.keys_file);
    else
        log_info("no api.keys_file: every route is open (loopback only)");
    if (config->api.tls_cert_file)
        log_info("HTTPS: certificate %s", config->api.tls_cert_file);
    log_info("listening on %s (port %d): POST /schedule, GET /result/{task_id}, /v1/tasks",
             config->api.listen, httpd_port(server));
    notify_ready("serving");
    while (!program_stop_requested) {
        struct timespec tick = {.tv_sec = 0, .tv_nsec = 200 * 1000 * 1000};
        nanosleep(&tick, NULL);
        if (hangup_take()) {
            notify_reloading();
            (void)api_reload_keys(a);
            notify_reloaded();
        }
    }
    notify_stopping();
    log_info("stopping");
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "new-key") == 0)
        return new_key(argc, argv);
    int status;
    vf_config *config = program_start("virtflow-api", usage, PROGRAM_RELOADS, argc, argv, &status);
    if (!config)
        return status;
    /* Without keys anyone who reaches the port can submit: it then stays
     * on loopback, as the console does without its token. */
    if (!config->api.keys_file && !httpd_listen_is_loopback(config->api.listen)) {
        log_error("api.listen %s is not a loopback address and there is no api.keys_file: "
                  "without keys virtflow-api listens on loopback only (give it keys: "
                  "virtflow-api new-key NAME SCOPES, or put a proxy with authentication in "
                  "front)",
                  config->api.listen);
        config_free(config);
        return PROGRAM_EXIT_CONFIG;
    }

    status = PROGRAM_EXIT_FAILED;
    httpd *server = NULL;
    const char **hosts = NULL;
    size_t n_hosts = 0;
    char own_host[256] = "";
    vf_error err;
    vf_error_init(&err);
    api *a = api_new(config, &err);
    if (!a) {
        log_error("%s", err.text);
        status = err.code == VF_ECONFIG ? PROGRAM_EXIT_CONFIG : PROGRAM_EXIT_FAILED;
        goto out;
    }
    if (!(hosts = allowed_hosts_new(config, own_host, sizeof own_host, &n_hosts))) {
        log_error("out of memory");
        goto out;
    }
    if (!(server = start_server(config, a, hosts, n_hosts, &status)))
        goto out;
    api_attach_server(a, server);
    serve(config, a, server);
    status = PROGRAM_EXIT_OK;
out:
    if (a)
        api_attach_server(a, NULL);
    httpd_stop(server);
    free(hosts);
    api_free(a);
    config_free(config);
    return status;
}
