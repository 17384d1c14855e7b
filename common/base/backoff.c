#include "backoff.h"

#include <math.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/* splitmix64: tiny, good enough to spread retries, and per-instance state
 * means no lock and no shared global generator. */
static double default_random(void *user)
{
    uint64_t *state = user;
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0; /* 53 bits / 2^53: [0, 1) */
}

void backoff_init(backoff *b, double base_s, double cap_s)
{
    if (!(base_s > 0))
        base_s = 0.1;
    if (!(cap_s >= base_s))
        cap_s = base_s;
    b->base_s = base_s;
    b->cap_s = cap_s;
    b->failures = 0;
    uint64_t now_us = (uint64_t)clock_mono_us();
    b->state = now_us ^ (now_us << 32) ^ ((uint64_t)getpid() << 16) ^ (uint64_t)(uintptr_t)b;
    backoff_set_random(b, NULL, NULL);
}

void backoff_set_random(backoff *b, backoff_random_fn fn, void *user)
{
    if (fn) {
        b->random = fn;
        b->random_user = user;
    } else {
        b->random = default_random;
        b->random_user = &b->state;
    }
}

double backoff_ceiling(const backoff *b)
{
    /* Past 2^60 the product is far beyond any cap; stop doubling early so the
     * arithmetic never overflows to infinity. */
    unsigned n = b->failures > 60 ? 60 : b->failures;
    double ceiling = b->base_s * ldexp(1.0, (int)n);
    return ceiling < b->cap_s ? ceiling : b->cap_s;
}

double backoff_next(backoff *b)
{
    double ceiling = backoff_ceiling(b);
    double r = b->random(b->random == default_random ? &b->state : b->random_user);
    /* A custom source may misbehave; clamp so the contract [0, ceiling) holds. */
    if (!(r >= 0))
        r = 0;
    if (r >= 1)
        r = nextafter(1.0, 0.0);
    if (b->failures < 1000)
        b->failures++;
    return r * ceiling;
}

void backoff_reset(backoff *b)
{
    b->failures = 0;
}
