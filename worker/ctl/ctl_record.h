/* ctl_record: a past decision's record read back from the store (issue 39):
 * the snapshot, the scheduler section, and the reservations the engine held,
 * rebuilt from the reservation rows and checked against the recorded digest.
 * Used by virtflowctl explain --replay. */
#ifndef VF_CTL_RECORD_H
#define VF_CTL_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "hostset.h"
#include "sched_reservation.h"
#include "store.h"
#include "store_provenance.h"

/* Rows whose time equals the decision's millisecond are ambiguous (made or
 * ended by it or beside it). Those whose task has a history event then are
 * put in the batch's order by that event (a batch writes its events in the
 * order it decides; its claims are recorded in no such order), and the
 * digest finds the point of the decision in it; the others are sorted out
 * by the digest alone, the rows created then in id order (any number),
 * those released then in any combination (at most this many). */
#define CTL_RECORD_MAX_AMBIGUOUS 16

typedef struct ctl_record {
    store_provenance p;
    char decided_at[STORE_TIME_SIZE]; /* decided_ms as store text */
    hostset *hosts;                   /* owned: the snapshot decided over */
    int64_t snapshot_id;              /* the row read: p.snapshot_id, or the nearest earlier */
    bool snapshot_exact;              /* the row the record names */
    char snapshot_at[STORE_TIME_SIZE];
    char *config_body;        /* owned: the scheduler section as recorded (JSON text) */
    vf_config *config;        /* owned: built-in defaults with that section; NULL: none recorded */
    sched_reservation *holds; /* owned: the holds rebuilt */
    int64_t *hold_ids;        /* owned: their reservation rows */
    size_t n_holds;
    bool holds_exact;      /* their digest is the recorded one */
    uint64_t holds_digest; /* of the set rebuilt */
    size_t ambiguous;      /* rows of the decision's millisecond that were sorted out */
} ctl_record;

/* Read task_id's record (task row `kind`, its last decision's time) from s
 * into *r (zeroed first). Returns 1, 0 when the task has no record (decided
 * before records were kept, or never decided), -1 with err (store error,
 * snapshot or configuration unreadable, out of memory). */
int ctl_record_read(store *s, const char *task_id, ctl_record *r, vf_error *err)
    __attribute__((warn_unused_result));

void ctl_record_close(ctl_record *r);

#endif
