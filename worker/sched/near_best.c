/* near_best: a deterministic pick among the near-best hosts (near_best.h). */
#include "near_best.h"

/* Scores within this distance count as equal (as the engine's select). */
#define NEAR_BEST_EPSILON 1e-9

uint64_t near_best_hash(const char *task_id)
{
    uint64_t hash = 14695981039346656037ULL; /* FNV-1a offset basis */
    for (const unsigned char *c = (const unsigned char *)task_id; *c; c++) {
        hash ^= *c;
        hash *= 1099511628211ULL; /* FNV prime */
    }
    return hash;
}

size_t near_best_pick(const double *scores, size_t n, size_t best, const char *task_id,
                      size_t width, double max_loss)
{
    if (width <= 1 || n <= 1 || !task_id || !task_id[0] || best >= n)
        return best;
    if (width > NEAR_BEST_MAX_WIDTH)
        width = NEAR_BEST_MAX_WIDTH;
    double floor = scores[best] - (max_loss > 0 ? max_loss : 0) - NEAR_BEST_EPSILON;
    /* The top `width` at or above the floor, highest first, in a small
     * sorted array (an insertion keeps equal scores in index order). */
    size_t top[NEAR_BEST_MAX_WIDTH];
    size_t filled = 0;
    for (size_t i = 0; i < n; i++) {
        double s = scores[i];
        if (s < floor)
            continue;
        if (filled == width && !(s > scores[top[width - 1]] + NEAR_BEST_EPSILON))
            continue;
        size_t pos = filled < width ? filled++ : width - 1;
        while (pos > 0 && s > scores[top[pos - 1]] + NEAR_BEST_EPSILON) {
            top[pos] = top[pos - 1];
            pos--;
        }
        top[pos] = i;
    }
    if (filled == 0)
        return best;
    return top[near_best_hash(task_id) % filled];
}
