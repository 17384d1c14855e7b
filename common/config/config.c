/* config: YAML file → vf_config, checked against a table of known keys.
 *
 * The file is loaded whole with libyaml's document API, so every node keeps
 * the line it started on, and then walked against static tables describing
 * each section. The walk starts from config_defaults(): a key the file does
 * not name (or names with a null value) keeps its default. The first error
 * stops the walk; its text is "file:line: key.path: what was expected". */
#include "config.h"
#include "config_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <amqp.h>
#include <yaml.h>

#include "log.h"

/* ---- public API ------------------------------------------------------------------------ */

static int copy_ints(int **out, size_t *n_out, const int *values, size_t n)
{
    *out = malloc(n * sizeof **out);
    if (!*out)
        return -1;
    memcpy(*out, values, n * sizeof **out);
    *n_out = n;
    return 0;
}

vf_config *config_defaults(void)
{
    static const int delays[] = {5, 30, 120, 600};
    static const int schedule[] = {0, 5, 300, 1800, 7200, 18000, 36000, 36000};
    vf_config *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->amqp.urls = calloc(1, sizeof *c->amqp.urls);
    if (!c->amqp.urls)
        goto config_fail;
    c->amqp.urls[0] = strdup("amqp://guest:guest@127.0.0.1:5672/");
    if (!c->amqp.urls[0])
        goto config_fail;
    c->amqp.n_urls = 1;
    c->amqp.queue_type = CONFIG_QUEUE_QUORUM;
    c->amqp.prefetch = 200;
    c->amqp.heartbeat_s = 20;
    c->amqp.max_message_bytes = 1048576;
    c->amqp.tls_verify = true;

    c->inventory.source = CONFIG_INVENTORY_FILE;
    c->inventory.refresh_s = 10;
    c->inventory.max_age_s = 300;
    c->inventory.record_every_s = 3600;
    c->inventory.record_decided = true;
    c->inventory.timeout_s = 5;
    c->inventory.tls_verify = true;
    c->store.tls_verify = true;

    c->scheduler.overcommit_cpu = 4.0;
    c->scheduler.overcommit_memory = 1.0;
    c->scheduler.dedicated_exclusive = true;
    c->scheduler.subset_size = 1;
    c->scheduler.near_best_hosts = 4;
    c->scheduler.near_best_max_loss = 5.0;
    c->scheduler.reservation_ttl_s = 900;
    c->scheduler.priority_lane_min = 1000;
    /* A refresh (10 s) plus a full clone of a large template, which takes
     * Proxmox VE minutes; a linked clone takes seconds. */
    c->scheduler.preemption_grace_s = 300;

    c->retry.max_attempts = 5;
    c->retry.recheck_on_room = 20;

    c->store.retention_s = 30LL * 86400;
    c->store.statement_timeout_ms = 30000; /* STORE_STATEMENT_TIMEOUT_MS */

    c->spare.anti_affinity_strict = true;
    c->spare.provisioner.timeout_s = 600;
    c->spare.readiness.poll_s = 10;

    c->log.level = VF_LOG_INFO;
    c->log.format = VF_LOG_FORMAT_TEXT;
    c->worker.http_listen = strdup("127.0.0.1:9464");
    c->relay.http_listen = strdup("127.0.0.1:9465");
    c->api.listen = strdup("127.0.0.1:8080");
    c->api.requeue_after_s = 300;
    c->nats.duplicate_window_s = 120;
    c->api.requeue_max = 3;
    if (!c->worker.http_listen || !c->relay.http_listen || !c->api.listen)
        goto config_fail;

    if (!(c->store.path = strdup("virtflow.db")) ||
        !(c->inventory.path = strdup("deploy/inventory.example.yaml")) ||
        !(c->spare.name_pattern = strdup("spare-{upgrade_id}-{index}")) ||
        !(c->spare.provisioner.type = strdup("none")) ||
        !(c->spare.provisioner.ref = strdup("main")) ||
        !(c->spare.readiness.type = strdup("none")) ||
        !(c->spare.release_kubernetes = strdup("none")) ||
        !(c->nats.stream = strdup("VIRTFLOW_EVENTS")) ||
        !(c->nats.subject_prefix = strdup("virtflow.events")) ||
        copy_ints(&c->retry.delays_s, &c->retry.n_delays, delays,
                  sizeof delays / sizeof delays[0]) < 0 ||
        copy_ints(&c->relay.schedule_s, &c->relay.n_schedule, schedule,
                  sizeof schedule / sizeof schedule[0]) < 0)
        goto config_fail;
    return c;
config_fail:
    config_free(c);
    return NULL;
}

static void syntax_error(const yaml_parser_t *parser, const char *name, vf_error *err)
{
    vf_error_set(err, VF_ECONFIG, "%s:%zu: %s", name, parser->problem_mark.line + 1,
                 parser->problem ? parser->problem : "invalid YAML");
}

/* scheduler.plugin_config: qemu-scheduler's own plugin-config file
 * ({filters,scores,vmids}: Name: {enable: bool}, plus virtflow's weight and
 * args), read once at load. Its entries go before the config file's own
 * scheduler.plugins entries, which the engine applies later and so win. */
static int load_plugin_file(const char *path, const char *section, const field *kinds, void *base,
                            config_plugin **list, size_t *n_list, vf_error *err)
{
    int rc = -1;
    char *text = NULL;
    yaml_parser_t parser;
    yaml_document_t doc;
    bool have_parser = false, have_doc = false;
    loader ld = {.doc = &doc, .name = path, .base_dir = "", .err = err};
    FILE *f = NULL;
    /* Non-blocking and regular files only: a FIFO or a device named here
     * must not hang or feed the loader. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        vf_error_set(err, VF_ECONFIG, "%s.plugin_config: %s: cannot open: %s", section, path,
                     strerror(saved));
        goto out;
    }
    if (!S_ISREG(st.st_mode) || !(f = fdopen(fd, "rb"))) {
        close(fd);
        vf_error_set(err, VF_ECONFIG, "%s.plugin_config: %s: not a regular file", section, path);
        goto out;
    }
    text = malloc(CONFIG_MAX_BYTES + 1);
    if (!text) {
        vf_error_set(err, VF_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    size_t len = fread(text, 1, CONFIG_MAX_BYTES + 1, f);
    if (ferror(f) || len > CONFIG_MAX_BYTES) {
        vf_error_set(err, VF_ECONFIG, "%s.plugin_config: %s: cannot read it whole", section, path);
        goto out;
    }
    if (!yaml_parser_initialize(&parser)) {
        vf_error_set(err, VF_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    have_parser = true;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        syntax_error(&parser, path, err);
        goto out;
    }
    have_doc = true;
    size_t before = *n_list;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && !config_is_null(root) && config_walk_mapping(&ld, root, kinds, base, "") < 0)
        goto out;
    size_t added = *n_list - before;
    config_plugin *all = *list;
    for (size_t i = before; i < *n_list; i++)
        all[i].file = path;
    if (added && before) {
        config_plugin *moved = malloc(added * sizeof *moved);
        if (!moved) {
            vf_error_set(err, VF_ENOMEM, "%s: out of memory", path);
            goto out;
        }
        memcpy(moved, all + before, added * sizeof *moved);
        memmove(all + added, all, before * sizeof *all);
        memcpy(all, moved, added * sizeof *moved);
        free(moved);
    }
    rc = 0;
out:
    if (have_doc)
        yaml_document_delete(&doc);
    if (have_parser)
        yaml_parser_delete(&parser);
    if (f)
        fclose(f);
    free(text);
    return rc;
}

/* Parses `text` over the defaults. `base_dir` ("" or ending in '/') anchors
 * relative paths. */
static vf_config *load(const char *text, size_t len, const char *name, const char *base_dir,
                       vf_error *err)
{
    vf_config *config = NULL;
    yaml_parser_t parser;
    yaml_document_t doc;
    bool have_parser = false, have_doc = false;
    loader ld = {.doc = &doc, .name = name, .base_dir = base_dir, .err = err};

    if (!yaml_parser_initialize(&parser)) {
        vf_error_set(err, VF_ENOMEM, "%s: out of memory", name);
        goto out;
    }
    have_parser = true;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        if (parser.error == YAML_MEMORY_ERROR)
            vf_error_set(err, VF_ENOMEM, "%s: out of memory", name);
        else
            syntax_error(&parser, name, err);
        goto out;
    }
    have_doc = true;

    config = config_defaults();
    if (!config) {
        vf_error_set(err, VF_ENOMEM, "%s: out of memory", name);
        goto out;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && !config_is_null(root) &&
        config_walk_mapping(&ld, root, config_top_fields, config, "") < 0)
        goto config_fail;
    if (config->scheduler.plugin_config &&
        load_plugin_file(config->scheduler.plugin_config, "scheduler", config_plugin_kinds, config,
                         &config->scheduler.plugins, &config->scheduler.n_plugins, err) < 0)
        goto config_fail;
    for (size_t i = 0; i < config->scheduler.n_profiles; i++) {
        config_profile *profile = &config->scheduler.profiles[i];
        if (profile->plugin_config &&
            load_plugin_file(profile->plugin_config, profile->section, config_profile_plugin_kinds,
                             profile, &profile->plugins, &profile->n_plugins, err) < 0)
            goto config_fail;
    }

    /* A second document would be silently ignored: say so instead. */
    yaml_document_t next;
    if (!yaml_parser_load(&parser, &next)) {
        syntax_error(&parser, name, err);
        goto config_fail;
    }
    yaml_node_t *next_root = yaml_document_get_root_node(&next);
    int next_line = next_root ? (int)next_root->start_mark.line + 1 : 0;
    yaml_document_delete(&next);
    if (next_root) {
        vf_error_set(err, VF_ECONFIG, "%s:%d: expected a single YAML document", name, next_line);
        goto config_fail;
    }
    goto out;
config_fail:
    config_free(config);
    config = NULL;
out:
    if (have_doc)
        yaml_document_delete(&doc);
    if (have_parser)
        yaml_parser_delete(&parser);
    return config;
}

static void warn_insecure(const vf_config *config, const char *name)
{
    if (!config->amqp.tls_verify)
        log_warn("%s: amqp.tls_verify is false: broker certificates are NOT checked", name);
    if (config->store.url && !config->store.tls_verify)
        log_warn("%s: store.tls_verify is false: PostgreSQL server certificates are NOT checked",
                 name);
    if (!config->inventory.tls_verify)
        log_warn("%s: inventory.tls_verify is false: inventory certificates are NOT checked", name);
}

vf_config *config_load_string(const char *text, size_t len, const char *name, vf_error *err)
{
    vf_config *config = load(text, len, name, "", err);
    if (config)
        warn_insecure(config, name);
    return config;
}

vf_config *config_load(const char *path, vf_error *err)
{
    char *text = NULL;
    char *base_dir = NULL;
    vf_config *config = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        int saved = errno;
        vf_error_set(err, VF_EIO, "%s: cannot open: %s", path, strerror(saved));
        goto out;
    }
    text = malloc(CONFIG_MAX_BYTES + 1);
    if (!text) {
        vf_error_set(err, VF_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    size_t len = fread(text, 1, CONFIG_MAX_BYTES + 1, f);
    if (ferror(f)) {
        int saved = errno;
        vf_error_set(err, VF_EIO, "%s: cannot read: %s", path, strerror(saved));
        goto out;
    }
    if (len > CONFIG_MAX_BYTES) {
        vf_error_set(err, VF_ECONFIG, "%s: larger than %d bytes", path, CONFIG_MAX_BYTES);
        goto out;
    }
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    base_dir = malloc(dir_len + 1);
    if (!base_dir) {
        vf_error_set(err, VF_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    memcpy(base_dir, path, dir_len);
    base_dir[dir_len] = '\0';
    config = load(text, len, path, base_dir, err);
    if (!config)
        goto out;
    config->path = strdup(path);
    if (!config->path) {
        vf_error_set(err, VF_ENOMEM, "%s: out of memory", path);
        config_free(config);
        config = NULL;
        goto out;
    }
    warn_insecure(config, path);
out:
    if (f)
        fclose(f);
    free(text);
    free(base_dir);
    return config;
}

vf_config *config_resolve(const char *cli_path, vf_error *err)
{
    return config_resolve_from(cli_path, CONFIG_SYSTEM_PATH, err);
}

static vf_config *resolve_file(const char *cli_path, const char *system_path, vf_error *err)
{
    if (cli_path)
        return config_load(cli_path, err);
    const char *env = getenv("VIRTFLOW_CONFIG");
    if (env && *env)
        return config_load(env, err);
    /* Where the packages, the image and the units put it: read when it is
     * there, so a program started by hand on that host uses the same file. */
    if (system_path && access(system_path, F_OK) == 0)
        return config_load(system_path, err);
    vf_config *config = config_defaults();
    if (!config)
        vf_error_set(err, VF_ENOMEM, "built-in configuration: out of memory");
    return config;
}

vf_config *config_resolve_from(const char *cli_path, const char *system_path, vf_error *err)
{
    extern char **environ;
    vf_config *config = resolve_file(cli_path, system_path, err);
    /* Keys that must agree, once the variables are over the file. */
    if (config && (config_apply_environment(config, (const char *const *)environ, err) < 0 ||
                   config_check_rules(config, NULL, NULL, NULL, err) < 0)) {
        config_free(config);
        return NULL;
    }
    return config;
}

bool config_is_builtin(const vf_config *config)
{
    if (config->path)
        return false;
    /* VIRTFLOW_LOG_LEVEL in a shell profile does not choose a broker. */
    for (size_t i = 0; i < config->n_env; i++)
        if (!strncmp(config->env_keys[i], "amqp.", 5) || !strncmp(config->env_keys[i], "store.", 6))
            return false;
    return true;
}

void config_free(vf_config *c)
{
    if (!c)
        return;
    free(c->path);
    config_free_strings(c->env_names, c->n_env);
    config_free_strings(c->env_keys, c->n_env);
    free(c->worker.http_listen);
    free(c->relay.http_listen);
    free(c->nats.url);
    free(c->nats.stream);
    free(c->nats.subject_prefix);
    free(c->api.listen);
    config_free_strings(c->api.allowed_hosts, c->api.n_allowed_hosts);
    config_free_strings(c->api.idempotency_secret_files, c->api.n_idempotency_secret_files);
    config_free_strings(c->api.trusted_proxies, c->api.n_trusted_proxies);
    free(c->api.keys_file);
    free(c->api.tls_cert_file);
    free(c->api.tls_key_file);
    config_free_strings(c->amqp.urls, c->amqp.n_urls);
    free(c->amqp.password_file);
    free(c->amqp.ca_file);
    free(c->store.path);
    free(c->store.url);
    free(c->store.password_file);
    free(c->store.ca_file);
    free(c->inventory.path);
    free(c->inventory.url);
    free(c->inventory.token_file);
    free(c->inventory.ca_file);
    free(c->scheduler.plugins);
    free(c->scheduler.plugin_config);
    config_profiles_free(c);
    config_priority_classes_free(c);
    free(c->scheduler.default_priority_class);
    free(c->retry.delays_s);
    for (size_t i = 0; i < c->relay.n_receivers; i++)
        config_receiver_free(&c->relay.receivers[i]);
    free(c->relay.receivers);
    free(c->relay.schedule_s);
    config_free_strings(c->relay.trusted_publishers, c->relay.n_trusted_publishers);
    free(c->spare.name_pattern);
    free(c->spare.provisioner.type);
    free(c->spare.provisioner.url);
    free(c->spare.provisioner.project);
    free(c->spare.provisioner.ref);
    free(c->spare.provisioner.token_file);
    config_free_strings(c->spare.provisioner.command, c->spare.provisioner.n_command);
    free(c->spare.readiness.type);
    free(c->spare.readiness.api_url);
    free(c->spare.readiness.token_file);
    free(c->spare.readiness.ca_file);
    free(c->spare.provisioner.api_token_file);
    free(c->spare.release_kubernetes);
    config_clusters_free(c);
    config_shapes_free(c);
    free(c);
}

/* The user a URL logs in as, as amqp_link_connect parses it, into
 * user[size]; false for a URL it cannot parse. */
bool config_url_user(const char *url, char *user, size_t size)
{
    char copy[CONFIG_URL_COPY_MAX];
    if (snprintf(copy, sizeof copy, "%s", url) >= (int)sizeof copy)
        return false;
    struct amqp_connection_info info;
    bool ok = amqp_parse_url(copy, &info) == AMQP_STATUS_OK &&
              snprintf(user, size, "%s", info.user) < (int)size;
    explicit_bzero(copy, sizeof copy); /* it held a password */
    return ok;
}

static bool url_user_is(const char *url, const char *user)
{
    char login[256];
    return config_url_user(url, login, sizeof login) && strcmp(login, user) == 0;
}

bool config_trusts_publisher(const vf_config *config, const char *user)
{
    if (!user || !*user)
        return false;
    if (config->relay.n_trusted_publishers > 0) {
        for (size_t i = 0; i < config->relay.n_trusted_publishers; i++)
            if (strcmp(config->relay.trusted_publishers[i], user) == 0)
                return true;
        return false;
    }
    for (size_t i = 0; i < config->amqp.n_urls; i++)
        if (url_user_is(config->amqp.urls[i], user))
            return true;
    return false;
}
