/* config_env: VIRTFLOW_* environment overrides (config.h,
 * config_apply_environment).
 *
 * The variables are turned into one small YAML document, {section: {key:
 * value}}, and walked over the config with the file's own walker and section
 * checks: a value from the environment is held to exactly the checks a file's
 * value is, and the section checks see every variable of their section at
 * once (VIRTFLOW_STORE_PATH with VIRTFLOW_STORE_URL is the same error as both
 * keys in a file). Only the messages differ: they name the variable, not a
 * line. */
#include "config_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "grow.h"
#include "log.h"

#define ENV_PREFIX "VIRTFLOW_"
#define ENV_NAME_MAX 128

int config_env_name(const char *key, char *out, size_t size)
{
    size_t prefix = strlen(ENV_PREFIX), len = strlen(key);
    if (prefix + len + 1 > size)
        return -1;
    memcpy(out, ENV_PREFIX, prefix);
    for (size_t i = 0; i < len; i++) {
        char c = key[i];
        out[prefix + i] = c == '.' ? '_' : (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
    }
    out[prefix + len] = '\0';
    return 0;
}

/* What the environment can set: a scalar, a plain list or a duration. Lists
 * of sections (receivers, plugins, clusters) and the plugin file (read once
 * while the file loads) need the file. */
static bool settable(const field *f, const char *path)
{
    if (!strcmp(path, "scheduler.plugin_config"))
        return false;
    switch (f->type) {
    case F_SECTION:
        return false;
    case F_CUSTOM:
        return f->custom == set_duration;
    default:
        return true;
    }
}

typedef int (*key_visit)(const field *f, const char *path, const char *name, void *user);

static int visit(const field *fields, const char *path, key_visit fn, void *user)
{
    for (const field *f = fields; f->key; f++) {
        char child[PATH_TEXT];
        config_child_path(child, sizeof child, path, f->key);
        if (f->type == F_SECTION) {
            int rc = visit(f->children, child, fn, user);
            if (rc)
                return rc;
            continue;
        }
        char name[ENV_NAME_MAX];
        if (config_env_name(child, name, sizeof name) < 0)
            continue; /* no key path is that long */
        int rc = fn(f, child, name, user);
        if (rc)
            return rc;
    }
    return 0;
}

typedef struct each_call {
    int (*fn)(const char *name, const char *key, bool settable, void *user);
    void *user;
} each_call;

static int each_visit(const field *f, const char *path, const char *name, void *user)
{
    each_call *call = user;
    return call->fn(name, path, settable(f, path), call->user);
}

int config_env_each(int (*fn)(const char *name, const char *key, bool settable, void *user),
                    void *user)
{
    each_call call = {fn, user};
    return visit(config_top_fields, "", each_visit, &call);
}

/* ---- finding the variables -------------------------------------------------------------- */

typedef struct override {
    char *name;  /* owned */
    char *key;   /* owned */
    char *value; /* owned */
    const field *f;
} override;

typedef struct lookup {
    const char *name; /* wanted */
    const field *f;   /* found */
    char key[PATH_TEXT];
} lookup;

static int lookup_visit(const field *f, const char *path, const char *name, void *user)
{
    lookup *l = user;
    if (strcmp(name, l->name) != 0)
        return 0;
    l->f = f;
    snprintf(l->key, sizeof l->key, "%s", path);
    return 1;
}

/* VIRTFLOW_<SECTION>_...: meant as a configuration key. */
static const char *section_named(const char *name)
{
    const char *rest = name + strlen(ENV_PREFIX);
    for (const field *f = config_top_fields; f->key; f++) {
        char upper[ENV_NAME_MAX];
        if (config_env_name(f->key, upper, sizeof upper) < 0)
            continue;
        size_t len = strlen(upper + strlen(ENV_PREFIX));
        if (!strncmp(rest, upper + strlen(ENV_PREFIX), len) && rest[len] == '_')
            return f->key;
    }
    return NULL;
}

/* A receiver's secret_env may well be called VIRTFLOW_RELAY_SECRET. */
static bool is_secret_env(const vf_config *config, const char *name)
{
    for (size_t i = 0; i < config->relay.n_receivers; i++) {
        const char *secret_env = config->relay.receivers[i].secret_env;
        if (secret_env && !strcmp(secret_env, name))
            return true;
    }
    return false;
}

static void overrides_free(override *o, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(o[i].name);
        free(o[i].key);
        free(o[i].value);
    }
    free(o);
}

static bool already(const override *o, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(o[i].name, name))
            return true;
    return false;
}

/* The VIRTFLOW_* entries that set keys, in the order of `environment` (the
 * first of two same names wins, as getenv's). Returns the count, or -1. */
static long collect(const vf_config *config, const char *const *environment, override **out,
                    vf_error *err)
{
    override *o = NULL;
    size_t n = 0, cap = 0;
    for (const char *const *entry = environment; entry && *entry; entry++) {
        const char *eq = strchr(*entry, '=');
        size_t name_len = eq ? (size_t)(eq - *entry) : 0;
        if (!eq || strncmp(*entry, ENV_PREFIX, strlen(ENV_PREFIX)) != 0 ||
            name_len >= ENV_NAME_MAX || !eq[1])
            continue;
        char name[ENV_NAME_MAX];
        memcpy(name, *entry, name_len);
        name[name_len] = '\0';
        if (!strcmp(name, "VIRTFLOW_CONFIG") || already(o, n, name))
            continue;
        lookup l = {.name = name};
        visit(config_top_fields, "", lookup_visit, &l);
        if (!l.f) {
            const char *section = section_named(name);
            if (!section || is_secret_env(config, name))
                continue; /* not meant for the configuration */
            vf_error_set(err, VF_ECONFIG,
                         "%s: names no configuration key of %s (a key's variable is VIRTFLOW_ "
                         "and its path in capitals, '.' as '_': amqp.urls is VIRTFLOW_AMQP_URLS)",
                         name, section);
            goto fail;
        }
        if (!settable(l.f, l.key)) {
            vf_error_set(err, VF_ECONFIG,
                         "%s: %s cannot be set from the environment: set it in the "
                         "configuration file",
                         name, l.key);
            goto fail;
        }
        if (grow_array((void **)&o, &cap, n + 1, sizeof *o) < 0)
            goto nomem;
        o[n] = (override){
            .name = strdup(name), .key = strdup(l.key), .value = strdup(eq + 1), .f = l.f};
        n++;
        if (!o[n - 1].name || !o[n - 1].key || !o[n - 1].value)
            goto nomem;
    }
    *out = o;
    return (long)n;
nomem:
    vf_error_set(err, VF_ENOMEM, "environment: out of memory");
fail:
    overrides_free(o, n);
    return -1;
}

/* ---- the document ---------------------------------------------------------------------- */

static int add_text(yaml_document_t *doc, const char *text, size_t len)
{
    return yaml_document_add_scalar(doc, NULL, (yaml_char_t *)text, (int)len,
                                    YAML_PLAIN_SCALAR_STYLE);
}

/* The value node: a plain scalar, or for a list a sequence of the
 * comma-separated items, each trimmed of spaces. 0 when libyaml refuses
 * (not UTF-8, out of memory). */
static int add_value(yaml_document_t *doc, const override *o)
{
    field_type t = o->f->type;
    if (t != F_STRING_LIST && t != F_PATH_LIST && t != F_INT_LIST)
        return add_text(doc, o->value, strlen(o->value));
    int seq = yaml_document_add_sequence(doc, NULL, YAML_FLOW_SEQUENCE_STYLE);
    const char *p = o->value;
    while (seq) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && *p == ' ') {
            p++;
            len--;
        }
        while (len && p[len - 1] == ' ')
            len--;
        int item = add_text(doc, p, len);
        if (!item || !yaml_document_append_sequence_item(doc, seq, item))
            return 0;
        if (!end)
            break;
        p = end + 1;
    }
    return seq;
}

/* The mapping node at `prefix` (a section path), made under its parent when
 * missing. Sections are at most three deep. */
typedef struct section_node {
    char path[PATH_TEXT];
    int index;
} section_node;

static int section_of(yaml_document_t *doc, section_node *made, size_t *n_made, size_t max,
                      int root, const char *key)
{
    int parent = root;
    const char *dot;
    const char *segment = key;
    while ((dot = strchr(segment, '.'))) {
        size_t prefix_len = (size_t)(dot - key);
        int found = 0;
        for (size_t i = 0; i < *n_made; i++)
            if (strlen(made[i].path) == prefix_len && !strncmp(made[i].path, key, prefix_len))
                found = made[i].index;
        if (!found) {
            if (*n_made >= max || prefix_len >= PATH_TEXT)
                return 0;
            int name = add_text(doc, segment, (size_t)(dot - segment));
            found = yaml_document_add_mapping(doc, NULL, YAML_BLOCK_MAPPING_STYLE);
            if (!name || !found || !yaml_document_append_mapping_pair(doc, parent, name, found))
                return 0;
            memcpy(made[*n_made].path, key, prefix_len);
            made[*n_made].path[prefix_len] = '\0';
            made[*n_made].index = found;
            (*n_made)++;
        }
        parent = found;
        segment = dot + 1;
    }
    return parent;
}

static void warn_insecure(const vf_config *config, const config_env_applied *a)
{
    for (size_t i = 0; i < a->n; i++) {
        const char *key = a->keys[i];
        bool off = (!strcmp(key, "amqp.tls_verify") && !config->amqp.tls_verify) ||
                   (!strcmp(key, "store.tls_verify") && !config->store.tls_verify) ||
                   (!strcmp(key, "inventory.tls_verify") && !config->inventory.tls_verify);
        if (off)
            log_warn("%s: %s is false: certificates are NOT checked", a->names[i], key);
    }
}

static bool has_key(const config_env_applied *a, const char *key)
{
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->keys[i], key))
            return true;
    return false;
}

int config_apply_environment(vf_config *config, const char *const *environment, vf_error *err)
{
    override *o = NULL;
    long found = collect(config, environment, &o, err);
    if (found <= 0)
        return (int)found;
    size_t n = (size_t)found;
    int rc = -1;
    yaml_document_t doc;
    bool have_doc = false;
    config_env_applied applied = {0};
    if (!yaml_document_initialize(&doc, NULL, NULL, NULL, 1, 1)) {
        vf_error_set(err, VF_ENOMEM, "environment: out of memory");
        goto out;
    }
    have_doc = true;
    int root = yaml_document_add_mapping(&doc, NULL, YAML_BLOCK_MAPPING_STYLE);
    section_node made[32];
    size_t n_made = 0;
    for (size_t i = 0; root && i < n; i++) {
        int parent = section_of(&doc, made, &n_made, sizeof made / sizeof made[0], root, o[i].key);
        const char *leaf = strrchr(o[i].key, '.');
        leaf = leaf ? leaf + 1 : o[i].key;
        int name = parent ? add_text(&doc, leaf, strlen(leaf)) : 0;
        int value = name ? add_value(&doc, &o[i]) : 0;
        if (!value || !yaml_document_append_mapping_pair(&doc, parent, name, value)) {
            vf_error_set(err, VF_ECONFIG, "%s: %s: expected UTF-8 text", o[i].name, o[i].key);
            goto out;
        }
    }
    if (!root) {
        vf_error_set(err, VF_ENOMEM, "environment: out of memory");
        goto out;
    }
    applied.n = n;
    applied.names = calloc(n, sizeof *applied.names);
    applied.keys = calloc(n, sizeof *applied.keys);
    if (!applied.names || !applied.keys) {
        vf_error_set(err, VF_ENOMEM, "environment: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        applied.names[i] = o[i].name;
        applied.keys[i] = o[i].key;
        o[i].name = o[i].key = NULL;
    }
    /* VIRTFLOW_STORE_PATH over a file's store.url chooses SQLite, as
     * VIRTFLOW_STORE_URL over a file's store.path chooses PostgreSQL
     * (check_store drops the path then); both set is the file's error. */
    if (has_key(&applied, "store.path") && !has_key(&applied, "store.url")) {
        free(config->store.url);
        config->store.url = NULL;
    }
    loader ld = {.doc = &doc, .name = "environment", .base_dir = "", .err = err, .env = &applied};
    if (config_walk_mapping(&ld, yaml_document_get_node(&doc, root), config_top_fields, config,
                            "") < 0)
        goto out;
    warn_insecure(config, &applied);
    config_free_strings(config->env_names, config->n_env);
    config_free_strings(config->env_keys, config->n_env);
    config->env_names = applied.names;
    config->env_keys = applied.keys;
    config->n_env = n;
    applied.names = applied.keys = NULL;
    applied.n = 0;
    rc = 0;
out:
    config_free_strings(applied.names, applied.n);
    config_free_strings(applied.keys, applied.n);
    if (have_doc)
        yaml_document_delete(&doc);
    overrides_free(o, n);
    return rc;
}

const char *config_key_origin(const vf_config *config, const char *key)
{
    for (size_t i = 0; i < config->n_env; i++)
        if (!strcmp(config->env_keys[i], key))
            return config->env_names[i];
    return NULL;
}
