/* store_groups: groups of tasks (task.schedule's `group`, schema/014), as
 * Nova's server groups. Part of the store: what store.h says about
 * durability, timestamps, strings, errors, threads and listing callbacks
 * holds here too.
 *
 * A group's members are the reservations that carry its name: held ones,
 * and those ended because an inventory showed their VM (the reader counts
 * these while its snapshot shows that VM on that host). Every transaction
 * recording members of a group first claims it (store_group_claim) at the
 * generation read before deciding (store_group_read), as host generations
 * (store_hosts.h) guard a host's room: two workers deciding members of one
 * group at once cannot both commit, so a hard policy holds across workers. */
#ifndef VF_STORE_GROUPS_H
#define VF_STORE_GROUPS_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

#define STORE_GROUP_POLICY_LEN 24
#define STORE_GROUP_SPREAD_KEY_LEN 48 /* a label key: 1..47 characters + NUL */

/* The topology spread a group's members were claimed under (schema/016). */
typedef struct store_group_spread {
    char key[STORE_GROUP_SPREAD_KEY_LEN]; /* "": none */
    int64_t max_skew;
    char when[STORE_GROUP_POLICY_LEN]; /* do_not_schedule | score */
    int64_t min_domains;
} store_group_spread;

typedef struct store_group {
    int64_t generation;                  /* 0: no member was ever recorded */
    char policy[STORE_GROUP_POLICY_LEN]; /* as last claimed; "" when new or none */
    int64_t max_per_host;                /* as last claimed; 0: no cap */
    store_group_spread spread;           /* as last claimed; key "" when none */
} store_group;

typedef struct store_group_member {
    const char *task_id;
    const char *node;
    int64_t vmid; /* -1: none */
    bool held;    /* a live reservation; false: ended because an inventory showed its VM */
} store_group_member;

typedef int (*store_group_member_fn)(const store_group_member *member, void *ctx);

/* Read group `name` into *out (generation 0 and "" when it has none), then
 * call fn for each member (oldest first): the reservations carrying the name
 * that are held at `now` (the reservation clock, store_reservation_clock)
 * or were ended by an inventory showing their VM. The generation, policy
 * and members come from one statement, so one snapshot: every member seen
 * was recorded at or before that generation (never one without the policy
 * it was claimed under), and a member recorded after it makes the claim at
 * that generation fail rather than go unseen. Returns 0 or -1 with err. */
int store_group_read(store *s, const char *name, const char *now, store_group *out,
                     store_group_member_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* In the write transaction recording members of group `name`: move it from
 * generation `expected` (what store_group_read gave) to expected + 1,
 * recording its policy, max_per_host (0: none) and spread (NULL or key "":
 * none) at `at`. Returns 0, or -1 with VF_ECONFLICT when another writer
 * recorded members since (roll back, decide again; deferred on PostgreSQL,
 * the conflict comes with the commit), or another error. The members' hard
 * rules, policy and spread alike, hold across workers by this: a member
 * recorded since the read moves the generation, so a decision made without
 * it in view is rejected at commit. */
int store_group_claim(store *s, const char *name, const char *policy, int64_t max_per_host,
                      const store_group_spread *spread, int64_t expected, const char *at,
                      vf_error *err) __attribute__((warn_unused_result));

/* Mark the held reservations of `task_id` as members of group `name`
 * (after store_reservation_add, in the same transaction). Returns 0 or -1. */
int store_reservations_set_group(store *s, const char *task_id, const char *name, vf_error *err)
    __attribute__((warn_unused_result));

#endif
