/* spread: failure domains of a key and the spread rule (spread.h). */
#include "spread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"

void spread_view_reset(spread_view *v)
{
    v->hosts = NULL;
    v->key[0] = '\0';
    v->n_domains = 0;
}

void spread_view_free(spread_view *v)
{
    free(v->domain_of);
    free(v->names);
    free(v->count);
    free(v->eligible);
    free(v->has_room);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

/* The domain of `value`, added when new (the name table grown to twice the
 * domains, a power of two). Returns SPREAD_NO_DOMAIN when out of memory. */
static uint32_t intern(spread_view *v, const char *value)
{
    size_t mask = v->n_slots - 1;
    size_t at = (size_t)hash_fnv1a_text(value) & mask;
    for (; v->slots[at]; at = (at + 1) & mask)
        if (strcmp(v->names[v->slots[at] - 1], value) == 0)
            return v->slots[at] - 1;
    size_t need = (size_t)v->n_domains + 1;
    void *names = v->names;
    size_t cap = v->domain_capacity;
    if (grow_array(&names, &cap, need, sizeof *v->names) < 0)
        return SPREAD_NO_DOMAIN;
    v->names = names;
    /* The per-domain arrays follow the names' capacity. */
    if (cap != v->domain_capacity) {
        if (resize_array((void **)&v->count, cap, sizeof *v->count) < 0 ||
            resize_array((void **)&v->eligible, cap, sizeof *v->eligible) < 0 ||
            resize_array((void **)&v->has_room, cap, sizeof *v->has_room) < 0)
            return SPREAD_NO_DOMAIN;
        v->domain_capacity = cap;
    }
    v->names[v->n_domains] = value;
    v->slots[at] = v->n_domains + 1;
    return v->n_domains++;
}

int spread_view_domains(spread_view *v, const hostset *hosts, const char *key, vf_error *err)
{
    size_t n = hosts->n_hosts;
    if (v->hosts != hosts || strcmp(v->key, key) != 0) {
        spread_view_reset(v);
        size_t slots = 16;
        while (slots < 2 * n)
            slots *= 2;
        void *domain_of = v->domain_of;
        size_t host_cap = v->host_capacity;
        uint32_t *table = calloc(slots, sizeof *table);
        if (!table || grow_array(&domain_of, &host_cap, n ? n : 1, sizeof *v->domain_of) < 0) {
            free(table);
            vf_error_set(err, VF_ENOMEM, "out of memory spreading over %s", key);
            return -1;
        }
        v->domain_of = domain_of;
        v->host_capacity = host_cap;
        free(v->slots);
        v->slots = table;
        v->n_slots = slots;
        for (size_t i = 0; i < n; i++) {
            const char *value = host_traits_label(hosts->hosts[i].traits, key);
            v->domain_of[i] = value ? intern(v, value) : SPREAD_NO_DOMAIN;
            if (value && v->domain_of[i] == SPREAD_NO_DOMAIN) {
                spread_view_reset(v);
                vf_error_set(err, VF_ENOMEM, "out of memory spreading over %s", key);
                return -1;
            }
        }
        v->hosts = hosts;
        snprintf(v->key, sizeof v->key, "%s", key);
    }
    if (v->n_domains) {
        memset(v->count, 0, v->n_domains * sizeof *v->count);
        memset(v->eligible, 0, v->n_domains * sizeof *v->eligible);
        memset(v->has_room, 0, v->n_domains * sizeof *v->has_room);
    }
    v->n_eligible = 0;
    v->min = 0;
    return 0;
}

void spread_view_count(spread_view *v, const uint32_t *members, int32_t min_domains,
                       int32_t max_skew)
{
    size_t n = v->hosts ? v->hosts->n_hosts : 0;
    for (size_t i = 0; members && i < n; i++)
        if (members[i] && v->domain_of[i] != SPREAD_NO_DOMAIN)
            v->count[v->domain_of[i]] += members[i];
    v->n_eligible = 0;
    uint32_t least = UINT32_MAX;
    for (uint32_t d = 0; d < v->n_domains; d++) {
        if (!v->eligible[d])
            continue;
        v->n_eligible++;
        if (v->count[d] < least)
            least = v->count[d];
    }
    /* Kubernetes' minDomains: too few domains, and the emptiest is taken to
     * be one still to come, holding none. */
    v->min = v->n_eligible == 0 || v->n_eligible < (uint32_t)min_domains ? 0 : least;
    v->max_skew = max_skew;
}

double spread_score(const spread_view *v, uint32_t d)
{
    if (d == SPREAD_NO_DOMAIN)
        return 0;
    int64_t most = -1, least = -1;
    for (uint32_t e = 0; e < v->n_domains; e++) {
        if (!v->eligible[e])
            continue;
        int64_t s = (int64_t)v->count[e] + v->max_skew - 1;
        if (most < 0 || s > most)
            most = s;
        if (least < 0 || s < least)
            least = s;
    }
    if (most <= 0)
        return 100;
    double s = (double)v->count[d] + v->max_skew - 1;
    double score = 100.0 * ((double)most + (double)least - s) / (double)most;
    return score < 0 ? 0 : score > 100 ? 100 : score;
}

size_t spread_short_domains(const spread_view *v, uint32_t *out, size_t max)
{
    size_t found = 0;
    for (uint32_t d = 0; d < v->n_domains; d++) {
        if (!v->eligible[d] || v->count[d] != v->min || v->has_room[d])
            continue;
        if (found < max)
            out[found] = d;
        found++;
    }
    return found;
}
