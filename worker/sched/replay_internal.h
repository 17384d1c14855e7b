/* replay_internal: the replay's state, shared by replay.c (snapshots, peaks,
 * spares, stranded capacity) and replay_outcomes.c (requests decided under
 * each configuration's policy, their outcomes, rechecks, changes). */
#ifndef VF_REPLAY_INTERNAL_H
#define VF_REPLAY_INTERNAL_H

#include "replay.h"

enum { OUTCOME_WAITING, OUTCOME_PLACED, OUTCOME_FAILED };

/* One request's outcome under each configuration. */
typedef struct replay_outcome {
    const sched_request *req; /* borrowed (replay.h): read again only under a policy */
    char task_id[REQUEST_TASK_ID_LEN];
    uint8_t state[2];            /* OUTCOME_* */
    int64_t deadline_ms[2];      /* while waiting: its last attempt's time */
    char node[2][HOST_NAME_LEN]; /* placed: the first VM's host */
    int32_t placed[2];           /* VMs placed */
    char why[200];               /* the candidate's side of a difference */
    bool refused;                /* an engine refused it (counted in errors) */
} replay_outcome;

/* A group member a configuration placed. */
typedef struct replay_member {
    char task_id[REQUEST_TASK_ID_LEN];
    char group[REQUEST_GROUP_NAME_LEN];
    char node[HOST_NAME_LEN];
} replay_member;

struct replay {
    sched_engine *engine[2];
    int ttl_s[2];
    bool spare_strict[2];
    int64_t spare_ttl_s[2];
    const hostset *hosts;
    replay_host_peak *peaks; /* sorted by name */
    size_t n_peaks;
    size_t *slot; /* host index of `hosts` -> index into peaks */
    replay_totals totals;
    double *req_cpu, *req_memory; /* every request's shape, for the median */
    size_t n_req, cap_req;
    /* replay_outcomes.c: every request's outcome under each configuration */
    const vf_config *policy[2]; /* replay_policy; NULL: decided once, as one VM */
    int64_t wait_ms[2];         /* how long one placed nowhere is decided again */
    replay_outcome *outcomes;
    size_t n_outcomes, cap_outcomes;
    uint32_t *by_task; /* open addressing: 0 empty, else 1 + an index into outcomes */
    size_t cap_by_task;
    size_t *waiting[2]; /* indexes into outcomes, in arrival order */
    size_t n_waiting[2], cap_waiting[2];
    replay_member *members[2]; /* the group members each configuration placed */
    size_t n_members[2], cap_members[2];
    replay_change *changes; /* replay_changes' */
    size_t n_changes, cap_changes;
    int64_t rechecked_ms; /* a recheck stamp: at most one pass per event */
};

/* replay.c */
int replay_note_shape(replay *r, const sched_request *req, vf_error *err);
void replay_note_placement(replay *r, int c, size_t index);

/* replay_outcomes.c */
void replay_outcomes_free(replay *r);
void replay_outcomes_count(const replay *r, replay_totals *totals);
void replay_members_drop(replay *r, int c, const char *task_id);
/* Decide again what waits, under each configuration with a policy. */
void replay_recheck(replay *r, int64_t at_ms);

#endif
