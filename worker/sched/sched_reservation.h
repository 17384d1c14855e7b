/* sched_reservation: what a reservation is, as callers give it to the
 * engine (sched_engine_reserve) and get it back (on_materialised), and as
 * the engine's holds keep it (holds.h). */
#ifndef VF_SCHED_RESERVATION_H
#define VF_SCHED_RESERVATION_H

#include <stdbool.h>
#include <stdint.h>

#include "hostset.h"
#include "request.h"
#include "traits.h"

/* What a reservation holds. */
typedef enum {
    SCHED_HOLD_FULL = 0,       /* vCPUs, memory, disk, a guest slot, its vmid, custom resources */
    SCHED_HOLD_RESOURCES_ONLY, /* custom resources alone: bound to a VM the inventory counts
                                  otherwise, on a host that does not report its guests' custom
                                  resources (traits.h counts_allocated) */
    SCHED_HOLD_VMID_ONLY,      /* its vmid alone: what a preempted placement leaves until its time
                                  runs out, as its client may be creating that VM */
} sched_hold_kind;

typedef struct sched_reservation {
    char task_id[REQUEST_TASK_ID_LEN];
    char node[HOST_NAME_LEN];
    double cpu;      /* vCPUs */
    int64_t memory;  /* MiB */
    int64_t disk;    /* GiB */
    uint32_t vmid;   /* 0 = none */
    int64_t expires; /* Unix seconds; 0 = never */
    /* Preemption (preempt.h): a reservation with a priority, whose VM has
     * not appeared, may be taken by a request of a higher one. */
    bool has_priority; /* false: never preempted (a spare's; one bound to its VM) */
    int32_t priority;
    int64_t created;            /* Unix ms; the newer of two equal victims goes first */
    resource_amounts resources; /* custom resources held (traits.h); n 0: none */
    sched_hold_kind kind;       /* FULL unless said: cpu, memory, disk are then 0 */
} sched_reservation;

#endif
