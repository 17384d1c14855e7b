/* near_best: a deterministic pick among the near-best hosts (near_best.h). */
#include "near_best.h"

#include "hash.h"

/* Scores within this distance count as equal (as the engine's select). */
#define NEAR_BEST_EPSILON 1e-9

uint64_t near_best_hash(const char *text)
{
    return hash_fnv1a_text(text);
}

/* SplitMix64's finaliser: every bit of the key and the name reaches every
 * bit of the weight, so the ranks of two keys over one host list are
 * independent. */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static uint64_t weight(uint64_t key_hash, const char *name)
{
    return mix(key_hash ^ mix(near_best_hash(name)));
}

size_t near_best_pick(const double *scores, size_t n, size_t best, near_best_name_fn name_of,
                      const void *ctx, const char *key, size_t width, double max_loss)
{
    if (width == 1 || n <= 1 || !key || !key[0] || best >= n)
        return best;
    uint64_t key_hash = near_best_hash(key);
    double floor = scores[best] - (max_loss > 0 ? max_loss : 0) - NEAR_BEST_EPSILON;
    size_t chosen = best;
    uint64_t chosen_weight = weight(key_hash, name_of(best, ctx));
    if (width == 0) {
        for (size_t i = 0; i < n; i++) {
            if (i == best || scores[i] < floor)
                continue;
            uint64_t w = weight(key_hash, name_of(i, ctx));
            if (w > chosen_weight) {
                chosen = i;
                chosen_weight = w;
            }
        }
        return chosen;
    }
    if (width > NEAR_BEST_MAX_WIDTH)
        width = NEAR_BEST_MAX_WIDTH;
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
    chosen = filled ? top[0] : best;
    chosen_weight = weight(key_hash, name_of(chosen, ctx));
    for (size_t k = 1; k < filled; k++) {
        uint64_t w = weight(key_hash, name_of(top[k], ctx));
        if (w > chosen_weight) {
            chosen = top[k];
            chosen_weight = w;
        }
    }
    return chosen;
}
