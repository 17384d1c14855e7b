/* task_group: a task.schedule request's group (docs/scheduling.md
 * "Groups") as the store has it in the caller's transaction: its members
 * per host of the engine's snapshot, for the engine's decision
 * (sched_decide_options.group_members), and the claim that records new
 * members only while the group is as read (store_groups.h). */
#ifndef VF_TASK_GROUP_H
#define VF_TASK_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "handler.h"
#include "store_groups.h"

typedef struct task_group {
    store_group row;   /* generation, and the policy members were recorded under */
    uint32_t *members; /* owned: per host index of the snapshot, members there now */
    size_t n_hosts;
    uint32_t n_members; /* on the snapshot's hosts */
} task_group;

/* Read `req`'s group (req->group set) through h's store into g, counting
 * the members on h's snapshot's hosts: held reservations, and those ended
 * by an inventory whose VM the snapshot still shows there. Returns 0, or -1
 * with err (store error, VF_ENOMEM); call task_group_close either way. */
int task_group_read(task_group *g, task_handler *h, const sched_request *req, vf_error *err)
    __attribute__((warn_unused_result));
/* g may be NULL. */
void task_group_close(task_group *g);

/* Whether `req` disagrees with the policy or max_per_host the group's
 * present members were recorded under: then `why` (size bytes) says how and
 * the request is invalid. A group without members takes any policy. */
bool task_group_mismatch(const task_group *g, const sched_request *req, char *why, size_t size);

/* Before recording the members decided from g: claim the group at the
 * generation read (store_group_claim). Returns 0 or -1 (VF_ECONFLICT: roll
 * back and decide the batch again). */
int task_group_claim(const task_group *g, task_handler *h, const sched_request *req, const char *at,
                     vf_error *err) __attribute__((warn_unused_result));

#endif
