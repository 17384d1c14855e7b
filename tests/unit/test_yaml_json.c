/* yaml_json: YAML 1.2 core-schema resolution, JSON input, and errors with lines. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "yaml_json.h"

static json_t *load(const char *text, vf_error *err)
{
    vf_error_init(err);
    return yaml_json_load(text, strlen(text), err);
}

static void test_scalars_resolve_by_core_schema(void)
{
    vf_error err;
    json_t *doc = load("a: ~\n"
                       "b:\n"
                       "c: null\n"
                       "d: true\n"
                       "e: False\n"
                       "f: -42\n"
                       "g: 0x1F\n"
                       "h: 0o17\n"
                       "i: 2.5\n"
                       "j: -1e3\n"
                       "k: yes\n"
                       "l: \"123\"\n"
                       "m: '0.3'\n"
                       "n: bm-001\n"
                       "o: !!str 77\n"
                       "p: 1.2.3\n"
                       "q: |\n  line\n",
                       &err);
    CHECKF(doc != NULL, "%s", err.text);
    if (!doc)
        return;
    CHECK(json_is_null(json_object_get(doc, "a")));
    CHECK(json_is_null(json_object_get(doc, "b")));
    CHECK(json_is_null(json_object_get(doc, "c")));
    CHECK(json_is_true(json_object_get(doc, "d")));
    CHECK(json_is_false(json_object_get(doc, "e")));
    CHECK(json_is_integer(json_object_get(doc, "f")) &&
          json_integer_value(json_object_get(doc, "f")) == -42);
    CHECK(json_integer_value(json_object_get(doc, "g")) == 31);
    CHECK(json_integer_value(json_object_get(doc, "h")) == 15);
    CHECK(json_is_real(json_object_get(doc, "i")) &&
          json_real_value(json_object_get(doc, "i")) == 2.5);
    CHECK(json_is_real(json_object_get(doc, "j")) &&
          json_real_value(json_object_get(doc, "j")) == -1000.0);
    /* YAML 1.1 booleans are text under 1.2. */
    CHECK_STR(json_string_value(json_object_get(doc, "k")), "yes");
    /* Quoting keeps numbers as text. */
    CHECK_STR(json_string_value(json_object_get(doc, "l")), "123");
    CHECK_STR(json_string_value(json_object_get(doc, "m")), "0.3");
    CHECK_STR(json_string_value(json_object_get(doc, "n")), "bm-001");
    CHECK_STR(json_string_value(json_object_get(doc, "o")), "77");
    CHECK_STR(json_string_value(json_object_get(doc, "p")), "1.2.3");
    CHECK_STR(json_string_value(json_object_get(doc, "q")), "line\n");
    json_decref(doc);
}

static void test_json_is_read_as_yaml(void)
{
    vf_error err;
    json_t *doc = load("[{\"name\": \"bm-1\", \"cpu\": 8, \"usage\": 0.25, \"tags\": [], "
                       "\"on\": true, \"x\": null}]",
                       &err);
    CHECKF(doc != NULL, "%s", err.text);
    if (!doc)
        return;
    json_t *first = json_array_get(doc, 0);
    CHECK(json_array_size(doc) == 1);
    CHECK_STR(json_string_value(json_object_get(first, "name")), "bm-1");
    CHECK(json_integer_value(json_object_get(first, "cpu")) == 8);
    CHECK(json_real_value(json_object_get(first, "usage")) == 0.25);
    CHECK(json_is_array(json_object_get(first, "tags")));
    CHECK(json_is_true(json_object_get(first, "on")));
    CHECK(json_is_null(json_object_get(first, "x")));
    json_decref(doc);
}

static void test_empty_document_is_null(void)
{
    vf_error err;
    json_t *doc = load("", &err);
    CHECK(json_is_null(doc));
    json_decref(doc);
    doc = load("# only a comment\n", &err);
    CHECK(json_is_null(doc));
    json_decref(doc);
}

static void expect_error(const char *text, const char *want)
{
    vf_error err;
    json_t *doc = load(text, &err);
    CHECKF(doc == NULL, "accepted: %s", text);
    CHECK(err.code == VF_EINVAL);
    CHECK_CONTAINS(err.text, want);
    json_decref(doc);
}

static void test_errors_name_the_line(void)
{
    expect_error("a: 1\nb: [1, 2\nc: 3\n", "line ");
    expect_error("a: 1\nb: 2\na: 3\n", "line 3: duplicate key \"a\"");
    expect_error("base: &b {cpu: 1}\nother: *b\n", "line 2: aliases (*b) are not supported");
    expect_error("a: .inf\n", "line 1: .inf: infinity and NaN are not supported");
    expect_error("a: 99999999999999999999\n", "line 1: 99999999999999999999: integer out of range");
    expect_error("a: 1\n---\nb: 2\n", "line 2: only one YAML document is allowed");
    expect_error("? [a, b]\n: 1\n", "line 1: mapping keys must be plain text");
    expect_error("key: \"unterminated\n", "line 1");
}

static void test_nesting_is_capped(void)
{
    char deep[256];
    size_t n = 0;
    for (int i = 0; i < YAML_JSON_MAX_DEPTH + 1; i++)
        deep[n++] = '[';
    for (int i = 0; i < YAML_JSON_MAX_DEPTH + 1; i++)
        deep[n++] = ']';
    deep[n] = '\0';
    expect_error(deep, "nested deeper than 64 levels");

    /* Exactly the limit is fine. */
    n = 0;
    for (int i = 0; i < YAML_JSON_MAX_DEPTH; i++)
        deep[n++] = '[';
    for (int i = 0; i < YAML_JSON_MAX_DEPTH; i++)
        deep[n++] = ']';
    deep[n] = '\0';
    vf_error err;
    json_t *doc = load(deep, &err);
    CHECKF(doc != NULL, "%s", err.text);
    json_decref(doc);
}

static void test_file_errors_name_the_file(void)
{
    vf_error err;
    vf_error_init(&err);
    json_t *doc = yaml_json_load_file("fixtures/inventory/does-not-exist.yaml", &err);
    CHECK(doc == NULL);
    CHECK(err.code == VF_EIO);
    CHECK_CONTAINS(err.text, "fixtures/inventory/does-not-exist.yaml: cannot open");

    char path[] = "/tmp/vf-yaml-json-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "w");
    fputs("hosts:\n  - name: a\n    cpu: [\n", f);
    fclose(f);
    vf_error_init(&err);
    doc = yaml_json_load_file(path, &err);
    CHECK(doc == NULL);
    CHECK_CONTAINS(err.text, path);
    CHECK_CONTAINS(err.text, ": line ");
    json_decref(doc);
    remove(path);
}

/* Live allocations through jansson: a tree the loader kept would show here. */
static long live_json_blocks;

static void *counting_malloc(size_t size)
{
    void *block = malloc(size);
    if (block)
        live_json_blocks++;
    return block;
}

static void counting_free(void *block)
{
    if (block)
        live_json_blocks--;
    free(block);
}

typedef struct seen {
    size_t calls;
    size_t fail_at; /* index whose item is rejected; SIZE_MAX: none */
    long min_live, max_live;
    bool in_order;
} seen;

static int note_item(const json_t *item, size_t index, void *context, vf_error *err)
{
    seen *s = context;
    if (s->calls == 0 || live_json_blocks < s->min_live)
        s->min_live = live_json_blocks;
    if (s->calls == 0 || live_json_blocks > s->max_live)
        s->max_live = live_json_blocks;
    if (index != s->calls || json_integer_value(json_object_get(item, "n")) != (json_int_t)index)
        s->in_order = false;
    s->calls++;
    if (index == s->fail_at) {
        vf_error_set(err, VF_EINVAL, "item %zu: rejected", index);
        return -1;
    }
    return 0;
}

/* 2,000 hosts-like items: each is handed over in order and freed before the
 * next is read, so what is alive while one is looked at does not grow with
 * the items already read (a loaded tree would add a dozen blocks each). */
static void test_each_frees_every_item_before_the_next(void)
{
    enum { N = 2000 };
    size_t size = (size_t)N * 80 + 16, used = 0;
    char *text = malloc(size);
    CHECK(text != NULL);
    if (!text)
        return;
    used += (size_t)snprintf(text + used, size - used, "[");
    for (int i = 0; i < N; i++)
        used += (size_t)snprintf(text + used, size - used,
                                 "%s{\"n\": %d, \"name\": \"bm-%04d\", \"vmids\": [100, 101]}",
                                 i ? ", " : "", i, i);
    snprintf(text + used, size - used, "]");

    json_set_alloc_funcs(counting_malloc, counting_free);
    seen s = {.fail_at = SIZE_MAX, .in_order = true};
    vf_error err;
    vf_error_init(&err);
    json_t *doc = yaml_json_load_each(text, strlen(text), "nodes", note_item, &s, &err);
    CHECKF(doc != NULL, "%s", err.text);
    CHECK(s.calls == N);
    CHECK(s.in_order);
    CHECKF(s.max_live - s.min_live < 16, "live jansson blocks grew from %ld to %ld while streaming",
           s.min_live, s.max_live);
    CHECK(json_is_array(doc) && json_array_size(doc) == 0);
    json_decref(doc);
    CHECK(live_json_blocks == 0);
    json_set_alloc_funcs(malloc, free);
    free(text);
}

/* In a mapping only the top-level `key` streams; the rest loads as usual. */
static void test_each_streams_only_the_named_list(void)
{
    const char *text = "vmids: [500, 501]\n"
                       "nodes:\n"
                       "  - {n: 0, nodes: [7]}\n"
                       "  - {n: 1}\n"
                       "other: {nodes: [1, 2]}\n";
    seen s = {.fail_at = SIZE_MAX, .in_order = true};
    vf_error err;
    vf_error_init(&err);
    json_t *doc = yaml_json_load_each(text, strlen(text), "nodes", note_item, &s, &err);
    CHECKF(doc != NULL, "%s", err.text);
    if (!doc)
        return;
    CHECK(s.calls == 2);
    CHECK(s.in_order);
    CHECK(json_array_size(json_object_get(doc, "nodes")) == 0);
    CHECK(json_array_size(json_object_get(doc, "vmids")) == 2);
    CHECK(json_array_size(json_object_get(json_object_get(doc, "other"), "nodes")) == 2);
    json_decref(doc);

    /* Without a key, a mapping loads whole and nothing is handed over. */
    s = (seen){.fail_at = SIZE_MAX, .in_order = true};
    doc = yaml_json_load_each(text, strlen(text), NULL, note_item, &s, &err);
    CHECK(doc != NULL);
    CHECK(s.calls == 0);
    CHECK(json_array_size(json_object_get(doc, "nodes")) == 2);
    json_decref(doc);
}

/* The first rejected item is the error, and later items are not handed
 * over; but an error in the text wins even when it comes later, as it did
 * when the whole tree was loaded before any item was looked at. */
static void test_each_errors(void)
{
    const char *text = "- {n: 0}\n- {n: 1}\n- {n: 2}\n- {n: 3}\n";
    seen s = {.fail_at = 1, .in_order = true};
    vf_error err;
    vf_error_init(&err);
    json_t *doc = yaml_json_load_each(text, strlen(text), "nodes", note_item, &s, &err);
    CHECK(doc == NULL);
    CHECK(s.calls == 2);
    CHECK(err.code == VF_EINVAL);
    CHECK_STR(err.text, "item 1: rejected");

    const char *broken_later = "- {n: 0}\n- {n: 1}\n- {n: 2}\n- {n: [\n";
    s = (seen){.fail_at = 1, .in_order = true};
    vf_error_init(&err);
    doc = yaml_json_load_each(broken_later, strlen(broken_later), "nodes", note_item, &s, &err);
    CHECK(doc == NULL);
    CHECK(s.calls == 2);
    CHECK_CONTAINS(err.text, "line 5: ");

    char path[] = "/tmp/vf-yaml-json-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    s = (seen){.fail_at = 3, .in_order = true};
    vf_error_init(&err);
    doc = yaml_json_load_file_each(path, "nodes", note_item, &s, &err);
    CHECK(doc == NULL);
    CHECK(s.calls == 4);
    char want[128];
    snprintf(want, sizeof want, "%s: item 3: rejected", path);
    CHECK_STR(err.text, want);
    remove(path);
}

int main(void)
{
    test_scalars_resolve_by_core_schema();
    test_json_is_read_as_yaml();
    test_empty_document_is_null();
    test_errors_name_the_line();
    test_nesting_is_capped();
    test_file_errors_name_the_file();
    test_each_frees_every_item_before_the_next();
    test_each_streams_only_the_named_list();
    test_each_errors();
    return test_summary();
}
