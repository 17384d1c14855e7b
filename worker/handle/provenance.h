/* provenance: the hook that records what each decision was made over
 * (issue 39; store_provenance.h): the inventory snapshot, the digest of the
 * engine's holds before the decision, the scheduler configuration and the
 * engine's clock. task_attempt calls provenance_capture when an attempt
 * opens (before anything of it is decided or held) and provenance_write
 * after each write of the task row, in the same transaction: the decision of
 * the attempt that commits is the one on record. The replay side is
 * worker/sched/decision_replay.h and virtflowctl explain --replay. */
#ifndef VF_PROVENANCE_H
#define VF_PROVENANCE_H

#include <stdint.h>

#include "task_attempt.h"
#include "vf_error.h"

/* What the service decides over in this batch (it fills it per pass). */
typedef struct decision_view {
    int64_t snapshot_id; /* inventory_snapshots.id of the engine's hosts; -1: not recorded */
    int64_t config_id;   /* engine_configs.id of the scheduler section; -1: none */
    int64_t clock_ms;    /* the engine's reservation clock (its inventory's fetch), Unix ms */
} decision_view;

/* Note the engine's hold-set digest now, before the attempt decides. */
void provenance_capture(task_attempt *a);

/* Record the capture on the task's row (after task_attempt_write set
 * a->out->status). A no-op (0) when the handler has no decision_view, and
 * for a cancel, which decides nothing. Returns 0 or -1 with err. */
int provenance_write(const task_attempt *a, vf_error *err) __attribute__((warn_unused_result));

/* Resolve the scheduler keys whose "auto" depends on keys outside the
 * scheduler section (near_best_by, vmid_stride: store.url) to what
 * sched_params_from_config makes of them, in place: the engine is the same. */
void provenance_resolve_auto(vf_config *config);

/* The scheduler configuration decisions are made under, as recorded:
 * {"scheduler": <the section of config->path, as JSON>} ({} for built-in
 * defaults), canonical (keys sorted). Owned text, or NULL with err (the file
 * unreadable: VF_EIO, VF_EINVAL; VF_ENOMEM). What it leaves out: keys set
 * from the environment, and the content of a scheduler.plugin_config file
 * (its path is kept). The keys provenance_resolve_auto resolves
 * are recorded resolved. */
char *provenance_config_body(const vf_config *config, vf_error *err)
    __attribute__((warn_unused_result));

/* Record provenance_config_body in the store (engine_configs, once per
 * content) and set *id to its row. Outside a transaction. Returns 0 or -1
 * with err. */
int provenance_config_record(store *s, const vf_config *config, int64_t *id, vf_error *err)
    __attribute__((warn_unused_result));

#endif
