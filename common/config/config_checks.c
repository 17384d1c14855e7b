/* config_checks: checks of single values (URLs, names) and of whole
 * sections once walked (config_internal.h). */
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

#include "cidr.h"
#include "log.h"

/* ---- value checks ---------------------------------------------------------------------- */

/* `value` must start with one of the two schemes and name something after it. */
static int check_scheme(loader *ld, yaml_node_t *node, const char *value, const char *path,
                        const char *scheme, const char *secure_scheme)
{
    size_t len = strlen(scheme), secure_len = strlen(secure_scheme);
    if ((!strncmp(value, scheme, len) && value[len]) ||
        (!strncmp(value, secure_scheme, secure_len) && value[secure_len]))
        return 0;
    char shown[128];
    config_mask_url(value, shown, sizeof shown);
    return config_fail(ld, node, path, "expected an %s or %s URL, got \"%s\"", scheme,
                       secure_scheme, shown);
}

int check_amqp_url(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    return check_scheme(ld, node, value, path, "amqp://", "amqps://");
}

int check_nats_url(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    return check_scheme(ld, node, value, path, "nats://", "tls://");
}

int check_store_url(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    static const char *const schemes[] = {"postgresql://", "postgres://"};
    for (size_t i = 0; i < 2; i++) {
        size_t len = strlen(schemes[i]);
        if (!strncmp(value, schemes[i], len) && value[len])
            return 0;
    }
    char shown[128];
    config_mask_url(value, shown, sizeof shown);
    return config_fail(ld, node, path, "expected postgresql://USER@HOST:PORT/DB, got \"%s\"",
                       shown);
}

int check_http_url(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    return check_scheme(ld, node, value, path, "http://", "https://");
}

/* An HTTP listen address: HOST:PORT or [V6]:PORT, port 0-65535. Checked
 * here so a typo is a configuration error with a line, not a failed bind. */
static bool listen_ok(const char *value)
{
    const char *colon = strrchr(value, ':');
    bool bracketed = value[0] == '[';
    bool host_ok = colon && colon > value &&
                   (bracketed ? colon[-1] == ']' && colon - value > 2
                              : memchr(value, ':', (size_t)(colon - value)) == NULL);
    char *end = NULL;
    errno = 0;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    return host_ok && colon[1] >= '0' && colon[1] <= '9' && end && *end == '\0' && errno == 0 &&
           port >= 0 && port <= 65535 && strspn(value, " \t") == 0;
}

int check_listen(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    if (listen_ok(value))
        return 0;
    return config_fail(ld, node, path,
                       "expected HOST:PORT or [V6]:PORT (port 0-65535), or null for none");
}

int check_listen_required(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    if (listen_ok(value))
        return 0;
    return config_fail(ld, node, path, "expected HOST:PORT or [V6]:PORT (port 0-65535)");
}

/* A Host name to allow (api.allowed_hosts): a name or an address, without
 * a scheme, path, port or spaces, as virtflowctl serve --allow-host wants. */
int check_host_name(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    if (value[0] && strlen(value) < 256 && !strpbrk(value, "/ \t@?#"))
        return 0;
    return config_fail(ld, node, path,
                       "expected a host name or address, without a scheme, path or spaces");
}

/* A proxy's address or range (api.trusted_proxies), as httpd parses it. */
int check_address_range(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    cidr range;
    if (cidr_parse(value, &range) == 0)
        return 0;
    return config_fail(ld, node, path,
                       "expected an address or an address range (10.0.0.0/8, ::1), got \"%s\"",
                       value);
}

/* Receiver names key the deliveries table and appear in logs. */
int check_receiver_name(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    size_t len = strlen(value);
    if (len <= 64 && value[strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                         "0123456789._-")] == '\0')
        return 0;
    return config_fail(ld, node, path, "expected 1-64 characters of [A-Za-z0-9._-]");
}

int check_env_name(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    static const char word[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
    if (!(value[0] >= '0' && value[0] <= '9') && value[strspn(value, word)] == '\0')
        return 0;
    return config_fail(ld, node, path,
                       "expected an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
}

/* An AMQP user name as RabbitMQ stores it: the relay compares it with the
 * user_id property byte for byte, and logs it. */
int check_user_name(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    size_t len = strlen(value);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)value[i];
        if (c < 0x20 || c == 0x7f)
            return config_fail(ld, node, path, "expected a user name without control characters");
    }
    if (len > 255)
        return config_fail(ld, node, path, "expected a user name of at most 255 bytes");
    return 0;
}

/* ---- cross-field checks ---------------------------------------------------------------- */

static int require(loader *ld, yaml_node_t *where, const char *present, const char *path,
                   const char *key, const char *condition)
{
    if (present)
        return 0;
    char child[PATH_TEXT];
    config_child_path(child, sizeof child, path, key);
    return config_fail(ld, where, child, "required when %s", condition);
}

int check_inventory(loader *ld, yaml_node_t *map, void *base, const char *path)
{
    vf_config *c = base;
    /* A limit at or below the refresh interval would stop placements between
     * two ordinary refreshes. */
    if (c->inventory.max_age_s <= c->inventory.refresh_s) {
        char child[PATH_TEXT];
        config_child_path(child, sizeof child, path, "max_age_s");
        return config_fail(ld, config_key_node(ld, map, "max_age_s"), child,
                           "%d must be greater than inventory.refresh_s (%d)",
                           c->inventory.max_age_s, c->inventory.refresh_s);
    }
    yaml_node_t *where = config_key_node(ld, map, "source");
    if (c->inventory.source == CONFIG_INVENTORY_HTTP)
        return require(ld, where, c->inventory.url, path, "url", "inventory.source is http");
    if (c->inventory.source == CONFIG_INVENTORY_PROXMOX) {
        if (require(ld, where, c->inventory.url, path, "url", "inventory.source is proxmox") < 0)
            return -1;
        return require(ld, where, c->inventory.token_file, path, "token_file",
                       "inventory.source is proxmox");
    }
    return 0;
}

/* The key node of `key` in map when its value is not null; NULL otherwise. */
static yaml_node_t *key_with_value(loader *ld, yaml_node_t *map, const char *key)
{
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top;
         pair++) {
        yaml_node_t *k = config_node_at(ld, pair->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp(config_scalar(k), key)) {
            yaml_node_t *v = config_node_at(ld, pair->value);
            return v && !config_is_null(v) ? k : NULL;
        }
    }
    return NULL;
}

/* store.path (SQLite) or store.url (PostgreSQL), never both; the password
 * and CA files need the URL. */
int check_store(loader *ld, yaml_node_t *map, void *base, const char *path)
{
    vf_config *c = base;
    if (!c->store.url) {
        static const struct {
            const char *key, *why;
        } pg_only[] = {
            {"password_file", "the SQLite store has no password or TLS"},
            {"ca_file", "the SQLite store has no password or TLS"},
            {"statement_timeout_ms", "the SQLite store's bound is its busy timeout (5 s)"},
        };
        for (size_t i = 0; i < sizeof pg_only / sizeof pg_only[0]; i++) {
            yaml_node_t *key = key_with_value(ld, map, pg_only[i].key);
            if (key) {
                char what[160];
                snprintf(what, sizeof what, "only used with store.url (PostgreSQL); %s",
                         pg_only[i].why);
                return config_fail_child(ld, key, path, pg_only[i].key, what);
            }
        }
        return 0;
    }
    yaml_node_t *file = key_with_value(ld, map, "path");
    if (file && ld->env)
        return config_fail(ld, file, path,
                           "both path (SQLite) and url (PostgreSQL) are set: keep one");
    if (file)
        return config_fail(ld, file, path,
                           "both path (SQLite) and url (PostgreSQL) are set: keep one (line %d)",
                           config_node_line(config_key_node(ld, map, "url")));
    free(c->store.path);
    c->store.path = NULL;
    return 0;
}

int check_api(loader *ld, yaml_node_t *map, void *base, const char *path)
{
    vf_config *c = base;
    if (!c->api.tls_cert_file == !c->api.tls_key_file)
        return 0;
    const char *given = c->api.tls_cert_file ? "tls_cert_file" : "tls_key_file";
    const char *missing = c->api.tls_cert_file ? "tls_key_file" : "tls_cert_file";
    yaml_node_t *where = config_key_node(ld, map, given);
    char why[64];
    snprintf(why, sizeof why, "api.%s is set", given);
    return require(ld, where ? where : map, NULL, path, missing, why);
}

int check_provisioner(loader *ld, yaml_node_t *map, void *base, const char *path)
{
    vf_config *c = base;
    yaml_node_t *where = config_key_node(ld, map, "type");
    const char *type = c->spare.provisioner.type;
    if (!strcmp(type, "gitlab")) {
        const char *why = "spare.provisioner.type is gitlab";
        if (require(ld, where, c->spare.provisioner.url, path, "url", why) < 0 ||
            require(ld, where, c->spare.provisioner.project, path, "project", why) < 0 ||
            require(ld, where, c->spare.provisioner.token_file, path, "token_file", why) < 0)
            return -1;
    }
    if (!strcmp(type, "awx")) {
        const char *why = "spare.provisioner.type is awx";
        if (require(ld, where, c->spare.provisioner.url, path, "url", why) < 0 ||
            require(ld, where, c->spare.provisioner.token_file, path, "token_file", why) < 0)
            return -1;
        if (c->spare.provisioner.job_template <= 0)
            return config_fail_child(ld, where, path, "job_template",
                                     "required when spare.provisioner.type is awx");
    }
    if (!strcmp(type, "command") && c->spare.provisioner.n_command == 0) {
        return config_fail_child(
            ld, where, path, "command",
            "a non-empty list is required when spare.provisioner.type is command");
    }
    return 0;
}

int check_readiness(loader *ld, yaml_node_t *map, void *base, const char *path)
{
    vf_config *c = base;
    if (strcmp(c->spare.readiness.type, "kubernetes") != 0)
        return 0;
    yaml_node_t *where = config_key_node(ld, map, "type");
    const char *why = "spare.readiness.type is kubernetes";
    if (require(ld, where, c->spare.readiness.api_url, path, "api_url", why) < 0)
        return -1;
    return require(ld, where, c->spare.readiness.token_file, path, "token_file", why);
}

/* scheduler.default_priority_class names one of scheduler.priority_classes. */
int check_scheduler(loader *ld, yaml_node_t *map, void *base, const char *path)
{
    vf_config *c = base;
    const char *name = c->scheduler.default_priority_class;
    if (!name || config_priority_class_named(c, name))
        return 0;
    char child[PATH_TEXT];
    config_child_path(child, sizeof child, path, "default_priority_class");
    return config_fail(ld, config_key_node(ld, map, "default_priority_class"), child,
                       "\"%s\" is not one of scheduler.priority_classes", name);
}
