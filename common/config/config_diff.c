/* config_diff: which keys differ between two loaded configs, walked along
 * the key table (config_keys.c), so a key added to the table is compared
 * without code here. The programs use it on SIGHUP to log, one line per
 * changed key, whether they applied it or it takes a restart. */
#include "config_internal.h"

#include <string.h>

static bool strings_equal(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool string_lists_equal(char *const *a, size_t n_a, char *const *b, size_t n_b)
{
    if (n_a != n_b)
        return false;
    for (size_t i = 0; i < n_a; i++)
        if (!strings_equal(a[i], b[i]))
            return false;
    return true;
}

#define SLOT(base, offset, type) (*(type const *)((const char *)(base) + (offset)))

static bool value_equal(const field *f, const void *a, const void *b)
{
    switch (f->type) {
    case F_STRING:
    case F_PATH:
        return strings_equal(SLOT(a, f->offset, char *), SLOT(b, f->offset, char *));
    case F_INT:
        return SLOT(a, f->offset, int) == SLOT(b, f->offset, int);
    case F_INT64:
        return SLOT(a, f->offset, int64_t) == SLOT(b, f->offset, int64_t);
    case F_NUMBER:
        return SLOT(a, f->offset, double) == SLOT(b, f->offset, double) &&
               (!f->has_flag || SLOT(a, f->flag_offset, bool) == SLOT(b, f->flag_offset, bool));
    case F_BOOL:
        return SLOT(a, f->offset, bool) == SLOT(b, f->offset, bool);
    case F_ENUM:
        if (f->store == STORE_STRING)
            return strings_equal(SLOT(a, f->offset, char *), SLOT(b, f->offset, char *));
        if (f->store == STORE_BOOL)
            return SLOT(a, f->offset, bool) == SLOT(b, f->offset, bool);
        return SLOT(a, f->offset, int) == SLOT(b, f->offset, int);
    case F_STRING_LIST:
    case F_PATH_LIST:
        return string_lists_equal(SLOT(a, f->offset, char **), SLOT(a, f->count_offset, size_t),
                                  SLOT(b, f->offset, char **), SLOT(b, f->count_offset, size_t));
    case F_INT_LIST: {
        size_t n = SLOT(a, f->count_offset, size_t);
        if (n != SLOT(b, f->count_offset, size_t))
            return false;
        const int *x = SLOT(a, f->offset, int *), *y = SLOT(b, f->offset, int *);
        return n == 0 || memcmp(x, y, n * sizeof *x) == 0;
    }
    case F_SECTION:
        return config_fields_equal(f->children, a, b);
    case F_CUSTOM:
        if (f->equal)
            return f->equal(f, a, b);
        if (f->custom == set_duration)
            return SLOT(a, f->offset, int64_t) == SLOT(b, f->offset, int64_t);
        /* A custom key nobody taught to compare: say it changed rather than
         * miss a change. */
        return false;
    }
    return false;
}

bool config_fields_equal(const field *fields, const void *a, const void *b)
{
    for (const field *f = fields; f->key; f++)
        if (!value_equal(f, a, b))
            return false;
    return true;
}

unsigned config_field_reloads(const field *f, unsigned inherited)
{
    if (f->reloads & CONFIG_RELOADS_NEVER)
        return 0;
    return f->reloads ? f->reloads : inherited;
}

typedef struct differ {
    const vf_config *before, *after;
    unsigned program;
    config_diff_fn fn;
    void *user;
    size_t changed;
} differ;

static void diff_fields(differ *d, const field *fields, const char *path, unsigned inherited)
{
    for (const field *f = fields; f->key; f++) {
        char key_path[PATH_TEXT];
        config_child_path(key_path, sizeof key_path, path, f->key);
        unsigned reloads = config_field_reloads(f, inherited);
        if (f->type == F_SECTION) {
            diff_fields(d, f->children, key_path, reloads);
            continue;
        }
        if (value_equal(f, d->before, d->after))
            continue;
        d->changed++;
        if (d->fn)
            d->fn(key_path, (reloads & d->program) != 0, d->user);
    }
}

size_t config_diff(const vf_config *before, const vf_config *after, unsigned program,
                   config_diff_fn fn, void *user)
{
    differ d = {.before = before, .after = after, .program = program, .fn = fn, .user = user};
    diff_fields(&d, config_top_fields, "", 0);
    return d.changed;
}
