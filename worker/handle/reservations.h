/* reservations: the store's reservations, held in an engine, and the claims
 * that record new ones.
 *
 * virtflowctl place loads them once before its dry run (reservations_hold_live).
 * A worker keeps them in a reservation_book: the engine's picture of what
 * the store holds, kept up to date before each batch from what the other
 * writers did since (store_changes_since: the reservations they recorded,
 * the hosts on which they released some). Several workers may share one
 * store, so a picture may still be stale when a batch is decided: each new
 * reservation is *claimed* (store_claims.h), recorded only if the placement
 * still fits in what the store holds now, counted as the picture counts it.
 * A claim that misses leaves nothing recorded; the book takes the store's
 * picture of that host again (and, when its vmid was held, holds the row
 * holding it), and the placement is decided again.
 *
 * A placement of one VM is queued and the batch's queue claimed at its end
 * (reservation_book_settle), in one statement. On PostgreSQL that is one
 * round trip, in a transaction of its own, before the batch commits: the
 * claims hold no lock past their own statement, and the batch's commit
 * records the tasks of the claims that were recorded. On SQLite it runs in
 * the batch's own transaction, under the store's one write lock: exact, so
 * a claim there misses only when the picture went wrong, and the batch is
 * then decided again whole. Placements that must be recorded all or none
 * (a count, a group's members, a spare set, a preemptor with its victims)
 * are claimed at once on SQLite, with the batch's commit on PostgreSQL
 * (reservation_book_send_with_commit): one that misses fails the batch,
 * which is then decided again. */
#ifndef VF_RESERVATIONS_H
#define VF_RESERVATIONS_H

#include "engine.h"
#include "store.h"
#include "store_reservations.h"

/* What reservation row `row` holds for a reader deciding over `hosts` (the
 * snapshot fetched at `view_at`; NULL: none) with the reservation clock at
 * `clock` (store time text): a full hold, its vmid alone (a preempted
 * placement's), or a bound VM's custom resources alone; with its expiry
 * rounded as a new hold's and preemptible while its VM has not appeared.
 * The rules of store_reservations_counted and of the claims. Fills *out and
 * returns true, or false when it holds nothing. The worker's picture and
 * explain --replay's rebuild of a decision's holds (the row as it stood
 * then) both use it, so they hold alike. */
bool reservations_row_hold(const store_reservation *row, const hostset *hosts, const char *clock,
                           const char *view_at, sched_reservation *out);

/* Hold in `engine` every reservation of `s` that a decision over the
 * engine's current snapshot, fetched at `view_ms` (Unix ms; 0: no snapshot
 * yet), must count (store_reservations_counted): the live ones (not
 * released, not expired by the reservation clock, store_reservation_clock),
 * those another view saw materialise while the engine's snapshot does not
 * show their VMs, and the custom resources of VMs that hold some (as
 * resources-only holds). Returns how many were held, or -1 with err (store
 * error, VF_ENOMEM). */
long reservations_hold_live(store *s, sched_engine *engine, int64_t view_ms, vf_error *err)
    __attribute__((warn_unused_result));

typedef struct reservation_book reservation_book;

/* An empty book over `engine` (borrowed; it must outlive the book). `claims`
 * (borrowed; NULL: the batches' own store) is where a PostgreSQL worker's
 * queued claims run, a handle of its own outside the batch's transaction.
 * Returns an owned book (reservation_book_free) or NULL with VF_ENOMEM. */
reservation_book *reservation_book_new(sched_engine *engine, store *claims, vf_error *err)
    __attribute__((warn_unused_result));
void reservation_book_free(reservation_book *book);

/* Start of a worker: hold every reservation a decision over a snapshot
 * fetched at `view_ms` counts (as reservations_hold_live) in the engine and
 * learn where the store's change order stands. Returns the number held, or
 * -1. */
long reservation_book_load(reservation_book *book, store *s, int64_t view_ms, vf_error *err)
    __attribute__((warn_unused_result));

/* In the write transaction that will record a batch, before deciding it
 * over a snapshot fetched at `view_ms` (0: none yet): hold the reservations
 * others recorded since the book last looked, and take the store's picture
 * again of every host on which another writer released some (all hosts
 * when the snapshot is older than the one the picture was taken for).
 * Returns the number of hosts whose picture was taken again, or -1. */
long reservation_book_catch_up(reservation_book *book, store *s, int64_t view_ms, vf_error *err)
    __attribute__((warn_unused_result));

/* A placement to claim: what it holds, where, decided by which profile. */
typedef struct reservation_claim {
    const char *task_id;
    const sched_engine *engine; /* the profile that decided: its filters and capacity */
    const host *node;           /* of the engine's current snapshot */
    uint32_t vmid;
    double cpu;                        /* vCPUs */
    int64_t memory;                    /* MiB */
    int64_t disk;                      /* GiB */
    const resource_amounts *resources; /* NULL: none */
    const sched_request *req;          /* the request decided (the filters' inputs) */
    bool has_priority;                 /* preemptible later (never for counts, groups, spares) */
    int32_t priority;
    const char *created_at;
    const char *expires_at;
    const char *group; /* NULL: not a group member */
    sched_hold_kind kind;
} reservation_claim;

/* Claim one placement, which the engine already holds (as a decision is
 * held at once): it is queued, and claimed at the end of the batch
 * (reservation_book_settle). Returns 0, or -1 with err (VF_ENOMEM). */
int reservation_book_claim(reservation_book *book, store *s, const reservation_claim *claim,
                           vf_error *err) __attribute__((warn_unused_result));

/* Claim the n placements of one task all or none (a count, group members,
 * spares, a preemptor): SQLite at once, PostgreSQL with the batch's commit.
 * Returns 0, or -1 with err: VF_ECONFLICT when one no longer fits (SQLite;
 * nothing recorded, the engine no longer holds the task's reservations,
 * the pictures of their hosts are the store's again; on PostgreSQL the
 * commit fails so), or a store error. */
int reservation_book_claim_all(reservation_book *book, store *s, const reservation_claim *claims,
                               size_t n, vf_error *err) __attribute__((warn_unused_result));

/* What the end of a batch's claiming found. */
typedef struct reservation_misses {
    char (*task_ids)[REQUEST_TASK_ID_LEN]; /* owned: the tasks whose claim missed */
    size_t n, cap;
} reservation_misses;
void reservation_misses_close(reservation_misses *m);

/* Figures of the book's claims since it was made. */
typedef struct reservation_claim_stats {
    uint64_t claims;      /* placements claimed */
    uint64_t missed;      /* of which missed: decided again */
    uint64_t claim_trips; /* PostgreSQL: claim round trips */
    double lock_wait_ms;  /* PostgreSQL: time claims waited for other claims' host locks */
} reservation_claim_stats;
reservation_claim_stats reservation_book_stats(const reservation_book *book);

/* End of a batch, before its commit: claim what is queued (PostgreSQL: on
 * the book's claims store, in a transaction of its own; SQLite: in the
 * batch's transaction on `s`). Each task whose claim missed is listed in
 * *misses: nothing of it is recorded, the engine's picture of its host is
 * the store's again (read through `s`, in the batch's transaction), the
 * reservation found holding its vmid (if that was why) is held, and
 * the caller must undo what the batch wrote for that task and decide it
 * again, which queues new claims: call again until nothing misses.
 * Returns 0, or -1 with err (the claims' store failed: what was recorded
 * is withdrawn when the batch rolls back). */
int reservation_book_settle(reservation_book *book, store *s, reservation_misses *misses,
                            vf_error *err) __attribute__((warn_unused_result));

/* Call fn with the host of each member of `group` the open batch claimed
 * with its commit (PostgreSQL: not in the store before the commit), so that
 * a later member of the same batch counts them as the store's will. */
void reservation_book_pending_members(const reservation_book *book, const char *group,
                                      void (*fn)(const char *node, void *ctx), void *ctx);

/* Just before the batch's commit: send the claims made all or none
 * (PostgreSQL; a no-op on SQLite). Returns 0 or -1. */
int reservation_book_send_with_commit(reservation_book *book, store *s, vf_error *err)
    __attribute__((warn_unused_result));

/* In the open transaction: end the live reservations of `task_id` at `at`
 * (a client gave them back: task.release), and the custom resources of
 * its VMs; the engine stops holding them at once, so the rest of the batch
 * may use the room. A release needs no claim: it only adds room. Returns
 * the number of live reservations ended, or -1. After a rollback the engine
 * no longer matches the store: reservation_book_rolled_back takes the whole
 * picture again. */
long reservations_release_task(store *s, sched_engine *engine, const char *task_id, const char *at,
                               vf_error *err) __attribute__((warn_unused_result));

/* The batch's transaction committed. */
void reservation_book_committed(reservation_book *book);
/* It was rolled back: `certain` when it is known not to have committed
 * (a COMMIT cut off by a lost connection is not): the reservations its
 * queued claims recorded are then withdrawn (at `at`), else left to expire
 * or to the task's next attempt. The engine no longer matches the store
 * (holds of what was not recorded, releases undone): the next catch-up
 * takes the whole picture again. */
void reservation_book_rolled_back(reservation_book *book, bool certain, const char *at);

#endif
