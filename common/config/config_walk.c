/* config_walk: walking the YAML document along the key table: errors with
 * file, line and key path, scalars, lists, durations (config_internal.h). */
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

/* ---- errors ---------------------------------------------------------------------------- */

int config_node_line(const yaml_node_t *node)
{
    return node ? (int)node->start_mark.line + 1 : 1;
}

void config_where(const loader *ld, const yaml_node_t *node, const char *path, char *out,
                  size_t size)
{
    if (!ld->env) {
        snprintf(out, size, "%s:%d: ", ld->name, config_node_line(node));
        return;
    }
    /* amqp.urls[1] is VIRTFLOW_AMQP_URLS's */
    char key[PATH_TEXT];
    snprintf(key, sizeof key, "%s", path ? path : "");
    char *bracket = strchr(key, '[');
    if (bracket)
        *bracket = '\0';
    for (size_t i = 0; i < ld->env->n; i++) {
        if (!strcmp(ld->env->keys[i], key)) {
            snprintf(out, size, "%s: ", ld->env->names[i]);
            return;
        }
    }
    /* A section check about a key the environment did not set: every
     * variable applied may have led to it. */
    size_t used = (size_t)snprintf(out, size, "environment (");
    for (size_t i = 0; i < ld->env->n && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%s", i ? ", " : "", ld->env->names[i]);
    if (used < size)
        snprintf(out + used, size - used, "): ");
}

int config_fail(loader *ld, const yaml_node_t *node, const char *path, const char *fmt, ...)
{
    char what[VF_ERROR_TEXT];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char where[VF_ERROR_TEXT];
    config_where(ld, node, path, where, sizeof where);
    if (path && *path)
        vf_error_set(ld->err, VF_ECONFIG, "%s%s: %s", where, path, what);
    else
        vf_error_set(ld->err, VF_ECONFIG, "%s%s", where, what);
    return -1;
}

int config_fail_nomem(loader *ld)
{
    vf_error_set(ld->err, VF_ENOMEM, "%s: out of memory", ld->name);
    return -1;
}

/* "path.key"; a path too long for the buffer is cut short, which still reads. */
void config_child_path(char *out, size_t size, const char *path, const char *key)
{
    if (snprintf(out, size, "%s%s%.64s", path, *path ? "." : "", key) >= (int)size)
        out[size - 1] = '\0';
}

int config_fail_child(loader *ld, const yaml_node_t *node, const char *path, const char *key,
                      const char *what)
{
    char child[PATH_TEXT];
    config_child_path(child, sizeof child, path, key);
    return config_fail(ld, node, child, "%s", what);
}

void config_item_path_at(char *out, size_t size, const char *path, size_t index)
{
    if (snprintf(out, size, "%s[%zu]", path, index) >= (int)size)
        out[size - 1] = '\0';
}

/* Copy `url` into `out` with the password of any user:password@ part
 * replaced by ***, so a URL can be quoted in an error message. The URLs
 * quoted are the malformed ones, so this errs towards hiding too much: the
 * last '@' ends the secret (passwords may hold unencoded '@' or '/'), and
 * without a "://" before it everything up to it is hidden. */
void config_mask_url(const char *url, char *out, size_t size)
{
    const char *at = strrchr(url, '@');
    if (!at) {
        snprintf(out, size, "%s", url);
        return;
    }
    const char *separator = strstr(url, "://");
    if (!separator || separator > at) {
        snprintf(out, size, "***%s", at);
        return;
    }
    const char *user = separator + 3;
    const char *colon = memchr(user, ':', (size_t)(at - user));
    if (!colon)
        snprintf(out, size, "%s", url);
    else
        snprintf(out, size, "%.*s***%s", (int)(colon + 1 - url), url, at);
}

/* ---- scalars --------------------------------------------------------------------------- */

yaml_node_t *config_node_at(loader *ld, int index)
{
    return yaml_document_get_node(ld->doc, index);
}

bool config_is_null(const yaml_node_t *node)
{
    if (!node || node->type != YAML_SCALAR_NODE)
        return false;
    if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)node->data.scalar.value;
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static bool is_plain(const yaml_node_t *node)
{
    return node->type == YAML_SCALAR_NODE && node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

const char *config_scalar(const yaml_node_t *node)
{
    return (const char *)node->data.scalar.value;
}

/* A config_scalar usable as a C string: libyaml allows "\0" escapes, which would
 * silently cut a value short. */
int config_get_string(loader *ld, yaml_node_t *node, const char *path, const char **out)
{
    if (node->type != YAML_SCALAR_NODE)
        return config_fail(ld, node, path, "expected a string");
    if (strlen(config_scalar(node)) != node->data.scalar.length)
        return config_fail(ld, node, path, "expected a string without NUL characters");
    *out = config_scalar(node);
    return 0;
}

void config_describe_range(const field *f, bool integer, char *out, size_t size)
{
    const char *kind = integer ? "an integer" : "a number";
    if (f->has_max)
        snprintf(out, size, "%s in %.17g..%.17g", kind, f->min, f->max);
    else
        snprintf(out, size, "%s %s %.17g", kind, f->min_exclusive ? ">" : ">=", f->min);
}

static void describe_range(const field *f, bool integer, char *out, size_t size)
{
    char range[80];
    config_describe_range(f, integer, range, sizeof range);
    snprintf(out, size, "expected %s", range);
}

static bool in_range(const field *f, double v)
{
    if (f->min_exclusive ? !(v > f->min) : !(v >= f->min))
        return false;
    return !f->has_max || v <= f->max;
}

static int type_error(loader *ld, yaml_node_t *node, const char *path, const field *f, bool integer)
{
    char expected[96];
    describe_range(f, integer, expected, sizeof expected);
    if (node->type == YAML_SCALAR_NODE && !is_plain(node))
        return config_fail(ld, node, path, "%s (a quoted value is a string)", expected);
    return config_fail(ld, node, path, "%s", expected);
}

/* Integers: plain scalars of decimal digits with an optional sign, fully
 * consumed, no overflow, then checked against the field's range. */
static int get_integer(loader *ld, yaml_node_t *node, const char *path, const field *f,
                       long long *out)
{
    if (!is_plain(node))
        return type_error(ld, node, path, f, true);
    const char *text = config_scalar(node);
    if (!((*text >= '0' && *text <= '9') || *text == '-' || *text == '+'))
        return type_error(ld, node, path, f, true);
    errno = 0;
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    int saved = errno;
    if (end == text || *end != '\0')
        return type_error(ld, node, path, f, true);
    if (saved == ERANGE || !in_range(f, (double)v)) {
        char expected[96];
        describe_range(f, true, expected, sizeof expected);
        return config_fail(ld, node, path, "%s", expected);
    }
    /* int fields without an explicit maximum still have the type's one */
    if (f->type != F_INT64 && (v > INT_MAX || v < INT_MIN)) {
        char expected[96];
        describe_range(f, true, expected, sizeof expected);
        return config_fail(ld, node, path, "%s and at most %d", expected, INT_MAX);
    }
    *out = v;
    return 0;
}

static int get_number(loader *ld, yaml_node_t *node, const char *path, const field *f, double *out)
{
    if (!is_plain(node))
        return type_error(ld, node, path, f, false);
    const char *text = config_scalar(node);
    /* strtod also takes "inf", "nan" and hex floats; none belongs in a config. */
    if (text[strspn(text, "0123456789+-.eE")] != '\0' || !*text)
        return type_error(ld, node, path, f, false);
    errno = 0;
    char *end = NULL;
    double v = strtod(text, &end);
    int saved = errno;
    if (end == text || *end != '\0')
        return type_error(ld, node, path, f, false);
    if (saved == ERANGE || !isfinite(v) || !in_range(f, v)) {
        char expected[96];
        describe_range(f, false, expected, sizeof expected);
        return config_fail(ld, node, path, "%s", expected);
    }
    *out = v;
    return 0;
}

static int get_bool(loader *ld, yaml_node_t *node, const char *path, bool *out)
{
    if (is_plain(node)) {
        const char *v = config_scalar(node);
        if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE")) {
            *out = true;
            return 0;
        }
        if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE")) {
            *out = false;
            return 0;
        }
    }
    return config_fail(ld, node, path, "expected true or false");
}

/* A relative path in a file means relative to that file's directory. */
char *config_resolve_path(loader *ld, const char *value)
{
    if (value[0] == '/' || !ld->base_dir[0])
        return strdup(value);
    size_t size = strlen(ld->base_dir) + strlen(value) + 1;
    char *joined = malloc(size);
    if (joined)
        snprintf(joined, size, "%s%s", ld->base_dir, value);
    return joined;
}

void config_free_strings(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int replace_string(loader *ld, char **slot, char *fresh)
{
    if (!fresh)
        return config_fail_nomem(ld);
    free(*slot);
    *slot = fresh;
    return 0;
}

/* ---- fields ---------------------------------------------------------------------------- */

static int set_enum(loader *ld, yaml_node_t *node, const char *path, const field *f, void *slot)
{
    const char *text = NULL;
    if (node->type == YAML_SCALAR_NODE)
        text = config_scalar(node);
    for (const choice *c = f->choices; text && c->name; c++) {
        if (strcmp(text, c->name) != 0)
            continue;
        switch (f->store) {
        case STORE_INT:
            *(int *)slot = c->value;
            return 0;
        case STORE_BOOL:
            *(bool *)slot = c->value != 0;
            return 0;
        case STORE_STRING:
            return replace_string(ld, slot, strdup(c->name));
        }
    }
    char allowed[96] = "";
    size_t used = 0;
    for (const choice *c = f->choices; c->name && used < sizeof allowed; c++) {
        int n = snprintf(allowed + used, sizeof allowed - used, "%s%s", used ? "|" : "", c->name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return config_fail(ld, node, path, "expected one of %s", allowed);
}

static int set_string_list(loader *ld, yaml_node_t *node, const char *path, const field *f,
                           void *base)
{
    if (node->type != YAML_SEQUENCE_NODE)
        return config_fail(ld, node, path, "expected a list");
    size_t n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
    if (n == 0 && f->nonempty)
        return config_fail(ld, node, path, "expected a non-empty list");
    char **items = calloc(n ? n : 1, sizeof *items);
    if (!items)
        return config_fail_nomem(ld);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = config_node_at(ld, node->data.sequence.items.start[i]);
        char item_path[PATH_TEXT];
        config_item_path_at(item_path, sizeof item_path, path, i);
        const char *text = NULL;
        if (config_is_null(item)) {
            config_fail(ld, item, item_path, "expected a string");
            goto config_fail;
        }
        if (config_get_string(ld, item, item_path, &text) < 0)
            goto config_fail;
        if (!*text) {
            config_fail(ld, item, item_path, "expected a non-empty string");
            goto config_fail;
        }
        if (f->validate && f->validate(ld, item, text, item_path) < 0)
            goto config_fail;
        items[i] = f->type == F_PATH_LIST ? config_resolve_path(ld, text) : strdup(text);
        if (!items[i]) {
            config_fail_nomem(ld);
            goto config_fail;
        }
    }
    char ***slot = (char ***)((char *)base + f->offset);
    size_t *count = (size_t *)((char *)base + f->count_offset);
    if (f->append && *count) {
        if (resize_array((void **)slot, *count + n, sizeof **slot) < 0) {
            config_fail_nomem(ld);
            goto config_fail;
        }
        memcpy(*slot + *count, items, n * sizeof *items);
        free(items);
        *count += n;
        return 0;
    }
    config_free_strings(*slot, *count);
    *slot = items;
    *count = n;
    return 0;
config_fail:
    config_free_strings(items, n);
    return -1;
}

static int set_int_list(loader *ld, yaml_node_t *node, const char *path, const field *f, void *base)
{
    if (node->type != YAML_SEQUENCE_NODE)
        return config_fail(ld, node, path, "expected a list");
    size_t n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
    if (n == 0 && f->nonempty)
        return config_fail(ld, node, path, "expected a non-empty list");
    int *items = calloc(n ? n : 1, sizeof *items);
    if (!items)
        return config_fail_nomem(ld);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = config_node_at(ld, node->data.sequence.items.start[i]);
        char item_path[PATH_TEXT];
        config_item_path_at(item_path, sizeof item_path, path, i);
        long long v = 0;
        if (get_integer(ld, item, item_path, f, &v) < 0) {
            free(items);
            return -1;
        }
        items[i] = (int)v;
    }
    int **slot = (int **)((char *)base + f->offset);
    free(*slot);
    *slot = items;
    *(size_t *)((char *)base + f->count_offset) = n;
    return 0;
}

static int set_field(loader *ld, yaml_node_t *node, const char *path, const field *f, void *base)
{
    void *slot = (char *)base + f->offset;
    switch (f->type) {
    case F_STRING:
    case F_PATH: {
        const char *text = NULL;
        if (config_get_string(ld, node, path, &text) < 0)
            return -1;
        if (!*text)
            return config_fail(ld, node, path, "expected a non-empty string");
        if (f->validate && f->validate(ld, node, text, path) < 0)
            return -1;
        return replace_string(ld, slot,
                              f->type == F_PATH ? config_resolve_path(ld, text) : strdup(text));
    }
    case F_INT:
    case F_INT64: {
        long long v = 0;
        if (get_integer(ld, node, path, f, &v) < 0)
            return -1;
        if (f->type == F_INT)
            *(int *)slot = (int)v;
        else
            *(int64_t *)slot = v;
        if (f->has_flag)
            *(bool *)((char *)base + f->flag_offset) = true;
        return 0;
    }
    case F_NUMBER:
        if (get_number(ld, node, path, f, slot) < 0)
            return -1;
        if (f->has_flag)
            *(bool *)((char *)base + f->flag_offset) = true;
        return 0;
    case F_BOOL:
        return get_bool(ld, node, path, slot);
    case F_ENUM:
        return set_enum(ld, node, path, f, slot);
    case F_STRING_LIST:
    case F_PATH_LIST:
        return set_string_list(ld, node, path, f, base);
    case F_INT_LIST:
        return set_int_list(ld, node, path, f, base);
    case F_SECTION:
        if (config_walk_mapping(ld, node, f->children, base, path) < 0)
            return -1;
        return f->check ? f->check(ld, node, base, path) : 0;
    case F_CUSTOM:
        return f->custom(ld, node, base, path, f);
    }
    return config_fail(ld, node, path, "internal error: unhandled field type");
}

/* Checks pair `i` of a mapping: its key must be a string not seen before in
 * the same mapping. Fills the key node and the key's full path. */
int config_mapping_key(loader *ld, yaml_node_t *map, yaml_node_pair_t *pair, const char *path,
                       yaml_node_t **key_out, char *key_path, size_t key_path_size)
{
    yaml_node_t *key = config_node_at(ld, pair->key);
    if (!key || key->type != YAML_SCALAR_NODE || config_is_null(key) ||
        strlen(config_scalar(key)) != key->data.scalar.length)
        return config_fail(ld, key, path, "expected a string key");
    config_child_path(key_path, key_path_size, path, config_scalar(key));
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < pair; p++) {
        yaml_node_t *earlier = config_node_at(ld, p->key);
        if (earlier && earlier->type == YAML_SCALAR_NODE &&
            !strcmp(config_scalar(earlier), config_scalar(key)))
            return config_fail(ld, key, key_path, "duplicate key (first at line %d)",
                               config_node_line(earlier));
    }
    *key_out = key;
    return 0;
}

int config_walk_named(loader *ld, yaml_node_t *map, const char *path, const char *what,
                      size_t item_size, void **items, size_t *count, config_named_fn fn)
{
    if (map->type != YAML_MAPPING_NODE)
        return config_fail(ld, map, path, "expected a mapping of %s names", what);
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    char *array = calloc(n ? n : 1, item_size);
    if (!array)
        return config_fail_nomem(ld);
    *items = array;
    *count = n;
    for (size_t i = 0; i < n; i++) {
        yaml_node_pair_t *pair = &map->data.mapping.pairs.start[i];
        yaml_node_t *key = NULL;
        char key_path[PATH_TEXT];
        if (config_mapping_key(ld, map, pair, path, &key, key_path, sizeof key_path) < 0)
            return -1;
        const char *name = config_scalar(key);
        if (!*name || strlen(name) > 63 ||
            strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
                strlen(name))
            return config_fail(ld, key, key_path, "a %s name is 1..63 characters of [A-Za-z0-9._-]",
                               what);
        yaml_node_t *value = config_node_at(ld, pair->value);
        if (value && config_is_null(value))
            value = NULL;
        if (fn(ld, array + i * item_size, name, key, key_path, value) < 0)
            return -1;
    }
    return 0;
}

int config_walk_mapping(loader *ld, yaml_node_t *map, const field *fields, void *base,
                        const char *path)
{
    if (map->type != YAML_MAPPING_NODE)
        return config_fail(ld, map, path, "expected a mapping");
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top;
         pair++) {
        yaml_node_t *key = NULL;
        char key_path[PATH_TEXT];
        if (config_mapping_key(ld, map, pair, path, &key, key_path, sizeof key_path) < 0)
            return -1;
        const field *f = fields;
        while (f->key && strcmp(f->key, config_scalar(key)) != 0)
            f++;
        if (!f->key)
            return config_fail(ld, key, key_path, "unknown key");
        yaml_node_t *value = config_node_at(ld, pair->value);
        if (config_is_null(value) && f->null_clears) {
            /* An address on by default (worker.http_listen): null is the way to say "none". */
            char **slot = (char **)((char *)base + f->offset);
            free(*slot);
            *slot = NULL;
            continue;
        }
        if (config_is_null(value))
            continue; /* null means "not given": the default stays */
        if (set_field(ld, value, key_path, f, base) < 0)
            return -1;
    }
    return 0;
}

/* The line of `key` in a mapping, else the mapping's own line: where a
 * cross-field error should point the reader. */
yaml_node_t *config_key_node(loader *ld, yaml_node_t *map, const char *key)
{
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top;
         pair++) {
        yaml_node_t *k = config_node_at(ld, pair->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp(config_scalar(k), key))
            return k;
    }
    return map;
}

/* ---- durations ------------------------------------------------------------------------- */

#define DURATION_MAX_S (100LL * 365 * 86400)

int config_parse_duration(const char *text, int64_t *seconds)
{
    if (!text || !(*text >= '0' && *text <= '9'))
        return -1;
    long long value = 0;
    const char *p = text;
    for (; *p >= '0' && *p <= '9'; p++) {
        value = value * 10 + (*p - '0');
        if (value > DURATION_MAX_S)
            return -1;
    }
    long long unit;
    switch (*p) {
    case 's':
        unit = 1;
        break;
    case 'm':
        unit = 60;
        break;
    case 'h':
        unit = 3600;
        break;
    case 'd':
        unit = 86400;
        break;
    default:
        return -1;
    }
    if (p[1] != '\0' || value <= 0 || value > DURATION_MAX_S / unit)
        return -1;
    *seconds = (int64_t)(value * unit);
    return 0;
}

int set_duration(loader *ld, yaml_node_t *node, void *base, const char *path, const field *f)
{
    int64_t *slot = (int64_t *)((char *)base + f->offset);
    if (node->type == YAML_SCALAR_NODE && config_parse_duration(config_scalar(node), slot) == 0)
        return 0;
    return config_fail(ld, node, path,
                       "expected a duration: a positive integer and a unit s, m, h or d "
                       "(90s, 45m, 12h, 30d), at most 100 years");
}
