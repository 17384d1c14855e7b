/* config_keys: the key table, every configuration key with its type,
 * bounds and default checks, and the sections whose shape needs code
 * (config_internal.h). docs/configuration.md is generated from this table
 * (config_reference.c): every key carries its .doc. */
#include "config_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <amqp.h>
#include <yaml.h>

#include "log.h"

/* ---- custom sections ------------------------------------------------------------------- */

#define PLUGIN(member) offsetof(config_plugin, member)
static const field plugin_arg_fields[] = {
    {.key = "ratio",
     .type = F_NUMBER,
     .offset = PLUGIN(ratio),
     .min_exclusive = true,
     .has_flag = true,
     .flag_offset = PLUGIN(has_ratio)},
    {.key = "reserve",
     .type = F_NUMBER,
     .offset = PLUGIN(reserve),
     .has_flag = true,
     .flag_offset = PLUGIN(has_reserve)},
    {.key = "subset_size",
     .type = F_INT,
     .offset = PLUGIN(subset_size),
     .min = 1,
     .max = 64,
     .has_max = true,
     .has_flag = true,
     .flag_offset = PLUGIN(has_subset_size)},
    {.key = "seed",
     .type = F_INT64,
     .offset = PLUGIN(seed),
     .has_flag = true,
     .flag_offset = PLUGIN(has_seed)},
    {0},
};

static const field plugin_fields[] = {
    {.key = "enable", .type = F_BOOL, .offset = offsetof(config_plugin, enable)},
    {.key = "args", .type = F_SECTION, .children = plugin_arg_fields},
    {.key = "weight",
     .type = F_NUMBER,
     .offset = offsetof(config_plugin, weight),
     .min = 0,
     .has_flag = true,
     .flag_offset = offsetof(config_plugin, has_weight)},
    {0},
};

/* scheduler.plugins.{filters,scores,vmids}: Name → {enable, weight} or {} or null. */
static int set_plugins(loader *ld, yaml_node_t *map, void *base, const char *path, const field *f)
{
    vf_config *config = base;
    if (map->type != YAML_MAPPING_NODE)
        return config_fail(ld, map, path, "expected a mapping");
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    if (n == 0)
        return 0;
    config_plugin *grown =
        realloc(config->scheduler.plugins, (config->scheduler.n_plugins + n) * sizeof *grown);
    if (!grown)
        return config_fail_nomem(ld);
    config->scheduler.plugins = grown;
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top;
         pair++) {
        yaml_node_t *key = NULL;
        char key_path[PATH_TEXT];
        if (config_mapping_key(ld, map, pair, path, &key, key_path, sizeof key_path) < 0)
            return -1;
        config_plugin plugin = {.kind = (config_plugin_kind)f->arg, .enable = true};
        if (!config_scalar(key)[0] || key->data.scalar.length >= sizeof plugin.name)
            return config_fail(ld, key, key_path, "expected a plugin name of 1-%zu characters",
                               sizeof plugin.name - 1);
        memcpy(plugin.name, config_scalar(key), key->data.scalar.length + 1);
        plugin.line = config_node_line(key);
        yaml_node_t *value = config_node_at(ld, pair->value);
        if (!config_is_null(value) &&
            config_walk_mapping(ld, value, plugin_fields, &plugin, key_path) < 0)
            return -1;
        config->scheduler.plugins[config->scheduler.n_plugins++] = plugin;
    }
    return 0;
}

const field config_plugin_kinds[] = {
    {.key = "filters", .type = F_CUSTOM, .custom = set_plugins, .arg = CONFIG_PLUGIN_FILTER},
    {.key = "scores", .type = F_CUSTOM, .custom = set_plugins, .arg = CONFIG_PLUGIN_SCORE},
    {.key = "vmids", .type = F_CUSTOM, .custom = set_plugins, .arg = CONFIG_PLUGIN_VMID},
    {0},
};

/* Header names are HTTP tokens; values may not break the header line. This
 * is what keeps a config value from injecting headers or a request. */
static int set_headers(loader *ld, yaml_node_t *map, void *base, const char *path, const field *f)
{
    (void)f;
    config_receiver *receiver = base;
    if (map->type != YAML_MAPPING_NODE)
        return config_fail(ld, map, path, "expected a mapping");
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    config_header *headers = calloc(n ? n : 1, sizeof *headers);
    if (!headers)
        return config_fail_nomem(ld);
    for (size_t i = 0; i < receiver->n_headers; i++) {
        free(receiver->headers[i].name);
        free(receiver->headers[i].value);
    }
    free(receiver->headers);
    receiver->headers = headers;
    receiver->n_headers = 0;
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top;
         pair++) {
        yaml_node_t *key = NULL;
        char key_path[PATH_TEXT];
        if (config_mapping_key(ld, map, pair, path, &key, key_path, sizeof key_path) < 0)
            return -1;
        const char *name = config_scalar(key);
        if (!*name || name[strspn(name, "!#$%&'*+-.^_`|~0123456789"
                                        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")])
            return config_fail(ld, key, key_path,
                               "expected a header name (letters, digits, -, _ ...)");
        yaml_node_t *value = config_node_at(ld, pair->value);
        const char *text = NULL;
        if (config_is_null(value))
            return config_fail(ld, value, key_path, "expected a string");
        if (config_get_string(ld, value, key_path, &text) < 0)
            return -1;
        for (const char *c = text; *c; c++)
            if ((unsigned char)*c < 0x20 && *c != '\t')
                return config_fail(ld, value, key_path,
                                   "expected a header value without line breaks "
                                   "or control characters");
        config_header *h = &receiver->headers[receiver->n_headers++];
        h->name = strdup(name);
        h->value = strdup(text);
        if (!h->name || !h->value)
            return config_fail_nomem(ld);
    }
    return 0;
}

/* `secret_file: x` is shorthand for one more entry in secret_files. */
static int add_secret_file(loader *ld, yaml_node_t *node, void *base, const char *path,
                           const field *f)
{
    (void)f;
    config_receiver *receiver = base;
    const char *text = NULL;
    if (config_get_string(ld, node, path, &text) < 0)
        return -1;
    if (!*text)
        return config_fail(ld, node, path, "expected a non-empty string");
    char **grown = realloc(receiver->secret_files, (receiver->n_secret_files + 1) * sizeof *grown);
    if (!grown)
        return config_fail_nomem(ld);
    receiver->secret_files = grown;
    char *resolved = config_resolve_path(ld, text);
    if (!resolved)
        return config_fail_nomem(ld);
    receiver->secret_files[receiver->n_secret_files++] = resolved;
    return 0;
}

#define RECEIVER(member) offsetof(config_receiver, member)

static const field receiver_fields[] = {
    {.key = "name", .type = F_STRING, .offset = RECEIVER(name), .validate = check_receiver_name},
    {.key = "url", .type = F_STRING, .offset = RECEIVER(url), .validate = check_http_url},
    {.key = "events",
     .type = F_STRING_LIST,
     .offset = RECEIVER(events),
     .count_offset = RECEIVER(n_events),
     .nonempty = true},
    {.key = "secret_files",
     .type = F_PATH_LIST,
     .offset = RECEIVER(secret_files),
     .count_offset = RECEIVER(n_secret_files),
     .append = true}, /* together with secret_file, in either order */
    {.key = "secret_file", .type = F_CUSTOM, .custom = add_secret_file},
    {.key = "secret_env",
     .type = F_STRING,
     .offset = RECEIVER(secret_env),
     .validate = check_env_name},
    {.key = "timeout_s", .type = F_NUMBER, .offset = RECEIVER(timeout_s), .min_exclusive = true},
    {.key = "headers", .type = F_CUSTOM, .custom = set_headers},
    {.key = "enabled", .type = F_BOOL, .offset = RECEIVER(enabled)},
    {.key = "max_in_flight",
     .type = F_INT,
     .offset = RECEIVER(max_in_flight),
     .min = 1,
     .max = 1024,
     .has_max = true},
    {.key = "ca_file", .type = F_PATH, .offset = RECEIVER(ca_file)},
    {0},
};

void config_receiver_free(config_receiver *r)
{
    free(r->ca_file);
    free(r->name);
    free(r->url);
    config_free_strings(r->events, r->n_events);
    config_free_strings(r->secret_files, r->n_secret_files);
    free(r->secret_env);
    for (size_t i = 0; i < r->n_headers; i++) {
        free(r->headers[i].name);
        free(r->headers[i].value);
    }
    free(r->headers);
}

static int receiver_defaults(config_receiver *r)
{
    r->events = calloc(1, sizeof *r->events);
    if (!r->events)
        return -1;
    r->events[0] = strdup("*");
    if (!r->events[0])
        return -1;
    r->n_events = 1;
    r->timeout_s = 15;
    r->enabled = true;
    r->max_in_flight = 8;
    return 0;
}

static int check_receiver(loader *ld, yaml_node_t *map, config_receiver *r, const char *path)
{
    if (!r->name)
        return config_fail_child(ld, map, path, "name", "required");
    if (!r->url)
        return config_fail_child(ld, map, path, "url", "required");
    if (r->n_secret_files == 0 && !r->secret_env)
        return config_fail_child(ld, map, path, "secret_files",
                                 "required unless secret_env is set");
    return 0;
}

static int set_receivers(loader *ld, yaml_node_t *seq, void *base, const char *path, const field *f)
{
    (void)f;
    vf_config *config = base;
    if (seq->type != YAML_SEQUENCE_NODE)
        return config_fail(ld, seq, path, "expected a list");
    size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    for (size_t i = 0; i < config->relay.n_receivers; i++)
        config_receiver_free(&config->relay.receivers[i]);
    free(config->relay.receivers);
    config->relay.n_receivers = 0;
    /* Zeroed entries are safe to free, so the count can be set at once and
     * an error half-way leaves nothing to clean up here. */
    config->relay.receivers = calloc(n ? n : 1, sizeof *config->relay.receivers);
    if (!config->relay.receivers)
        return config_fail_nomem(ld);
    config->relay.n_receivers = n;
    for (size_t i = 0; i < n; i++) {
        config_receiver *r = &config->relay.receivers[i];
        yaml_node_t *item = config_node_at(ld, seq->data.sequence.items.start[i]);
        char item_path[PATH_TEXT];
        config_item_path_at(item_path, sizeof item_path, path, i);
        if (receiver_defaults(r) < 0)
            return config_fail_nomem(ld);
        if (config_is_null(item))
            return config_fail(ld, item, item_path, "expected a mapping");
        if (config_walk_mapping(ld, item, receiver_fields, r, item_path) < 0 ||
            check_receiver(ld, item, r, item_path) < 0)
            return -1;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(config->relay.receivers[j].name, r->name) != 0)
                continue;
            char name_path[PATH_TEXT];
            config_child_path(name_path, sizeof name_path, item_path, "name");
            return config_fail(ld, config_key_node(ld, item, "name"), name_path,
                               "duplicate receiver name \"%s\" (also relay.receivers[%zu])",
                               r->name, j);
        }
    }
    return 0;
}

/* ---- the schema ------------------------------------------------------------------------ */

#define CFG(member) offsetof(vf_config, member)

static const choice queue_types[] = {
    {"quorum", CONFIG_QUEUE_QUORUM}, {"classic", CONFIG_QUEUE_CLASSIC}, {NULL, 0}};
static const choice inventory_sources[] = {{"file", CONFIG_INVENTORY_FILE},
                                           {"http", CONFIG_INVENTORY_HTTP},
                                           {"proxmox", CONFIG_INVENTORY_PROXMOX},
                                           {NULL, 0}};
static const choice strategies[] = {
    {"spread", CONFIG_STRATEGY_SPREAD}, {"pack", CONFIG_STRATEGY_PACK}, {NULL, 0}};
static const choice anti_affinities[] = {{"strict", 1}, {"preferred", 0}, {NULL, 0}};
static const choice provisioner_types[] = {{"none", 0}, {"gitlab", 0}, {"command", 0}, {NULL, 0}};
static const choice readiness_types[] = {{"none", 0}, {"kubernetes", 0}, {NULL, 0}};
static const choice release_kubernetes_modes[] = {
    {"none", 0}, {"delete", 0}, {"drain_delete", 0}, {NULL, 0}};
static const choice log_formats[] = {
    {"text", VF_LOG_FORMAT_TEXT}, {"json", VF_LOG_FORMAT_JSON}, {NULL, 0}};
static const choice log_levels[] = {{"debug", VF_LOG_DEBUG},
                                    {"info", VF_LOG_INFO},
                                    {"warn", VF_LOG_WARN},
                                    {"error", VF_LOG_ERROR},
                                    {NULL, 0}};

/* STORE_INT writes an int into enum-typed fields. */
_Static_assert(sizeof(config_queue_type) == sizeof(int), "enum is int-sized");
_Static_assert(sizeof(config_inventory_source) == sizeof(int), "enum is int-sized");
_Static_assert(sizeof(vf_log_level) == sizeof(int), "enum is int-sized");
_Static_assert(sizeof(vf_log_format) == sizeof(int), "enum is int-sized");

static const field amqp_fields[] = {
    {.key = "urls",
     .type = F_STRING_LIST,
     .offset = CFG(amqp.urls),
     .count_offset = CFG(amqp.n_urls),
     .nonempty = true,
     .validate = check_amqp_url},
    {.key = "password_file", .type = F_PATH, .offset = CFG(amqp.password_file)},
    {.key = "queue_type", .type = F_ENUM, .offset = CFG(amqp.queue_type), .choices = queue_types},
    {.key = "prefetch",
     .type = F_INT,
     .offset = CFG(amqp.prefetch),
     .min = 1,
     .max = 65535,
     .has_max = true},
    {.key = "heartbeat_s", .type = F_INT, .offset = CFG(amqp.heartbeat_s), .min = 0},
    {.key = "single_active_consumer", .type = F_BOOL, .offset = CFG(amqp.single_active_consumer)},
    {.key = "max_message_bytes",
     .type = F_INT64,
     .offset = CFG(amqp.max_message_bytes),
     .min = 1,
     .max = 134217728,
     .has_max = true},
    {.key = "ca_file", .type = F_PATH, .offset = CFG(amqp.ca_file)},
    {.key = "tls_verify", .type = F_BOOL, .offset = CFG(amqp.tls_verify)},
    {0},
};

static const field store_fields[] = {
    {.key = "path", .type = F_PATH, .offset = CFG(store.path)},
    {.key = "retention",
     .type = F_CUSTOM,
     .offset = CFG(store.retention_s),
     .custom = set_duration},
    {.key = "url", .type = F_STRING, .offset = CFG(store.url), .validate = check_store_url},
    {.key = "password_file", .type = F_PATH, .offset = CFG(store.password_file)},
    {.key = "ca_file", .type = F_PATH, .offset = CFG(store.ca_file)},
    {.key = "tls_verify", .type = F_BOOL, .offset = CFG(store.tls_verify)},
    {0},
};

static const field inventory_fields[] = {
    {.key = "source",
     .type = F_ENUM,
     .offset = CFG(inventory.source),
     .choices = inventory_sources},
    {.key = "path", .type = F_PATH, .offset = CFG(inventory.path)},
    {.key = "url", .type = F_STRING, .offset = CFG(inventory.url), .validate = check_http_url},
    {.key = "token_file", .type = F_PATH, .offset = CFG(inventory.token_file)},
    {.key = "refresh_s",
     .type = F_INT,
     .offset = CFG(inventory.refresh_s),
     .min = 0,
     .min_exclusive = true},
    {.key = "max_age_s",
     .type = F_INT,
     .offset = CFG(inventory.max_age_s),
     .min = 0,
     .min_exclusive = true},
    {.key = "timeout_s",
     .type = F_NUMBER,
     .offset = CFG(inventory.timeout_s),
     .min = 0,
     .min_exclusive = true},
    {.key = "ca_file", .type = F_PATH, .offset = CFG(inventory.ca_file)},
    {.key = "tls_verify", .type = F_BOOL, .offset = CFG(inventory.tls_verify)},
    {0},
};

static const field overcommit_fields[] = {
    {.key = "cpu",
     .type = F_NUMBER,
     .offset = CFG(scheduler.overcommit_cpu),
     .min_exclusive = true},
    {.key = "memory",
     .type = F_NUMBER,
     .offset = CFG(scheduler.overcommit_memory),
     .min_exclusive = true},
    {0},
};

static const field reserve_fields[] = {
    {.key = "cpu", .type = F_NUMBER, .offset = CFG(scheduler.reserve_cpu), .min = 0},
    {.key = "memory", .type = F_INT64, .offset = CFG(scheduler.reserve_memory), .min = 0},
    {0},
};

static const field scheduler_fields[] = {
    {.key = "overcommit", .type = F_SECTION, .children = overcommit_fields},
    {.key = "reserve", .type = F_SECTION, .children = reserve_fields},
    {.key = "dedicated_exclusive", .type = F_BOOL, .offset = CFG(scheduler.dedicated_exclusive)},
    {.key = "subset_size", .type = F_INT, .offset = CFG(scheduler.subset_size), .min = 1},
    {.key = "reservation_ttl_s",
     .type = F_INT,
     .offset = CFG(scheduler.reservation_ttl_s),
     .min = 0,
     .min_exclusive = true},
    {.key = "plugins", .type = F_SECTION, .children = config_plugin_kinds},
    {.key = "strategy", .type = F_ENUM, .offset = CFG(scheduler.strategy), .choices = strategies},
    {.key = "plugin_config", .type = F_PATH, .offset = CFG(scheduler.plugin_config)},
    {0},
};

static const field retry_fields[] = {
    {.key = "max_attempts", .type = F_INT, .offset = CFG(retry.max_attempts), .min = 1},
    {.key = "delays_s",
     .type = F_INT_LIST,
     .offset = CFG(retry.delays_s),
     .count_offset = CFG(retry.n_delays),
     .min = 0,
     .nonempty = true},
    {0},
};

static const field relay_fields[] = {
    {.key = "receivers", .type = F_CUSTOM, .custom = set_receivers},
    {.key = "schedule_s",
     .type = F_INT_LIST,
     .offset = CFG(relay.schedule_s),
     .count_offset = CFG(relay.n_schedule),
     .min = 0,
     .nonempty = true},
    {.key = "trusted_publishers",
     .type = F_STRING_LIST,
     .offset = CFG(relay.trusted_publishers),
     .count_offset = CFG(relay.n_trusted_publishers),
     .nonempty = true, /* trusting nobody would park every event: say so at start */
     .validate = check_user_name},
    {.key = "http_listen",
     .type = F_STRING,
     .offset = CFG(relay.http_listen),
     .validate = check_listen,
     .null_clears = true},
    {0},
};

static const field worker_fields[] = {
    {.key = "http_listen",
     .type = F_STRING,
     .offset = CFG(worker.http_listen),
     .validate = check_listen,
     .null_clears = true},
    {0},
};

static const field provisioner_fields[] = {
    {.key = "type",
     .type = F_ENUM,
     .offset = CFG(spare.provisioner.type),
     .choices = provisioner_types,
     .store = STORE_STRING},
    {.key = "url",
     .type = F_STRING,
     .offset = CFG(spare.provisioner.url),
     .validate = check_http_url},
    {.key = "project", .type = F_STRING, .offset = CFG(spare.provisioner.project)},
    {.key = "ref", .type = F_STRING, .offset = CFG(spare.provisioner.ref)},
    {.key = "token_file", .type = F_PATH, .offset = CFG(spare.provisioner.token_file)},
    {.key = "api_token_file", .type = F_PATH, .offset = CFG(spare.provisioner.api_token_file)},
    {.key = "command",
     .type = F_STRING_LIST,
     .offset = CFG(spare.provisioner.command),
     .count_offset = CFG(spare.provisioner.n_command)},
    {.key = "timeout_s",
     .type = F_INT,
     .offset = CFG(spare.provisioner.timeout_s),
     .min = 0,
     .min_exclusive = true},
    {0},
};

static const field readiness_fields[] = {
    {.key = "type",
     .type = F_ENUM,
     .offset = CFG(spare.readiness.type),
     .choices = readiness_types,
     .store = STORE_STRING},
    {.key = "api_url",
     .type = F_STRING,
     .offset = CFG(spare.readiness.api_url),
     .validate = check_http_url},
    {.key = "token_file", .type = F_PATH, .offset = CFG(spare.readiness.token_file)},
    {.key = "ca_file", .type = F_PATH, .offset = CFG(spare.readiness.ca_file)},
    {.key = "poll_s",
     .type = F_INT,
     .offset = CFG(spare.readiness.poll_s),
     .min = 0,
     .min_exclusive = true},
    {0},
};

/* spare.clusters: {NAME: {api_url, token_file, ca_file}}. */
#define CLUSTER(member) offsetof(config_cluster, member)

static const field cluster_fields[] = {
    {.key = "api_url", .type = F_STRING, .offset = CLUSTER(api_url), .validate = check_http_url},
    {.key = "token_file", .type = F_PATH, .offset = CLUSTER(token_file)},
    {.key = "ca_file", .type = F_PATH, .offset = CLUSTER(ca_file)},
    {0},
};

void config_clusters_free(vf_config *c)
{
    for (size_t i = 0; i < c->spare.n_clusters; i++) {
        free(c->spare.clusters[i].name);
        free(c->spare.clusters[i].api_url);
        free(c->spare.clusters[i].token_file);
        free(c->spare.clusters[i].ca_file);
    }
    free(c->spare.clusters);
    c->spare.clusters = NULL;
    c->spare.n_clusters = 0;
}

static int set_clusters(loader *ld, yaml_node_t *map, void *base, const char *path, const field *f)
{
    (void)f;
    vf_config *c = base;
    if (map->type != YAML_MAPPING_NODE)
        return config_fail(ld, map, path, "expected a mapping of cluster names");
    config_clusters_free(c);
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    /* Zeroed entries are safe to free: the count is set at once. */
    c->spare.clusters = calloc(n ? n : 1, sizeof *c->spare.clusters);
    if (!c->spare.clusters)
        return config_fail_nomem(ld);
    c->spare.n_clusters = n;
    for (size_t i = 0; i < n; i++) {
        yaml_node_pair_t *pair = &map->data.mapping.pairs.start[i];
        yaml_node_t *key = NULL;
        char key_path[PATH_TEXT];
        if (config_mapping_key(ld, map, pair, path, &key, key_path, sizeof key_path) < 0)
            return -1;
        config_cluster *cluster = &c->spare.clusters[i];
        const char *name = config_scalar(key);
        /* The same characters a request's cluster may use. */
        if (!*name || strlen(name) > 63 ||
            strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
                strlen(name))
            return config_fail(ld, key, key_path,
                               "a cluster name is 1..63 characters of [A-Za-z0-9._-]");
        if (!(cluster->name = strdup(name)))
            return config_fail_nomem(ld);
        yaml_node_t *value = config_node_at(ld, pair->value);
        if (!value || config_is_null(value))
            return config_fail(ld, key, key_path, "expected a mapping with api_url and token_file");
        if (config_walk_mapping(ld, value, cluster_fields, cluster, key_path) < 0)
            return -1;
        if (!cluster->api_url)
            return config_fail_child(ld, value, key_path, "api_url", "required");
        if (!cluster->token_file)
            return config_fail_child(ld, value, key_path, "token_file", "required");
    }
    return 0;
}

const config_cluster *config_spare_cluster(const vf_config *c, const char *name)
{
    for (size_t i = 0; name && i < c->spare.n_clusters; i++)
        if (strcmp(c->spare.clusters[i].name, name) == 0)
            return &c->spare.clusters[i];
    return NULL;
}

static const field spare_release_fields[] = {
    {.key = "kubernetes",
     .type = F_ENUM,
     .offset = CFG(spare.release_kubernetes),
     .choices = release_kubernetes_modes,
     .store = STORE_STRING},
    {0},
};

static const field spare_fields[] = {
    {.key = "anti_affinity",
     .type = F_ENUM,
     .offset = CFG(spare.anti_affinity_strict),
     .choices = anti_affinities,
     .store = STORE_BOOL},
    {.key = "name_pattern", .type = F_STRING, .offset = CFG(spare.name_pattern)},
    {.key = "provisioner",
     .type = F_SECTION,
     .children = provisioner_fields,
     .check = check_provisioner},
    {.key = "readiness", .type = F_SECTION, .children = readiness_fields, .check = check_readiness},
    {.key = "clusters", .type = F_CUSTOM, .custom = set_clusters},
    {.key = "release", .type = F_SECTION, .children = spare_release_fields},
    {.key = "max_age", .type = F_CUSTOM, .offset = CFG(spare.max_age_s), .custom = set_duration},
    {0},
};

static const field log_fields[] = {
    {.key = "level", .type = F_ENUM, .offset = CFG(log.level), .choices = log_levels},
    {.key = "format", .type = F_ENUM, .offset = CFG(log.format), .choices = log_formats},
    {0},
};

const field config_top_fields[] = {
    {.key = "amqp", .type = F_SECTION, .children = amqp_fields},
    {.key = "store", .type = F_SECTION, .children = store_fields, .check = check_store},
    {.key = "inventory", .type = F_SECTION, .children = inventory_fields, .check = check_inventory},
    {.key = "scheduler", .type = F_SECTION, .children = scheduler_fields},
    {.key = "retry", .type = F_SECTION, .children = retry_fields},
    {.key = "relay", .type = F_SECTION, .children = relay_fields},
    {.key = "spare", .type = F_SECTION, .children = spare_fields},
    {.key = "log", .type = F_SECTION, .children = log_fields},
    {.key = "worker", .type = F_SECTION, .children = worker_fields},
    {0},
};
