/* text_escape: what reaches an operator's terminal or a log line. Terminal
 * controls (C0, DEL, C1 in both its raw byte and its UTF-8 form, bidi
 * overrides) and invalid UTF-8 come out as visible escapes; valid text is
 * kept byte for byte; a small buffer is cut between whole pieces. */
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "text_escape.h"

static const char *escaped(const char *in, size_t len)
{
    static char out[512];
    size_t need = text_escape(out, sizeof out, in, len);
    CHECKF(need == strlen(out), "need %zu for \"%s\"", need, out);
    return out;
}

#define ESCAPED(literal) escaped((literal), sizeof(literal) - 1)

static void test_plain_text_kept(void)
{
    CHECK_STR(ESCAPED(""), "");
    CHECK_STR(ESCAPED("tsk_019a-ok:1.2"), "tsk_019a-ok:1.2");
    CHECK_STR(ESCAPED("0/3 nodes are available: 3 insufficient cpu"),
              "0/3 nodes are available: 3 insufficient cpu");
    /* Valid UTF-8 in 2, 3 and 4 bytes stays as it is. */
    CHECK_STR(ESCAPED("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0"),
              "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0");
    CHECK_STR(ESCAPED("back\\slash"), "back\\slash");
}

static void test_terminal_controls(void)
{
    /* The reported message id: retitles the terminal, then clears it. */
    CHECK_STR(ESCAPED("id\x1b]0;pwned\x07\x1b[2Jend"), "id\\x1b]0;pwned\\x07\\x1b[2Jend");
    CHECK_STR(ESCAPED("a\nb\rc\td"), "a\\nb\\rc\\td");
    CHECK_STR(ESCAPED("\x01\x1f\x7f"), "\\x01\\x1f\\x7f");
    CHECK_STR(escaped("a\0b", 3), "a\\x00b");
    /* C1 controls encoded as UTF-8 (CSI is U+009B), first and last of the range. */
    CHECK_STR(ESCAPED("\xc2\x9b"
                      "2J \xc2\x80\xc2\x9f"),
              "\\u009b2J \\u0080\\u009f");
    /* Bidi overrides and line separators rearrange what the operator reads. */
    CHECK_STR(ESCAPED("x\xe2\x80\xaey \xe2\x81\xa6z \xe2\x80\xa8"), "x\\u202ey \\u2066z \\u2028");
}

static void test_invalid_utf8(void)
{
    /* A raw C1 byte (8-bit CSI) is not UTF-8: escaped, never passed on. */
    CHECK_STR(ESCAPED("\x9b"
                      "2J"),
              "\\x9b2J");
    CHECK_STR(ESCAPED("\xff\xfe"), "\\xff\\xfe");
    CHECK_STR(ESCAPED("\xc0\xaf"), "\\xc0\\xaf");                   /* overlong "/" */
    CHECK_STR(ESCAPED("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");          /* overlong, 3 bytes */
    CHECK_STR(ESCAPED("\xed\xa0\x80"), "\\xed\\xa0\\x80");          /* a surrogate */
    CHECK_STR(ESCAPED("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
    CHECK_STR(ESCAPED("ab\xe2\x82"), "ab\\xe2\\x82");               /* cut short at the end */
    /* A bad byte does not swallow the valid text after it. */
    CHECK_STR(ESCAPED("\xe2(x"), "\\xe2(x");
}

static void test_bounded(void)
{
    char out[8];
    /* Needs 10 bytes: stops before the escape that would not fit whole. */
    size_t need = text_escape(out, sizeof out, "abcde\x1b", 6);
    CHECK(need == 9);
    CHECK_STR(out, "abcde");
    /* A UTF-8 character is never split. */
    need = text_escape(out, sizeof out, "abcdef\xe2\x82\xac", 9);
    CHECK(need == 9);
    CHECK_STR(out, "abcdef");
    /* Nothing after a cut, even a piece that would fit. */
    need = text_escape(out, 6,
                       "abc\x1b"
                       "d",
                       5);
    CHECK(need == 8);
    CHECK_STR(out, "abc");
    /* Size 0 writes nothing and still measures; size 1 gives "". */
    CHECK(text_escape(NULL, 0, "\n", 1) == 2);
    out[0] = 'x';
    CHECK(text_escape(out, 1, "a", 1) == 1);
    CHECK_STR(out, "");
    /* The growth bound holds for the worst byte. */
    char worst[4 * TEXT_ESCAPE_GROWTH + 1];
    CHECK(text_escape(worst, sizeof worst, "\xff\xff\xff\xff", 4) == 4 * TEXT_ESCAPE_GROWTH);
}

static void test_dup(void)
{
    char *copy = text_escape_dup("evt\x1b[2J\xff");
    CHECK_STR(copy, "evt\\x1b[2J\\xff");
    free(copy);
    CHECK(text_escape_dup(NULL) == NULL);
}

int main(void)
{
    test_plain_text_kept();
    test_terminal_controls();
    test_invalid_utf8();
    test_bounded();
    test_dup();
    return test_summary();
}
