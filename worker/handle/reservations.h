/* reservations: the store's live reservations, held in an engine.
 *
 * virtflowctl place loads them once before its dry run (reservations_hold_live).
 * A worker keeps them in a reservation_book: the engine's picture of every
 * host together with the host generation it was loaded at (store.h "host
 * generations"). Several workers may share one store, so before each batch is
 * decided the book catches up with the hosts the others changed, and every
 * reservation is claimed at the generation it was decided from: a decision
 * made from a stale picture cannot commit (VF_ECONFLICT instead). */
#ifndef VF_RESERVATIONS_H
#define VF_RESERVATIONS_H

#include "engine.h"
#include "store.h"

/* Hold in `engine` every reservation of `s` that a decision over the
 * engine's current snapshot, fetched at `view_ms` (Unix ms; 0: no snapshot
 * yet), must count (store_reservations_counted): the live ones (not
 * released, not expired by the reservation clock, store_reservation_clock)
 * and those another view saw materialise while the engine's snapshot does
 * not show their VMs. Returns how many were held, or -1 with err (store
 * error, VF_ENOMEM). */
long reservations_hold_live(store *s, sched_engine *engine, int64_t view_ms, vf_error *err)
    __attribute__((warn_unused_result));

typedef struct reservation_book reservation_book;

/* An empty book over `engine` (borrowed; it must outlive the book). Returns
 * an owned book (reservation_book_free) or NULL with VF_ENOMEM. */
reservation_book *reservation_book_new(sched_engine *engine, vf_error *err)
    __attribute__((warn_unused_result));
void reservation_book_free(reservation_book *book);

/* Start of a worker: hold every reservation a decision over a snapshot
 * fetched at `view_ms` counts (as reservations_hold_live) in the engine and
 * learn every host's generation. Returns the number held, or -1. */
long reservation_book_load(reservation_book *book, store *s, int64_t view_ms, vf_error *err)
    __attribute__((warn_unused_result));

/* In the write transaction that will record a batch, before deciding it
 * over a snapshot fetched at `view_ms` (0: none yet): reload the counted
 * reservations of every host another writer changed since the book last
 * looked (all hosts when the snapshot is older than the one the picture was
 * taken for). Returns the number of hosts reloaded, or -1. */
long reservation_book_catch_up(reservation_book *book, store *s, int64_t view_ms, vf_error *err)
    __attribute__((warn_unused_result));

/* Before recording a reservation on `node` in the open transaction: the
 * host must still be at the generation the engine's picture of it has
 * (store_host_claim). Returns 0, or -1 with VF_ECONFLICT (roll back, catch
 * up, decide again) or another store error. */
int reservation_book_claim(reservation_book *book, store *s, const char *node, vf_error *err)
    __attribute__((warn_unused_result));

/* In the open transaction: end the live reservations of `task_id`, which
 * are on `node`, at `at` (a client gave them back: task.release). The host
 * is claimed first, as for a reservation (so a stale picture conflicts), the
 * store's release bumps its generation once per reservation ended
 * (schema/003's trigger), and the engine stops holding them at once, so the
 * rest of the batch may use the room. Returns the number ended, or -1
 * (VF_ECONFLICT included, as reservation_book_claim). After a rollback the
 * engine no longer matches the store: pass conflict = true to
 * reservation_book_rolled_back. `book` may be NULL (the store's only
 * writer: tests). */
long reservation_book_release(reservation_book *book, store *s, sched_engine *engine,
                              const char *task_id, const char *node, const char *at, vf_error *err)
    __attribute__((warn_unused_result));

/* In the open transaction: end the reservations of `task_id` on `node`
 * that a request of priority `below` preempts (store_reservation_preempt:
 * live, unbound, placed at a lower priority), as reservation_book_release
 * does: the host claimed first at the generation decided from, the engine
 * no longer holding them. None left to end is a VF_ECONFLICT (the picture
 * was stale). Returns the number ended, or -1. `book` may be NULL. */
long reservation_book_preempt(reservation_book *book, store *s, sched_engine *engine,
                              const char *task_id, const char *node, int32_t below, const char *at,
                              vf_error *err) __attribute__((warn_unused_result));

/* reservation_book_release for a task holding one reservation on each of
 * the n `nodes` (a node may repeat: task.schedule's count). Every host is
 * claimed first; when the store ends n reservations, each host's generation
 * moves by its own ones (the trigger's bumps), else (some had ended before)
 * the next catch-up takes the whole picture again. Returns the number ended,
 * or -1 as reservation_book_release. `book` may be NULL. */
long reservation_book_release_each(reservation_book *book, store *s, sched_engine *engine,
                                   const char *task_id, const char *const *nodes, size_t n,
                                   const char *at, vf_error *err)
    __attribute__((warn_unused_result));

/* The transaction the claims were made in has committed, or was rolled back
 * (its claims are undone: the hosts are back at the generations before). */
void reservation_book_committed(reservation_book *book);
/* `conflict`: it was rolled back for a VF_ECONFLICT (a host claim or a vmid
 * held by another); the next catch-up then reloads every host. */
void reservation_book_rolled_back(reservation_book *book, bool conflict);

#endif
