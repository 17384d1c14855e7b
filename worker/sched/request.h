/* request: what a client asks for when it publishes task.schedule
 * (docs/contracts.md "Requests"), parsed and checked field by field.
 *
 * Parsing only checks form: types, ranges, lengths. Whether the annotations'
 * regexes and vmid range are well formed is checked by the engine's
 * pre-filter, which compiles them (so an invalid one is reported once, with
 * the same words, whether it came from the broker or from virtflowctl). An
 * unknown pool is not an error: it yields an unschedulable decision. */
#ifndef VF_REQUEST_H
#define VF_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "hostset.h"
#include "traits.h"
#include "vf_error.h"

#define REQUEST_TASK_ID_LEN 129 /* 1..128 characters + NUL */
#define REQUEST_VM_NAME_LEN 64
#define REQUEST_ANNOTATION_LEN 257      /* annotation values up to 256 characters + NUL */
#define REQUEST_MAX_CPU 1024            /* vCPUs */
#define REQUEST_MAX_MEMORY (16LL << 20) /* MiB: 16 TiB */
#define REQUEST_MAX_DISK (1LL << 20)    /* GiB: 1 PiB */

/* Characters allowed in a task id (docs/contracts.md): [A-Za-z0-9._:-]. */
extern const char request_task_id_chars[];

#define ANNOTATION_NODE_REGEX "node.qemu-scheduler/regex"
/* Not one of qemu-scheduler's annotation keys (its NodeName plugin reads the
 * name from its own context); the same prefix, so CAPPX manifests can carry it. */
#define ANNOTATION_NODE_NAME "node.qemu-scheduler/name"
#define ANNOTATION_VMID_RANGE "vmid.qemu-scheduler/range"
#define ANNOTATION_VMID_REGEX "vmid.qemu-scheduler/regex"
/* The scheduling profile (scheduler.profiles), as scheduler_name; the same
 * prefix style, so CAPPX manifests can carry it. */
#define ANNOTATION_SCHEDULER_NAME "scheduler.qemu-scheduler/name"
#define REQUEST_SCHEDULER_NAME_LEN 64 /* 1..63 characters + NUL */
#define REQUEST_GROUP_NAME_LEN 64     /* 1..63 characters + NUL */
#define REQUEST_MAX_COUNT 64          /* VMs one task.schedule places (count) */
#define REQUEST_MAX_PER_HOST 1024     /* group.max_per_host */

/* A group's policy (docs/scheduling.md "Groups"), as Nova server groups:
 * the hard ones filter hosts, the soft ones score them. */
typedef enum {
    SCHED_GROUP_NONE = 0, /* not a group member */
    SCHED_GROUP_AFFINITY,
    SCHED_GROUP_ANTI_AFFINITY,
    SCHED_GROUP_SOFT_AFFINITY,
    SCHED_GROUP_SOFT_ANTI_AFFINITY,
} sched_group_policy;

/* "affinity", "anti-affinity", ...; "" for SCHED_GROUP_NONE. */
const char *sched_group_policy_name(sched_group_policy policy);

#define REQUEST_MAX_SKEW 1000    /* spread.max_skew */
#define REQUEST_MAX_DOMAINS 1000 /* spread.min_domains */

/* A topology spread (docs/scheduling.md "Failure domains and topology
 * spread"), Kubernetes' topologySpreadConstraints over hosts' labels: the
 * VMs counted (the request's own `count`, and its group's members when it
 * names a group) stay within max_skew of each other across the domains of
 * `key`. */
typedef struct sched_spread {
    char key[LABEL_KEY_LEN]; /* "" when the request asks none */
    int32_t max_skew;        /* >= 1, default 1 */
    bool soft;               /* when_unsatisfiable: score (a preference); false: do_not_schedule */
    int32_t min_domains;     /* >= 1, default 1; only with do_not_schedule */
} sched_spread;

/* "do_not_schedule" or "score". */
const char *sched_spread_when_name(bool soft);

typedef struct sched_request {
    char task_id[REQUEST_TASK_ID_LEN]; /* "" when the body has none */
    int32_t cpu;                       /* vCPUs, >= 1 */
    int64_t memory;                    /* MiB, >= 1 */
    int64_t disk;                      /* GiB, >= 0 */
    char pool[HOST_POOL_LEN];          /* default "default" */
    bool dedicated;
    char vm_name[REQUEST_VM_NAME_LEN]; /* "" when absent */
    /* The exact host wanted (the request's node_name, or the annotation
     * node.qemu-scheduler/name; both given must agree); "" = any. */
    char node_name[HOST_NAME_LEN];
    /* The scheduling profile (scheduler_name, or the annotation
     * scheduler.qemu-scheduler/name; both given must agree); "" = default. */
    char scheduler_name[REQUEST_SCHEDULER_NAME_LEN];
    /* Annotation values, "" when absent. Other annotation keys are accepted
     * and ignored: CAPPX passes a machine's annotations as they are. */
    char node_regex[REQUEST_ANNOTATION_LEN];
    char vmid_range[REQUEST_ANNOTATION_LEN];
    char vmid_regex[REQUEST_ANNOTATION_LEN];
    /* priority (has_priority) and/or priority_class ("" = none), as given;
     * queue_order_priority resolves them against scheduler.priority_classes. */
    bool has_priority;
    int32_t priority;
    char priority_class[REQUEST_SCHEDULER_NAME_LEN];
    /* group {name, policy, max_per_host}: "" / SCHED_GROUP_NONE when absent
     * (a group may go without a policy when the request has a spread: its
     * members then only count for the spread). max_per_host: members one
     * host may hold, 0 = no cap; anti-affinity without one means 1. */
    char group[REQUEST_GROUP_NAME_LEN];
    sched_group_policy group_policy;
    int32_t group_max_per_host;
    /* VMs to place, all or none, in one decision: 1..REQUEST_MAX_COUNT. */
    int32_t count;
    sched_spread spread;
    /* Traits a host must carry, and must not; custom resources wanted
     * (traits.h). Empty for most requests: the engine then skips their
     * filters altogether. */
    trait_set required_traits;
    trait_set forbidden_traits;
    resource_amounts resources;
} sched_request;

/* Whether `req` asks for any trait or custom resource. */
static inline bool sched_request_has_traits(const sched_request *req)
{
    return req->required_traits.n || req->forbidden_traits.n || req->resources.n;
}

/* Fill `out` with defaults: pool "default", disk 0, not dedicated, no annotations,
 * count 1, no group, no spread. */
void sched_request_init(sched_request *out);

/* Parse the placement fields shared by task.schedule and spare.prepare
 * (requested_*, dedicated, annotations, required_traits, forbidden_traits,
 * resources) from `body` into `out`, which must
 * be initialised. Does not reject unknown keys (the caller knows its kind). */
int sched_request_parse_placement(const json_t *body, sched_request *out, vf_error *err)
    __attribute__((warn_unused_result));

/* Parse a whole task.schedule body. Unknown top-level fields are errors.
 * Returns 0, or -1 with err (VF_EINVAL) naming the field. */
int sched_request_parse(const json_t *body, sched_request *out, vf_error *err)
    __attribute__((warn_unused_result));

/* The request as JSON (for the task row and `place --json`). Owned; NULL on OOM. */
json_t *sched_request_to_json(const sched_request *req);

#endif
