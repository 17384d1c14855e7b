/* job: a background thread's life. A body asleep for longer than CTest lets
 * the test run is ended by job_stop at once (a stop that did not wake it
 * hangs the test until the timeout fails it); a job that was never made,
 * or made and never started, stops as a no-op; a body sees job_stopping. */
#include "job.h"
#include "testlib.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>

#define FOREVER_MS (3600 * 1000)

typedef struct counter {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int rounds;       /* under lock */
    bool saw_stop;    /* the body's last job_sleep returned true */
    bool stopping_at; /* job_stopping after that */
} counter;

static void sleepy(job *j, void *ctx)
{
    counter *c = ctx;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        c->rounds++;
        pthread_cond_broadcast(&c->changed);
        pthread_mutex_unlock(&c->lock);
        if (job_sleep(j, FOREVER_MS))
            break;
    }
    c->saw_stop = true;
    c->stopping_at = job_stopping(j);
}

static void test_stop_ends_a_long_sleep(void)
{
    counter c = {.rounds = 0};
    pthread_mutex_init(&c.lock, NULL);
    pthread_cond_init(&c.changed, NULL);
    job j = {0};
    vf_error err;
    vf_error_init(&err);
    CHECK(job_run(&j, "test", sleepy, &c, &err) == 0);
    CHECK(!job_stopping(&j));
    pthread_mutex_lock(&c.lock);
    while (c.rounds == 0)
        pthread_cond_wait(&c.changed, &c.lock);
    pthread_mutex_unlock(&c.lock);
    job_stop(&j);
    CHECK(c.rounds == 1);
    CHECK(c.saw_stop && c.stopping_at);
    job zero;
    memset(&zero, 0, sizeof zero);
    CHECK(memcmp(&j, &zero, sizeof j) == 0); /* zeroed again: a second stop is a no-op */
    job_stop(&j);
    pthread_cond_destroy(&c.changed);
    pthread_mutex_destroy(&c.lock);
}

static void test_unstarted_jobs_stop(void)
{
    job never = {0};
    job_stop(&never);
    job made = {0};
    vf_error err;
    vf_error_init(&err);
    CHECK(job_init(&made, "made", &err) == 0);
    CHECK(made.made && !made.running);
    job_stop(&made);
    CHECK(!made.made);
}

/* A stop before the body's first sleep is not lost: the sleep returns at once. */
static void late_sleeper(job *j, void *ctx)
{
    pthread_mutex_t *gate = ctx;
    pthread_mutex_lock(gate); /* held by the test until after job_stop began */
    pthread_mutex_unlock(gate);
    (void)job_sleep(j, FOREVER_MS);
}

typedef struct stopping {
    job *j;
} stopping;

static void *stop_it(void *arg)
{
    job_stop(((stopping *)arg)->j);
    return NULL;
}

static void test_stop_before_the_first_sleep(void)
{
    pthread_mutex_t gate;
    pthread_mutex_init(&gate, NULL);
    pthread_mutex_lock(&gate);
    job j = {0};
    vf_error err;
    vf_error_init(&err);
    CHECK(job_run(&j, "late", late_sleeper, &gate, &err) == 0);
    stopping s = {&j};
    pthread_t stopper_thread;
    CHECK(pthread_create(&stopper_thread, NULL, stop_it, &s) == 0);
    /* job_stop marks the stop under the job's lock, then joins; wait until
     * the mark is there, then let the body go to sleep. */
    for (;;) {
        pthread_mutex_lock(&j.lock);
        bool marked = j.stop.stop;
        pthread_mutex_unlock(&j.lock);
        if (marked)
            break;
        sched_yield();
    }
    pthread_mutex_unlock(&gate);
    pthread_join(stopper_thread, NULL);
    pthread_mutex_destroy(&gate);
}

int main(void)
{
    test_stop_ends_a_long_sleep();
    test_unstarted_jobs_stop();
    test_stop_before_the_first_sleep();
    return test_summary();
}
