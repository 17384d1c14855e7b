/* holds: the reservations an engine holds, compactly, and the vmids they
 * keep taken, indexed by task id and by host.
 *
 * A busy worker holds one per placement for reservation_ttl_s (100,000 is
 * ordinary), so each is a few numbers and one allocation for its two names.
 * What a hold does to the hosts' free capacity and to the engine's vmid hints
 * is the engine's (engine.c, vmid_hints.h): this module only keeps the list, the set of
 * reserved vmids, the earliest expiry, an index by task id (a release or
 * a replay ends one task's holds among 100,000 without a scan), and per host
 * of the engine's snapshot its holds and what its preemptible ones amount
 * to (preemption finds its host without walking every hold: preempt.c).
 * No I/O. */
#ifndef VF_HOLDS_H
#define VF_HOLDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched_reservation.h"
#include "vf_error.h"
#include "vmidset.h"

/* A reservation as the engine holds it. */
typedef struct hold {
    char *names;           /* owned: "<task id>\0<node>\0" in one allocation */
    double cpu;            /* vCPUs */
    int64_t memory;        /* MiB */
    int64_t disk;          /* GiB */
    int64_t expires;       /* Unix seconds; 0 = never */
    int64_t created;       /* Unix ms (preemption: newest first among equals) */
    uint32_t vmid;         /* 0 = none */
    int32_t host_index;    /* the engine's: in its current snapshot, -1 when the node is absent */
    int32_t priority;      /* when preemptible */
    bool preemptible;      /* has a priority and no VM yet (sched_reservation.has_priority) */
    uint8_t kind;          /* sched_hold_kind: only FULL takes a guest slot */
    uint32_t task_hash;    /* of the task id, for the index */
    uint32_t next_on_host; /* the position of the next hold on its host, HOLDS_NONE */
    uint64_t digest; /* what it added to the set's digest (holds.c), taken back when it ends */
    resource_amounts *resources; /* owned; NULL: no custom resource held (the common case) */
} hold;

#define HOLDS_NONE UINT32_MAX

/* One host's holds (by host_index), and over its preemptible ones (those
 * with a priority) what preemption's bounds read: how many, the lowest
 * priority, the oldest, and what they hold in all and at most one. */
typedef struct hold_host {
    uint32_t head; /* the position of its first hold, HOLDS_NONE */
    uint32_t preemptible;
    int32_t least_priority;
    int64_t oldest;              /* created, Unix ms */
    double cpu, most_cpu;        /* vCPUs */
    int64_t memory, most_memory; /* MiB */
    int64_t disk, most_disk;     /* GiB */
} hold_host;

/* Borrowed: valid while the hold is. */
const char *hold_task(const hold *h);
const char *hold_node(const hold *h);
void hold_to_reservation(const hold *h, sched_reservation *out);

/* A value type the engine embeds: holds_init, then holds_close. The fields
 * are for reading; change them through the functions below. */
typedef struct holds {
    hold *held; /* in no particular order */
    size_t n_held, cap_held;
    /* Open addressing over the task ids (linear probing, backward-shift
     * deletion): 0 an empty slot, else 1 + an index into held. */
    uint32_t *by_task;
    size_t cap_by_task;      /* a power of two, or 0 */
    vmidset reserved_vmids;  /* the vmids of the holds that have one */
    int64_t earliest_expiry; /* no hold expires before this; 0 = none expire */
    hold_host *hosts;        /* per host of the engine's snapshot (holds_index_hosts) */
    size_t n_hosts, cap_hosts;
    /* The sum (mod 2^64) of every hold's holds_reservation_digest: a record
     * of what a decision was made over (issue 39) that costs O(1) per change
     * and does not depend on the holds' order. 0 when none are held. */
    uint64_t digest;
} holds;

/* The digest of one reservation as held: task, node, vCPUs, MiB, GiB, vmid,
 * expiry (seconds), the priority when preemptible, the hold's kind
 * (sched_hold_kind: a vmid-only or resources-only hold is not a full one)
 * and its custom resources. Not the creation time (preemption's tie-break
 * among equals). */
uint64_t holds_reservation_digest(const sched_reservation *res);

void holds_init(holds *set);
void holds_close(holds *set);

/* Hold `res` at the end of the list. Returns the new hold (host_index -1,
 * valid until the list next changes), or NULL with VF_ENOMEM in err, the
 * list unchanged. */
hold *holds_add(holds *set, const sched_reservation *res, vf_error *err)
    __attribute__((warn_unused_result));

/* Drop every hold of `task_id` (any number, spares have several); the
 * others may change places. on_drop as for holds_drop_where. Returns how
 * many were dropped. earliest_expiry is left as it was. */
size_t holds_drop_task(holds *set, const char *task_id, void (*on_drop)(const hold *, void *),
                       void *user);

/* Drop every hold for which ends(hold, arg) is true, keeping the others in
 * their order; on_drop (may be NULL) sees each dropped hold before it is
 * freed, while its vmid is still in reserved_vmids. Returns how many were
 * dropped. earliest_expiry is left as it was (holds_recompute_expiry). */
size_t holds_drop_where(holds *set, bool (*ends)(const hold *, const void *), const void *arg,
                        void (*on_drop)(const hold *, void *), void *user);

/* Whether a hold of `task_id` on `node` with `vmid` (0: none) is held. */
bool holds_has(const holds *set, const char *task_id, const char *node, uint32_t vmid);

/* Hold `h` may no longer be preempted (its host's summary follows). */
void holds_unpreemptible(holds *set, hold *h);

/* Set earliest_expiry from the holds left. */
void holds_recompute_expiry(holds *set);

/* Index every hold by its host_index, for a snapshot of `n_hosts` hosts (a
 * hold with host_index -1 is on none). Returns 0, or -1 with VF_ENOMEM (the
 * index is then empty: holds_host says so for every host). */
int holds_index_hosts(holds *set, size_t n_hosts, vf_error *err)
    __attribute__((warn_unused_result));
/* Put hold `h` (just added, on no host yet) on host `host_index` (-1: on
 * none) of the indexed snapshot. */
void holds_set_host(holds *set, hold *h, int32_t host_index);
/* Host `host_index`'s holds (walk them from ->head by next_on_host); NULL
 * when the host is not indexed. Valid until the list next changes. */
const hold_host *holds_host(const holds *set, size_t host_index);

#endif
