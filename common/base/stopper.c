#include "stopper.h"

#include <errno.h>
#include <time.h>

#include "clock.h"

int stopper_init(stopper *s, pthread_mutex_t *lock)
{
    s->lock = lock;
    s->stop = 0;
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return -1;
    int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(&s->wake, &attr);
    pthread_condattr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}

void stopper_close(stopper *s)
{
    pthread_cond_destroy(&s->wake);
}

/* `ms` from now on the condition's clock, which clock_mono_us reads. */
static struct timespec deadline(int64_t ms)
{
    int64_t until_us = clock_mono_us() + (ms > 0 ? ms : 0) * 1000;
    return (struct timespec){.tv_sec = (time_t)(until_us / 1000000),
                             .tv_nsec = (long)(until_us % 1000000) * 1000};
}

bool stopper_wait(stopper *s, int64_t ms)
{
    struct timespec until = deadline(ms);
    while (!s->stop && pthread_cond_timedwait(&s->wake, s->lock, &until) != ETIMEDOUT)
        ;
    return s->stop;
}

bool stopper_wait_once(stopper *s, int64_t ms)
{
    struct timespec until = deadline(ms);
    if (!s->stop)
        pthread_cond_timedwait(&s->wake, s->lock, &until);
    return s->stop;
}

void stopper_wake(stopper *s)
{
    pthread_cond_broadcast(&s->wake);
}

void stopper_stop(stopper *s)
{
    pthread_mutex_lock(s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(s->lock);
}
