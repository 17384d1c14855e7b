/* backoff: capped exponential backoff with full jitter.
 *
 * After the n-th consecutive failure (n counted from 0) the delay is drawn
 * uniformly from [0, min(cap_s, base_s * 2^n)). "Full jitter" spreads the
 * reconnects of many workers that lost the same broker at the same moment, so
 * they do not come back as one thundering herd. Call backoff_reset after a
 * success so the next failure starts again from base_s.
 *
 * A backoff is a small value type kept on the stack or inside another struct:
 * backoff_init sets it up, nothing needs freeing. The random source can be
 * replaced (tests pin it); by default each backoff carries its own generator
 * seeded from the clock, the pid and its address, so it needs no locking. */
#ifndef VF_BACKOFF_H
#define VF_BACKOFF_H

#include <stdint.h>

/* Returns a number in [0, 1). `user` is the pointer given to backoff_set_random. */
typedef double (*backoff_random_fn)(void *user);

typedef struct backoff {
    double base_s;     /* first ceiling, seconds, > 0 */
    double cap_s;      /* largest ceiling, seconds, >= base_s */
    unsigned failures; /* consecutive failures seen so far */
    backoff_random_fn random;
    void *random_user;
    uint64_t state; /* default generator's state */
} backoff;

/* base_s <= 0 is taken as 0.1 s and cap_s < base_s as base_s, so a bad value
 * cannot produce a busy loop or a negative sleep. */
void backoff_init(backoff *b, double base_s, double cap_s);

/* Replace the random source; fn NULL restores the built-in generator. */
void backoff_set_random(backoff *b, backoff_random_fn fn, void *user);

/* The current ceiling, seconds: min(cap_s, base_s * 2^failures). */
double backoff_ceiling(const backoff *b);

/* Delay to wait before the next attempt, seconds in [0, ceiling), and count
 * one more failure. */
double backoff_next(backoff *b);

/* A success: the next delay starts again from base_s. */
void backoff_reset(backoff *b);

#endif
