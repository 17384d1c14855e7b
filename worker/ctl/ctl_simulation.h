/* ctl_simulation: the recorded history read from the store and replayed
 * (replay.h) over the recorded inventory snapshots, shared by virtflowctl
 * simulate and virtflowctl headroom --plan: the requests and releases in
 * recorded order, each snapshot applied when its time comes, the history's
 * end. For a plan, the history can be projected forward (its window
 * repeated) and every snapshot given copies of one host. */
#ifndef VF_CTL_SIMULATION_H
#define VF_CTL_SIMULATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hostset.h"
#include "replay.h"
#include "request.h"
#include "store.h"

typedef struct ctl_step {
    bool release;
    int spare_count; /* a spare.prepare of this many spares; 0: a task.schedule */
    int ready_timeout_s;
    int64_t at_ms;
    char task_id[REQUEST_TASK_ID_LEN];
    sched_request req;
} ctl_step;

typedef struct ctl_simulation {
    ctl_step *steps;
    size_t n, cap, next;
    size_t invalid;   /* recorded requests that do not parse, or spare.prepare requests the
                         worker refused as invalid: skipped under both */
    size_t projected; /* steps added by ctl_simulation_project */
    replay *r;        /* borrowed: set before ctl_simulation_replay */
    hostset *current; /* owned; the engines decide over it */
    size_t snapshots;
    int failed; /* 0, or the exit status to return */
    /* Copies of host `like` added to every snapshot (empty, or 0: none),
     * empty of VMs, named "<like>.new1", "<like>.new2"... */
    char like[HOST_NAME_LEN];
    int added;
} ctl_simulation;

/* Read the history since `since` into sim (zeroed by the caller, but for
 * its replay). Returns 0, or -1
 * with err (the store failed) or with sim->failed set (out of memory,
 * reported). */
int ctl_simulation_history(ctl_simulation *sim, store *s, const char *since, vf_error *err)
    __attribute__((warn_unused_result));

/* Repeat the history's window forward until Unix ms `until_ms`: each copy
 * k's steps shifted by k windows, its task ids suffixed "~k" (releases too,
 * so a copy's holds end as the original's did; a VM the inventory showed
 * never shows for a copy: its hold stays, as the VM would). Returns 0 or
 * -1 (out of memory). Before any replay. */
int ctl_simulation_project(ctl_simulation *sim, int64_t until_ms)
    __attribute__((warn_unused_result));

/* Replay everything into sim->r: the snapshots recorded since `since` and
 * the steps between them, then the end (replay_finish). Returns 0, or -1
 * with sim->failed set (reported) or err (the store). */
int ctl_simulation_replay(ctl_simulation *sim, store *s, const char *since, vf_error *err)
    __attribute__((warn_unused_result));

/* Ready for another replay of the same steps (a new sim->r). */
void ctl_simulation_rewind(ctl_simulation *sim);

void ctl_simulation_close(ctl_simulation *sim);

#endif
