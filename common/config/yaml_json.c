#include "yaml_json.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

typedef struct loader {
    yaml_parser_t parser;
    vf_error *err;
    /* Streaming (yaml_json_load_each): the sequence whose items go to `each`. */
    const char *each_key;
    yaml_json_each_fn each;
    void *each_context;
    size_t n_items;    /* items handed over (or skipped after a failure) so far */
    bool each_failed;  /* `each` failed: later items are parsed, not handed over */
    vf_error each_err; /* its error, reported once the whole text has parsed */
} loader;

static unsigned long event_line(const yaml_event_t *event)
{
    return (unsigned long)event->start_mark.line + 1;
}

static int next_event(loader *l, yaml_event_t *event)
{
    if (yaml_parser_parse(&l->parser, event))
        return 0;
    const yaml_parser_t *p = &l->parser;
    if (p->error == YAML_MEMORY_ERROR) {
        vf_error_set(l->err, VF_ENOMEM, "out of memory parsing YAML");
    } else if (p->context) {
        vf_error_set(l->err, VF_EINVAL, "line %lu: %s (%s, line %lu)",
                     (unsigned long)p->problem_mark.line + 1,
                     p->problem ? p->problem : "syntax error", p->context,
                     (unsigned long)p->context_mark.line + 1);
    } else {
        vf_error_set(l->err, VF_EINVAL, "line %lu: %s", (unsigned long)p->problem_mark.line + 1,
                     p->problem ? p->problem : "syntax error");
    }
    return -1;
}

static bool all_digits(const char *s, const char *digits)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!strchr(digits, *s))
            return false;
    return true;
}

/* YAML 1.2 core schema float: [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE] [-+]? [0-9]+ )? */
static bool is_core_float(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    size_t int_digits = strspn(s, "0123456789");
    s += int_digits;
    size_t frac_digits = 0;
    if (*s == '.') {
        s++;
        frac_digits = strspn(s, "0123456789");
        s += frac_digits;
    }
    if (int_digits == 0 && frac_digits == 0)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        size_t exp_digits = strspn(s, "0123456789");
        if (exp_digits == 0)
            return false;
        s += exp_digits;
    }
    return *s == '\0';
}

static bool is_one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (strcmp(s, *words) == 0)
            return true;
    return false;
}

static json_t *resolve_plain(loader *l, const char *s, size_t len, unsigned long line)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    static const char *const infinities[] = {".inf",  ".Inf",  ".INF",  "+.inf", "+.Inf",
                                             "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
                                             ".NaN",  ".NAN",  NULL};

    if (strlen(s) != len) /* an embedded NUL cannot be a number or keyword */
        return json_stringn(s, len);
    if (is_one_of(s, nulls))
        return json_null();
    if (is_one_of(s, trues))
        return json_true();
    if (is_one_of(s, falses))
        return json_false();
    if (is_one_of(s, infinities)) {
        vf_error_set(l->err, VF_EINVAL, "line %lu: %s: infinity and NaN are not supported", line,
                     s);
        return NULL;
    }

    const char *digits = s;
    int base = 0;
    if (strncmp(s, "0o", 2) == 0 && all_digits(s + 2, "01234567")) {
        digits = s + 2;
        base = 8;
    } else if (strncmp(s, "0x", 2) == 0 && all_digits(s + 2, "0123456789abcdefABCDEF")) {
        digits = s + 2;
        base = 16;
    } else if (all_digits((*s == '-' || *s == '+') ? s + 1 : s, "0123456789")) {
        base = 10;
    }
    if (base) {
        errno = 0;
        char *end = NULL;
        long long value = strtoll(digits, &end, base);
        int saved = errno;
        if (saved == ERANGE || (end && *end)) {
            vf_error_set(l->err, VF_EINVAL, "line %lu: %s: integer out of range", line, s);
            return NULL;
        }
        return json_integer((json_int_t)value);
    }

    if (is_core_float(s)) {
        errno = 0;
        double value = strtod(s, NULL);
        if (errno == ERANGE && !isfinite(value)) {
            vf_error_set(l->err, VF_EINVAL, "line %lu: %s: number out of range", line, s);
            return NULL;
        }
        return json_real(value);
    }
    return json_stringn(s, len);
}

static json_t *load_scalar(loader *l, const yaml_event_t *event)
{
    const char *value = (const char *)event->data.scalar.value;
    size_t len = event->data.scalar.length;
    const char *tag = (const char *)event->data.scalar.tag;
    bool forced_string =
        event->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
        (tag && (strcmp(tag, "tag:yaml.org,2002:str") == 0 || strcmp(tag, "!") == 0));
    json_t *json =
        forced_string ? json_stringn(value, len) : resolve_plain(l, value, len, event_line(event));
    if (!json && !vf_error_is_set(l->err))
        vf_error_set(l->err, VF_EINVAL, "line %lu: not valid UTF-8 text", event_line(event));
    return json;
}

static json_t *load_node(loader *l, yaml_event_t *event, int depth, bool streamed);

/* A streamed sequence comes back empty: its items went to l->each one at a
 * time and were freed, so the whole list never exists as a tree. */
static json_t *load_sequence(loader *l, unsigned long line, int depth, bool streamed)
{
    json_t *array = json_array();
    if (!array) {
        vf_error_set(l->err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    for (;;) {
        yaml_event_t event;
        if (next_event(l, &event) < 0)
            goto fail;
        if (event.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&event);
            return array;
        }
        json_t *item = load_node(l, &event, depth + 1, false);
        if (!item) {
            vf_error_set(l->err, VF_ENOMEM, "line %lu: out of memory", line);
            goto fail;
        }
        if (streamed) {
            if (!l->each_failed && l->each(item, l->n_items, l->each_context, &l->each_err) < 0)
                l->each_failed = true;
            l->n_items++;
            json_decref(item);
        } else if (json_array_append_new(array, item) < 0) {
            vf_error_set(l->err, VF_ENOMEM, "line %lu: out of memory", line);
            goto fail;
        }
    }
fail:
    json_decref(array);
    return NULL;
}

static json_t *load_mapping(loader *l, unsigned long line, int depth)
{
    json_t *object = json_object();
    char *key = NULL;
    if (!object) {
        vf_error_set(l->err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    for (;;) {
        yaml_event_t event;
        if (next_event(l, &event) < 0)
            goto fail;
        if (event.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&event);
            return object;
        }
        unsigned long key_line = event_line(&event);
        if (event.type != YAML_SCALAR_EVENT) {
            vf_error_set(l->err, VF_EINVAL, "line %lu: mapping keys must be plain text", key_line);
            yaml_event_delete(&event);
            goto fail;
        }
        size_t key_len = event.data.scalar.length;
        key = strndup((const char *)event.data.scalar.value, key_len);
        yaml_event_delete(&event);
        if (!key) {
            vf_error_set(l->err, VF_ENOMEM, "out of memory");
            goto fail;
        }
        if (strlen(key) != key_len) {
            vf_error_set(l->err, VF_EINVAL, "line %lu: a key contains a NUL character", key_line);
            goto fail;
        }
        if (json_object_get(object, key)) {
            vf_error_set(l->err, VF_EINVAL, "line %lu: duplicate key \"%.64s\"", key_line, key);
            goto fail;
        }
        if (next_event(l, &event) < 0)
            goto fail;
        bool streamed = depth == 0 && l->each_key && strcmp(key, l->each_key) == 0;
        json_t *value = load_node(l, &event, depth + 1, streamed);
        if (!value)
            goto fail;
        if (json_object_set_new(object, key, value) < 0) {
            vf_error_set(l->err, VF_EINVAL, "line %lu: key is not valid UTF-8", key_line);
            goto fail;
        }
        free(key);
        key = NULL;
    }
fail:
    (void)line;
    free(key);
    json_decref(object);
    return NULL;
}

/* Takes ownership of `event` (a node's first event) and deletes it. When
 * `streamed` and the node is a sequence, its items go to l->each. */
static json_t *load_node(loader *l, yaml_event_t *event, int depth, bool streamed)
{
    unsigned long line = event_line(event);
    json_t *json = NULL;
    switch (event->type) {
    case YAML_SCALAR_EVENT:
        json = load_scalar(l, event);
        yaml_event_delete(event);
        return json;
    case YAML_ALIAS_EVENT:
        vf_error_set(l->err, VF_EINVAL, "line %lu: aliases (*%.64s) are not supported", line,
                     (const char *)event->data.alias.anchor);
        yaml_event_delete(event);
        return NULL;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool is_sequence = event->type == YAML_SEQUENCE_START_EVENT;
        yaml_event_delete(event);
        if (depth >= YAML_JSON_MAX_DEPTH) {
            vf_error_set(l->err, VF_EINVAL, "line %lu: nested deeper than %d levels", line,
                         YAML_JSON_MAX_DEPTH);
            return NULL;
        }
        return is_sequence ? load_sequence(l, line, depth, streamed && l->each)
                           : load_mapping(l, line, depth);
    }
    default:
        vf_error_set(l->err, VF_EINTERNAL, "line %lu: unexpected YAML event %d", line,
                     (int)event->type);
        yaml_event_delete(event);
        return NULL;
    }
}

static json_t *load_stream(loader *l)
{
    yaml_event_t event;
    json_t *root = NULL;
    if (next_event(l, &event) < 0) /* STREAM-START */
        return NULL;
    yaml_event_delete(&event);
    if (next_event(l, &event) < 0)
        return NULL;
    if (event.type == YAML_STREAM_END_EVENT) { /* nothing at all: an empty document */
        yaml_event_delete(&event);
        return json_null();
    }
    yaml_event_delete(&event); /* DOCUMENT-START */
    if (next_event(l, &event) < 0)
        return NULL;
    root = load_node(l, &event, 0, true);
    if (!root)
        return NULL;
    if (next_event(l, &event) < 0) /* DOCUMENT-END */
        goto fail;
    yaml_event_delete(&event);
    if (next_event(l, &event) < 0)
        goto fail;
    if (event.type != YAML_STREAM_END_EVENT) {
        vf_error_set(l->err, VF_EINVAL, "line %lu: only one YAML document is allowed",
                     event_line(&event));
        yaml_event_delete(&event);
        goto fail;
    }
    yaml_event_delete(&event);
    return root;
fail:
    json_decref(root);
    return NULL;
}

/* The text parsed without error, but `each` failed on an item: that is the
 * error, found after the text's own as it was when the whole tree was loaded
 * before the items were looked at. */
static json_t *each_outcome(loader *l, json_t *root)
{
    if (root && l->each_failed) {
        json_decref(root);
        if (vf_error_is_set(&l->each_err))
            vf_error_set(l->err, l->each_err.code, "%s", l->each_err.text);
        else
            vf_error_set(l->err, VF_EINTERNAL, "an item was rejected without a reason");
        return NULL;
    }
    return root;
}

json_t *yaml_json_load_each(const char *text, size_t len, const char *key, yaml_json_each_fn each,
                            void *context, vf_error *err)
{
    loader l = {.err = err, .each_key = key, .each = each, .each_context = context};
    vf_error_init(&l.each_err);
    if (!yaml_parser_initialize(&l.parser)) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&l.parser, (const unsigned char *)text, len);
    json_t *root = each_outcome(&l, load_stream(&l));
    yaml_parser_delete(&l.parser);
    return root;
}

json_t *yaml_json_load(const char *text, size_t len, vf_error *err)
{
    return yaml_json_load_each(text, len, NULL, NULL, NULL, err);
}

json_t *yaml_json_load_file(const char *path, vf_error *err)
{
    return yaml_json_load_file_each(path, NULL, NULL, NULL, err);
}

/* libyaml's read handler over a yaml_json_read_fn; `failed` tells a read
 * error from the text's own. */
typedef struct reader {
    yaml_json_read_fn read;
    void *context;
    bool failed;
} reader;

static int read_through(void *data, unsigned char *buffer, size_t size, size_t *size_read)
{
    reader *r = data;
    *size_read = 0;
    if (r->read(r->context, buffer, size, size_read) < 0 || *size_read > size) {
        r->failed = true;
        *size_read = 0;
        return 0;
    }
    return 1;
}

json_t *yaml_json_load_reader_each(yaml_json_read_fn read, void *read_context, const char *key,
                                   yaml_json_each_fn each, void *context, vf_error *err)
{
    loader l = {.err = err, .each_key = key, .each = each, .each_context = context};
    vf_error_init(&l.each_err);
    if (!yaml_parser_initialize(&l.parser)) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    reader r = {.read = read, .context = read_context};
    yaml_parser_set_input(&l.parser, read_through, &r);
    json_t *root = each_outcome(&l, load_stream(&l));
    if (!root && l.parser.error == YAML_READER_ERROR && r.failed)
        vf_error_set(err, VF_EIO, "cannot read");
    yaml_parser_delete(&l.parser);
    return root;
}

static int read_file(void *context, unsigned char *buffer, size_t size, size_t *got)
{
    FILE *file = context;
    *got = fread(buffer, 1, size, file);
    return *got < size && ferror(file) ? -1 : 0;
}

json_t *yaml_json_load_file_each(const char *path, const char *key, yaml_json_each_fn each,
                                 void *context, vf_error *err)
{
    FILE *file = fopen(path, "rb");
    if (!file) {
        int saved = errno;
        vf_error_set(err, VF_EIO, "%s: cannot open: %s", path, strerror(saved));
        return NULL;
    }
    json_t *root = yaml_json_load_reader_each(read_file, file, key, each, context, err);
    if (!root)
        vf_error_prefix(err, "%s", path);
    fclose(file);
    return root;
}
