/* near_best: which of the near-best hosts a task takes, when several workers
 * decide over one store at once.
 *
 * Workers that all take the single best host all claim the same host at the
 * same moment, and every claim but one conflicts (reservations.h). Like
 * Nova's host_subset_size, a task here may take any of the `width` best
 * hosts, but the pick is not random: it is a hash of the task id, so a task
 * decided again (after a conflict, on another worker, in a dry run) lands
 * where it would have, and tests can predict it. And the choice is bounded
 * in quality: a host scoring more than `max_loss` points (of 0..100) below
 * the best is never taken for the sake of spreading.
 *
 * Pure computation, no I/O (worker/sched/). */
#ifndef VF_NEAR_BEST_H
#define VF_NEAR_BEST_H

#include <stddef.h>
#include <stdint.h>

/* A 64-bit FNV-1a hash of the task id: stable across runs, machines and
 * versions (it decides placements that tests and operators may compare). */
uint64_t near_best_hash(const char *task_id);

/* Index into scores[0..n) of the host the task takes: among the hosts whose
 * score is at least scores[best] - max_loss, the `width` highest (equal
 * scores: the lower index first, which is name order in the engine), the
 * one at position near_best_hash(task_id) modulo how many there are. `best`
 * is the index of a highest score. width <= 1, n <= 1 or a NULL or empty
 * task id: `best`. width is capped at NEAR_BEST_MAX_WIDTH. */
#define NEAR_BEST_MAX_WIDTH 64
size_t near_best_pick(const double *scores, size_t n, size_t best, const char *task_id,
                      size_t width, double max_loss);

#endif
