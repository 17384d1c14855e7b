#include "regex_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void regex_cache_init(regex_cache *cache)
{
    memset(cache, 0, sizeof *cache);
}

void regex_cache_close(regex_cache *cache)
{
    for (size_t i = 0; i < REGEX_CACHE_SIZE; i++) {
        pattern_free(cache->entries[i].compiled);
        free(cache->entries[i].node_match);
    }
    regex_cache_init(cache);
}

void regex_cache_forget_matches(regex_cache *cache)
{
    for (size_t i = 0; i < REGEX_CACHE_SIZE; i++) {
        free(cache->entries[i].node_match);
        cache->entries[i].node_match = NULL;
    }
}

void regex_refuse_costly(const char *text, const char *what, vf_error *err)
{
    vf_error_set(err, VF_EINVAL,
                 "annotations.%s: \"%.64s\" is not a valid regex: too costly to match (it ran "
                 "past the backtracking limits; avoid nested repetition like (a+)+)",
                 what, text);
}

regex_entry *regex_cache_get(regex_cache *cache, const char *text, pattern_mode mode,
                             const char *what, vf_error *err)
{
    cache->clock++;
    regex_entry *victim = &cache->entries[0];
    for (size_t i = 0; i < REGEX_CACHE_SIZE; i++) {
        regex_entry *entry = &cache->entries[i];
        if (entry->in_use && strcmp(entry->pattern, text) == 0) {
            entry->last_used = cache->clock;
            if (pattern_too_costly(entry->compiled)) {
                regex_refuse_costly(text, what, err);
                return NULL;
            }
            return entry;
        }
        if (!entry->in_use || (victim->in_use && entry->last_used < victim->last_used))
            victim = entry;
    }
    vf_error why;
    vf_error_init(&why);
    pattern *compiled = pattern_new_mode(text, mode, &why);
    if (!compiled) {
        vf_error_set(err, why.code, "annotations.%s: \"%.64s\" is not a valid regex: %s", what,
                     text, why.text);
        return NULL;
    }
    pattern_free(victim->compiled);
    free(victim->node_match);
    victim->node_match = NULL;
    victim->compiled = compiled;
    victim->in_use = true;
    victim->last_used = cache->clock;
    snprintf(victim->pattern, sizeof victim->pattern, "%s", text);
    return victim;
}

uint8_t *regex_cache_node_match(regex_entry *entry, size_t n_hosts, vf_error *err)
{
    if (!entry->node_match) {
        entry->node_match = calloc(n_hosts ? n_hosts : 1, 1);
        if (!entry->node_match)
            vf_error_set(err, VF_ENOMEM, "out of memory matching node names");
    }
    return entry->node_match;
}
