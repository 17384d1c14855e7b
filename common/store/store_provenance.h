/* store_provenance: what each decision was made over (issue 39), so that
 * `virtflowctl explain TASK_ID --replay` can decide it again exactly:
 * the inventory snapshot, a digest of the reservations held, the scheduler
 * configuration and the engine's clock (schema/023_decision_provenance.sql).
 * Part of the store: what store.h says about durability, timestamps,
 * strings, errors, threads and listing callbacks holds here too. */
#ifndef VF_STORE_PROVENANCE_H
#define VF_STORE_PROVENANCE_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"
#include "store_reservations.h"

/* One decision's record: five integers on its task's row. */
typedef struct store_provenance {
    int64_t snapshot_id; /* inventory_snapshots.id; -1: the content was not recorded */
    uint64_t holds;      /* the engine's hold-set digest (holds.h) */
    int64_t config_id;   /* engine_configs.id; -1: none recorded */
    int64_t clock_ms;    /* the engine's reservation clock, Unix ms */
    int64_t decided_ms;  /* the attempt's decision time, Unix ms */
    bool present;        /* store_provenance_get: false when the task has none */
} store_provenance;

/* Inside the worker's batch transaction, after the task row was written:
 * set task_id's record (the last decision of the attempt that commits is
 * the one kept). On PostgreSQL while writes are deferred it is pipelined
 * behind the row's insert. Returns 0 or -1 with err. */
int store_provenance_record(store *s, const char *task_id, const store_provenance *p, vf_error *err)
    __attribute__((warn_unused_result));

/* Read task_id's record into *out (present false when the task has none or
 * does not exist). Returns 0 or -1 with err. */
int store_provenance_get(store *s, const char *task_id, store_provenance *out, vf_error *err)
    __attribute__((warn_unused_result));

/* Record a scheduler configuration `body` (JSON text) whose digest is
 * `digest` (store_inventory_hash of body) unless one with that digest is
 * there; *id gets its row's id either way. Returns 0 or -1 with err. */
int store_engine_config_record(store *s, const char *digest, const char *at, const char *body,
                               int64_t *id, vf_error *err) __attribute__((warn_unused_result));

/* The configuration row `id`: *body an owned copy (free()), *recorded_at
 * likewise. Returns 1 found, 0 not, -1 with err. */
int store_engine_config_get(store *s, int64_t id, char **body, char **recorded_at, vf_error *err)
    __attribute__((warn_unused_result));

/* The id of the newest inventory snapshot whose content hash is `hash`
 * into *id. Returns 1 found, 0 not, -1 with err. */
int store_inventory_snapshot_find(store *s, const char *hash, int64_t *id, vf_error *err)
    __attribute__((warn_unused_result));

/* Snapshot `id`'s hosts document (owned copy, free()) and recorded_at
 * (likewise). Returns 1 found, 0 not (pruned), -1 with err. */
int store_inventory_snapshot_get(store *s, int64_t id, char **hosts, char **recorded_at,
                                 vf_error *err) __attribute__((warn_unused_result));

/* Every reservation row that may have been held at `at` (store time text)
 * by a reader deciding over a snapshot fetched at `view_at`: created at or
 * before it, and not released before it (released at `at` itself comes
 * too: ends and decisions of one millisecond cannot be told apart by time;
 * the caller sorts them out), or released before it bound to a VM that may
 * still count (its expiry or binding after `view_at`, its custom resources
 * not ended before `at`: the caller judges each as the worker does,
 * reservations_row_hold). Columns as store_reservations_live. Returns 0 or
 * -1 with err. */
int store_reservations_around(store *s, const char *at, const char *view_at,
                              store_reservation_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* The id of task_id's first history event at `at` (store time text) into
 * *id: a batch writes its tasks' events in the order it decides them, so
 * among decisions (and a preemption's ends) of one millisecond these ids
 * give the order that time cannot. Returns 1 found, 0 none, -1 with err. */
int store_task_event_first_at(store *s, const char *task_id, const char *at, int64_t *id,
                              vf_error *err) __attribute__((warn_unused_result));

/* Every reservation row ever recorded for group `group` (held, released or
 * bound), oldest first, columns as store_reservations_live. Returns 0 or -1
 * with err. */
int store_group_reservations(store *s, const char *group, store_reservation_fn fn, void *ctx,
                             vf_error *err) __attribute__((warn_unused_result));

#endif
