#include "holds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"

const char *hold_task(const hold *h)
{
    return h->names;
}

const char *hold_node(const hold *h)
{
    return h->names + strlen(h->names) + 1;
}

void hold_to_reservation(const hold *h, sched_reservation *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->task_id, sizeof out->task_id, "%s", hold_task(h));
    snprintf(out->node, sizeof out->node, "%s", hold_node(h));
    out->cpu = h->cpu;
    out->memory = h->memory;
    out->disk = h->disk;
    out->vmid = h->vmid;
    out->expires = h->expires;
    out->has_priority = h->preemptible;
    out->priority = h->priority;
    out->created = h->created;
    out->kind = (sched_hold_kind)h->kind;
    if (h->resources)
        out->resources = *h->resources;
}

/* Custom resources held, order-free (a sum per resource), names in lower
 * case and amounts of 0 left out, as the store keeps them (schema/021):
 * the engine's hold and the row it is rebuilt from hash alike. */
static uint64_t resources_digest(const resource_amounts *amounts)
{
    uint64_t sum = 0;
    for (size_t i = 0; amounts && i < amounts->n; i++) {
        if (amounts->items[i].amount == 0)
            continue;
        char name[RESOURCE_NAME_LEN];
        size_t k = resource_name_lower(amounts->items[i].name, name);
        uint64_t h = hash_fnv1a(HASH_FNV1A_BASIS, name, k + 1);
        sum += hash_fnv1a(h, &amounts->items[i].amount, sizeof amounts->items[i].amount);
    }
    return sum;
}

/* The fields a decision depends on, hashed in a fixed order and width. */
static uint64_t entry_digest(const char *task, const char *node, double cpu, int64_t memory,
                             int64_t disk, uint32_t vmid, int64_t expires, bool preemptible,
                             int32_t priority, uint8_t kind, const resource_amounts *resources)
{
    uint64_t h = hash_fnv1a(HASH_FNV1A_BASIS, task, strlen(task) + 1);
    h = hash_fnv1a(h, node, strlen(node) + 1);
    int64_t numbers[5] = {(int64_t)(cpu * 1000.0 + (cpu < 0 ? -0.5 : 0.5)), memory, disk, vmid,
                          expires};
    h = hash_fnv1a(h, numbers, sizeof numbers);
    int32_t rank[3] = {preemptible, preemptible ? priority : 0, kind};
    h = hash_fnv1a(h, rank, sizeof rank);
    uint64_t held = resources_digest(resources);
    h = hash_fnv1a(h, &held, sizeof held);
    h ^= h >> 31;
    h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 29);
}

uint64_t holds_reservation_digest(const sched_reservation *res)
{
    /* Preemptible as holds_add makes it: only a full hold. */
    return entry_digest(res->task_id, res->node, res->cpu, res->memory, res->disk, res->vmid,
                        res->expires, res->has_priority && res->kind == SCHED_HOLD_FULL,
                        res->priority, (uint8_t)res->kind, &res->resources);
}

static uint64_t hold_digest(const hold *h)
{
    return entry_digest(hold_task(h), hold_node(h), h->cpu, h->memory, h->disk, h->vmid, h->expires,
                        h->preemptible, h->priority, h->kind, h->resources);
}

/* FNV-1a, then a final mix: task ids often differ only in their last
 * characters. */
static uint32_t hash_task(const char *task_id)
{
    uint64_t h = hash_fnv1a_text(task_id);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    return (uint32_t)h;
}

static void index_put(uint32_t *slots, size_t cap, uint32_t hash, size_t position)
{
    size_t i = hash & (cap - 1);
    while (slots[i] != 0)
        i = (i + 1) & (cap - 1);
    slots[i] = (uint32_t)(position + 1);
}

/* Size the index for `need` holds (load at most one half) and fill it from
 * the list. Returns 0, or -1 when out of memory (the old index kept). */
static int index_rebuild(holds *set, size_t need)
{
    size_t cap = set->cap_by_task ? set->cap_by_task : 64;
    while (need * 2 > cap)
        cap *= 2;
    uint32_t *slots = cap == set->cap_by_task ? set->by_task : calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    if (slots == set->by_task)
        memset(slots, 0, cap * sizeof *slots);
    else
        free(set->by_task);
    set->by_task = slots;
    set->cap_by_task = cap;
    for (size_t i = 0; i < set->n_held; i++)
        index_put(slots, cap, set->held[i].task_hash, i);
    return 0;
}

/* The slot holding position `position`, whose hold hashes to `hash`. */
static size_t index_slot_of(const holds *set, uint32_t hash, size_t position)
{
    size_t mask = set->cap_by_task - 1;
    size_t i = hash & mask;
    while (set->by_task[i] != position + 1)
        i = (i + 1) & mask;
    return i;
}

/* Empty slot `hole`, shifting back the entries after it whose probe chains
 * run through it. */
static void index_remove(holds *set, size_t hole)
{
    size_t mask = set->cap_by_task - 1;
    size_t j = hole;
    for (;;) {
        j = (j + 1) & mask;
        if (set->by_task[j] == 0)
            break;
        size_t home = set->held[set->by_task[j] - 1].task_hash & mask;
        bool home_between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!home_between) {
            set->by_task[hole] = set->by_task[j];
            hole = j;
        }
    }
    set->by_task[hole] = 0;
}

/* ---- by host ---- */

static void summary_clear(hold_host *hh)
{
    uint32_t head = hh->head;
    *hh = (hold_host){.head = head, .least_priority = INT32_MAX, .oldest = INT64_MAX};
}

/* Count preemptible hold `h` into its host's summary. */
static void summary_add(hold_host *hh, const hold *h)
{
    if (!h->preemptible)
        return;
    hh->preemptible++;
    if (h->priority < hh->least_priority)
        hh->least_priority = h->priority;
    if (h->created < hh->oldest)
        hh->oldest = h->created;
    hh->cpu += h->cpu;
    hh->memory += h->memory;
    hh->disk += h->disk;
    if (h->cpu > hh->most_cpu)
        hh->most_cpu = h->cpu;
    if (h->memory > hh->most_memory)
        hh->most_memory = h->memory;
    if (h->disk > hh->most_disk)
        hh->most_disk = h->disk;
}

static hold_host *host_of(holds *set, const hold *h)
{
    return h->host_index >= 0 && (size_t)h->host_index < set->n_hosts ? &set->hosts[h->host_index]
                                                                      : NULL;
}

/* Hold at `position` onto its host's list and summary. */
static void host_link(holds *set, size_t position)
{
    hold *h = &set->held[position];
    hold_host *hh = host_of(set, h);
    h->next_on_host = HOLDS_NONE;
    if (!hh)
        return;
    h->next_on_host = hh->head;
    hh->head = (uint32_t)position;
    summary_add(hh, h);
}

/* The link that points at `position` on its host's list (the head or a
 * hold's next), or NULL. */
static uint32_t *link_to(holds *set, hold_host *hh, size_t position)
{
    uint32_t *at = &hh->head;
    while (*at != HOLDS_NONE && *at != position)
        at = &set->held[*at].next_on_host;
    return *at == position ? at : NULL;
}

/* Count `hh`'s summary again from its list (a host holds a few dozen). */
static void summary_recount(holds *set, hold_host *hh)
{
    summary_clear(hh);
    for (uint32_t p = hh->head; p != HOLDS_NONE; p = set->held[p].next_on_host)
        summary_add(hh, &set->held[p]);
}

/* Hold at `position` off its host's list; the summary counted again from
 * what is left. */
static void host_unlink(holds *set, size_t position)
{
    hold_host *hh = host_of(set, &set->held[position]);
    uint32_t *at = hh ? link_to(set, hh, position) : NULL;
    if (!at)
        return;
    *at = set->held[position].next_on_host;
    summary_recount(set, hh);
}

void holds_unpreemptible(holds *set, hold *h)
{
    if (!h->preemptible)
        return;
    /* The digest follows: it is what the next decision is recorded over. */
    set->digest -= h->digest;
    h->preemptible = false;
    h->digest = hold_digest(h);
    set->digest += h->digest;
    hold_host *hh = host_of(set, h);
    if (hh && link_to(set, hh, (size_t)(h - set->held)))
        summary_recount(set, hh);
}

/* The hold at `from` moved to `to`: the link that pointed at it follows. */
static void host_moved(holds *set, size_t from, size_t to)
{
    hold_host *hh = host_of(set, &set->held[to]);
    uint32_t *at = hh ? link_to(set, hh, from) : NULL;
    if (at)
        *at = (uint32_t)to;
}

static void relink_all(holds *set)
{
    for (size_t i = 0; i < set->n_hosts; i++) {
        set->hosts[i].head = HOLDS_NONE;
        summary_clear(&set->hosts[i]);
    }
    for (size_t p = 0; p < set->n_held; p++)
        host_link(set, p);
}

int holds_index_hosts(holds *set, size_t n_hosts, vf_error *err)
{
    if (grow_array((void **)&set->hosts, &set->cap_hosts, n_hosts ? n_hosts : 1,
                   sizeof *set->hosts) < 0) {
        set->n_hosts = 0;
        relink_all(set);
        vf_error_set(err, VF_ENOMEM, "out of memory indexing reservations by host");
        return -1;
    }
    set->n_hosts = n_hosts;
    relink_all(set);
    return 0;
}

void holds_set_host(holds *set, hold *h, int32_t host_index)
{
    h->host_index = host_index;
    host_link(set, (size_t)(h - set->held));
}

const hold_host *holds_host(const holds *set, size_t host_index)
{
    return host_index < set->n_hosts ? &set->hosts[host_index] : NULL;
}

void holds_init(holds *set)
{
    memset(set, 0, sizeof *set);
    vmidset_init(&set->reserved_vmids);
}

void holds_close(holds *set)
{
    for (size_t i = 0; i < set->n_held; i++) {
        free(set->held[i].names);
        free(set->held[i].resources);
    }
    free(set->held);
    free(set->by_task);
    free(set->hosts);
    vmidset_close(&set->reserved_vmids);
    memset(set, 0, sizeof *set);
}

hold *holds_add(holds *set, const sched_reservation *res, vf_error *err)
{
    if (grow_array((void **)&set->held, &set->cap_held, set->n_held + 1, sizeof *set->held) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory holding a reservation");
        return NULL;
    }
    if ((set->n_held + 1) * 2 > set->cap_by_task && index_rebuild(set, set->n_held + 1) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory holding a reservation");
        return NULL;
    }
    if (res->vmid && vmidset_add(&set->reserved_vmids, res->vmid) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory holding vmid %u", res->vmid);
        return NULL;
    }
    size_t task_len = strnlen(res->task_id, sizeof res->task_id - 1);
    size_t node_len = strnlen(res->node, sizeof res->node - 1);
    char *names = malloc(task_len + node_len + 2);
    resource_amounts *resources = NULL;
    if (names && res->resources.n) {
        resources = malloc(sizeof *resources);
        if (resources)
            *resources = res->resources;
        else {
            free(names);
            names = NULL;
        }
    }
    if (!names) {
        if (res->vmid)
            vmidset_remove(&set->reserved_vmids, res->vmid);
        vf_error_set(err, VF_ENOMEM, "out of memory holding a reservation");
        return NULL;
    }
    memcpy(names, res->task_id, task_len);
    names[task_len] = '\0';
    memcpy(names + task_len + 1, res->node, node_len);
    names[task_len + 1 + node_len] = '\0';
    hold *h = &set->held[set->n_held++];
    *h = (hold){.names = names,
                .cpu = res->cpu,
                .memory = res->memory,
                .disk = res->disk,
                .expires = res->expires,
                .created = res->created,
                .vmid = res->vmid,
                .host_index = -1,
                .priority = res->priority,
                .preemptible = res->has_priority && res->kind == SCHED_HOLD_FULL,
                .kind = (uint8_t)res->kind,
                .task_hash = hash_task(names),
                .next_on_host = HOLDS_NONE,
                .resources = resources};
    index_put(set->by_task, set->cap_by_task, h->task_hash, set->n_held - 1);
    h->digest = hold_digest(h);
    set->digest += h->digest;
    if (res->expires > 0 && (set->earliest_expiry == 0 || res->expires < set->earliest_expiry))
        set->earliest_expiry = res->expires;
    return h;
}

size_t holds_drop_where(holds *set, bool (*ends)(const hold *, const void *), const void *arg,
                        void (*on_drop)(const hold *, void *), void *user)
{
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < set->n_held; i++) {
        hold *h = &set->held[i];
        if (!ends(h, arg)) {
            set->held[kept++] = *h;
            continue;
        }
        if (on_drop)
            on_drop(h, user);
        set->digest -= h->digest;
        if (h->vmid)
            vmidset_remove(&set->reserved_vmids, h->vmid);
        free(h->names);
        free(h->resources);
        dropped++;
    }
    set->n_held = kept;
    /* Positions moved: index them again (no larger, so it cannot fail). */
    if (dropped) {
        (void)index_rebuild(set, set->n_held);
        relink_all(set);
    }
    return dropped;
}

size_t holds_drop_task(holds *set, const char *task_id, void (*on_drop)(const hold *, void *),
                       void *user)
{
    if (!set->cap_by_task)
        return 0;
    uint32_t hash = hash_task(task_id);
    size_t mask = set->cap_by_task - 1, dropped = 0;
    size_t slot = hash & mask;
    while (set->by_task[slot] != 0) {
        size_t position = set->by_task[slot] - 1;
        hold *h = &set->held[position];
        if (h->task_hash != hash || strcmp(h->names, task_id) != 0) {
            slot = (slot + 1) & mask;
            continue;
        }
        if (on_drop)
            on_drop(h, user);
        set->digest -= h->digest;
        if (h->vmid)
            vmidset_remove(&set->reserved_vmids, h->vmid);
        host_unlink(set, position);
        free(h->names);
        free(h->resources);
        /* The slot now holds the next entry of the chain, if any: look
         * at it again. */
        index_remove(set, slot);
        size_t last = set->n_held - 1;
        if (position != last) {
            set->by_task[index_slot_of(set, set->held[last].task_hash, last)] =
                (uint32_t)(position + 1);
            set->held[position] = set->held[last];
            host_moved(set, last, position);
        }
        set->n_held--;
        dropped++;
    }
    return dropped;
}

void holds_recompute_expiry(holds *set)
{
    set->earliest_expiry = 0;
    for (size_t i = 0; i < set->n_held; i++) {
        int64_t e = set->held[i].expires;
        if (e > 0 && (set->earliest_expiry == 0 || e < set->earliest_expiry))
            set->earliest_expiry = e;
    }
}

bool holds_has(const holds *set, const char *task_id, const char *node, uint32_t vmid)
{
    if (!set->cap_by_task)
        return false;
    uint32_t hash = hash_task(task_id);
    size_t mask = set->cap_by_task - 1;
    for (size_t slot = hash & mask; set->by_task[slot] != 0; slot = (slot + 1) & mask) {
        const hold *h = &set->held[set->by_task[slot] - 1];
        if (h->task_hash == hash && h->vmid == vmid && strcmp(hold_task(h), task_id) == 0 &&
            strcmp(hold_node(h), node) == 0)
            return true;
    }
    return false;
}
