#include "hostset.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"

hostset *hostset_new(void)
{
    return calloc(1, sizeof(hostset));
}

void hostset_free(hostset *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n_hosts; i++)
        free((host_traits *)set->hosts[i].traits);
    free(set->hosts);
    free(set->used_vmids);
    free(set->pools);
    free(set->guests);
    free(set->name_slots);
    free(set);
}

int hostset_add(hostset *set, const host *h, vf_error *err)
{
    if (grow_array((void **)&set->hosts, &set->cap_hosts, set->n_hosts + 1, sizeof(host)) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory adding host %s", h->name);
        return -1;
    }
    host_traits *traits = NULL;
    if (!host_traits_empty(h->traits)) {
        traits = malloc(sizeof *traits);
        if (!traits) {
            vf_error_set(err, VF_ENOMEM, "out of memory adding host %s", h->name);
            return -1;
        }
        *traits = *h->traits;
    }
    set->hosts[set->n_hosts] = *h;
    set->hosts[set->n_hosts++].traits = traits;
    free(set->name_slots); /* stale until the next hostset_finish */
    set->name_slots = NULL;
    set->n_name_slots = 0;
    return 0;
}

int hostset_set_traits(hostset *set, size_t index, const host_traits *traits, vf_error *err)
{
    if (index >= set->n_hosts) {
        vf_error_set(err, VF_EINVAL, "no host number %zu", index);
        return -1;
    }
    host_traits *copy = NULL;
    if (!host_traits_empty(traits)) {
        copy = malloc(sizeof *copy);
        if (!copy) {
            vf_error_set(err, VF_ENOMEM, "out of memory adding traits to host %s",
                         set->hosts[index].name);
            return -1;
        }
        *copy = *traits;
    }
    free((host_traits *)set->hosts[index].traits);
    set->hosts[index].traits = copy;
    return 0;
}

int hostset_add_vmid(hostset *set, uint32_t vmid, vf_error *err)
{
    if (grow_array((void **)&set->used_vmids, &set->cap_used_vmids, set->n_used_vmids + 1,
                   sizeof(uint32_t)) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory adding vmid %u", vmid);
        return -1;
    }
    set->used_vmids[set->n_used_vmids++] = vmid;
    return 0;
}

int hostset_add_guest(hostset *set, uint32_t vmid, size_t host_index, vf_error *err)
{
    if (host_index >= set->n_hosts) {
        vf_error_set(err, VF_EINTERNAL, "guest %u on host number %zu of %zu", vmid, host_index,
                     set->n_hosts);
        return -1;
    }
    if (hostset_add_vmid(set, vmid, err) < 0)
        return -1;
    if (grow_array((void **)&set->guests, &set->cap_guests, set->n_guests + 1,
                   sizeof(hostset_guest)) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory adding guest %u", vmid);
        return -1;
    }
    set->guests[set->n_guests++] = (hostset_guest){vmid, (uint32_t)host_index};
    return 0;
}

static int compare_guests(const void *a, const void *b)
{
    const hostset_guest *x = a, *y = b;
    if (x->vmid != y->vmid)
        return (x->vmid > y->vmid) - (x->vmid < y->vmid);
    return (x->host_index > y->host_index) - (x->host_index < y->host_index);
}

static int compare_hosts(const void *a, const void *b)
{
    return strcmp(((const host *)a)->name, ((const host *)b)->name);
}

static int compare_vmids(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* FNV-1a over the name's bytes. */
static size_t name_hash(const char *name)
{
    return (size_t)hash_fnv1a_text(name);
}

/* name_slots for the sorted hosts (open addressing, linear probing). */
static int index_names(hostset *set, vf_error *err)
{
    free(set->name_slots);
    set->name_slots = NULL;
    set->n_name_slots = 0;
    if (set->n_hosts == 0 || set->n_hosts >= UINT32_MAX / 4)
        return 0; /* hostset_find searches the sorted array instead */
    size_t n = 16;
    while (n < set->n_hosts * 2)
        n *= 2;
    if (!(set->name_slots = calloc(n, sizeof *set->name_slots))) {
        vf_error_set(err, VF_ENOMEM, "out of memory indexing host names");
        return -1;
    }
    set->n_name_slots = n;
    for (size_t i = 0; i < set->n_hosts; i++) {
        size_t slot = name_hash(set->hosts[i].name) & (n - 1);
        while (set->name_slots[slot])
            slot = (slot + 1) & (n - 1);
        set->name_slots[slot] = (uint32_t)(i + 1);
    }
    return 0;
}

int hostset_finish(hostset *set, vf_error *err)
{
    /* Guests name their host by its position before sorting: pool_id is only
     * assigned further down, so until then it carries that position, and
     * the guests are renumbered from it once the hosts are in name order. */
    for (size_t i = 0; i < set->n_hosts; i++)
        set->hosts[i].pool_id = (uint32_t)i;
    /* qsort must not see the NULL array of an empty set (UBSan flags it). */
    if (set->n_hosts)
        qsort(set->hosts, set->n_hosts, sizeof(host), compare_hosts);
    if (set->n_guests) {
        uint32_t *sorted_at = malloc(set->n_hosts * sizeof *sorted_at);
        if (!sorted_at) {
            vf_error_set(err, VF_ENOMEM, "out of memory placing guests on hosts");
            return -1;
        }
        for (size_t i = 0; i < set->n_hosts; i++)
            sorted_at[set->hosts[i].pool_id] = (uint32_t)i;
        for (size_t i = 0; i < set->n_guests; i++)
            set->guests[i].host_index = sorted_at[set->guests[i].host_index];
        free(sorted_at);
        qsort(set->guests, set->n_guests, sizeof(hostset_guest), compare_guests);
    }
    for (size_t i = 1; i < set->n_hosts; i++) {
        if (strcmp(set->hosts[i - 1].name, set->hosts[i].name) == 0) {
            vf_error_set(err, VF_EINVAL, "host %s is listed twice", set->hosts[i].name);
            return -1;
        }
    }
    if (set->n_used_vmids)
        qsort(set->used_vmids, set->n_used_vmids, sizeof(uint32_t), compare_vmids);
    size_t unique = 0;
    for (size_t i = 0; i < set->n_used_vmids; i++)
        if (unique == 0 || set->used_vmids[unique - 1] != set->used_vmids[i])
            set->used_vmids[unique++] = set->used_vmids[i];
    set->n_used_vmids = unique;

    free(set->pools);
    set->pools = NULL;
    set->n_pools = 0;
    if (set->n_hosts) {
        set->pools = calloc(set->n_hosts, HOST_POOL_LEN);
        if (!set->pools) {
            vf_error_set(err, VF_ENOMEM, "out of memory interning pools");
            return -1;
        }
    }
    for (size_t i = 0; i < set->n_hosts; i++) {
        int id = hostset_pool_id(set, set->hosts[i].pool);
        if (id < 0) {
            memcpy(set->pools[set->n_pools], set->hosts[i].pool, HOST_POOL_LEN);
            id = (int)set->n_pools++;
        }
        set->hosts[i].pool_id = (uint32_t)id;
    }
    return index_names(set, err);
}

const host *hostset_find(const hostset *set, const char *name)
{
    if (set->name_slots) {
        size_t mask = set->n_name_slots - 1;
        for (size_t slot = name_hash(name) & mask;; slot = (slot + 1) & mask) {
            uint32_t at = set->name_slots[slot];
            if (at == 0)
                return NULL;
            if (strcmp(set->hosts[at - 1].name, name) == 0)
                return &set->hosts[at - 1];
        }
    }
    size_t lo = 0, hi = set->n_hosts;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(set->hosts[mid].name, name);
        if (c == 0)
            return &set->hosts[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int hostset_pool_id(const hostset *set, const char *pool)
{
    /* Pools are few (a handful per site); a linear scan beats hashing here. */
    for (size_t i = 0; i < set->n_pools; i++)
        if (strcmp(set->pools[i], pool) == 0)
            return (int)i;
    return -1;
}

bool hostset_vmid_used(const hostset *set, uint32_t vmid)
{
    if (!set->n_used_vmids) /* bsearch must not see a NULL array either */
        return false;
    return bsearch(&vmid, set->used_vmids, set->n_used_vmids, sizeof(uint32_t), compare_vmids) !=
           NULL;
}

const char *host_status_name(host_status status)
{
    switch (status) {
    case HOST_ONLINE:
        return "online";
    case HOST_OFFLINE:
        return "offline";
    case HOST_MAINTENANCE:
        return "maintenance";
    case HOST_UNKNOWN:
        return "unknown";
    }
    return "unknown";
}

int host_status_parse(const char *text, host_status *out)
{
    static const host_status all[] = {HOST_ONLINE, HOST_OFFLINE, HOST_MAINTENANCE, HOST_UNKNOWN};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(text, host_status_name(all[i])) == 0) {
            *out = all[i];
            return 0;
        }
    }
    return -1;
}

bool hostset_counts_resources(const hostset *set, const char *name)
{
    const host *h = hostset_find(set, name);
    return h && h->traits && h->traits->counts_allocated;
}

bool hostset_guest_on(const hostset *set, uint32_t vmid, const char *name)
{
    const host *h = hostset_find(set, name);
    if (!h || !set->n_guests)
        return false;
    hostset_guest key = {vmid, (uint32_t)(h - set->hosts)};
    return bsearch(&key, set->guests, set->n_guests, sizeof(hostset_guest), compare_guests) != NULL;
}
