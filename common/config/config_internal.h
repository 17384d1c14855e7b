/* config_internal: what the parts of the configuration loader share, and
 * no one else. config_walk.c walks the YAML document along a table of fields
 * (and parses scalars, durations, paths); config_keys.c is that table, every
 * key with its type and bounds, and the sections whose shape needs code
 * (plugins, receivers, headers); config_checks.c checks values and sections
 * after the walk; config.c is the public API (defaults, load, free). */
#ifndef VF_CONFIG_INTERNAL_H
#define VF_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "config.h"

/* A config file is a few kilobytes; anything far larger is a mistake. */
#define CONFIG_MAX_BYTES (1024 * 1024)
#define PATH_TEXT 160

typedef struct loader {
    yaml_document_t *doc;
    const char *name;     /* file name as the caller gave it, for messages */
    const char *base_dir; /* "" or a directory ending in '/' for relative paths */
    vf_error *err;
    /* The VIRTFLOW_* overrides being applied (config_env.c), NULL for a file:
     * errors then name the variable instead of a line. */
    const struct config_env_applied *env;
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
/* F_CUSTOM: whether the values `f` describes are the same in two configs (or
 * two items), for config_diff. */
typedef bool (*field_equal)(const field *f, const void *a, const void *b);

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
    field_equal equal;     /* F_CUSTOM (but durations): compares, for config_diff */
    /* Which programs apply a change of this key on SIGHUP (CONFIG_RELOADS_*
     * of config.h); 0: as the enclosing section says; CONFIG_RELOADS_NEVER:
     * a restart, whatever the section says. */
    unsigned reloads;

    /* The reference, docs/configuration.md, is written from these
     * (config_reference.c); the loader does not read them. */
    const char *doc;           /* what the key means: every key that is not a section has one */
    const char *default_text;  /* the default as YAML, where the defaults cannot show it */
    const char *type_text;     /* F_CUSTOM: what the value is */
    const field *items;        /* F_CUSTOM lists and maps of sections: one item's fields */
    const char *item_path;     /* how an item shows in a key path: "[]" or ".NAME" */
    const void *item_defaults; /* an item holding the defaults, read only; NULL: all zero */
};

/* Longest amqp.urls entry whose user name is compared, bytes (a longer one
 * trusts nobody by default). */
#define CONFIG_URL_COPY_MAX 4096

/* ---- config_walk.c: errors, scalars, the walker, durations ---- */
void config_mask_url(const char *url, char *out, size_t size);
int config_fail_child(loader *ld, const yaml_node_t *node, const char *path, const char *key,
                      const char *what);
const char *config_scalar(const yaml_node_t *node);
int config_fail(loader *ld, const yaml_node_t *node, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
yaml_node_t *config_key_node(loader *ld, yaml_node_t *map, const char *key);
void config_child_path(char *out, size_t size, const char *path, const char *key);
int config_node_line(const yaml_node_t *node);
bool config_is_null(const yaml_node_t *node);
yaml_node_t *config_node_at(loader *ld, int index);
/* F_CUSTOM for durations ("90s", "45m", "12h", "30d"); named as the table names it. */
int set_duration(loader *ld, yaml_node_t *node, void *base, const char *path, const field *f);
int config_fail_nomem(loader *ld);
void config_free_strings(char **v, size_t n);
int config_walk_mapping(loader *ld, yaml_node_t *map, const field *fields, void *base,
                        const char *path);
char *config_resolve_path(loader *ld, const char *value);
void config_item_path_at(char *out, size_t size, const char *path, size_t index);
int config_get_string(loader *ld, yaml_node_t *node, const char *path, const char **out);
int config_mapping_key(loader *ld, yaml_node_t *map, yaml_node_pair_t *pair, const char *path,
                       yaml_node_t **key_out, char *key_path, size_t key_path_size);
/* One entry of a named mapping: `item` (zeroed) of `name` (borrowed), whose
 * value is `value` (NULL when null or absent). Returns 0, or -1 failed. */
typedef int (*config_named_fn)(loader *ld, void *item, const char *name, yaml_node_t *key,
                               const char *key_path, yaml_node_t *value);
/* A mapping of NAME -> entry (scheduler.profiles, spare.clusters,
 * worker.headroom_shapes): each name 1..63 characters of [A-Za-z0-9._-] (a
 * label value, a word in a message: "a <what> name is ..."), no repeats.
 * *items becomes n zeroed entries of item_size with *count set at once
 * (also when it fails: the caller keeps them, they are safe to free); `fn`
 * fills each. */
int config_walk_named(loader *ld, yaml_node_t *map, const char *path, const char *what,
                      size_t item_size, void **items, size_t *count, config_named_fn fn);

/* ---- config_checks.c: value and cross-field checks ----
 * Named as the key table has always named them (no config_ prefix), so that
 * a key added to the table on another branch still compiles. */
int check_user_name(loader *ld, yaml_node_t *node, const char *value, const char *path);
int check_store_url(loader *ld, yaml_node_t *node, const char *value, const char *path);
int check_inventory(loader *ld, yaml_node_t *map, void *base, const char *path);
int check_store(loader *ld, yaml_node_t *map, void *base, const char *path);
/* api: tls_cert_file and tls_key_file come together. */
int check_api(loader *ld, yaml_node_t *map, void *base, const char *path);
int check_scheduler(loader *ld, yaml_node_t *map, void *base, const char *path);
int check_provisioner(loader *ld, yaml_node_t *map, void *base, const char *path);
int check_amqp_url(loader *ld, yaml_node_t *node, const char *value, const char *path);
int check_env_name(loader *ld, yaml_node_t *node, const char *value, const char *path);
int check_receiver_name(loader *ld, yaml_node_t *node, const char *value, const char *path);
int check_http_url(loader *ld, yaml_node_t *node, const char *value, const char *path);
int check_nats_url(loader *ld, yaml_node_t *node, const char *value, const char *path);
int check_host_name(loader *ld, yaml_node_t *node, const char *value, const char *path);
int check_address_range(loader *ld, yaml_node_t *node, const char *value, const char *path);
int check_readiness(loader *ld, yaml_node_t *map, void *base, const char *path);
int check_listen(loader *ld, yaml_node_t *node, const char *value, const char *path);
/* check_listen for an address that cannot be switched off (api.listen). */
int check_listen_required(loader *ld, yaml_node_t *node, const char *value, const char *path);

/* ---- config_env.c: VIRTFLOW_* overrides ---- */
/* The variables one config_apply_environment call applies, for messages. */
typedef struct config_env_applied {
    char **names; /* "VIRTFLOW_AMQP_URLS" */
    char **keys;  /* "amqp.urls" */
    size_t n;
} config_env_applied;
/* "file:line: " or, for the environment, "VIRTFLOW_X: " naming the variable
 * of `path` (or every variable applied, when `path` is not one of them). */
void config_where(const loader *ld, const yaml_node_t *node, const char *path, char *out,
                  size_t size);

/* ---- config_keys.c: the key table ---- */
/* Every top-level key: the table the walker starts from. */
extern const field config_top_fields[];
/* scheduler.plugins: {filters,scores,vmids}: the shape scheduler.plugin_config's file has too. */
extern const field config_plugin_kinds[];
/* scheduler.profiles.NAME.plugins: the same shape, kept in the profile. */
extern const field config_profile_plugin_kinds[];
void config_profiles_free(vf_config *c);
void config_priority_classes_free(vf_config *c);
void config_receiver_free(config_receiver *r);

/* ---- config.c ---- */
/* The user `url` logs in as (amqp.urls), into user[size]; false when the
 * URL cannot be parsed. */
bool config_url_user(const char *url, char *user, size_t size);

/* ---- config_diff.c ---- */
/* Every key of `fields` the same in a and b (two items of one list). */
bool config_fields_equal(const field *fields, const void *a, const void *b);
/* The programs that reload `f` (CONFIG_RELOADS_* bits) given its section's. */
unsigned config_field_reloads(const field *f, unsigned inherited);

/* ---- config_walk.c, for the reference ---- */
/* "an integer in 1..65535", "a number > 0": the bounds `f` checks. */
void config_describe_range(const field *f, bool integer, char *out, size_t size);
void config_clusters_free(vf_config *c);
void config_shapes_free(vf_config *c);

#endif
