/* regex_cache: the patterns of request annotations (node and vmid regex)
 * an engine has compiled, kept across decisions: a worker sees the same few
 * patterns over and over, and compiling one costs more than the decision.
 *
 * Sixteen entries, the least recently used replaced. A node pattern's entry
 * also keeps its match per host of the current snapshot (sched_node_matches,
 * plugins.h), forgotten when the snapshot or the matching mode changes. A
 * pattern that once hit the match limits (pattern.h) is refused at once
 * when asked for again, so a hostile request repeated costs nothing. No I/O. */
#ifndef VF_REGEX_CACHE_H
#define VF_REGEX_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pattern.h"
#include "request.h"
#include "vf_error.h"

#define REGEX_CACHE_SIZE 16

typedef struct regex_entry {
    char pattern[REQUEST_ANNOTATION_LEN];
    bool in_use;
    pattern *compiled;   /* owned */
    uint8_t *node_match; /* per host of the current snapshot; NULL until used */
    uint64_t last_used;
} regex_entry;

/* A value type the engine embeds: zero it (regex_cache_init), then
 * regex_cache_close. */
typedef struct regex_cache {
    regex_entry entries[REGEX_CACHE_SIZE];
    uint64_t clock; /* counts lookups, for least-recently-used replacement */
} regex_cache;

void regex_cache_init(regex_cache *cache);
/* Frees every pattern and match cache; the cache is empty again. */
void regex_cache_close(regex_cache *cache);
/* The snapshot changed: forget every per-host match, keep the patterns. */
void regex_cache_forget_matches(regex_cache *cache);

/* The compiled pattern for `text` (matching as `mode` says), from the
 * cache or compiled now; `what` names the annotation in errors. Borrowed:
 * valid until the next regex_cache_get or close. NULL with err: VF_EINVAL
 * when the pattern does not compile ("annotations.<what>: \"...\" is not a
 * valid regex: <why>") or once hit the match limits (regex_refuse_costly),
 * VF_ENOMEM. */
regex_entry *regex_cache_get(regex_cache *cache, const char *text, pattern_mode mode,
                             const char *what, vf_error *err);

/* The entry's per-host match cache, allocated zeroed for `n_hosts` hosts on
 * first use. NULL with VF_ENOMEM. */
uint8_t *regex_cache_node_match(regex_entry *entry, size_t n_hosts, vf_error *err);

/* The error for a pattern that hit the PCRE2 limits (pattern.h). */
void regex_refuse_costly(const char *text, const char *what, vf_error *err);

#endif
