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

#include "grow.h"
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
    {.key = "target_percent",
     .type = F_NUMBER,
     .offset = PLUGIN(target_percent),
     .min = 1,
     .max = 99,
     .has_max = true,
     .has_flag = true,
     .flag_offset = PLUGIN(has_target_percent)},
    {.key = "missing_score",
     .type = F_NUMBER,
     .offset = PLUGIN(missing_score),
     .min = 0,
     .max = 100,
     .has_max = true,
     .has_flag = true,
     .flag_offset = PLUGIN(has_missing_score)},
    {0},
};

const char *config_plugin_arg_set(const config_plugin *plugin, size_t i)
{
    for (const field *f = plugin_arg_fields; f->key; f++) {
        if (!f->has_flag || !*(const bool *)((const char *)plugin + f->flag_offset))
            continue;
        if (i-- == 0)
            return f->key;
    }
    return NULL;
}

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

/* Name → {enable, weight} or {} or null, appended to `*list`. */
static int add_plugins(loader *ld, yaml_node_t *map, const char *path, config_plugin_kind kind,
                       const char *section, config_plugin **list, size_t *n_list)
{
    if (map->type != YAML_MAPPING_NODE)
        return config_fail(ld, map, path, "expected a mapping");
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    if (n == 0)
        return 0;
    if (resize_array((void **)list, *n_list + n, sizeof **list) < 0)
        return config_fail_nomem(ld);
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top;
         pair++) {
        yaml_node_t *key = NULL;
        char key_path[PATH_TEXT];
        if (config_mapping_key(ld, map, pair, path, &key, key_path, sizeof key_path) < 0)
            return -1;
        config_plugin plugin = {.kind = kind, .enable = true, .section = section};
        if (!config_scalar(key)[0] || key->data.scalar.length >= sizeof plugin.name)
            return config_fail(ld, key, key_path, "expected a plugin name of 1-%zu characters",
                               sizeof plugin.name - 1);
        memcpy(plugin.name, config_scalar(key), key->data.scalar.length + 1);
        plugin.line = config_node_line(key);
        yaml_node_t *value = config_node_at(ld, pair->value);
        if (!config_is_null(value) &&
            config_walk_mapping(ld, value, plugin_fields, &plugin, key_path) < 0)
            return -1;
        (*list)[(*n_list)++] = plugin;
    }
    return 0;
}

/* scheduler.plugins.{filters,scores,vmids}: Name → {enable, weight} or {} or null. */
static int set_plugins(loader *ld, yaml_node_t *map, void *base, const char *path, const field *f)
{
    vf_config *config = base;
    return add_plugins(ld, map, path, (config_plugin_kind)f->arg, NULL, &config->scheduler.plugins,
                       &config->scheduler.n_plugins);
}

/* scheduler.profiles.NAME.plugins.{filters,scores,vmids}: the same, in the profile. */
static int set_profile_plugins(loader *ld, yaml_node_t *map, void *base, const char *path,
                               const field *f)
{
    config_profile *profile = base;
    return add_plugins(ld, map, path, (config_plugin_kind)f->arg, profile->section,
                       &profile->plugins, &profile->n_plugins);
}

static bool plugin_equal(const config_plugin *a, const config_plugin *b)
{
    return strcmp(a->name, b->name) == 0 && a->enable == b->enable &&
           a->has_weight == b->has_weight && (!a->has_weight || a->weight == b->weight) &&
           config_fields_equal(plugin_arg_fields, a, b) &&
           (a->file && b->file ? strcmp(a->file, b->file) == 0 : a->file == b->file);
}

/* scheduler.plugins.KIND: the entries of that kind, in order. */
static bool plugins_equal(const field *f, const void *a, const void *b)
{
    const vf_config *x = a, *y = b;
    size_t i = 0, j = 0;
    for (;;) {
        while (i < x->scheduler.n_plugins &&
               x->scheduler.plugins[i].kind != (config_plugin_kind)f->arg)
            i++;
        while (j < y->scheduler.n_plugins &&
               y->scheduler.plugins[j].kind != (config_plugin_kind)f->arg)
            j++;
        if (i == x->scheduler.n_plugins || j == y->scheduler.n_plugins)
            return i == x->scheduler.n_plugins && j == y->scheduler.n_plugins;
        if (!plugin_equal(&x->scheduler.plugins[i++], &y->scheduler.plugins[j++]))
            return false;
    }
}

const field config_plugin_kinds[] = {
    {.key = "filters",
     .doc = "hosts a request cannot use are removed; `Name: {enable: false}` turns one off, `Name: "
            "{args: {...}}` sets its arguments; which are on by default, their arguments: "
            "[scheduling.md](scheduling.md#plugins-their-arguments-and-defaults)",
     .type_text = "a mapping of plugin names",
     .type = F_CUSTOM,
     .custom = set_plugins,
     .equal = plugins_equal,
     .arg = CONFIG_PLUGIN_FILTER},
    {.key = "scores",
     .doc = "each 0..100, weighted and summed; highest wins; `Name: {enable: bool, weight: n, "
            "args: {...}}`; which are on by default, their arguments (`TargetLoadPacking`: "
            "`target_percent`, `missing_score`): "
            "[scheduling.md](scheduling.md#plugins-their-arguments-and-defaults)",
     .type_text = "a mapping of plugin names",
     .type = F_CUSTOM,
     .custom = set_plugins,
     .equal = plugins_equal,
     .arg = CONFIG_PLUGIN_SCORE},
    {.key = "vmids",
     .doc = "how the VM id is chosen",
     .type_text = "a mapping of plugin names",
     .type = F_CUSTOM,
     .custom = set_plugins,
     .equal = plugins_equal,
     .arg = CONFIG_PLUGIN_VMID},
    {0},
};

const field config_profile_plugin_kinds[] = {
    {.key = "filters",
     .doc = "as `scheduler.plugins.filters`, over the defaults (not over the scheduler section's "
            "entries)",
     .type_text = "a mapping of plugin names",
     .type = F_CUSTOM,
     .custom = set_profile_plugins,
     .arg = CONFIG_PLUGIN_FILTER},
    {.key = "scores",
     .doc = "as `scheduler.plugins.scores`, over the defaults",
     .type_text = "a mapping of plugin names",
     .type = F_CUSTOM,
     .custom = set_profile_plugins,
     .arg = CONFIG_PLUGIN_SCORE},
    {.key = "vmids",
     .doc = "as `scheduler.plugins.vmids`, over the defaults",
     .type_text = "a mapping of plugin names",
     .type = F_CUSTOM,
     .custom = set_profile_plugins,
     .arg = CONFIG_PLUGIN_VMID},
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
    if (resize_array((void **)&receiver->secret_files, receiver->n_secret_files + 1,
                     sizeof *receiver->secret_files) < 0)
        return config_fail_nomem(ld);
    char *resolved = config_resolve_path(ld, text);
    if (!resolved)
        return config_fail_nomem(ld);
    receiver->secret_files[receiver->n_secret_files++] = resolved;
    return 0;
}

static bool headers_equal(const field *f, const void *a, const void *b)
{
    (void)f;
    const config_receiver *x = a, *y = b;
    if (x->n_headers != y->n_headers)
        return false;
    for (size_t i = 0; i < x->n_headers; i++)
        if (strcmp(x->headers[i].name, y->headers[i].name) != 0 ||
            strcmp(x->headers[i].value, y->headers[i].value) != 0)
            return false;
    return true;
}

/* secret_file lands in secret_files, which is compared on its own. */
static bool same_as_secret_files(const field *f, const void *a, const void *b)
{
    (void)f, (void)a, (void)b;
    return true;
}

#define RECEIVER(member) offsetof(config_receiver, member)

/* A receiver's defaults: receiver_defaults() copies them into each receiver,
 * and the reference reads them from here. */
static char receiver_default_event[] = "*";
static char *receiver_default_events[] = {receiver_default_event};
static const config_receiver receiver_template = {
    .events = receiver_default_events,
    .n_events = 1,
    .timeout_s = 15,
    .enabled = true,
    .max_in_flight = 8,
    .disable_after_s = 3600,
    .probe_s = 60,
};

static const field receiver_fields[] = {
    {.key = "name",
     .doc = "required, unique, [A-Za-z0-9._-]; names the receiver in logs and deliveries",
     .type = F_STRING,
     .offset = RECEIVER(name),
     .validate = check_receiver_name},
    {.key = "url",
     .doc = "required: the http:// or https:// endpoint the signed events are POSTed to",
     .type = F_STRING,
     .offset = RECEIVER(url),
     .validate = check_http_url},
    {.key = "events",
     .doc = "event type patterns (`task.*`, `spare.ready`, `*`)",
     .type = F_STRING_LIST,
     .offset = RECEIVER(events),
     .count_offset = RECEIVER(n_events),
     .nonempty = true},
    {.key = "secret_files",
     .doc = "files holding whsec_... secrets, several while rotating; required unless `secret_env` "
            "is set",
     .type = F_PATH_LIST,
     .offset = RECEIVER(secret_files),
     .count_offset = RECEIVER(n_secret_files),
     .append = true}, /* together with secret_file, in either order */
    {.key = "secret_file",
     .doc = "one more entry of `secret_files`",
     .type_text = "a path",
     .type = F_CUSTOM,
     .custom = add_secret_file,
     .equal = same_as_secret_files},
    {.key = "secret_env",
     .doc = "or: name of an environment variable holding a whsec_... secret",
     .type = F_STRING,
     .offset = RECEIVER(secret_env),
     .validate = check_env_name},
    {.key = "timeout_s",
     .doc = "seconds per delivery attempt",
     .type = F_NUMBER,
     .offset = RECEIVER(timeout_s),
     .min_exclusive = true},
    {.key = "headers",
     .doc = "extra request headers, name: value",
     .type_text = "a mapping of strings",
     .default_text = "{}",
     .type = F_CUSTOM,
     .custom = set_headers,
     .equal = headers_equal},
    {.key = "enabled",
     .doc = "false keeps the receiver configured but sends nothing",
     .type = F_BOOL,
     .offset = RECEIVER(enabled)},
    {.key = "max_in_flight",
     .doc = "concurrent deliveries to this receiver",
     .type = F_INT,
     .offset = RECEIVER(max_in_flight),
     .min = 1,
     .max = 1024,
     .has_max = true},
    {.key = "ca_file",
     .doc = "https:// trust anchors (PEM) for this receiver; null = the system store. Certificates "
            "are always verified",
     .type = F_PATH,
     .offset = RECEIVER(ca_file)},
    {.key = "schedule_s",
     .doc = "this receiver's own retry schedule, as `relay.schedule_s` (which applies when this is "
            "null)",
     .default_text = "null",
     .type = F_INT_LIST,
     .offset = RECEIVER(schedule_s),
     .count_offset = RECEIVER(n_schedule),
     .min = 0,
     .nonempty = true},
    {.key = "rate_per_s",
     .doc = "its pace: deliveries started per second at most, whatever is due (a recovery's "
            "backlog, a redelivery); 0 = no pace but `max_in_flight` "
            "([webhooks.md](webhooks.md#pace-and-circuit-breaker))",
     .type = F_NUMBER,
     .offset = RECEIVER(rate_per_s),
     .min = 0,
     .max = 100000,
     .has_max = true},
    {.key = "disable_after_s",
     .doc = "circuit breaker: a receiver whose attempts have all failed for this long is disabled "
            "(its deliveries wait, they are not used up) and probed every `probe_s` with one "
            "delivery; the first 2xx enables it again. Events `receiver.disabled`, "
            "`receiver.recovered`; 0 = never disabled",
     .type = F_INT,
     .offset = RECEIVER(disable_after_s),
     .min = 0},
    {.key = "probe_s",
     .doc = "while disabled, one delivery is tried this often, seconds",
     .type = F_INT,
     .offset = RECEIVER(probe_s),
     .min = 1},
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
    free(r->schedule_s);
    for (size_t i = 0; i < r->n_headers; i++) {
        free(r->headers[i].name);
        free(r->headers[i].value);
    }
    free(r->headers);
}

static int receiver_defaults(config_receiver *r)
{
    *r = receiver_template;
    r->events = calloc(receiver_template.n_events, sizeof *r->events);
    r->n_events = 0;
    if (!r->events)
        return -1;
    for (; r->n_events < receiver_template.n_events; r->n_events++)
        if (!(r->events[r->n_events] = strdup(receiver_template.events[r->n_events])))
            return -1;
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

static bool receivers_equal(const field *f, const void *a, const void *b)
{
    (void)f;
    const vf_config *x = a, *y = b;
    if (x->relay.n_receivers != y->relay.n_receivers)
        return false;
    for (size_t i = 0; i < x->relay.n_receivers; i++)
        if (!config_fields_equal(receiver_fields, &x->relay.receivers[i], &y->relay.receivers[i]))
            return false;
    return true;
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
static const choice regex_matches[] = {
    {"full", CONFIG_REGEX_FULL}, {"search", CONFIG_REGEX_SEARCH}, {NULL, 0}};
static const choice near_best_keys[] = {{"auto", CONFIG_NEAR_BEST_AUTO},
                                        {"off", CONFIG_NEAR_BEST_OFF},
                                        {"task", CONFIG_NEAR_BEST_TASK},
                                        {"worker", CONFIG_NEAR_BEST_WORKER},
                                        {NULL, 0}};
static const choice unfit_modes[] = {
    {"fail", CONFIG_UNFIT_FAIL}, {"wait", CONFIG_UNFIT_WAIT}, {NULL, 0}};
static const choice anti_affinities[] = {{"strict", 1}, {"preferred", 0}, {NULL, 0}};
static const choice provisioner_types[] = {
    {"none", 0}, {"gitlab", 0}, {"command", 0}, {"awx", 0}, {NULL, 0}};
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
_Static_assert(sizeof(config_unfit) == sizeof(int), "enum is int-sized");

static const field amqp_fields[] = {
    {.key = "urls",
     .doc = "brokers tried in turn (a cluster); amqps:// verifies certificates",
     .type = F_STRING_LIST,
     .offset = CFG(amqp.urls),
     .count_offset = CFG(amqp.n_urls),
     .nonempty = true,
     .validate = check_amqp_url},
    {.key = "password_file",
     .doc = "file holding the AMQP password; overrides the password in the URLs",
     .type = F_PATH,
     .offset = CFG(amqp.password_file)},
    {.key = "queue_type",
     .doc = "quorum (for a real cluster) or classic (a one-node dev broker); a queue's type cannot "
            "change in place",
     .type = F_ENUM,
     .offset = CFG(amqp.queue_type),
     .choices = queue_types},
    {.key = "prefetch",
     .doc = "unacknowledged messages a consumer may hold at once",
     .type = F_INT,
     .offset = CFG(amqp.prefetch),
     .min = 1,
     .max = 65535,
     .has_max = true},
    {.key = "heartbeat_s",
     .doc = "AMQP heartbeat interval in seconds; 0 disables heartbeats",
     .type = F_INT,
     .offset = CFG(amqp.heartbeat_s),
     .min = 0},
    {.key = "single_active_consumer",
     .doc = "let only one worker consume each queue at a time",
     .type = F_BOOL,
     .offset = CFG(amqp.single_active_consumer)},
    {.key = "max_message_bytes",
     .doc = "larger request bodies are rejected as invalid",
     .type = F_INT64,
     .offset = CFG(amqp.max_message_bytes),
     .min = 1,
     .max = 134217728,
     .has_max = true},
    {.key = "ca_file",
     .doc = "PEM trust anchors for amqps://; null uses the system store",
     .type = F_PATH,
     .offset = CFG(amqp.ca_file)},
    {.key = "tls_verify",
     .doc = "check the broker's certificate; false is logged loudly",
     .type = F_BOOL,
     .offset = CFG(amqp.tls_verify)},
    {0},
};

static const field store_fields[] = {
    {.key = "path",
     .doc = "SQLite file holding tasks, history, reservations, outbox and deliveries",
     .type = F_PATH,
     .offset = CFG(store.path)},
    {.key = "retention",
     .doc = "final tasks with their history, released reservations, confirmed events and finished "
            "deliveries older than this are deleted by the worker and the relay, each on its "
            "store (`90s`, `45m`, `12h`, `30d`; [Retention](operations.md#retention))",
     .type_text = "a duration",
     .type = F_CUSTOM,
     .offset = CFG(store.retention_s),
     .custom = set_duration},
    {.key = "url",
     .doc = "`postgresql://USER@HOST:PORT/DB`: PostgreSQL instead of the file (several machines); "
            "setting it and `store.path` is an error",
     .type = F_STRING,
     .offset = CFG(store.url),
     .validate = check_store_url},
    {.key = "password_file",
     .doc = "url only: file holding the database password; a password in the URL also works but is "
            "never logged",
     .type = F_PATH,
     .offset = CFG(store.password_file)},
    {.key = "ca_file",
     .doc = "url only: PEM trust anchors; given, the server's certificate and host name are "
            "checked (`sslmode=verify-full`); without it the URL's `sslmode` applies (libpq's "
            "default: `prefer`)",
     .type = F_PATH,
     .offset = CFG(store.ca_file)},
    {.key = "tls_verify",
     .doc = "url only: `false` with `ca_file` still requires TLS but checks nothing "
            "(`sslmode=require`), logged loudly",
     .type = F_BOOL,
     .offset = CFG(store.tls_verify)},
    {.key = "statement_timeout_ms",
     .doc =
         "url only: milliseconds one store command may take: the server's `statement_timeout`, "
         "and 2 s later the connection is dropped if the server has not answered at all (frozen, "
         "cut off); the worker then treats it as a store outage; 0: no bound",
     .type = F_INT,
     .offset = CFG(store.statement_timeout_ms),
     .min = 0,
     .max = 86400000,
     .has_max = true},
    {0},
};

static const field inventory_fields[] = {
    {.key = "source",
     .doc = "where hosts come from",
     .type = F_ENUM,
     .offset = CFG(inventory.source),
     .choices = inventory_sources},
    {.key = "path",
     .doc = "file: a list of hosts, YAML or JSON, top level or under `nodes:`",
     .type = F_PATH,
     .offset = CFG(inventory.path)},
    {.key = "url",
     .doc = "http: virtflow-scheduler node API; proxmox: https://pve:8006",
     .type = F_STRING,
     .offset = CFG(inventory.url),
     .validate = check_http_url},
    {.key = "token_file",
     .doc = "proxmox: file holding \"USER@REALM!TOKENID=SECRET\"",
     .type = F_PATH,
     .offset = CFG(inventory.token_file)},
    {.key = "refresh_s",
     .doc = "seconds between inventory reloads (a `file` or `http` source answering with the "
            "very bytes of the current snapshot keeps it, fetched anew, without parsing it "
            "again)",
     .type = F_INT,
     .offset = CFG(inventory.refresh_s),
     .min = 0,
     .min_exclusive = true},
    {.key = "max_age_s",
     .doc = "while refreshes fail, a snapshot older than this stops placements: tasks retry as "
            "infrastructure errors, then end `exhausted` (must be > `refresh_s`)",
     .type = F_INT,
     .offset = CFG(inventory.max_age_s),
     .reloads = CONFIG_RELOADS_NEVER, /* the worker's /readyz reads the start-up value */
     .min = 0,
     .min_exclusive = true},
    {.key = "record_every_s",
     .doc = "the worker records its inventory in the store (table `inventory_snapshots`, for "
            "`virtflowctl simulate`) when its content changed, at most once in this many "
            "seconds; 0 records none. At 10,000 hosts a snapshot is about 3 MB",
     .type = F_INT,
     .offset = CFG(inventory.record_every_s),
     .reloads = CONFIG_RELOADS_WORKER,
     .min = 0},
    {.key = "record_decided",
     .doc = "the worker also records, at once, every inventory content it decides over "
            "(deduplicated by content hash), so that `virtflowctl explain TASK_ID --replay` "
            "decides a past task again over exactly the hosts it was decided over; false: only "
            "the snapshots of `record_every_s`, and a decision over another content is replayed "
            "over the nearest one. An inventory whose figures move at every fetch costs a "
            "snapshot per refresh that a decision saw",
     .type = F_BOOL,
     .offset = CFG(inventory.record_decided),
     .reloads = CONFIG_RELOADS_WORKER},
    {.key = "timeout_s",
     .doc = "http/proxmox request timeout in seconds",
     .type = F_NUMBER,
     .offset = CFG(inventory.timeout_s),
     .min = 0,
     .min_exclusive = true},
    {.key = "ca_file",
     .doc = "PEM trust anchors for https inventory; null uses the system store",
     .type = F_PATH,
     .offset = CFG(inventory.ca_file)},
    {.key = "tls_verify",
     .doc = "check the inventory server's certificate",
     .type = F_BOOL,
     .offset = CFG(inventory.tls_verify)},
    {0},
};

static const field overcommit_fields[] = {
    {.key = "cpu",
     .doc = "vCPUs a host may be allocated per core",
     .type = F_NUMBER,
     .offset = CFG(scheduler.overcommit_cpu),
     .min_exclusive = true},
    {.key = "memory",
     .doc = "ratio of its memory a host may be allocated",
     .type = F_NUMBER,
     .offset = CFG(scheduler.overcommit_memory),
     .min_exclusive = true},
    {0},
};

static const field reserve_fields[] = {
    {.key = "cpu",
     .doc = "cores kept free on every host",
     .type = F_NUMBER,
     .offset = CFG(scheduler.reserve_cpu),
     .min = 0},
    {.key = "memory",
     .doc = "MiB kept free on every host",
     .type = F_INT64,
     .offset = CFG(scheduler.reserve_memory),
     .min = 0},
    {0},
};

#define PROFILE(member) offsetof(config_profile, member)
static const field profile_fields[] = {
    {.key = "strategy",
     .doc = "spread or pack, as `scheduler.strategy`, for this profile",
     .type = F_ENUM,
     .offset = PROFILE(strategy),
     .choices = strategies},
    {.key = "plugins", .type = F_SECTION, .children = config_profile_plugin_kinds},
    {.key = "plugin_config",
     .doc = "a qemu-scheduler plugin-config YAML file for this profile; its entries apply first",
     .type = F_PATH,
     .offset = PROFILE(plugin_config)},
    {0},
};

/* What a profile without keys is, for the reference. */
static const config_profile profile_defaults = {.strategy = CONFIG_STRATEGY_SPREAD};

void config_profiles_free(vf_config *c)
{
    for (size_t i = 0; i < c->scheduler.n_profiles; i++) {
        config_profile *p = &c->scheduler.profiles[i];
        free(p->name);
        free(p->section);
        free(p->plugins);
        free(p->plugin_config);
    }
    free(c->scheduler.profiles);
    c->scheduler.profiles = NULL;
    c->scheduler.n_profiles = 0;
}

static int set_profile(loader *ld, void *item, const char *name, yaml_node_t *key,
                       const char *key_path, yaml_node_t *value)
{
    config_profile *profile = item;
    if (strcmp(name, "default") == 0)
        return config_fail(ld, key, key_path,
                           "profile default is the scheduler section itself: set its keys "
                           "there");
    if (!(profile->name = strdup(name)) || !(profile->section = strdup(key_path)))
        return config_fail_nomem(ld);
    return value ? config_walk_mapping(ld, value, profile_fields, profile, key_path) : 0;
}

static int set_profiles(loader *ld, yaml_node_t *map, void *base, const char *path, const field *f)
{
    (void)f;
    vf_config *c = base;
    config_profiles_free(c);
    /* The characters a request's scheduler_name may use. */
    void *items = NULL;
    int rc = config_walk_named(ld, map, path, "profile", sizeof *c->scheduler.profiles, &items,
                               &c->scheduler.n_profiles, set_profile);
    c->scheduler.profiles = items;
    return rc;
}

static bool strings_same(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

/* scheduler.profiles, for config_diff: the same names, in order, each with the
 * same strategy, plugin-config file and plugin entries. */
static bool profiles_equal(const field *f, const void *a, const void *b)
{
    (void)f;
    const vf_config *x = a, *y = b;
    if (x->scheduler.n_profiles != y->scheduler.n_profiles)
        return false;
    for (size_t i = 0; i < x->scheduler.n_profiles; i++) {
        const config_profile *p = &x->scheduler.profiles[i], *q = &y->scheduler.profiles[i];
        if (strcmp(p->name, q->name) != 0 || p->strategy != q->strategy ||
            !strings_same(p->plugin_config, q->plugin_config) || p->n_plugins != q->n_plugins)
            return false;
        for (size_t k = 0; k < p->n_plugins; k++)
            if (p->plugins[k].kind != q->plugins[k].kind ||
                !plugin_equal(&p->plugins[k], &q->plugins[k]))
                return false;
    }
    return true;
}

const config_profile *config_scheduler_profile(const vf_config *c, const char *name)
{
    for (size_t i = 0; name && i < c->scheduler.n_profiles; i++)
        if (strcmp(c->scheduler.profiles[i].name, name) == 0)
            return &c->scheduler.profiles[i];
    return NULL;
}

#define PRIORITY_CLASS(member) offsetof(config_priority_class, member)
static const choice preemptions[] = {
    {"lower", CONFIG_PREEMPT_LOWER}, {"never", CONFIG_PREEMPT_NEVER}, {NULL, 0}};
static const field priority_class_fields[] = {
    {.key = "value",
     .doc = "the class's priority: higher is decided first (see docs/scheduling.md)",
     .type = F_INT,
     .offset = PRIORITY_CLASS(value),
     .min = -1000000000,
     .max = 1000000000,
     .has_max = true},
    {.key = "preemption",
     .doc = "lower: a request of the class that fits nowhere may take the room of reservations "
            "of lower priorities whose VMs have not appeared yet (docs/scheduling.md, "
            "Preemption); never: it waits like any other",
     .type = F_ENUM,
     .offset = PRIORITY_CLASS(preemption),
     .choices = preemptions},
    {0},
};
static const config_priority_class priority_class_defaults = {.preemption = CONFIG_PREEMPT_LOWER};

void config_priority_classes_free(vf_config *c)
{
    for (size_t i = 0; i < c->scheduler.n_priority_classes; i++)
        free(c->scheduler.priority_classes[i].name);
    free(c->scheduler.priority_classes);
    c->scheduler.priority_classes = NULL;
    c->scheduler.n_priority_classes = 0;
}

static int set_priority_class(loader *ld, void *item, const char *name, yaml_node_t *key,
                              const char *key_path, yaml_node_t *value)
{
    (void)key;
    config_priority_class *pc = item;
    pc->preemption = CONFIG_PREEMPT_LOWER;
    if (!(pc->name = strdup(name)))
        return config_fail_nomem(ld);
    return value ? config_walk_mapping(ld, value, priority_class_fields, pc, key_path) : 0;
}

static int set_priority_classes(loader *ld, yaml_node_t *map, void *base, const char *path,
                                const field *f)
{
    (void)f;
    vf_config *c = base;
    config_priority_classes_free(c);
    void *items = NULL;
    int rc =
        config_walk_named(ld, map, path, "priority class", sizeof *c->scheduler.priority_classes,
                          &items, &c->scheduler.n_priority_classes, set_priority_class);
    c->scheduler.priority_classes = items;
    return rc;
}

static bool priority_classes_equal(const field *f, const void *a, const void *b)
{
    (void)f;
    const vf_config *x = a, *y = b;
    if (x->scheduler.n_priority_classes != y->scheduler.n_priority_classes)
        return false;
    for (size_t i = 0; i < x->scheduler.n_priority_classes; i++) {
        const config_priority_class *p = &x->scheduler.priority_classes[i],
                                    *q = &y->scheduler.priority_classes[i];
        if (strcmp(p->name, q->name) != 0 || p->value != q->value || p->preemption != q->preemption)
            return false;
    }
    return true;
}

const config_priority_class *config_priority_class_named(const vf_config *c, const char *name)
{
    for (size_t i = 0; name && i < c->scheduler.n_priority_classes; i++)
        if (strcmp(c->scheduler.priority_classes[i].name, name) == 0)
            return &c->scheduler.priority_classes[i];
    return NULL;
}

static const field scheduler_fields[] = {
    {.key = "overcommit", .type = F_SECTION, .children = overcommit_fields},
    {.key = "reserve", .type = F_SECTION, .children = reserve_fields},
    {.key = "dedicated_exclusive",
     .doc = "shared (non-dedicated) requests stay off dedicated hosts",
     .type = F_BOOL,
     .offset = CFG(scheduler.dedicated_exclusive)},
    {.key = "subset_size",
     .doc = "> 1 picks at random among the top N hosts instead of the best one",
     .type = F_INT,
     .offset = CFG(scheduler.subset_size),
     .min = 1},
    {.key = "near_best_by",
     .doc = "several workers on one store: a decision takes one of the near-best hosts by a hash "
            "of the task id (task) or of the worker (worker: each keeps to its own host); auto: "
            "worker with store.url, else off (the best)",
     .type = F_ENUM,
     .offset = CFG(scheduler.near_best_by),
     .choices = near_best_keys},
    {.key = "near_best_hosts",
     .doc = "near_best_by task: how many of the best hosts a task may take, 1..64",
     .type = F_INT,
     .offset = CFG(scheduler.near_best_hosts),
     .min = 1},
    {.key = "near_best_max_loss",
     .doc = "score points (of 0..100) below the best a near-best pick may give up",
     .type = F_NUMBER,
     .offset = CFG(scheduler.near_best_max_loss),
     .min = 0},
    {.key = "vmid_stride",
     .doc = "several workers on one store: while others are alive, each takes the lowest free "
            "vmid congruent to a hash of the worker modulo this first (so two workers seldom "
            "pick the same vmid), then the lowest free one; 1: the lowest free vmid; 0 (auto): "
            "64 with store.url, else 1",
     .type = F_INT,
     .offset = CFG(scheduler.vmid_stride),
     .min = 0,
     .max = 1000000,
     .has_max = true},
    {.key = "reservation_ttl_s",
     .doc = "seconds a placement's reservation lives if the VM never shows up (judged against the "
            "last successful inventory fetch)",
     .type = F_INT,
     .offset = CFG(scheduler.reservation_ttl_s),
     .reloads = CONFIG_RELOADS_NEVER, /* read from the start-up config by the task handler */
     .min = 0,
     .min_exclusive = true},
    {.key = "plugins", .type = F_SECTION, .children = config_plugin_kinds},
    {.key = "regex_match",
     .doc = "how the request annotations `node.qemu-scheduler/regex` and "
            "`vmid.qemu-scheduler/regex` match: full: the whole host name or vmid (node1 does not "
            "match node10); search: anywhere in it, as qemu-scheduler's Go code does (node1 "
            "matches node10 and mynode1)",
     .type = F_ENUM,
     .offset = CFG(scheduler.regex_match),
     .choices = regex_matches},
    {.key = "strategy",
     .doc = "spread: `FreeResources` on, `MostAllocated` off, `VMSlots` prefers free slots; pack: "
            "the opposite, `VMSlots` prefers used slots, so the fullest host that fits wins; "
            "explicit `scheduler.plugins` entries still win",
     .type = F_ENUM,
     .offset = CFG(scheduler.strategy),
     .choices = strategies},
    {.key = "plugin_config",
     .doc = "a qemu-scheduler plugin-config YAML file (`filters`/`scores`/`vmids`: `Name: {enable: "
            "bool}`); its entries apply first, `scheduler.plugins` last",
     .type = F_PATH,
     .offset = CFG(scheduler.plugin_config)},
    {.key = "profiles",
     .doc = "`NAME: {strategy, plugins, plugin_config}` per scheduling profile; a request's "
            "`scheduler_name` picks one (this section is profile `default`; an unknown name waits "
            "and is retried, reason `unknown_scheduler`); the other keys here apply to every "
            "profile",
     .type_text = "a mapping of profile names",
     .default_text = "{}",
     .items = profile_fields,
     .item_path = ".NAME",
     .item_defaults = &profile_defaults,
     .type = F_CUSTOM,
     .custom = set_profiles,
     .equal = profiles_equal,
     /* Each profile's engine is built once, at start-up (a SIGHUP re-derives
      * the running ones from the new scheduler section's shared keys). */
     .reloads = CONFIG_RELOADS_NEVER},
    {.key = "priority_classes",
     .doc = "`NAME: {value, preemption}` per priority class; a request's `priority_class` names "
            "one (an unknown name is invalid); higher values are decided first within what a "
            "worker holds (docs/scheduling.md)",
     .type_text = "a mapping of class names",
     .default_text = "{}",
     .items = priority_class_fields,
     .item_path = ".NAME",
     .item_defaults = &priority_class_defaults,
     .type = F_CUSTOM,
     .custom = set_priority_classes,
     .equal = priority_classes_equal,
     /* Read from the start-up config (the worker keeps it; a SIGHUP
      * re-derives only the engines' parameters). */
     .reloads = CONFIG_RELOADS_NEVER},
    {.key = "default_priority_class",
     .doc = "the class of a request that gives neither `priority` nor `priority_class`; unset: "
            "priority 0",
     .type = F_STRING,
     .offset = CFG(scheduler.default_priority_class),
     .reloads = CONFIG_RELOADS_NEVER},
    {.key = "preemption_grace_s",
     .doc = "seconds after a placement is answered (its reply, event and result sent) during "
            "which no preemption takes it: its client may be creating its VM, which the "
            "inventory shows only after the create and a refresh. Must be greater than "
            "`inventory.refresh_s`; the default covers a full clone on Proxmox VE "
            "(docs/scheduling.md)",
     .type = F_INT,
     .offset = CFG(scheduler.preemption_grace_s),
     .min = 0,
     .min_exclusive = true,
     /* read from the start-up config by the task handler */
     .reloads = CONFIG_RELOADS_NEVER},
    {.key = "priority_lane_min",
     .doc = "a request whose priority is this or more is published with routing key "
            "`task.schedule.priority` into the priority lane (queue "
            "`virtflow.task.schedule.priority`), which workers draw on before the normal queue, "
            "so it overtakes a deep queue (docs/scheduling.md); set it alike for every program",
     .type = F_INT,
     .offset = CFG(scheduler.priority_lane_min),
     /* publishers read it from the start-up config */
     .reloads = CONFIG_RELOADS_NEVER},
    {.key = "unfit_requests",
     .doc = "a request no host of the inventory could hold even when empty (a pool no host is "
            "in, a host name or node regex matching none, more vCPUs, memory or VM slots than "
            "any such host has): fail ends it at once, failed with reason `never_fits` naming "
            "the known pools or the largest host; wait treats it as one that finds no room now "
            "(retried through `retry.delays_s`), for inventories that grow "
            "([scheduling.md](scheduling.md#requests-that-never-fit))",
     .type = F_ENUM,
     .offset = CFG(scheduler.unfit_requests),
     .choices = unfit_modes,
     /* read by the task handler from the start-up configuration */
     .reloads = CONFIG_RELOADS_NEVER},
    {0},
};

static const field retry_fields[] = {
    {.key = "max_attempts",
     .doc = "attempts before a task fails as unschedulable or exhausted",
     .type = F_INT,
     .offset = CFG(retry.max_attempts),
     .min = 1},
    {.key = "delays_s",
     .doc = "delay before each retry, in seconds; the last repeats; one delay queue "
            "`virtflow.retry.<N>s` per entry",
     .type = F_INT_LIST,
     .offset = CFG(retry.delays_s),
     .count_offset = CFG(retry.n_delays),
     .min = 0,
     .nonempty = true},
    {.key = "recheck_on_room",
     .doc = "when room grows (a `task.release`, a reservation expiring, an inventory with more "
            "free capacity), the worker sends the `task.schedule` tasks waiting in a delay tier "
            "for room again at once, longest waiting first: at most this many a second; a "
            "recheck that still finds no room spends no attempt. 0: off (they wait out their tier)",
     .type = F_INT,
     .offset = CFG(retry.recheck_on_room),
     .min = 0},
    {0},
};

static const field relay_fields[] = {
    {.key = "receivers",
     .doc = "where the relay POSTs signed events: a list of receivers, each with the keys below",
     .type_text = "a list",
     .default_text = "[]",
     .items = receiver_fields,
     .item_path = "[]",
     .item_defaults = &receiver_template,
     .type = F_CUSTOM,
     .custom = set_receivers,
     .equal = receivers_equal,
     .reloads = CONFIG_RELOADS_RELAY},
    {.key = "schedule_s",
     .doc = "delay before each delivery attempt, seconds (with 10 % jitter either way); after the "
            "last the delivery is `failed`",
     .reloads = CONFIG_RELOADS_RELAY,
     .type = F_INT_LIST,
     .offset = CFG(relay.schedule_s),
     .count_offset = CFG(relay.n_schedule),
     .min = 0,
     .nonempty = true},
    {.key = "trusted_publishers",
     .doc = "AMQP users (`user_id`) whose events the relay delivers and whose `x-virtflow-attempt` "
            "the worker believes; null = the user names of `amqp.urls` (right when the worker and "
            "the relay log in as one user); `[]` is an error "
            "([security.md](security.md#security-model))",
     .type = F_STRING_LIST,
     .offset = CFG(relay.trusted_publishers),
     .count_offset = CFG(relay.n_trusted_publishers),
     .nonempty = true, /* trusting nobody would park every event: say so at start */
     .validate = check_user_name},
    {.key = "http_listen",
     .doc = "the relay's `/metrics`, `/healthz`, `/readyz`; null = off",
     .type = F_STRING,
     .offset = CFG(relay.http_listen),
     .validate = check_listen,
     .null_clears = true},
    {0},
};

/* worker.headroom_shapes: {NAME: {cpu, memory_mib, disk_gib}}. */
#define SHAPE(member) offsetof(config_shape, member)

static const field shape_fields[] = {
    {.key = "cpu",
     .doc = "vCPUs of one VM of the shape (required, > 0)",
     .type = F_NUMBER,
     .offset = SHAPE(cpu),
     .min = 0,
     .min_exclusive = true},
    {.key = "memory_mib",
     .doc = "MiB of one VM of the shape (required, > 0)",
     .type = F_INT64,
     .offset = SHAPE(memory),
     .min = 0,
     .min_exclusive = true},
    {.key = "disk_gib",
     .doc = "GiB of one VM of the shape; 0 = disk not counted",
     .type = F_INT64,
     .offset = SHAPE(disk),
     .min = 0},
    {.key = "min_hosts",
     .doc = "alert when fewer hosts of a pool than this take one VM of the shape (the spares an "
            "upgrade needs, one a host): exported as `virtflow_headroom_min_hosts`, compared by "
            "the `VirtflowHeadroomLow` rule; 0 = no alert",
     .type = F_INT64,
     .offset = SHAPE(min_hosts),
     .min = 0},
    {0},
};

static const config_shape shape_defaults = {0}; /* for the reference: disk and min_hosts 0 */

void config_shapes_free(vf_config *c)
{
    for (size_t i = 0; i < c->worker.n_headroom_shapes; i++)
        free(c->worker.headroom_shapes[i].name);
    free(c->worker.headroom_shapes);
    c->worker.headroom_shapes = NULL;
    c->worker.n_headroom_shapes = 0;
}

static bool shapes_equal(const field *f, const void *a, const void *b)
{
    (void)f;
    const vf_config *x = a, *y = b;
    if (x->worker.n_headroom_shapes != y->worker.n_headroom_shapes)
        return false;
    for (size_t i = 0; i < x->worker.n_headroom_shapes; i++)
        if (strcmp(x->worker.headroom_shapes[i].name, y->worker.headroom_shapes[i].name) != 0 ||
            !config_fields_equal(shape_fields, &x->worker.headroom_shapes[i],
                                 &y->worker.headroom_shapes[i]))
            return false;
    return true;
}

static int set_shape(loader *ld, void *item, const char *name, yaml_node_t *key,
                     const char *key_path, yaml_node_t *value)
{
    config_shape *shape = item;
    if (!(shape->name = strdup(name)))
        return config_fail_nomem(ld);
    if (!value)
        return config_fail(ld, key, key_path, "expected a mapping with cpu and memory_mib");
    if (config_walk_mapping(ld, value, shape_fields, shape, key_path) < 0)
        return -1;
    if (shape->cpu <= 0)
        return config_fail_child(ld, value, key_path, "cpu", "required");
    if (shape->memory <= 0)
        return config_fail_child(ld, value, key_path, "memory_mib", "required");
    return 0;
}

static int set_shapes(loader *ld, yaml_node_t *map, void *base, const char *path, const field *f)
{
    (void)f;
    vf_config *c = base;
    config_shapes_free(c);
    /* A Prometheus label value, and a word in an alert. */
    void *items = NULL;
    int rc = config_walk_named(ld, map, path, "shape", sizeof *c->worker.headroom_shapes, &items,
                               &c->worker.n_headroom_shapes, set_shape);
    c->worker.headroom_shapes = items;
    return rc;
}

static const field worker_fields[] = {
    {.key = "http_listen",
     .doc = "the worker's `/metrics`, `/healthz`, `/readyz` (HOST:PORT or [V6]:PORT; port 0 picks "
            "one); null = off ([metrics and health](operations.md#metrics-and-health))",
     .type = F_STRING,
     .offset = CFG(worker.http_listen),
     .validate = check_listen,
     .null_clears = true},
    {.key = "headroom_shapes",
     .doc = "`NAME: {cpu, memory_mib, disk_gib}` per reference request shape: the worker's "
            "`/metrics` counts, per pool, how many VMs of each still fit "
            "(`virtflow_headroom_vms`) and on how many hosts (`virtflow_headroom_hosts`), "
            "beside the shapes requested most in the last hour and the last spare.prepare's, "
            "which are counted whatever this says ([free capacity and "
            "headroom](operations.md#free-capacity-and-headroom))",
     .type_text = "a mapping of shape names",
     .default_text = "{}",
     .items = shape_fields,
     .item_defaults = &shape_defaults,
     .item_path = ".NAME",
     .type = F_CUSTOM,
     .custom = set_shapes,
     .equal = shapes_equal},
    {0},
};

static const field api_fields[] = {
    {.key = "listen",
     .doc =
         "where virtflow-api answers (HOST:PORT or [V6]:PORT; port 0 picks one); the prototype's "
         "port; off loopback only with `api.keys_file` ([api.md](api.md#configuration))",
     .type = F_STRING,
     .offset = CFG(api.listen),
     .validate = check_listen_required},
    {.key = "allowed_hosts",
     .doc = "Host names virtflow-api answers to besides loopback names and the `api.listen` "
            "address (for instance the name a reverse proxy passes on); any other Host gets 421 "
            "(DNS rebinding)",
     .type = F_STRING_LIST,
     .offset = CFG(api.allowed_hosts),
     .count_offset = CFG(api.n_allowed_hosts),
     .validate = check_host_name},
    {.key = "trusted_proxies",
     .doc = "reverse proxies in front of virtflow-api, as addresses or CIDR ranges "
            "(`10.0.0.0/8`, `::1`): from them `X-Forwarded-For` is believed, the client being "
            "the rightmost hop not in this list, and the per-address limits count each client "
            "instead of the proxy ([api.md](api.md#behind-a-reverse-proxy)); `[]`: none, the "
            "header is ignored",
     .type = F_STRING_LIST,
     .offset = CFG(api.trusted_proxies),
     .count_offset = CFG(api.n_trusted_proxies),
     .validate = check_address_range,
     .reloads = CONFIG_RELOADS_NEVER},
    {.key = "keys_file",
     .doc = "file of API keys, stored hashed (`sha256:HEX NAME SCOPES` a line; "
            "`virtflow-api new-key` writes one): every route but `/healthz`, `/readyz`, "
            "`/metrics` and `/openapi.json` then needs `Authorization: Bearer KEY` with the "
            "right scope; null = no keys: open, loopback only ([api.md](api.md#keys))",
     .type = F_PATH,
     .offset = CFG(api.keys_file),
     .null_clears = true},
    {.key = "tls_cert_file",
     .doc = "PEM certificate (the server's first, then its chain) virtflow-api serves HTTPS "
            "with, on `api.listen`; needs `api.tls_key_file`; read at start (a new certificate "
            "needs a restart); null = plain HTTP ([api.md](api.md#tls))",
     .type = F_PATH,
     .offset = CFG(api.tls_cert_file),
     .null_clears = true,
     .reloads = CONFIG_RELOADS_NEVER},
    {.key = "tls_key_file",
     .doc = "PEM private key of `api.tls_cert_file` (unencrypted; keep it readable by "
            "virtflow-api alone)",
     .type = F_PATH,
     .offset = CFG(api.tls_key_file),
     .null_clears = true,
     .reloads = CONFIG_RELOADS_NEVER},
    {.key = "requeue_after_s",
     .doc = "a task still `queued` this long after its last write (the API or `virtflowctl` "
            "died between recording it and the broker's confirm) is published again by the "
            "replica holding the `api-requeue` lease, with a `requeued` history line; 0 = no "
            "sweep ([api.md](api.md#lost-queued-tasks))",
     .type = F_INT,
     .offset = CFG(api.requeue_after_s),
     .min = 0,
     .max = 86400,
     .has_max = true},
    {.key = "idempotency_secret_files",
     .doc = "files holding the secret `Idempotency-Key` task ids are keyed with (HMAC-SHA256), "
            "so that no one can compute another's: the first keys new ids, the others are "
            "still looked up (rotation); every replica needs the same list; read at start; "
            "empty: each key's own hash from `api.keys_file` keys its holder's ids "
            "([api.md](api.md#idempotency-keys))",
     .type = F_PATH_LIST,
     .offset = CFG(api.idempotency_secret_files),
     .count_offset = CFG(api.n_idempotency_secret_files),
     .reloads = CONFIG_RELOADS_NEVER},
    {.key = "requeue_max",
     .doc = "republishes of a `queued` task before it ends `failed` (reason `lost`), which "
            "happens `api.requeue_after_s` after the last one: at the earliest "
            "(requeue_max + 1) x requeue_after_s after it was recorded",
     .type = F_INT,
     .offset = CFG(api.requeue_max),
     .min = 0,
     .max = 100,
     .has_max = true},
    {0},
};

static const field provisioner_fields[] = {
    {.key = "type",
     .doc = "how spare VMs are created",
     .type = F_ENUM,
     .offset = CFG(spare.provisioner.type),
     .choices = provisioner_types,
     .store = STORE_STRING},
    {.key = "url",
     .doc = "gitlab: https://gitlab.example; awx: https://awx.example (AWX or Ansible Tower)",
     .type = F_STRING,
     .offset = CFG(spare.provisioner.url),
     .validate = check_http_url},
    {.key = "project",
     .doc = "gitlab: project id",
     .type = F_STRING,
     .offset = CFG(spare.provisioner.project)},
    {.key = "ref",
     .doc = "gitlab: branch or tag the pipeline runs on",
     .type = F_STRING,
     .offset = CFG(spare.provisioner.ref)},
    {.key = "token_file",
     .doc = "gitlab: file holding the pipeline trigger token; awx: file holding an OAuth2 token "
            "(sent as `Authorization: Bearer`)",
     .type = F_PATH,
     .offset = CFG(spare.provisioner.token_file)},
    {.key = "api_token_file",
     .doc = "gitlab: file holding a token with `read_api`, to follow the pipeline",
     .type = F_PATH,
     .offset = CFG(spare.provisioner.api_token_file)},
    {.key = "job_template",
     .doc = "awx: id of the job template launched (`POST /api/v2/job_templates/{id}/launch/`)",
     .type = F_INT64,
     .offset = CFG(spare.provisioner.job_template),
     .default_text = "null",
     .min = 1},
    {.key = "command",
     .doc = "command: argv to run, request values in VIRTFLOW_* variables",
     .type = F_STRING_LIST,
     .offset = CFG(spare.provisioner.command),
     .count_offset = CFG(spare.provisioner.n_command)},
    {.key = "timeout_s",
     .doc = "seconds a provisioning run may take; gitlab, awx: until the pipeline or job succeeds",
     .type = F_INT,
     .offset = CFG(spare.provisioner.timeout_s),
     .min = 0,
     .min_exclusive = true},
    {0},
};

static const field readiness_fields[] = {
    {.key = "type",
     .doc = "how a spare is known to be ready",
     .type = F_ENUM,
     .offset = CFG(spare.readiness.type),
     .choices = readiness_types,
     .store = STORE_STRING},
    {.key = "api_url",
     .doc = "kubernetes: https://k8s.example:6443",
     .type = F_STRING,
     .offset = CFG(spare.readiness.api_url),
     .validate = check_http_url},
    {.key = "token_file",
     .doc = "kubernetes: file holding a bearer token",
     .type = F_PATH,
     .offset = CFG(spare.readiness.token_file)},
    {.key = "ca_file",
     .doc = "kubernetes: PEM trust anchors for the API server",
     .type = F_PATH,
     .offset = CFG(spare.readiness.ca_file)},
    {.key = "poll_s",
     .doc = "seconds between readiness checks; also between pipeline polls (at most 10)",
     .type = F_INT,
     .offset = CFG(spare.readiness.poll_s),
     .min = 0,
     .min_exclusive = true},
    {0},
};

/* spare.clusters: {NAME: {api_url, token_file, ca_file}}. */
#define CLUSTER(member) offsetof(config_cluster, member)

static const field cluster_fields[] = {
    {.key = "api_url",
     .doc = "the cluster's Kubernetes API server (required)",
     .type = F_STRING,
     .offset = CLUSTER(api_url),
     .validate = check_http_url},
    {.key = "token_file",
     .doc = "file holding a bearer token (required)",
     .type = F_PATH,
     .offset = CLUSTER(token_file)},
    {.key = "ca_file",
     .doc = "PEM trust anchors for the API server",
     .type = F_PATH,
     .offset = CLUSTER(ca_file)},
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

static bool clusters_equal(const field *f, const void *a, const void *b)
{
    (void)f;
    const vf_config *x = a, *y = b;
    if (x->spare.n_clusters != y->spare.n_clusters)
        return false;
    for (size_t i = 0; i < x->spare.n_clusters; i++)
        if (strcmp(x->spare.clusters[i].name, y->spare.clusters[i].name) != 0 ||
            !config_fields_equal(cluster_fields, &x->spare.clusters[i], &y->spare.clusters[i]))
            return false;
    return true;
}

static int set_cluster(loader *ld, void *item, const char *name, yaml_node_t *key,
                       const char *key_path, yaml_node_t *value)
{
    config_cluster *cluster = item;
    if (!(cluster->name = strdup(name)))
        return config_fail_nomem(ld);
    if (!value)
        return config_fail(ld, key, key_path, "expected a mapping with api_url and token_file");
    if (config_walk_mapping(ld, value, cluster_fields, cluster, key_path) < 0)
        return -1;
    if (!cluster->api_url)
        return config_fail_child(ld, value, key_path, "api_url", "required");
    if (!cluster->token_file)
        return config_fail_child(ld, value, key_path, "token_file", "required");
    return 0;
}

static int set_clusters(loader *ld, yaml_node_t *map, void *base, const char *path, const field *f)
{
    (void)f;
    vf_config *c = base;
    config_clusters_free(c);
    /* The same characters a request's cluster may use. */
    void *items = NULL;
    int rc = config_walk_named(ld, map, path, "cluster", sizeof *c->spare.clusters, &items,
                               &c->spare.n_clusters, set_cluster);
    c->spare.clusters = items;
    return rc;
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
     .doc = "on release: none, delete (the Node), or drain_delete (cordon, evict its pods, delete)",
     .type = F_ENUM,
     .offset = CFG(spare.release_kubernetes),
     .choices = release_kubernetes_modes,
     .store = STORE_STRING},
    {0},
};

static const field spare_fields[] = {
    {.key = "anti_affinity",
     .doc = "spares of one upgrade on different hosts: strict, or preferred (best effort)",
     .type = F_ENUM,
     .offset = CFG(spare.anti_affinity_strict),
     .choices = anti_affinities,
     .store = STORE_BOOL},
    {.key = "name_pattern",
     .doc = "the VM's name, also its Kubernetes node name",
     .type = F_STRING,
     .offset = CFG(spare.name_pattern)},
    {.key = "provisioner",
     .type = F_SECTION,
     .children = provisioner_fields,
     .check = check_provisioner},
    {.key = "readiness", .type = F_SECTION, .children = readiness_fields, .check = check_readiness},
    {.key = "clusters",
     .doc = "`NAME: {api_url, token_file, ca_file}` per cluster; a request's `cluster` picks one "
            "(unknown: `invalid`); empty: every cluster uses `spare.readiness`",
     .type_text = "a mapping of cluster names",
     .default_text = "{}",
     .items = cluster_fields,
     .item_path = ".NAME",
     .type = F_CUSTOM,
     .custom = set_clusters,
     .equal = clusters_equal},
    {.key = "release", .type = F_SECTION, .children = spare_release_fields},
    {.key = "max_age",
     .doc = "e.g. `7d`: spares never released after this long are released by policy; null = never",
     .type_text = "a duration",
     .type = F_CUSTOM,
     .offset = CFG(spare.max_age_s),
     .custom = set_duration},
    {0},
};

static const field log_fields[] = {
    {.key = "level",
     .doc = "the least level logged",
     .reloads = CONFIG_RELOADS_WORKER | CONFIG_RELOADS_RELAY,
     .type = F_ENUM,
     .offset = CFG(log.level),
     .choices = log_levels},
    {.key = "format",
     .doc = "text, or json: one JSON object per line (`time`, `level`, `program`, `message`, and "
            "`task`, `event`, `receiver`, `message_id` when the line is about one)",
     .type = F_ENUM,
     .offset = CFG(log.format),
     .choices = log_formats},
    {0},
};

static int check_stream_name(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    /* JetStream's: no spaces, dots, wildcards or path separators. */
    if (strlen(value) > 64 || strcspn(value, " \t.*>/\\") != strlen(value))
        return config_fail(ld, node, path,
                           "expected a JetStream stream name: at most 64 characters, none of "
                           "space . * > / \\");
    return 0;
}

static int check_subject_prefix(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    if (strlen(value) > 128 || strcspn(value, " \t*>") != strlen(value) || value[0] == '.' ||
        value[strlen(value) - 1] == '.' || strstr(value, ".."))
        return config_fail(ld, node, path,
                           "expected a NATS subject without wildcards, spaces or empty tokens");
    return 0;
}

static const field nats_fields[] = {
    {.key = "url",
     .doc = "the NATS server virtflow-nats publishes every event to (nats:// or tls://); null = "
            "no sink, and no queue virtflow.nats "
            "([webhooks.md](webhooks.md#events-on-nats-jetstream))",
     .type = F_STRING,
     .offset = CFG(nats.url),
     .validate = check_nats_url},
    {.key = "stream",
     .doc = "the JetStream stream (created by virtflow-nats when missing, on `SUBJECT_PREFIX.>`, "
            "file storage)",
     .type = F_STRING,
     .offset = CFG(nats.stream),
     .validate = check_stream_name},
    {.key = "subject_prefix",
     .doc = "each event goes to subject PREFIX.<type> (virtflow.events.task.completed)",
     .type = F_STRING,
     .offset = CFG(nats.subject_prefix),
     .validate = check_subject_prefix},
    {.key = "duplicate_window_s",
     .doc = "the stream's duplicate window when virtflow-nats creates it: an event published again "
            "within it (same id, `Nats-Msg-Id`) is dropped by JetStream",
     .type = F_INT,
     .offset = CFG(nats.duplicate_window_s),
     .min = 1,
     .max = 86400,
     .has_max = true},
    {0},
};

const field config_top_fields[] = {
    {.key = "amqp", .type = F_SECTION, .children = amqp_fields},
    {.key = "store", .type = F_SECTION, .children = store_fields, .check = check_store},
    {.key = "inventory",
     .type = F_SECTION,
     .children = inventory_fields,
     .check = check_inventory,
     .reloads = CONFIG_RELOADS_WORKER},
    {.key = "scheduler",
     .type = F_SECTION,
     .children = scheduler_fields,
     .check = check_scheduler,
     .reloads = CONFIG_RELOADS_WORKER},
    {.key = "retry", .type = F_SECTION, .children = retry_fields},
    {.key = "relay", .type = F_SECTION, .children = relay_fields},
    {.key = "spare", .type = F_SECTION, .children = spare_fields},
    {.key = "log", .type = F_SECTION, .children = log_fields},
    {.key = "worker", .type = F_SECTION, .children = worker_fields},
    {.key = "api", .type = F_SECTION, .children = api_fields, .check = check_api},
    {.key = "nats", .type = F_SECTION, .children = nats_fields},
    {0},
};
