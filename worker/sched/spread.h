/* spread: failure domains and the topology spread rule (docs/scheduling.md
 * "Failure domains and topology spread"), Kubernetes' topologySpreadConstraints
 * over hosts' labels (labels.h).
 *
 * A request's spread names a label key; each value of that key is a domain
 * (rack r1, rack r2, ...). For one decision:
 *   domain of a host   its value of the key; a host without the key is in
 *                      none (the filter rejects it: "missing label rack")
 *   eligible domain    one with at least one host the request could use
 *                      were it empty: a host passing the filters the
 *                      inventory alone decides (pool, dedicated, status,
 *                      node name, node regex, traits), as Kubernetes counts
 *                      only the nodes that pass a pod's node affinity;
 *                      a domain whose hosts are full still counts
 *   count(d)           the members counted on hosts of d: the request's
 *                      group's members and its own earlier VMs (`count`)
 *   min                the least count over eligible domains; 0 while
 *                      fewer than min_domains domains are eligible
 *                      (Kubernetes' minDomains)
 *   skew of host h     count(domain(h)) + 1 - min: placing on h must keep
 *                      it <= max_skew (do_not_schedule), or is scored
 *                      by it (score)
 *
 * This module interns the domains of a key over a snapshot, once per key
 * and snapshot, and holds the counts of the decision at hand; the engine
 * (engine_spread.c) decides eligibility and marks hosts. No I/O. */
#ifndef VF_SPREAD_H
#define VF_SPREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hostset.h"
#include "labels.h"
#include "vf_error.h"

#define SPREAD_NO_DOMAIN UINT32_MAX

/* The domains of one key over one snapshot, and one decision's counts. */
typedef struct spread_view {
    const hostset *hosts; /* the snapshot the domains are of (borrowed) */
    char key[LABEL_KEY_LEN];
    uint32_t *domain_of; /* per host: its domain, SPREAD_NO_DOMAIN without the key */
    const char **names;  /* per domain: its value, borrowed from the snapshot's labels */
    uint32_t n_domains;
    uint32_t *count; /* per domain: members counted there */
    bool *eligible;  /* per domain: a host the request could use empty */
    bool *has_room;  /* per domain: a host that passed every other filter */
    uint32_t n_eligible;
    uint32_t min; /* the count skew is measured from */
    int32_t max_skew;
    size_t host_capacity, domain_capacity;
    uint32_t *slots; /* name table: domain + 1 by a hash of the value, 0 empty */
    size_t n_slots;
} spread_view;

/* Intern the domains of `key` over `hosts` into v (kept when v already
 * holds that key over that snapshot). Clears the counts. Returns 0, or -1
 * with VF_ENOMEM. */
int spread_view_domains(spread_view *v, const hostset *hosts, const char *key, vf_error *err)
    __attribute__((warn_unused_result));
/* Forget the snapshot (its names die with it): the next spread_view_domains
 * interns again. */
void spread_view_reset(spread_view *v);
/* Release what v holds; a zeroed view is a no-op. */
void spread_view_free(spread_view *v);

/* Add `members` (per host index of the snapshot, NULL: none) into the
 * domains' counts, and set min from the eligible domains (v->eligible
 * filled by the caller) and `min_domains`. */
void spread_view_count(spread_view *v, const uint32_t *members, int32_t min_domains,
                       int32_t max_skew);

/* The rule: one more member in a domain holding `count` keeps the skew
 * within max_skew of the least-filled eligible domain (`min`). */
static inline bool spread_fits(uint32_t count, uint32_t min, int32_t max_skew)
{
    return (int64_t)count + 1 - (int64_t)min <= (int64_t)max_skew;
}

/* The TopologySpread score of a host in domain `d` (a preference, with
 * when_unsatisfiable: score), as Kubernetes' PodTopologySpread scores: s =
 * count(d) + max_skew - 1, normalised over the eligible domains to
 * 100 * (most + least - s) / most (100 everywhere while no domain holds
 * any); a host without the key scores 0. */
double spread_score(const spread_view *v, uint32_t d);

/* The domains an unplaced decision needs room in: eligible domains at the
 * minimum count with no host that passed every other filter. Writes up to
 * `max` domain indexes into out; returns how many there are in all. */
size_t spread_short_domains(const spread_view *v, uint32_t *out, size_t max);

#endif
