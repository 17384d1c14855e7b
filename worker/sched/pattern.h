/* pattern: the regular expressions requests carry (node.qemu-scheduler/regex,
 * vmid.qemu-scheduler/regex), in the syntax qemu-scheduler's users write:
 * Go's RE2. Matched with PCRE2, restricted to what RE2 accepts, so a pattern
 * means here what it meant to qemu-scheduler: `\d`, `\w`, `(?i)`, `[[:alpha:]]`,
 * non-greedy `*?`, named groups `(?P<n>…)` work; back-references, lookaround,
 * atomic groups, possessive quantifiers, `\C`, recursion, callouts and
 * `(*VERB)`s are refused with the reason.
 *
 * A pattern matches the whole subject (node1 does not match node10), or,
 * made with PATTERN_SEARCH, anywhere in it (scheduler.regex_match: search).
 * Every match runs under a PCRE2 match limit and depth limit, so a pattern
 * that backtracks exponentially costs at most one limit's worth of work per
 * subject; and under a step budget the caller sets per request
 * (pattern_set_budget), so one that is merely slow on each of a million
 * vmids or ten thousand host names costs at most the budget in all. Either
 * way the match reports PATTERN_TOO_COSTLY and the pattern remembers it
 * (pattern_too_costly), so the caller can refuse it instead of paying again.
 * No I/O; not thread-safe (a pattern owns its match data). */
#ifndef VF_PATTERN_H
#define VF_PATTERN_H

#include <stdbool.h>
#include <stddef.h>

#include "vf_error.h"

/* Longest pattern accepted, in bytes (annotation values are at most 256). */
#define PATTERN_MAX_LEN 256
/* Largest {n,m} count RE2 accepts. */
#define PATTERN_MAX_REPEAT 1000
/* PCRE2 match limit per match: backtracking steps. A node name is at most 63
 * characters and a vmid 9 digits; RE2-style patterns need a few hundred steps
 * on them, an exponential one needs millions. */
#define PATTERN_MATCH_LIMIT 20000
/* PCRE2 depth limit (nested backtracking frames) for the interpreter. */
#define PATTERN_DEPTH_LIMIT 1000

typedef struct pattern pattern;

typedef enum {
    PATTERN_NO_MATCH = 0,
    PATTERN_MATCH = 1,
    PATTERN_TOO_COSTLY = -1, /* hit the match or depth limit; counts as no match */
} pattern_result;

/* Compile `source` (RE2 syntax, NUL-terminated). Returns an owned pattern,
 * or NULL with err: VF_EINVAL whose text is the reason alone (e.g.
 * "back-references are not RE2 syntax (\1)") for the caller to prefix with
 * the field, or VF_ENOMEM. */
pattern *pattern_new(const char *source, vf_error *err) __attribute__((warn_unused_result));

typedef enum {
    PATTERN_WHOLE = 0, /* the whole subject must match */
    PATTERN_SEARCH,    /* a match anywhere in the subject, as qemu-scheduler's Go code */
} pattern_mode;

/* pattern_new, matching as `mode` says. */
pattern *pattern_new_mode(const char *source, pattern_mode mode, vf_error *err)
    __attribute__((warn_unused_result));

void pattern_free(pattern *p); /* NULL is a no-op */

/* Match `subject` (length `len`): whole, or anywhere (PATTERN_SEARCH). */
pattern_result pattern_match(pattern *p, const char *subject, size_t len);

/* Allow the following matches `steps` PCRE2 backtracking steps in all
 * (0: no budget, only the per-match limit). A match is charged the limit it
 * finished under: limits rise 16, 64, 256, … up to PATTERN_MATCH_LIMIT, so
 * a pattern is charged at most 4 times what it used, plus the retries. */
void pattern_set_budget(pattern *p, unsigned long long steps);

/* True once a match of this pattern has hit the limits. */
bool pattern_too_costly(const pattern *p);

/* Why `source` is not RE2 syntax, or NULL when the checker finds nothing
 * (PCRE2 then still reports plain syntax errors). Exposed for tests. */
const char *pattern_refused(const char *source);

#endif
