/* json_util_dump: the text is jansson's compact, ordered dump with 15
 * significant digits, whether it fits the stack buffer or not. */
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "testlib.h"

/* {"pad":"xx…x","score":85.31,"weight":0.333333333333333} with the padding
 * chosen so the whole text is `len` bytes. */
static json_t *document_of_length(size_t len)
{
    const size_t fixed = strlen("{\"pad\":\"\",\"score\":85.31,\"weight\":0.333333333333333}");
    size_t pad_len = len > fixed ? len - fixed : 0;
    char *pad = malloc(pad_len + 1);
    if (!pad)
        return NULL;
    memset(pad, 'x', pad_len);
    pad[pad_len] = '\0';
    json_t *doc = json_pack("{s:s, s:f, s:f}", "pad", pad, "score", 85.31, "weight", 1.0 / 3.0);
    free(pad);
    return doc;
}

static void test_dump_around_the_stack_buffer(void)
{
    static const size_t lengths[] = {60, 1022, 1023, 1024, 1025, 70000};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        json_t *doc = document_of_length(lengths[i]);
        CHECK(doc != NULL);
        if (!doc)
            continue;
        char *got = json_util_dump(doc);
        char *want = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
        CHECK(got != NULL && want != NULL);
        if (got && want) {
            CHECKF(strlen(got) == lengths[i], "length %zu, expected %zu", strlen(got), lengths[i]);
            CHECK_STR(got, want);
        }
        free(got);
        free(want);
        json_decref(doc);
    }
    json_t *score = json_pack("{s:f}", "score", 85.31);
    char *text = json_util_dump(score);
    CHECK_STR(text, "{\"score\":85.31}");
    free(text);
    json_decref(score);
}

int main(void)
{
    test_dump_around_the_stack_buffer();
    return test_summary();
}
