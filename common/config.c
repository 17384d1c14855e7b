/* config: YAML file → vf_config, checked against a table of known keys.
 *
 * The file is loaded whole with libyaml's document API, so every node keeps
 * the line it started on, and then walked against static tables describing
 * each section. The walk starts from config_defaults(): a key the file does
 * not name (or names with a null value) keeps its default. The first error
 * stops the walk; its text is "file:line: key.path: what was expected". */
#include "config.h"

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

/* A config file is a few kilobytes; anything far larger is a mistake. */
#define CONFIG_MAX_BYTES (1024 * 1024)
#define PATH_TEXT 160

typedef struct loader {
    yaml_document_t *doc;
    const char *name;     /* file name as the caller gave it, for messages */
    const char *base_dir; /* "" or a directory ending in '/' for relative paths */
    vf_error *err;
} loader;

typedef struct choice {
    const char *name;
    int value;
} choice;

typedef enum {
    F_STRING,      /* char *, any non-null scalar */
    F_PATH,        /* char *, resolved against the file's directory */
    F_INT,         /* int, plain integer scalar within [min, max] */
    F_INT64,       /* int64_t, same */
    F_NUMBER,      /* double, plain integer or decimal scalar */
    F_BOOL,        /* bool, plain true/false */
    F_ENUM,        /* one of `choices`, stored as `store` says */
    F_STRING_LIST, /* char ** + size_t count */
    F_PATH_LIST,   /* same, each resolved like F_PATH */
    F_INT_LIST,    /* int * + size_t count, each within [min, max] */
    F_SECTION,     /* nested mapping described by `children`, same base */
    F_CUSTOM,      /* `custom` does it all */
} field_type;

typedef enum { STORE_INT = 0, STORE_BOOL, STORE_STRING } enum_store;

typedef struct field field;
typedef int (*field_custom)(loader *ld, yaml_node_t *value, void *base, const char *path,
                            const field *f);
typedef int (*section_check)(loader *ld, yaml_node_t *mapping, void *base, const char *path);
typedef int (*string_check)(loader *ld, yaml_node_t *node, const char *value, const char *path);

struct field {
    const char *key;
    field_type type;
    size_t offset;
    size_t count_offset; /* lists: where the element count lives */
    double min, max;     /* numbers: inclusive bounds unless min_exclusive; max used if has_max */
    bool min_exclusive;
    bool has_max;
    bool nonempty;         /* lists: an empty list is an error */
    bool append;           /* lists: add to what is there instead of replacing it */
    bool has_flag;         /* numbers: also set a bool at flag_offset when given */
    size_t flag_offset;    /* numbers with has_flag: the bool to set */
    const choice *choices; /* F_ENUM, terminated by a NULL name */
    enum_store store;      /* F_ENUM */
    const field *children; /* F_SECTION, terminated by a NULL key */
    section_check check;   /* F_SECTION: cross-field checks after the walk */
    string_check validate; /* strings and string-list items */
    field_custom custom;   /* F_CUSTOM */
    int arg;               /* F_CUSTOM: handler's own parameter */
    bool null_clears;      /* F_STRING: null turns the default off (NULL) instead of keeping it */
};

/* Longest amqp.urls entry whose user name is compared, bytes (a longer one
 * trusts nobody by default). */
#define CONFIG_URL_COPY_MAX 4096

/* ---- errors ---------------------------------------------------------------------------- */

static int node_line(const yaml_node_t *node)
{
    return node ? (int)node->start_mark.line + 1 : 1;
}

static int fail(loader *ld, const yaml_node_t *node, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(loader *ld, const yaml_node_t *node, const char *path, const char *fmt, ...)
{
    char what[VF_ERROR_TEXT];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (path && *path)
        vf_error_set(ld->err, VF_ECONFIG, "%s:%d: %s: %s", ld->name, node_line(node), path, what);
    else
        vf_error_set(ld->err, VF_ECONFIG, "%s:%d: %s", ld->name, node_line(node), what);
    return -1;
}

static int fail_nomem(loader *ld)
{
    vf_error_set(ld->err, VF_ENOMEM, "%s: out of memory", ld->name);
    return -1;
}

/* "path.key"; a path too long for the buffer is cut short, which still reads. */
static void child_path(char *out, size_t size, const char *path, const char *key)
{
    if (snprintf(out, size, "%s%s%.64s", path, *path ? "." : "", key) >= (int)size)
        out[size - 1] = '\0';
}

static int fail_child(loader *ld, const yaml_node_t *node, const char *path, const char *key,
                      const char *what)
{
    char child[PATH_TEXT];
    child_path(child, sizeof child, path, key);
    return fail(ld, node, child, "%s", what);
}

static void item_path_at(char *out, size_t size, const char *path, size_t index)
{
    if (snprintf(out, size, "%s[%zu]", path, index) >= (int)size)
        out[size - 1] = '\0';
}

/* Copy `url` into `out` with the password of any user:password@ part
 * replaced by ***, so a URL can be quoted in an error message. The URLs
 * quoted are the malformed ones, so this errs towards hiding too much: the
 * last '@' ends the secret (passwords may hold unencoded '@' or '/'), and
 * without a "://" before it everything up to it is hidden. */
static void mask_url(const char *url, char *out, size_t size)
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

static yaml_node_t *node_at(loader *ld, int index)
{
    return yaml_document_get_node(ld->doc, index);
}

static bool is_null(const yaml_node_t *node)
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

static const char *scalar(const yaml_node_t *node)
{
    return (const char *)node->data.scalar.value;
}

/* A scalar usable as a C string: libyaml allows "\0" escapes, which would
 * silently cut a value short. */
static int get_string(loader *ld, yaml_node_t *node, const char *path, const char **out)
{
    if (node->type != YAML_SCALAR_NODE)
        return fail(ld, node, path, "expected a string");
    if (strlen(scalar(node)) != node->data.scalar.length)
        return fail(ld, node, path, "expected a string without NUL characters");
    *out = scalar(node);
    return 0;
}

static void describe_range(const field *f, bool integer, char *out, size_t size)
{
    const char *kind = integer ? "an integer" : "a number";
    if (f->has_max)
        snprintf(out, size, "expected %s in %.17g..%.17g", kind, f->min, f->max);
    else
        snprintf(out, size, "expected %s %s %.17g", kind, f->min_exclusive ? ">" : ">=", f->min);
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
        return fail(ld, node, path, "%s (a quoted value is a string)", expected);
    return fail(ld, node, path, "%s", expected);
}

/* Integers: plain scalars of decimal digits with an optional sign, fully
 * consumed, no overflow, then checked against the field's range. */
static int get_integer(loader *ld, yaml_node_t *node, const char *path, const field *f,
                       long long *out)
{
    if (!is_plain(node))
        return type_error(ld, node, path, f, true);
    const char *text = scalar(node);
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
        return fail(ld, node, path, "%s", expected);
    }
    /* int fields without an explicit maximum still have the type's one */
    if (f->type != F_INT64 && (v > INT_MAX || v < INT_MIN)) {
        char expected[96];
        describe_range(f, true, expected, sizeof expected);
        return fail(ld, node, path, "%s and at most %d", expected, INT_MAX);
    }
    *out = v;
    return 0;
}

static int get_number(loader *ld, yaml_node_t *node, const char *path, const field *f, double *out)
{
    if (!is_plain(node))
        return type_error(ld, node, path, f, false);
    const char *text = scalar(node);
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
        return fail(ld, node, path, "%s", expected);
    }
    *out = v;
    return 0;
}

static int get_bool(loader *ld, yaml_node_t *node, const char *path, bool *out)
{
    if (is_plain(node)) {
        const char *v = scalar(node);
        if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE")) {
            *out = true;
            return 0;
        }
        if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE")) {
            *out = false;
            return 0;
        }
    }
    return fail(ld, node, path, "expected true or false");
}

/* A relative path in a file means relative to that file's directory. */
static char *resolve_path(loader *ld, const char *value)
{
    if (value[0] == '/' || !ld->base_dir[0])
        return strdup(value);
    size_t size = strlen(ld->base_dir) + strlen(value) + 1;
    char *joined = malloc(size);
    if (joined)
        snprintf(joined, size, "%s%s", ld->base_dir, value);
    return joined;
}

static void free_strings(char **v, size_t n)
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
        return fail_nomem(ld);
    free(*slot);
    *slot = fresh;
    return 0;
}

/* ---- fields ---------------------------------------------------------------------------- */

static int walk_mapping(loader *ld, yaml_node_t *map, const field *fields, void *base,
                        const char *path);

static int set_enum(loader *ld, yaml_node_t *node, const char *path, const field *f, void *slot)
{
    const char *text = NULL;
    if (node->type == YAML_SCALAR_NODE)
        text = scalar(node);
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
    return fail(ld, node, path, "expected one of %s", allowed);
}

static int set_string_list(loader *ld, yaml_node_t *node, const char *path, const field *f,
                           void *base)
{
    if (node->type != YAML_SEQUENCE_NODE)
        return fail(ld, node, path, "expected a list");
    size_t n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
    if (n == 0 && f->nonempty)
        return fail(ld, node, path, "expected a non-empty list");
    char **items = calloc(n ? n : 1, sizeof *items);
    if (!items)
        return fail_nomem(ld);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = node_at(ld, node->data.sequence.items.start[i]);
        char item_path[PATH_TEXT];
        item_path_at(item_path, sizeof item_path, path, i);
        const char *text = NULL;
        if (is_null(item)) {
            fail(ld, item, item_path, "expected a string");
            goto fail;
        }
        if (get_string(ld, item, item_path, &text) < 0)
            goto fail;
        if (!*text) {
            fail(ld, item, item_path, "expected a non-empty string");
            goto fail;
        }
        if (f->validate && f->validate(ld, item, text, item_path) < 0)
            goto fail;
        items[i] = f->type == F_PATH_LIST ? resolve_path(ld, text) : strdup(text);
        if (!items[i]) {
            fail_nomem(ld);
            goto fail;
        }
    }
    char ***slot = (char ***)((char *)base + f->offset);
    size_t *count = (size_t *)((char *)base + f->count_offset);
    if (f->append && *count) {
        char **joined = realloc(*slot, (*count + n) * sizeof *joined);
        if (!joined) {
            fail_nomem(ld);
            goto fail;
        }
        memcpy(joined + *count, items, n * sizeof *items);
        free(items);
        *slot = joined;
        *count += n;
        return 0;
    }
    free_strings(*slot, *count);
    *slot = items;
    *count = n;
    return 0;
fail:
    free_strings(items, n);
    return -1;
}

static int set_int_list(loader *ld, yaml_node_t *node, const char *path, const field *f, void *base)
{
    if (node->type != YAML_SEQUENCE_NODE)
        return fail(ld, node, path, "expected a list");
    size_t n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
    if (n == 0 && f->nonempty)
        return fail(ld, node, path, "expected a non-empty list");
    int *items = calloc(n ? n : 1, sizeof *items);
    if (!items)
        return fail_nomem(ld);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = node_at(ld, node->data.sequence.items.start[i]);
        char item_path[PATH_TEXT];
        item_path_at(item_path, sizeof item_path, path, i);
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
        if (get_string(ld, node, path, &text) < 0)
            return -1;
        if (!*text)
            return fail(ld, node, path, "expected a non-empty string");
        if (f->validate && f->validate(ld, node, text, path) < 0)
            return -1;
        return replace_string(ld, slot, f->type == F_PATH ? resolve_path(ld, text) : strdup(text));
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
        if (walk_mapping(ld, node, f->children, base, path) < 0)
            return -1;
        return f->check ? f->check(ld, node, base, path) : 0;
    case F_CUSTOM:
        return f->custom(ld, node, base, path, f);
    }
    return fail(ld, node, path, "internal error: unhandled field type");
}

/* Checks pair `i` of a mapping: its key must be a string not seen before in
 * the same mapping. Fills the key node and the key's full path. */
static int mapping_key(loader *ld, yaml_node_t *map, yaml_node_pair_t *pair, const char *path,
                       yaml_node_t **key_out, char *key_path, size_t key_path_size)
{
    yaml_node_t *key = node_at(ld, pair->key);
    if (!key || key->type != YAML_SCALAR_NODE || is_null(key) ||
        strlen(scalar(key)) != key->data.scalar.length)
        return fail(ld, key, path, "expected a string key");
    child_path(key_path, key_path_size, path, scalar(key));
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < pair; p++) {
        yaml_node_t *earlier = node_at(ld, p->key);
        if (earlier && earlier->type == YAML_SCALAR_NODE && !strcmp(scalar(earlier), scalar(key)))
            return fail(ld, key, key_path, "duplicate key (first at line %d)", node_line(earlier));
    }
    *key_out = key;
    return 0;
}

static int walk_mapping(loader *ld, yaml_node_t *map, const field *fields, void *base,
                        const char *path)
{
    if (map->type != YAML_MAPPING_NODE)
        return fail(ld, map, path, "expected a mapping");
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top;
         pair++) {
        yaml_node_t *key = NULL;
        char key_path[PATH_TEXT];
        if (mapping_key(ld, map, pair, path, &key, key_path, sizeof key_path) < 0)
            return -1;
        const field *f = fields;
        while (f->key && strcmp(f->key, scalar(key)) != 0)
            f++;
        if (!f->key)
            return fail(ld, key, key_path, "unknown key");
        yaml_node_t *value = node_at(ld, pair->value);
        if (is_null(value) && f->null_clears) {
            /* An address on by default (worker.http_listen): null is the way to say "none". */
            char **slot = (char **)((char *)base + f->offset);
            free(*slot);
            *slot = NULL;
            continue;
        }
        if (is_null(value))
            continue; /* null means "not given": the default stays */
        if (set_field(ld, value, key_path, f, base) < 0)
            return -1;
    }
    return 0;
}

/* The line of `key` in a mapping, else the mapping's own line: where a
 * cross-field error should point the reader. */
static yaml_node_t *key_node(loader *ld, yaml_node_t *map, const char *key)
{
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top;
         pair++) {
        yaml_node_t *k = node_at(ld, pair->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), key))
            return k;
    }
    return map;
}

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
    mask_url(value, shown, sizeof shown);
    return fail(ld, node, path, "expected an %s or %s URL, got \"%s\"", scheme, secure_scheme,
                shown);
}

static int check_amqp_url(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    return check_scheme(ld, node, value, path, "amqp://", "amqps://");
}

static int check_store_url(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    static const char *const schemes[] = {"postgresql://", "postgres://"};
    for (size_t i = 0; i < 2; i++) {
        size_t len = strlen(schemes[i]);
        if (!strncmp(value, schemes[i], len) && value[len])
            return 0;
    }
    char shown[128];
    mask_url(value, shown, sizeof shown);
    return fail(ld, node, path, "expected postgresql://USER@HOST:PORT/DB, got \"%s\"", shown);
}

static int check_http_url(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    return check_scheme(ld, node, value, path, "http://", "https://");
}

/* An HTTP listen address: HOST:PORT or [V6]:PORT, port 0-65535. Checked
 * here so a typo is a configuration error with a line, not a failed bind. */
static int check_listen(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    const char *colon = strrchr(value, ':');
    bool bracketed = value[0] == '[';
    bool host_ok = colon && colon > value &&
                   (bracketed ? colon[-1] == ']' && colon - value > 2
                              : memchr(value, ':', (size_t)(colon - value)) == NULL);
    char *end = NULL;
    errno = 0;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (host_ok && colon[1] >= '0' && colon[1] <= '9' && end && *end == '\0' && errno == 0 &&
        port >= 0 && port <= 65535 && strspn(value, " \t") == 0)
        return 0;
    return fail(ld, node, path, "expected HOST:PORT or [V6]:PORT (port 0-65535), or null for none");
}

/* Receiver names key the deliveries table and appear in logs. */
static int check_receiver_name(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    size_t len = strlen(value);
    if (len <= 64 && value[strspn(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                         "0123456789._-")] == '\0')
        return 0;
    return fail(ld, node, path, "expected 1-64 characters of [A-Za-z0-9._-]");
}

static int check_env_name(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    static const char word[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
    if (!(value[0] >= '0' && value[0] <= '9') && value[strspn(value, word)] == '\0')
        return 0;
    return fail(ld, node, path, "expected an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
}

/* An AMQP user name as RabbitMQ stores it: the relay compares it with the
 * user_id property byte for byte, and logs it. */
static int check_user_name(loader *ld, yaml_node_t *node, const char *value, const char *path)
{
    size_t len = strlen(value);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)value[i];
        if (c < 0x20 || c == 0x7f)
            return fail(ld, node, path, "expected a user name without control characters");
    }
    if (len > 255)
        return fail(ld, node, path, "expected a user name of at most 255 bytes");
    return 0;
}

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
        return fail(ld, map, path, "expected a mapping");
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    if (n == 0)
        return 0;
    config_plugin *grown =
        realloc(config->scheduler.plugins, (config->scheduler.n_plugins + n) * sizeof *grown);
    if (!grown)
        return fail_nomem(ld);
    config->scheduler.plugins = grown;
    for (yaml_node_pair_t *pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top;
         pair++) {
        yaml_node_t *key = NULL;
        char key_path[PATH_TEXT];
        if (mapping_key(ld, map, pair, path, &key, key_path, sizeof key_path) < 0)
            return -1;
        config_plugin plugin = {.kind = (config_plugin_kind)f->arg, .enable = true};
        if (!scalar(key)[0] || key->data.scalar.length >= sizeof plugin.name)
            return fail(ld, key, key_path, "expected a plugin name of 1-%zu characters",
                        sizeof plugin.name - 1);
        memcpy(plugin.name, scalar(key), key->data.scalar.length + 1);
        plugin.line = node_line(key);
        yaml_node_t *value = node_at(ld, pair->value);
        if (!is_null(value) && walk_mapping(ld, value, plugin_fields, &plugin, key_path) < 0)
            return -1;
        config->scheduler.plugins[config->scheduler.n_plugins++] = plugin;
    }
    return 0;
}

static const field plugin_kinds[] = {
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
        return fail(ld, map, path, "expected a mapping");
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    config_header *headers = calloc(n ? n : 1, sizeof *headers);
    if (!headers)
        return fail_nomem(ld);
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
        if (mapping_key(ld, map, pair, path, &key, key_path, sizeof key_path) < 0)
            return -1;
        const char *name = scalar(key);
        if (!*name || name[strspn(name, "!#$%&'*+-.^_`|~0123456789"
                                        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")])
            return fail(ld, key, key_path, "expected a header name (letters, digits, -, _ ...)");
        yaml_node_t *value = node_at(ld, pair->value);
        const char *text = NULL;
        if (is_null(value))
            return fail(ld, value, key_path, "expected a string");
        if (get_string(ld, value, key_path, &text) < 0)
            return -1;
        for (const char *c = text; *c; c++)
            if ((unsigned char)*c < 0x20 && *c != '\t')
                return fail(ld, value, key_path,
                            "expected a header value without line breaks "
                            "or control characters");
        config_header *h = &receiver->headers[receiver->n_headers++];
        h->name = strdup(name);
        h->value = strdup(text);
        if (!h->name || !h->value)
            return fail_nomem(ld);
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
    if (get_string(ld, node, path, &text) < 0)
        return -1;
    if (!*text)
        return fail(ld, node, path, "expected a non-empty string");
    char **grown = realloc(receiver->secret_files, (receiver->n_secret_files + 1) * sizeof *grown);
    if (!grown)
        return fail_nomem(ld);
    receiver->secret_files = grown;
    char *resolved = resolve_path(ld, text);
    if (!resolved)
        return fail_nomem(ld);
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

static void receiver_free(config_receiver *r)
{
    free(r->ca_file);
    free(r->name);
    free(r->url);
    free_strings(r->events, r->n_events);
    free_strings(r->secret_files, r->n_secret_files);
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
        return fail_child(ld, map, path, "name", "required");
    if (!r->url)
        return fail_child(ld, map, path, "url", "required");
    if (r->n_secret_files == 0 && !r->secret_env)
        return fail_child(ld, map, path, "secret_files", "required unless secret_env is set");
    return 0;
}

static int set_receivers(loader *ld, yaml_node_t *seq, void *base, const char *path, const field *f)
{
    (void)f;
    vf_config *config = base;
    if (seq->type != YAML_SEQUENCE_NODE)
        return fail(ld, seq, path, "expected a list");
    size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    for (size_t i = 0; i < config->relay.n_receivers; i++)
        receiver_free(&config->relay.receivers[i]);
    free(config->relay.receivers);
    config->relay.n_receivers = 0;
    /* Zeroed entries are safe to free, so the count can be set at once and
     * an error half-way leaves nothing to clean up here. */
    config->relay.receivers = calloc(n ? n : 1, sizeof *config->relay.receivers);
    if (!config->relay.receivers)
        return fail_nomem(ld);
    config->relay.n_receivers = n;
    for (size_t i = 0; i < n; i++) {
        config_receiver *r = &config->relay.receivers[i];
        yaml_node_t *item = node_at(ld, seq->data.sequence.items.start[i]);
        char item_path[PATH_TEXT];
        item_path_at(item_path, sizeof item_path, path, i);
        if (receiver_defaults(r) < 0)
            return fail_nomem(ld);
        if (is_null(item))
            return fail(ld, item, item_path, "expected a mapping");
        if (walk_mapping(ld, item, receiver_fields, r, item_path) < 0 ||
            check_receiver(ld, item, r, item_path) < 0)
            return -1;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(config->relay.receivers[j].name, r->name) != 0)
                continue;
            char name_path[PATH_TEXT];
            child_path(name_path, sizeof name_path, item_path, "name");
            return fail(ld, key_node(ld, item, "name"), name_path,
                        "duplicate receiver name \"%s\" (also relay.receivers[%zu])", r->name, j);
        }
    }
    return 0;
}

/* ---- cross-field checks ---------------------------------------------------------------- */

static int require(loader *ld, yaml_node_t *where, const char *present, const char *path,
                   const char *key, const char *condition)
{
    if (present)
        return 0;
    char child[PATH_TEXT];
    child_path(child, sizeof child, path, key);
    return fail(ld, where, child, "required when %s", condition);
}

static int check_inventory(loader *ld, yaml_node_t *map, void *base, const char *path)
{
    vf_config *c = base;
    /* A limit at or below the refresh interval would stop placements between
     * two ordinary refreshes. */
    if (c->inventory.max_age_s <= c->inventory.refresh_s) {
        char child[PATH_TEXT];
        child_path(child, sizeof child, path, "max_age_s");
        return fail(ld, key_node(ld, map, "max_age_s"), child,
                    "%d must be greater than inventory.refresh_s (%d)", c->inventory.max_age_s,
                    c->inventory.refresh_s);
    }
    yaml_node_t *where = key_node(ld, map, "source");
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
        yaml_node_t *k = node_at(ld, pair->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), key)) {
            yaml_node_t *v = node_at(ld, pair->value);
            return v && !is_null(v) ? k : NULL;
        }
    }
    return NULL;
}

/* store.path (SQLite) or store.url (PostgreSQL), never both; the password
 * and CA files need the URL. */
static int check_store(loader *ld, yaml_node_t *map, void *base, const char *path)
{
    vf_config *c = base;
    if (!c->store.url) {
        static const char *const pg_only[] = {"password_file", "ca_file"};
        for (size_t i = 0; i < sizeof pg_only / sizeof pg_only[0]; i++) {
            yaml_node_t *key = key_with_value(ld, map, pg_only[i]);
            if (key)
                return fail_child(ld, key, path, pg_only[i],
                                  "only used with store.url (PostgreSQL); the SQLite store has "
                                  "no password or TLS");
        }
        return 0;
    }
    yaml_node_t *file = key_with_value(ld, map, "path");
    if (file)
        return fail(ld, file, path,
                    "both path (SQLite) and url (PostgreSQL) are set: keep one (line %d)",
                    node_line(key_node(ld, map, "url")));
    free(c->store.path);
    c->store.path = NULL;
    return 0;
}

static int check_provisioner(loader *ld, yaml_node_t *map, void *base, const char *path)
{
    vf_config *c = base;
    yaml_node_t *where = key_node(ld, map, "type");
    const char *type = c->spare.provisioner.type;
    if (!strcmp(type, "gitlab")) {
        const char *why = "spare.provisioner.type is gitlab";
        if (require(ld, where, c->spare.provisioner.url, path, "url", why) < 0 ||
            require(ld, where, c->spare.provisioner.project, path, "project", why) < 0 ||
            require(ld, where, c->spare.provisioner.token_file, path, "token_file", why) < 0)
            return -1;
    }
    if (!strcmp(type, "command") && c->spare.provisioner.n_command == 0) {
        return fail_child(ld, where, path, "command",
                          "a non-empty list is required when spare.provisioner.type is command");
    }
    return 0;
}

static int check_readiness(loader *ld, yaml_node_t *map, void *base, const char *path)
{
    vf_config *c = base;
    if (strcmp(c->spare.readiness.type, "kubernetes") != 0)
        return 0;
    yaml_node_t *where = key_node(ld, map, "type");
    const char *why = "spare.readiness.type is kubernetes";
    if (require(ld, where, c->spare.readiness.api_url, path, "api_url", why) < 0)
        return -1;
    return require(ld, where, c->spare.readiness.token_file, path, "token_file", why);
}

/* spare.clusters: {NAME: {api_url, token_file, ca_file}}. */
#define CLUSTER(member) offsetof(config_cluster, member)

static const field cluster_fields[] = {
    {.key = "api_url", .type = F_STRING, .offset = CLUSTER(api_url), .validate = check_http_url},
    {.key = "token_file", .type = F_PATH, .offset = CLUSTER(token_file)},
    {.key = "ca_file", .type = F_PATH, .offset = CLUSTER(ca_file)},
    {0},
};

static void clusters_free(vf_config *c)
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
        return fail(ld, map, path, "expected a mapping of cluster names");
    clusters_free(c);
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    /* Zeroed entries are safe to free: the count is set at once. */
    c->spare.clusters = calloc(n ? n : 1, sizeof *c->spare.clusters);
    if (!c->spare.clusters)
        return fail_nomem(ld);
    c->spare.n_clusters = n;
    for (size_t i = 0; i < n; i++) {
        yaml_node_pair_t *pair = &map->data.mapping.pairs.start[i];
        yaml_node_t *key = NULL;
        char key_path[PATH_TEXT];
        if (mapping_key(ld, map, pair, path, &key, key_path, sizeof key_path) < 0)
            return -1;
        config_cluster *cluster = &c->spare.clusters[i];
        const char *name = scalar(key);
        /* The same characters a request's cluster may use. */
        if (!*name || strlen(name) > 63 ||
            strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
                strlen(name))
            return fail(ld, key, key_path, "a cluster name is 1..63 characters of [A-Za-z0-9._-]");
        if (!(cluster->name = strdup(name)))
            return fail_nomem(ld);
        yaml_node_t *value = node_at(ld, pair->value);
        if (!value || is_null(value))
            return fail(ld, key, key_path, "expected a mapping with api_url and token_file");
        if (walk_mapping(ld, value, cluster_fields, cluster, key_path) < 0)
            return -1;
        if (!cluster->api_url)
            return fail_child(ld, value, key_path, "api_url", "required");
        if (!cluster->token_file)
            return fail_child(ld, value, key_path, "token_file", "required");
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

static int set_duration(loader *ld, yaml_node_t *node, void *base, const char *path, const field *f)
{
    int64_t *slot = (int64_t *)((char *)base + f->offset);
    if (node->type == YAML_SCALAR_NODE && config_parse_duration(scalar(node), slot) == 0)
        return 0;
    return fail(ld, node, path,
                "expected a duration: a positive integer and a unit s, m, h or d "
                "(90s, 45m, 12h, 30d), at most 100 years");
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
    {.key = "plugins", .type = F_SECTION, .children = plugin_kinds},
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

static const field top_fields[] = {
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
        goto fail;
    c->amqp.urls[0] = strdup("amqp://guest:guest@127.0.0.1:5672/");
    if (!c->amqp.urls[0])
        goto fail;
    c->amqp.n_urls = 1;
    c->amqp.queue_type = CONFIG_QUEUE_QUORUM;
    c->amqp.prefetch = 200;
    c->amqp.heartbeat_s = 20;
    c->amqp.max_message_bytes = 1048576;
    c->amqp.tls_verify = true;

    c->inventory.source = CONFIG_INVENTORY_FILE;
    c->inventory.refresh_s = 10;
    c->inventory.max_age_s = 300;
    c->inventory.timeout_s = 5;
    c->inventory.tls_verify = true;
    c->store.tls_verify = true;

    c->scheduler.overcommit_cpu = 4.0;
    c->scheduler.overcommit_memory = 1.0;
    c->scheduler.dedicated_exclusive = true;
    c->scheduler.subset_size = 1;
    c->scheduler.reservation_ttl_s = 900;

    c->retry.max_attempts = 5;

    c->store.retention_s = 30LL * 86400;

    c->spare.anti_affinity_strict = true;
    c->spare.provisioner.timeout_s = 600;
    c->spare.readiness.poll_s = 10;

    c->log.level = VF_LOG_INFO;
    c->log.format = VF_LOG_FORMAT_TEXT;
    c->worker.http_listen = strdup("127.0.0.1:9464");
    c->relay.http_listen = strdup("127.0.0.1:9465");
    if (!c->worker.http_listen || !c->relay.http_listen)
        goto fail;

    if (!(c->store.path = strdup("virtflow.db")) ||
        !(c->inventory.path = strdup("deploy/inventory.example.yaml")) ||
        !(c->spare.name_pattern = strdup("spare-{upgrade_id}-{index}")) ||
        !(c->spare.provisioner.type = strdup("none")) ||
        !(c->spare.provisioner.ref = strdup("main")) ||
        !(c->spare.readiness.type = strdup("none")) ||
        !(c->spare.release_kubernetes = strdup("none")) ||
        copy_ints(&c->retry.delays_s, &c->retry.n_delays, delays,
                  sizeof delays / sizeof delays[0]) < 0 ||
        copy_ints(&c->relay.schedule_s, &c->relay.n_schedule, schedule,
                  sizeof schedule / sizeof schedule[0]) < 0)
        goto fail;
    return c;
fail:
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
static int load_plugin_config(vf_config *config, vf_error *err)
{
    const char *path = config->scheduler.plugin_config;
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
        vf_error_set(err, VF_ECONFIG, "scheduler.plugin_config: %s: cannot open: %s", path,
                     strerror(saved));
        goto out;
    }
    if (!S_ISREG(st.st_mode) || !(f = fdopen(fd, "rb"))) {
        close(fd);
        vf_error_set(err, VF_ECONFIG, "scheduler.plugin_config: %s: not a regular file", path);
        goto out;
    }
    text = malloc(CONFIG_MAX_BYTES + 1);
    if (!text) {
        vf_error_set(err, VF_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    size_t len = fread(text, 1, CONFIG_MAX_BYTES + 1, f);
    if (ferror(f) || len > CONFIG_MAX_BYTES) {
        vf_error_set(err, VF_ECONFIG, "scheduler.plugin_config: %s: cannot read it whole", path);
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
    size_t before = config->scheduler.n_plugins;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && !is_null(root) && walk_mapping(&ld, root, plugin_kinds, config, "") < 0)
        goto out;
    size_t added = config->scheduler.n_plugins - before;
    config_plugin *all = config->scheduler.plugins;
    for (size_t i = before; i < config->scheduler.n_plugins; i++)
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
    if (root && !is_null(root) && walk_mapping(&ld, root, top_fields, config, "") < 0)
        goto fail;
    if (config->scheduler.plugin_config && load_plugin_config(config, err) < 0)
        goto fail;

    /* A second document would be silently ignored: say so instead. */
    yaml_document_t next;
    if (!yaml_parser_load(&parser, &next)) {
        syntax_error(&parser, name, err);
        goto fail;
    }
    yaml_node_t *next_root = yaml_document_get_root_node(&next);
    int next_line = next_root ? (int)next_root->start_mark.line + 1 : 0;
    yaml_document_delete(&next);
    if (next_root) {
        vf_error_set(err, VF_ECONFIG, "%s:%d: expected a single YAML document", name, next_line);
        goto fail;
    }
    goto out;
fail:
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
    if (cli_path)
        return config_load(cli_path, err);
    const char *env = getenv("VIRTFLOW_CONFIG");
    if (env && *env)
        return config_load(env, err);
    vf_config *config = config_defaults();
    if (!config)
        vf_error_set(err, VF_ENOMEM, "built-in configuration: out of memory");
    return config;
}

void config_free(vf_config *c)
{
    if (!c)
        return;
    free(c->path);
    free(c->worker.http_listen);
    free(c->relay.http_listen);
    free_strings(c->amqp.urls, c->amqp.n_urls);
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
    free(c->retry.delays_s);
    for (size_t i = 0; i < c->relay.n_receivers; i++)
        receiver_free(&c->relay.receivers[i]);
    free(c->relay.receivers);
    free(c->relay.schedule_s);
    free_strings(c->relay.trusted_publishers, c->relay.n_trusted_publishers);
    free(c->spare.name_pattern);
    free(c->spare.provisioner.type);
    free(c->spare.provisioner.url);
    free(c->spare.provisioner.project);
    free(c->spare.provisioner.ref);
    free(c->spare.provisioner.token_file);
    free_strings(c->spare.provisioner.command, c->spare.provisioner.n_command);
    free(c->spare.readiness.type);
    free(c->spare.readiness.api_url);
    free(c->spare.readiness.token_file);
    free(c->spare.readiness.ca_file);
    free(c->spare.provisioner.api_token_file);
    free(c->spare.release_kubernetes);
    clusters_free(c);
    free(c);
}

/* The user a URL logs in as, as amqp_link_connect parses it. */
static bool url_user_is(const char *url, const char *user)
{
    char copy[CONFIG_URL_COPY_MAX];
    if (snprintf(copy, sizeof copy, "%s", url) >= (int)sizeof copy)
        return false;
    struct amqp_connection_info info;
    bool same = amqp_parse_url(copy, &info) == AMQP_STATUS_OK && strcmp(info.user, user) == 0;
    explicit_bzero(copy, sizeof copy); /* it held a password */
    return same;
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
