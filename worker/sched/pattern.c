#include "pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pattern {
    pcre2_code *code;
    pcre2_match_data *match;
    pcre2_match_context *context;
    bool too_costly;
    bool budgeted;
    unsigned long long budget; /* steps left, when budgeted */
};

/* Escapes RE2 knows as letters or digits: classes (\d \s \w \p{..}),
 * assertions (\b \A \z), \Q..\E quoting, \x hex, \0 octal and the C escapes.
 * Anything else alphanumeric after a backslash means something RE2 lacks
 * (\C, \K, \R, \X, \G, \Z, \h, \g{n}, \k<n>, …) and is refused rather than
 * letting PCRE2 give it a meaning the user's qemu-scheduler never had. */
static const char re2_escapes[] = "dDsSwWbBApPzQEx0aftnrv";

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Check the escape at s[0] == '\\'; returns why it is refused, or NULL. */
static const char *escape_refused(const char *s, char *why, size_t size)
{
    char c = s[1];
    if (c >= '1' && c <= '9')
        return "back-references (\\1..\\9) are not RE2 syntax";
    if (c == 'g' || c == 'k')
        return "back-references (\\g, \\k) are not RE2 syntax";
    if (c == 'C')
        return "\\C (one code unit) is not RE2 syntax";
    if (c && is_alnum(c) && !strchr(re2_escapes, c)) {
        snprintf(why, size, "the escape \\%c is not RE2 syntax", c);
        return why;
    }
    return NULL;
}

/* A repetition count "{n}", "{n,}" or "{n,m}" starting at s (the '{'):
 * sets *end to its '}' and *count to its largest bound; false when s starts
 * no count (RE2 and PCRE2 then read the '{' as a literal). */
static bool interval(const char *s, const char **end, long *count)
{
    long n = 0, m = -1;
    const char *q = s + 1;
    if (*q < '0' || *q > '9')
        return false;
    while (*q >= '0' && *q <= '9' && n <= 100000)
        n = n * 10 + (*q++ - '0');
    if (*q == ',') {
        q++;
        if (*q >= '0' && *q <= '9') {
            m = 0;
            while (*q >= '0' && *q <= '9' && m <= 100000)
                m = m * 10 + (*q++ - '0');
        }
    }
    if (*q != '}')
        return false;
    *end = q;
    *count = m > n ? m : n;
    return true;
}

/* What follows "(?" at s: NULL when RE2 accepts it. */
static const char *group_refused(const char *s, char *why, size_t size)
{
    switch (s[0]) {
    case ':':
        return NULL;
    case '=':
    case '!':
        return "lookahead (?= (?! is not RE2 syntax";
    case '<':
        if (s[1] == '=' || s[1] == '!')
            return "lookbehind (?<= (?<! is not RE2 syntax";
        return NULL; /* (?<name>…), as Go 1.22 accepts */
    case 'P':
        if (s[1] == '<')
            return NULL;
        return "(?P= and (?P> (back-reference, recursion) are not RE2 syntax";
    case '>':
        return "atomic groups (?> are not RE2 syntax";
    case '|':
        return "branch reset groups (?| are not RE2 syntax";
    case '#':
        return "comments (?# are not RE2 syntax";
    case 'C':
        return "callouts (?C are not RE2 syntax";
    case '(':
        return "conditional groups (?( are not RE2 syntax";
    case 'R':
    case '&':
    case '+':
        return "recursion is not RE2 syntax";
    default:
        break;
    }
    if (s[0] >= '0' && s[0] <= '9')
        return "recursion is not RE2 syntax";
    /* Flags: RE2 knows i, m, s and U, optionally negated, then ')' or ':'. */
    const char *q = s;
    while (*q && *q != ')' && *q != ':') {
        if (!strchr("imsU-", *q)) {
            snprintf(why, size, "the flag (?%c) is not RE2 syntax (RE2 knows i, m, s, U)", *q);
            return why;
        }
        q++;
    }
    return NULL;
}

/* Why `s` uses something RE2 does not accept, or NULL. The rest (unbalanced
 * groups, bad classes, a quantifier with nothing to repeat) PCRE2 reports. */
static const char *re2_refused(const char *s, char *why, size_t size)
{
    int repeated = 0; /* 1: the last token was a quantifier, 2: and it was made lazy by '?' */
    for (const char *p = s; *p; p++) {
        if (*p == '\\') {
            if (!p[1])
                return NULL;
            const char *refused = escape_refused(p, why, size);
            if (refused)
                return refused;
            if (p[1] == 'Q') {
                const char *end = strstr(p + 2, "\\E");
                if (!end)
                    return NULL;
                p = end + 1;
            } else {
                p++;
            }
            repeated = 0;
            continue;
        }
        if (*p == '[') {
            p++;
            if (*p == '^')
                p++;
            if (*p == ']')
                p++;
            while (*p && *p != ']') {
                if (*p == '\\' && p[1]) {
                    const char *refused = escape_refused(p, why, size);
                    if (refused)
                        return refused;
                    p++;
                } else if (*p == '[' && p[1] == ':') {
                    const char *close = strstr(p + 2, ":]");
                    if (!close)
                        return NULL;
                    p = close + 1;
                }
                p++;
            }
            if (!*p)
                return NULL;
            repeated = 0;
            continue;
        }
        if (*p == '(') {
            if (p[1] == '*')
                return "(*VERB) directives are not RE2 syntax";
            if (p[1] == '?') {
                const char *refused = group_refused(p + 2, why, size);
                if (refused)
                    return refused;
            }
            repeated = 0;
            continue;
        }
        long count = 0;
        const char *end = p;
        bool is_count = *p == '{' && interval(p, &end, &count);
        if (is_count || *p == '*' || *p == '+' || *p == '?') {
            if (repeated == 1 && *p == '?') {
                repeated = 2;
                continue;
            }
            if (repeated == 1 && *p == '+')
                return "possessive quantifiers (like a*+) are not RE2 syntax";
            if (repeated)
                return "repetition operators may not follow one another (like a**)";
            if (count > PATTERN_MAX_REPEAT)
                return "repetition counts above 1000 are not RE2 syntax";
            repeated = 1;
            p = end;
            continue;
        }
        repeated = 0;
    }
    return NULL;
}

const char *pattern_refused(const char *source)
{
    /* Thread-local: the checker's only state shared with its caller. */
    static _Thread_local char why[96];
    return re2_refused(source, why, sizeof why);
}

pattern *pattern_new(const char *source, vf_error *err)
{
    return pattern_new_mode(source, PATTERN_WHOLE, err);
}

pattern *pattern_new_mode(const char *source, pattern_mode mode, vf_error *err)
{
    size_t len = strlen(source);
    if (len > PATTERN_MAX_LEN) {
        vf_error_set(err, VF_EINVAL, "longer than %d characters", PATTERN_MAX_LEN);
        return NULL;
    }
    char why[96];
    const char *refused = re2_refused(source, why, sizeof why);
    if (refused) {
        vf_error_set(err, VF_EINVAL, "%s", refused);
        return NULL;
    }
    pattern *p = calloc(1, sizeof *p);
    if (!p) {
        vf_error_set(err, VF_ENOMEM, "out of memory compiling a pattern");
        return NULL;
    }
    int code = 0;
    PCRE2_SIZE offset = 0;
    /* Whole: anchored at both ends, so node1 does not match node10.
     * Search: anywhere in the subject, as Go's regexp.MatchString in
     * qemu-scheduler. DOLLAR_ENDONLY: '$' means the end, not also before a
     * final newline, as in RE2. */
    uint32_t anchors = mode == PATTERN_SEARCH ? 0 : PCRE2_ANCHORED | PCRE2_ENDANCHORED;
    p->code = pcre2_compile((PCRE2_SPTR)source, len,
                            anchors | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C |
                                PCRE2_NEVER_UTF | PCRE2_NEVER_UCP,
                            &code, &offset, NULL);
    if (!p->code) {
        char message[120];
        if (pcre2_get_error_message(code, (PCRE2_UCHAR *)message, sizeof message) < 0)
            snprintf(message, sizeof message, "error %d", code);
        vf_error_set(err, VF_EINVAL, "%s at offset %zu", message, (size_t)offset);
        pattern_free(p);
        return NULL;
    }
    /* JIT makes an ordinary match several times cheaper; where it is not
     * available the interpreter runs under the same limits. */
    (void)pcre2_jit_compile(p->code, PCRE2_JIT_COMPLETE);
    p->match = pcre2_match_data_create(1, NULL);
    p->context = pcre2_match_context_create(NULL);
    if (!p->match || !p->context) {
        vf_error_set(err, VF_ENOMEM, "out of memory compiling a pattern");
        pattern_free(p);
        return NULL;
    }
    pcre2_set_match_limit(p->context, PATTERN_MATCH_LIMIT);
    pcre2_set_depth_limit(p->context, PATTERN_DEPTH_LIMIT);
    pcre2_set_heap_limit(p->context, 1024); /* KiB */
    return p;
}

void pattern_free(pattern *p)
{
    if (!p)
        return;
    pcre2_match_context_free(p->context);
    pcre2_match_data_free(p->match);
    pcre2_code_free(p->code);
    free(p);
}

void pattern_set_budget(pattern *p, unsigned long long steps)
{
    p->budgeted = steps > 0;
    p->budget = steps;
}

pattern_result pattern_match(pattern *p, const char *subject, size_t len)
{
    if (p->too_costly)
        return PATTERN_TOO_COSTLY;
    /* Rising limits: the one a match finishes under bounds what it cost,
     * which is what the budget is charged (PCRE2 reports no step count). */
    for (uint32_t limit = 16;; limit *= 4) {
        if (limit > PATTERN_MATCH_LIMIT)
            limit = PATTERN_MATCH_LIMIT;
        if (p->budgeted && p->budget < limit) {
            p->too_costly = true;
            return PATTERN_TOO_COSTLY;
        }
        pcre2_set_match_limit(p->context, limit);
        int rc = pcre2_match(p->code, (PCRE2_SPTR)subject, len, 0, 0, p->match, p->context);
        bool over = rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
                    rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT;
        if (p->budgeted)
            p->budget -= limit;
        if (over && limit < PATTERN_MATCH_LIMIT)
            continue;
        if (over) {
            p->too_costly = true;
            return PATTERN_TOO_COSTLY;
        }
        return rc >= 0 ? PATTERN_MATCH : PATTERN_NO_MATCH;
    }
}

bool pattern_too_costly(const pattern *p)
{
    return p->too_costly;
}
