/* traits: what a host offers beyond CPU, memory and disk, and what a request
 * asks of it, as OpenStack Placement has them (docs/scheduling.md "Traits
 * and custom resources").
 *
 *   traits     a small set of names a host carries ("CUSTOM_GPU_A100",
 *              "ssd", "nvme"); a request lists required_traits (every one
 *              must be there) and forbidden_traits (none may be). Names are
 *              free: OpenStack's CUSTOM_* style or any other, of
 *              [A-Za-z0-9_.:+-], compared without regard to case (Proxmox
 *              lowercases what its users type; Placement uppercases).
 *   resources  a few named integer amounts a host has in total ("gpu": 2);
 *              a request asks amounts of them, which a placement holds
 *              until its guest shows up in the inventory, as vCPUs are.
 *
 * Fixed capacity, plain values: a host record and a request carry them
 * inline, nothing to free. No I/O. */
#ifndef VF_TRAITS_H
#define VF_TRAITS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "labels.h"
#include "vf_error.h"

#define TRAIT_NAME_LEN 40    /* 1..39 characters + NUL */
#define TRAITS_MAX 16        /* per host, and per list of a request */
#define RESOURCE_NAME_LEN 24 /* 1..23 characters + NUL */
#define RESOURCES_MAX 4      /* per host, and per request */
#define RESOURCE_MAX_AMOUNT 1000000

/* Characters of a trait or resource name. */
extern const char traits_name_chars[];

typedef struct trait_set {
    uint8_t n;
    char names[TRAITS_MAX][TRAIT_NAME_LEN];
} trait_set;

typedef struct resource_amount {
    char name[RESOURCE_NAME_LEN];
    int64_t amount; /* units of the resource, >= 0 */
} resource_amount;

typedef struct resource_amounts {
    uint8_t n;
    resource_amount items[RESOURCES_MAX];
} resource_amounts;

/* What one host carries: kept out of the host record (host.traits points
 * here), so hosts without any cost a pointer, not a kilobyte. Its topology
 * labels (labels.h) ride along for the same reason. */
typedef struct host_traits {
    trait_set traits;
    resource_amounts resources; /* totals */
    /* What the host's guests hold of them, when the inventory says
     * (allocated_resources, as allocated_cpu for vCPUs): its figures then
     * count a VM's custom resources once it appears, as they count its
     * vCPUs. Without it (counts_allocated false), a reservation bound to
     * its VM goes on holding them while the VM exists (docs/guarantees.md
     * "The ledger"). */
    resource_amounts allocated;
    bool counts_allocated;
    label_set labels;
} host_traits;

/* Whether `ht` carries nothing (a host then needs no host_traits). */
static inline bool host_traits_empty(const host_traits *ht)
{
    return !ht || (!ht->traits.n && !ht->resources.n && !ht->counts_allocated && !ht->labels.n);
}

/* Whether `set` holds `name` (case-insensitive). */
bool trait_set_has(const trait_set *set, const char *name);
/* Add `name` (a repeat is no error and adds nothing). Returns 0, or -1 with
 * err (VF_EINVAL): bad name, or more than TRAITS_MAX. */
int trait_set_add(trait_set *set, const char *name, vf_error *err)
    __attribute__((warn_unused_result));

/* Position of `name` in `set` (case-insensitive), or -1. */
int resource_amounts_find(const resource_amounts *set, const char *name);
/* The amount of `name`, 0 when absent. */
int64_t resource_amounts_get(const resource_amounts *set, const char *name);
/* Set `name` to `amount` (0..RESOURCE_MAX_AMOUNT). Returns 0, or -1 with err
 * (VF_EINVAL): bad name or amount, or more than RESOURCES_MAX names. */
int resource_amounts_set(resource_amounts *set, const char *name, int64_t amount, vf_error *err)
    __attribute__((warn_unused_result));

/* Parse a JSON list of names into `out` (emptied first); NULL or null is the
 * empty list. err names `what` ("required_traits[2]: ..."). */
int trait_set_parse(const json_t *list, const char *what, trait_set *out, vf_error *err)
    __attribute__((warn_unused_result));
/* `name` in lower case into `out` (cut to RESOURCE_NAME_LEN - 1): how the
 * store keeps and the claims compare a custom resource's name. Returns its
 * length. */
size_t resource_name_lower(const char *name, char out[RESOURCE_NAME_LEN]);

/* Parse a JSON object {"name": whole number >= 0, ...} into `out` (emptied
 * first); NULL or null is the empty object. A real like 2.0 is taken. */
int resource_amounts_parse(const json_t *object, const char *what, resource_amounts *out,
                           vf_error *err) __attribute__((warn_unused_result));

/* A host's (NULL: none): whether it carries trait `name`; the position of
 * resource `name` in its resources (-1: none); the total of it (0: none). */
static inline bool host_traits_has(const host_traits *ht, const char *name)
{
    return ht && trait_set_has(&ht->traits, name);
}
static inline int host_traits_find(const host_traits *ht, const char *name)
{
    return ht ? resource_amounts_find(&ht->resources, name) : -1;
}
static inline int64_t host_traits_amount(const host_traits *ht, const char *name)
{
    return ht ? resource_amounts_get(&ht->resources, name) : 0;
}
/* A host's (NULL: none) value of label `key`, or NULL. */
static inline const char *host_traits_label(const host_traits *ht, const char *key)
{
    return ht ? label_set_get(&ht->labels, key) : NULL;
}

/* As JSON, owned (NULL on OOM): a list of names; an object of amounts. */
json_t *trait_set_to_json(const trait_set *set);
json_t *resource_amounts_to_json(const resource_amounts *set);

#endif
