/* yaml_json: YAML 1.2 core-schema resolution, JSON input, and errors with lines. */
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

int main(void)
{
    test_scalars_resolve_by_core_schema();
    test_json_is_read_as_yaml();
    test_empty_document_is_null();
    test_errors_name_the_line();
    test_nesting_is_capped();
    test_file_errors_name_the_file();
    return test_summary();
}
