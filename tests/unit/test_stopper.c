/* stopper: the timed wait of the background threads ends at its deadline or
 * at a stop, whichever comes first, and at nothing else. No upper bound on
 * any wait is asserted: a stop that did not wake a waiter hangs the test
 * until CTest's timeout fails it. */
#include "clock.h"
#include "stopper.h"
#include "testlib.h"

#include <pthread.h>
#include <sched.h>

#define FOREVER_MS (3600 * 1000) /* longer than CTest lets the test run */

typedef struct waiter {
    pthread_mutex_t lock;
    stopper stop;
    int64_t ms;
    bool stopped;   /* what stopper_wait returned */
    bool returned;  /* under lock */
    int64_t began;  /* clock_mono_ms */
    int64_t waited; /* ms */
} waiter;

static void waiter_init(waiter *w, int64_t ms)
{
    *w = (waiter){.ms = ms};
    pthread_mutex_init(&w->lock, NULL);
    CHECK(stopper_init(&w->stop, &w->lock) == 0);
}

static void waiter_close(waiter *w)
{
    stopper_close(&w->stop);
    pthread_mutex_destroy(&w->lock);
}

static void *wait_once(void *arg)
{
    waiter *w = arg;
    pthread_mutex_lock(&w->lock);
    w->began = clock_mono_ms();
    w->stopped = stopper_wait(&w->stop, w->ms);
    w->waited = clock_mono_ms() - w->began;
    w->returned = true;
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void test_deadline_passes_without_a_stop(void)
{
    waiter w;
    waiter_init(&w, 50);
    wait_once(&w);
    CHECK(!w.stopped);
    /* The deadline is a lower bound the condition's clock guarantees. */
    CHECKF(w.waited >= 50, "waited %lld ms of 50", (long long)w.waited);
    waiter_close(&w);
}

static void test_zero_and_negative_do_not_wait(void)
{
    waiter w;
    waiter_init(&w, 0);
    wait_once(&w);
    CHECK(!w.stopped);
    w.ms = -5;
    wait_once(&w);
    CHECK(!w.stopped);
    waiter_close(&w);
}

static void test_stop_wakes_a_waiter(void)
{
    waiter w;
    waiter_init(&w, FOREVER_MS);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, wait_once, &w) == 0);
    /* Wait until the thread is inside stopper_wait (the lock is free only
     * while it waits), so that the stop wakes a sleeper rather than being
     * seen before the wait. Either way the wait must end. */
    for (;;) {
        pthread_mutex_lock(&w.lock);
        bool started = w.began != 0;
        pthread_mutex_unlock(&w.lock);
        if (started)
            break;
        sched_yield();
    }
    stopper_stop(&w.stop);
    pthread_join(thread, NULL);
    CHECK(w.returned);
    CHECK(w.stopped);
    CHECK(w.stop.stop);
    waiter_close(&w);
}

static void test_stopped_does_not_wait_again(void)
{
    waiter w;
    waiter_init(&w, FOREVER_MS);
    stopper_stop(&w.stop);
    wait_once(&w); /* would hang if a stop before the wait were missed */
    CHECK(w.stopped);
    wait_once(&w);
    CHECK(w.stopped);
    waiter_close(&w);
}

static void *broadcast_until_returned(void *arg)
{
    waiter *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        bool done = w->returned;
        pthread_cond_broadcast(&w->stop.wake);
        pthread_mutex_unlock(&w->lock);
        if (done)
            return NULL;
        sched_yield();
    }
}

static void test_other_wakeups_wait_on(void)
{
    waiter w;
    waiter_init(&w, 100);
    pthread_t noise;
    CHECK(pthread_create(&noise, NULL, broadcast_until_returned, &w) == 0);
    wait_once(&w);
    pthread_join(noise, NULL);
    CHECK(!w.stopped);
    CHECKF(w.waited >= 100, "a wakeup without a stop ended the wait after %lld ms of 100",
           (long long)w.waited);
    waiter_close(&w);
}

static void test_mono_ms_follows_mono_us(void)
{
    int64_t us = clock_mono_us();
    int64_t ms = clock_mono_ms();
    CHECK(ms >= us / 1000);
}

int main(void)
{
    test_deadline_passes_without_a_stop();
    test_zero_and_negative_do_not_wait();
    test_stop_wakes_a_waiter();
    test_stopped_does_not_wait_again();
    test_other_wakeups_wait_on();
    test_mono_ms_follows_mono_us();
    return test_summary();
}
