/* near_best: which of the near-best hosts a decision takes, when several
 * workers decide over one store at once.
 *
 * Workers that all take the single best host all claim the same host at the
 * same moment, and every claim but one conflicts (reservations.h). Like
 * Nova's host_subset_size, a decision here may take another of the best
 * hosts, but not at random, and not at any price:
 *   - the pick is a rendezvous hash of a key and the host's name: the same
 *     key over the same hosts always picks the same host, whatever their
 *     order, and a host coming or going moves only the keys that picked it;
 *   - a host scoring more than `max_loss` points (of 0..100) below the best
 *     is never taken for the sake of spreading.
 * Keyed by the task id (NEAR_BEST_BY_TASK) the tasks spread over the `width`
 * best hosts, and a task decided again (after a conflict, on another worker,
 * in a dry run) lands where it would have. Keyed by the worker's id
 * (NEAR_BEST_BY_WORKER) each worker keeps to the host it ranks first among
 * every host within `max_loss` of the best, so workers fill different hosts
 * and their batches seldom claim the same one; the price is that hosts are
 * evened out only to within `max_loss` points.
 *
 * Pure computation, no I/O (worker/sched/). */
#ifndef VF_NEAR_BEST_H
#define VF_NEAR_BEST_H

#include <stddef.h>
#include <stdint.h>

typedef enum { NEAR_BEST_BY_TASK = 0, NEAR_BEST_BY_WORKER } near_best_key;

/* A 64-bit FNV-1a hash of a string: stable across runs, machines and
 * versions (it decides placements that tests and operators may compare). */
uint64_t near_best_hash(const char *text);

/* The name of candidate i, for the rendezvous hash. */
typedef const char *(*near_best_name_fn)(size_t i, const void *ctx);

/* Index into scores[0..n) of the host to take. The near-best are the hosts
 * scoring at least scores[best] - max_loss; with `width` > 0 only the
 * `width` highest of them (equal scores: the lower index first), with
 * width 0 all of them. Among those, the one whose name hashed with `key`
 * ranks first. `best` is the index of a highest score. Returns `best` when
 * key is NULL or empty, n <= 1, or width is 1. width is capped at
 * NEAR_BEST_MAX_WIDTH. */
#define NEAR_BEST_MAX_WIDTH 64
size_t near_best_pick(const double *scores, size_t n, size_t best, near_best_name_fn name_of,
                      const void *ctx, const char *key, size_t width, double max_loss);

#endif
