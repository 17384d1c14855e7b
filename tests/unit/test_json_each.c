/* json_each: the streamed list's items one at a time, everything else as
 * json_loadb gives it, and errors that name the line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_each.h"
#include "testlib.h"

/* Live allocations through jansson: a tree kept while streaming shows here. */
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
    size_t fail_at; /* index of the item to reject; SIZE_MAX: none */
    long min_live, max_live;
    json_t *items; /* copies of what was handed over, when not NULL */
} seen;

static int note_item(const json_t *item, size_t index, void *context, vf_error *err)
{
    seen *s = context;
    if (s->calls == 0 || live_json_blocks < s->min_live)
        s->min_live = live_json_blocks;
    if (s->calls == 0 || live_json_blocks > s->max_live)
        s->max_live = live_json_blocks;
    if (s->items)
        json_array_append_new(s->items, json_deep_copy(item));
    s->calls++;
    if (index == s->fail_at) {
        vf_error_set(err, VF_EINVAL, "item %zu: rejected", index);
        return -1;
    }
    return 0;
}

static json_t *each_load(const char *text, seen *s, json_error_t *syntax, vf_error *err)
{
    vf_error_init(err);
    return json_each_loadb(text, strlen(text), "nodes", note_item, s, syntax, err);
}

/* Items of every kind, packed without spaces (a scalar right before ',' or
 * ']'), come out as json_loadb reads them; the rest of the object stays. */
static void test_items_and_rest_as_jansson_reads_them(void)
{
    const char *text = "{\"count\":2,\"nodes\":[1,-2.5,true,null,\"a,]\",[3,[]],{\"n\":{}}],"
                       "\"vmids\":[100,101],\"nested\":{\"nodes\":[9]}}";
    seen s = {.fail_at = SIZE_MAX, .items = json_array()};
    json_error_t syntax;
    vf_error err;
    json_t *doc = each_load(text, &s, &syntax, &err);
    CHECKF(doc != NULL, "%s", err.text);
    json_t *want = json_loads("[1,-2.5,true,null,\"a,]\",[3,[]],{\"n\":{}}]", 0, NULL);
    CHECK(json_equal(s.items, want));
    json_t *rest = json_loads("{\"count\":2,\"nodes\":[],\"vmids\":[100,101],"
                              "\"nested\":{\"nodes\":[9]}}",
                              0, NULL);
    CHECK(json_equal(doc, rest));
    json_decref(want);
    json_decref(rest);
    json_decref(doc);

    /* A top-level array streams; an empty one hands nothing over. */
    json_array_clear(s.items);
    s.calls = 0;
    doc = each_load(" [ 7 ,\n 8 ] \n", &s, &syntax, &err);
    CHECKF(doc != NULL && json_array_size(doc) == 0, "%s", err.text);
    CHECK(s.calls == 2 && json_integer_value(json_array_get(s.items, 1)) == 8);
    json_decref(doc);
    s.calls = 0;
    doc = each_load("{\"nodes\": []}", &s, &syntax, &err);
    CHECK(doc != NULL && s.calls == 0);
    json_decref(doc);
    json_decref(s.items);
}

/* 2,000 items: each is freed before the next is read. */
static void test_items_are_freed_one_by_one(void)
{
    enum { N = 2000 };
    size_t size = (size_t)N * 80 + 32, used = 0;
    char *text = malloc(size);
    CHECK(text != NULL);
    if (!text)
        return;
    used += (size_t)snprintf(text + used, size - used, "{\"nodes\": [");
    for (int i = 0; i < N; i++)
        used += (size_t)snprintf(text + used, size - used,
                                 "%s{\"name\": \"bm-%04d\", \"cpu\": 64, \"vmids\": [100, 101]}",
                                 i ? ",\n" : "", i);
    snprintf(text + used, size - used, "]}");

    json_set_alloc_funcs(counting_malloc, counting_free);
    seen s = {.fail_at = SIZE_MAX};
    json_error_t syntax;
    vf_error err;
    json_t *doc = each_load(text, &s, &syntax, &err);
    CHECKF(doc != NULL, "%s", err.text);
    CHECK(s.calls == N);
    CHECKF(s.max_live - s.min_live < 16, "live jansson blocks grew from %ld to %ld while streaming",
           s.min_live, s.max_live);
    json_decref(doc);
    CHECK(live_json_blocks == 0);
    json_set_alloc_funcs(malloc, free);
    free(text);
}

static void test_errors(void)
{
    static const struct {
        const char *text;
        int line;
        const char *contains;
    } cases[] = {
        {"garbage", 1, "'[' or '{' expected"},
        {"", 1, "expected"},
        {"[1,\n2,\n]", 3, "unexpected token"},
        {"[1,\n2\n3]", 3, "',' or ']' expected"},
        {"{\"nodes\": [1]\n\"x\": 1}", 2, "',' or '}' expected"},
        {"{\"nodes\" [1]}", 1, "':' expected"},
        {"{nodes: [1]}", 1, "string or '}' expected"},
        {"[{\"name\": \"a\"},\n{\"name\": \"b\"\n", 3, "end of file"},
        {"[1] [2]", 1, "end of file expected"},
        {"{\"nodes\": [1], \"nodes\": [2]}", 1, "a second \"nodes\" list"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        seen s = {.fail_at = SIZE_MAX};
        json_error_t syntax;
        vf_error err;
        json_t *doc = each_load(cases[i].text, &s, &syntax, &err);
        CHECKF(doc == NULL, "case %zu accepted", i);
        json_decref(doc);
        CHECK(err.code == VF_EINVAL);
        CHECKF(syntax.line == cases[i].line, "case %zu: line %d, expected %d (%s)", i, syntax.line,
               cases[i].line, syntax.text);
        CHECK_CONTAINS(syntax.text, cases[i].contains);
        char want[64];
        snprintf(want, sizeof want, "line %d: ", cases[i].line);
        CHECK_CONTAINS(err.text, want);
    }

    /* The first rejected item is the error, nothing after it is handed
     * over, and syntax stays empty ... */
    seen s = {.fail_at = 1};
    json_error_t syntax;
    vf_error err;
    json_t *doc = each_load("[{\"n\":0},{\"n\":1},{\"n\":2}]", &s, &syntax, &err);
    CHECK(doc == NULL);
    CHECK(s.calls == 2);
    CHECK_STR(err.text, "item 1: rejected");
    CHECK_STR(syntax.text, "");
    /* ... unless the text is broken further on: that wins. */
    s = (seen){.fail_at = 1};
    doc = each_load("[{\"n\":0},{\"n\":1},{\"n\":2},\n{\"n\":]", &s, &syntax, &err);
    CHECK(doc == NULL);
    CHECK(s.calls == 2);
    CHECK(syntax.line == 2);
    CHECK_CONTAINS(err.text, "line 2: ");
}

int main(void)
{
    test_items_and_rest_as_jansson_reads_them();
    test_items_are_freed_one_by_one();
    test_errors();
    return test_summary();
}
