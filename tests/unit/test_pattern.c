/* pattern: RE2 syntax on PCRE2, anchored, refused where RE2 refuses, and
 * bounded by the match limits and the step budget. */
#include <stdio.h>
#include <string.h>

#include "pattern.h"
#include "testlib.h"

static pattern_result match(const char *source, const char *subject)
{
    vf_error err;
    vf_error_init(&err);
    pattern *p = pattern_new(source, &err);
    CHECKF(p != NULL, "%s refused: %s", source, err.text);
    if (!p)
        return PATTERN_NO_MATCH;
    pattern_result r = pattern_match(p, subject, strlen(subject));
    pattern_free(p);
    return r;
}

static void test_re2_syntax(void)
{
    static const struct {
        const char *pattern, *subject;
        pattern_result want;
    } cases[] = {
        {"node\\d+", "node12", PATTERN_MATCH},
        {"node\\d+", "noded", PATTERN_NO_MATCH}, /* POSIX ERE read \d as a literal d */
        {"(?i)NODE[0-9]", "node7", PATTERN_MATCH},
        {"(?i:gpu)-\\w+", "GPU-a_1", PATTERN_MATCH},
        {"\\w+?\\d", "abc1", PATTERN_MATCH},
        {"[[:alpha:]]+-\\d{2,3}", "bm-001", PATTERN_MATCH},
        {"(?P<kind>bm|gpu)-.*", "gpu-9", PATTERN_MATCH},
        {"(?<kind>bm|gpu)-.*", "gpu-9", PATTERN_MATCH},
        {"\\Qa.b\\E", "a.b", PATTERN_MATCH},
        {"\\Qa.b\\E", "axb", PATTERN_NO_MATCH},
        {"(?s).+", "a\nb", PATTERN_MATCH},
        {"\\pL+", "abc", PATTERN_MATCH},
        {"x{0,1000}", "xx", PATTERN_MATCH},
        /* Anchored at both ends, alternation as a whole. */
        {"node1", "node10", PATTERN_NO_MATCH},
        {"node1", "mynode1", PATTERN_NO_MATCH},
        {"x|node10", "mynode10", PATTERN_NO_MATCH},
        {"node1$", "node1\n", PATTERN_NO_MATCH}, /* $ is the end, as in RE2 */
        {"(12[0-9]|130)", "125", PATTERN_MATCH},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECKF(match(cases[i].pattern, cases[i].subject) == cases[i].want, "%s on \"%s\"",
               cases[i].pattern, cases[i].subject);
}

static void test_refused(void)
{
    static const struct {
        const char *pattern, *why;
    } cases[] = {
        {"(a)\\1", "back-references (\\1..\\9) are not RE2 syntax"},
        {"(a)\\g1", "back-references (\\g, \\k) are not RE2 syntax"},
        {"(?P<n>a)(?P=n)", "(?P= and (?P> (back-reference, recursion) are not RE2 syntax"},
        {"a(?=b)", "lookahead (?= (?! is not RE2 syntax"},
        {"a(?!b)", "lookahead (?= (?! is not RE2 syntax"},
        {"(?<=a)b", "lookbehind (?<= (?<! is not RE2 syntax"},
        {"(?>a+)b", "atomic groups (?> are not RE2 syntax"},
        {"a++", "possessive quantifiers (like a*+) are not RE2 syntax"},
        {"a{2}+", "possessive quantifiers (like a*+) are not RE2 syntax"},
        {"a**", "repetition operators may not follow one another (like a**)"},
        {"a*??", "repetition operators may not follow one another (like a**)"},
        {"a\\C", "\\C (one code unit) is not RE2 syntax"},
        {"(a(?R)?)", "recursion is not RE2 syntax"},
        {"(a(?1)?)", "recursion is not RE2 syntax"},
        {"a(?C)", "callouts (?C are not RE2 syntax"},
        {"(*LIMIT_MATCH=1000000000)a", "(*VERB) directives are not RE2 syntax"},
        {"(?|a|b)", "branch reset groups (?| are not RE2 syntax"},
        {"(?(1)a|b)", "conditional groups (?( are not RE2 syntax"},
        {"(?#note)a", "comments (?# are not RE2 syntax"},
        {"(?x) a", "the flag (?x) is not RE2 syntax (RE2 knows i, m, s, U)"},
        {"a\\Z", "the escape \\Z is not RE2 syntax"},
        {"[\\1]", "back-references (\\1..\\9) are not RE2 syntax"},
        {"a{1001}", "repetition counts above 1000 are not RE2 syntax"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vf_error err;
        vf_error_init(&err);
        pattern *p = pattern_new(cases[i].pattern, &err);
        CHECKF(p == NULL, "%s accepted", cases[i].pattern);
        pattern_free(p);
        CHECK(err.code == VF_EINVAL);
        CHECKF(strcmp(err.text, cases[i].why) == 0, "%s: got \"%s\", want \"%s\"", cases[i].pattern,
               err.text, cases[i].why);
        CHECK(pattern_refused(cases[i].pattern) != NULL);
    }
    /* Plain syntax errors come from PCRE2, with the offset. */
    vf_error err;
    vf_error_init(&err);
    CHECK(pattern_new("node[0-9", &err) == NULL);
    CHECK_STR(err.text, "missing terminating ] for character class at offset 8");
    /* Escaped and bracketed specials are not mistaken for constructs. */
    CHECK(match("\\(\\?=x\\)", "(?=x)") == PATTERN_MATCH);
    CHECK(match("[(?=]+", "(?=") == PATTERN_MATCH);
    CHECK(match("a\\+\\+", "a++") == PATTERN_MATCH);
}

/* Exponential backtracking stops at the match limit; the pattern remembers. */
static void test_limits(void)
{
    const char *name = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    vf_error err;
    vf_error_init(&err);
    pattern *p = pattern_new("(a|aa)+(b|c)", &err);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK(!pattern_too_costly(p));
    CHECK(pattern_match(p, name, strlen(name)) == PATTERN_TOO_COSTLY);
    CHECK(pattern_too_costly(p));
    /* Refused at once from then on, even on a subject it could match. */
    CHECK(pattern_match(p, "ab", 2) == PATTERN_TOO_COSTLY);
    pattern_free(p);

    /* The budget: 2^9 paths per 9-digit subject is under the per-match limit
     * but a few thousand subjects exhaust a budget of 16 steps each. */
    p = pattern_new("(\\d|\\d)*(a|b)", &err);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK(pattern_match(p, "123456789", 9) == PATTERN_NO_MATCH); /* unbudgeted: fine */
    pattern_set_budget(p, 16 * 1000);
    int matches = 0;
    pattern_result r = PATTERN_NO_MATCH;
    while (matches < 100000 && (r = pattern_match(p, "123456789", 9)) == PATTERN_NO_MATCH)
        matches++;
    CHECK(r == PATTERN_TOO_COSTLY);
    CHECKF(matches < 100, "the budget allowed %d costly matches", matches);
    pattern_free(p);

    /* An ordinary pattern runs within 16 steps a subject: a budget of 16 per
     * subject never runs out. */
    p = pattern_new("(12[0-9]|130)", &err);
    CHECK(p != NULL);
    if (!p)
        return;
    pattern_set_budget(p, 16 * 10000);
    char digits[16];
    int ran_out = 0;
    for (int id = 100; id < 10100; id++) {
        int len = snprintf(digits, sizeof digits, "%d", id);
        ran_out += pattern_match(p, digits, (size_t)len) == PATTERN_TOO_COSTLY;
    }
    CHECK(ran_out == 0);
    pattern_free(p);
    pattern_free(NULL);
}

/* PATTERN_SEARCH (scheduler.regex_match: search): anywhere in the subject. */
static void test_search(void)
{
    vf_error err;
    vf_error_init(&err);
    pattern *p = pattern_new_mode("node1", PATTERN_SEARCH, &err);
    CHECK(p != NULL);
    CHECK(pattern_match(p, "node10", 6) == PATTERN_MATCH);
    CHECK(pattern_match(p, "mynode1", 7) == PATTERN_MATCH);
    CHECK(pattern_match(p, "node2", 5) == PATTERN_NO_MATCH);
    pattern_free(p);
    p = pattern_new_mode("^node1$", PATTERN_SEARCH, &err);
    CHECK(p != NULL);
    CHECK(pattern_match(p, "node10", 6) == PATTERN_NO_MATCH);
    CHECK(pattern_match(p, "node1", 5) == PATTERN_MATCH);
    pattern_free(p);
    /* Refused the same way in either mode. */
    CHECK(pattern_new_mode("(a)\\1", PATTERN_SEARCH, &err) == NULL);
    CHECK(match("node1", "node10") == PATTERN_NO_MATCH);
}

int main(void)
{
    test_re2_syntax();
    test_search();
    test_refused();
    test_limits();
    return test_summary();
}
