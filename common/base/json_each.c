#include "json_each.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* jansson parses every value; this only walks the punctuation between the
 * items of the streamed array and the members of a top-level object. */
typedef struct reader {
    const char *text;
    size_t len;
    size_t pos; /* bytes consumed */
    int line;   /* of `pos`, from 1 */
    json_error_t *syntax;
    vf_error *err;
    const char *key;
    json_each_fn each;
    void *context;
    size_t n_items;
    bool each_failed;  /* later items are parsed, not handed over */
    vf_error each_err; /* reported once the whole text has parsed */
} reader;

/* A value's flags: any JSON value, stopping where it ends. */
#define VALUE_FLAGS (JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK)

static void skip_space(reader *r)
{
    while (r->pos < r->len) {
        char c = r->text[r->pos];
        if (c == '\n')
            r->line++;
        else if (c != ' ' && c != '\t' && c != '\r')
            return;
        r->pos++;
    }
}

static bool at(const reader *r, char c)
{
    return r->pos < r->len && r->text[r->pos] == c;
}

static void set_syntax(reader *r, int line, size_t position, const char *text)
{
    if (r->syntax) {
        memset(r->syntax, 0, sizeof *r->syntax);
        r->syntax->line = line;
        r->syntax->column = -1;
        r->syntax->position = (int)position;
        snprintf(r->syntax->source, sizeof r->syntax->source, "<buffer>");
        snprintf(r->syntax->text, sizeof r->syntax->text, "%s", text);
    }
    vf_error_set(r->err, VF_EINVAL, "line %d: %s", line, text);
}

/* An error in the punctuation at the current position. */
static void __attribute__((format(printf, 2, 3))) fail(reader *r, const char *fmt, ...)
{
    char text[JSON_ERROR_TEXT_LENGTH];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    set_syntax(r, r->line, r->pos, text);
}

/* One value at the current position; advances past it. */
static json_t *load_value(reader *r)
{
    json_error_t e;
    json_t *value = json_loadb(r->text + r->pos, r->len - r->pos, VALUE_FLAGS, &e);
    if (!value) {
        set_syntax(r, r->line + e.line - 1, r->pos + (size_t)e.position, e.text);
        return NULL;
    }
    size_t end = r->pos + (size_t)e.position;
    for (const char *p = r->text + r->pos; (p = memchr(p, '\n', (size_t)(r->text + end - p))); p++)
        r->line++;
    r->pos = end;
    return value;
}

/* The array at the current position ('['), item by item to r->each. */
static int stream_array(reader *r)
{
    r->pos++;
    skip_space(r);
    if (at(r, ']')) {
        r->pos++;
        return 0;
    }
    for (;;) {
        json_t *item = load_value(r);
        if (!item)
            return -1;
        if (!r->each_failed && r->each(item, r->n_items, r->context, &r->each_err) < 0)
            r->each_failed = true;
        r->n_items++;
        json_decref(item);
        skip_space(r);
        if (at(r, ',')) {
            r->pos++;
            skip_space(r);
            continue;
        }
        if (at(r, ']')) {
            r->pos++;
            return 0;
        }
        fail(r, "',' or ']' expected after an item of the list");
        return -1;
    }
}

/* The object at the current position ('{'), its `key` array streamed. */
static json_t *load_object(reader *r)
{
    json_t *object = json_object();
    json_t *name = NULL;
    if (!object) {
        vf_error_set(r->err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    r->pos++;
    skip_space(r);
    if (at(r, '}')) {
        r->pos++;
        return object;
    }
    for (;;) {
        if (!at(r, '"')) {
            fail(r, "string or '}' expected");
            goto fail;
        }
        if (!(name = load_value(r)))
            goto fail;
        const char *key = json_string_value(name);
        size_t key_len = json_string_length(name);
        skip_space(r);
        if (!at(r, ':')) {
            fail(r, "':' expected");
            goto fail;
        }
        r->pos++;
        skip_space(r);
        json_t *value = NULL;
        if (r->key && strlen(r->key) == key_len && memcmp(key, r->key, key_len) == 0 &&
            at(r, '[')) {
            if (json_object_getn(object, key, key_len)) {
                fail(r, "a second \"%s\" list", r->key);
                goto fail;
            }
            if (stream_array(r) < 0)
                goto fail;
            value = json_array();
        } else if (!(value = load_value(r))) {
            goto fail;
        }
        if (!value || json_object_setn_new(object, key, key_len, value) < 0) {
            vf_error_set(r->err, VF_ENOMEM, "out of memory");
            goto fail;
        }
        json_decref(name);
        name = NULL;
        skip_space(r);
        if (at(r, ',')) {
            r->pos++;
            skip_space(r);
            continue;
        }
        if (at(r, '}')) {
            r->pos++;
            return object;
        }
        fail(r, "',' or '}' expected");
        goto fail;
    }
fail:
    json_decref(name);
    json_decref(object);
    return NULL;
}

json_t *json_each_loadb(const char *text, size_t len, const char *key, json_each_fn each,
                        void *context, json_error_t *syntax, vf_error *err)
{
    reader r = {.text = text,
                .len = len,
                .line = 1,
                .syntax = syntax,
                .err = err,
                .key = key,
                .each = each,
                .context = context};
    vf_error_init(&r.each_err);
    if (syntax)
        memset(syntax, 0, sizeof *syntax);
    json_t *doc = NULL;
    skip_space(&r);
    if (at(&r, '[')) {
        if (stream_array(&r) < 0)
            return NULL;
        doc = json_array();
    } else if (at(&r, '{')) {
        doc = load_object(&r);
    } else {
        /* Neither: jansson says what is wrong, in its own words. */
        json_error_t e;
        json_t *whole = json_loadb(text, len, 0, &e);
        json_decref(whole);
        set_syntax(&r, e.line, (size_t)e.position, whole ? "'[' or '{' expected" : e.text);
        return NULL;
    }
    if (!doc) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    skip_space(&r);
    if (r.pos < len) {
        fail(&r, "end of file expected");
        json_decref(doc);
        return NULL;
    }
    if (r.each_failed) {
        json_decref(doc);
        if (vf_error_is_set(&r.each_err))
            vf_error_set(err, r.each_err.code, "%s", r.each_err.text);
        else
            vf_error_set(err, VF_EINTERNAL, "an item was rejected without a reason");
        return NULL;
    }
    return doc;
}
