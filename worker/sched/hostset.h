/* hostset: the inventory the scheduler decides over, as plain data.
 *
 * A snapshot of hosts plus the set of vmids the cluster already uses (VMs,
 * containers, templates). Sources in worker/inventory/ build one; the engine
 * reads it and never changes it, so one snapshot can serve many decisions
 * while the next one is being fetched. No I/O here. */
#ifndef VF_HOSTSET_H
#define VF_HOSTSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "traits.h"
#include "vf_error.h"

#define HOST_NAME_LEN 64 /* bytes incl. NUL; longer names are rejected */
#define HOST_IP_LEN 64
#define HOST_POOL_LEN 64
#define HOST_MODEL_LEN 96

#define VMID_MIN 100u       /* Proxmox reserves ids below 100 */
#define VMID_MAX 999999999u /* Proxmox's upper bound */

typedef enum {
    HOST_ONLINE = 0,
    HOST_OFFLINE,
    HOST_MAINTENANCE,
    HOST_UNKNOWN,
} host_status;

typedef struct host {
    char name[HOST_NAME_LEN];
    char ip[HOST_IP_LEN];
    char pool[HOST_POOL_LEN];
    char model[HOST_MODEL_LEN];
    bool dedicated;
    host_status status;
    double cpu;               /* physical cores (or threads) the host offers */
    int64_t memory;           /* MiB, total */
    int64_t storage;          /* GiB free for new VM disks */
    double usage_cpu;         /* measured utilisation, fraction 0..1 */
    double usage_mem;         /* measured utilisation, fraction 0..1 */
    double allocated_cpu;     /* vCPUs already committed to guests */
    int64_t allocated_memory; /* MiB already committed to guests */
    int32_t max_vms;          /* guest slots; 0 means no VM may be placed */
    int32_t current_vms;      /* guests on the host now */
    uint32_t pool_id;         /* set by hostset_finish: index into interned pools */
    /* Whether usage_cpu / usage_mem were measured (else 0 and unknown). Last,
     * in what was padding, so the record keeps its size. */
    bool has_usage_cpu;
    bool has_usage_mem;
    /* Traits, custom resources and topology labels (traits.h, labels.h),
     * NULL for most hosts. The caller of hostset_add may point it at its
     * own; the set keeps a copy (NULL when empty), valid until the set is
     * freed. Read only by the Traits, Resources and TopologySpread filters,
     * and only for requests that ask. */
    const host_traits *traits;
} host;

/* A guest the inventory places on one of its hosts: a reservation ends only
 * when its vmid shows up on the reservation's own host (the same vmid on
 * another host is someone else's guest, or a stale record). */
typedef struct hostset_guest {
    uint32_t vmid;
    uint32_t host_index; /* into hosts; after hostset_finish, of the sorted array */
} hostset_guest;

typedef struct hostset {
    host *hosts; /* owned; sorted by name after hostset_finish */
    size_t n_hosts;
    size_t cap_hosts;
    uint32_t *used_vmids; /* owned; sorted, unique after hostset_finish */
    size_t n_used_vmids;
    size_t cap_used_vmids;
    char (*pools)[HOST_POOL_LEN]; /* owned; distinct pool names, after hostset_finish */
    size_t n_pools;
    hostset_guest *guests; /* owned; which host each known guest is on, sorted after finish */
    size_t n_guests;
    size_t cap_guests;
    /* owned; after hostset_finish, host index + 1 by a hash of the name (0:
     * empty), n_name_slots a power of two over twice n_hosts: hostset_find
     * in one probe or so, not a binary search over the large host records
     * (a scrape looks up every live reservation's node). */
    uint32_t *name_slots;
    size_t n_name_slots;
} hostset;

/* Returns an empty set, or NULL when out of memory. */
hostset *hostset_new(void);
void hostset_free(hostset *set);

/* Append a copy of `h` (and of what h->traits points to). Returns 0, or -1
 * (out of memory; err filled). */
int hostset_add(hostset *set, const host *h, vf_error *err) __attribute__((warn_unused_result));
/* Replace the traits, resources and labels of host number `index` (as hostset_add
 * counts; before hostset_finish) with a copy of `traits` (NULL or empty:
 * none). Returns 0, or -1 (out of memory, or no such host; err filled). */
int hostset_set_traits(hostset *set, size_t index, const host_traits *traits, vf_error *err)
    __attribute__((warn_unused_result));
/* Record a vmid as used. Returns 0, or -1 (out of memory; err filled). */
int hostset_add_vmid(hostset *set, uint32_t vmid, vf_error *err)
    __attribute__((warn_unused_result));

/* Record vmid as used and as a guest of host number `host_index` (the
 * position hostset_add gave it, counting from 0). Returns 0, or -1 (out of
 * memory, or no such host; err filled). */
int hostset_add_guest(hostset *set, uint32_t vmid, size_t host_index, vf_error *err)
    __attribute__((warn_unused_result));

/* Sort hosts by name, sort and dedupe vmids, intern pools. Duplicate host
 * names are an error (VF_EINVAL naming the host). Call once after the last add. */
int hostset_finish(hostset *set, vf_error *err) __attribute__((warn_unused_result));

/* Binary search by name; NULL when absent. Valid until the set is freed. */
const host *hostset_find(const hostset *set, const char *name);
/* Index of an interned pool name, or -1 when no host has that pool. */
int hostset_pool_id(const hostset *set, const char *pool);
bool hostset_vmid_used(const hostset *set, uint32_t vmid);
/* Whether the inventory shows guest `vmid` on the host named `name`. */
bool hostset_guest_on(const hostset *set, uint32_t vmid, const char *name);
/* Whether the host named `name` counts its guests' custom resources itself
 * (traits.h counts_allocated); a host the set lacks does not. */
bool hostset_counts_resources(const hostset *set, const char *name);

const char *host_status_name(host_status status);
/* "online", "offline", "maintenance", "unknown" (Proxmox also says "unknown"). -1 if none. */
int host_status_parse(const char *text, host_status *out);

#endif
