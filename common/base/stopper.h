/* stopper: the one timed wait of the background threads. A thread that
 * works every so often until told to stop sleeps in stopper_wait between
 * rounds; stopper_stop ends every such sleep at once. The waits run on
 * CLOCK_MONOTONIC, so a step of the wall clock neither stretches nor cuts
 * them. A value type: keep it in the owner's struct, stopper_init before
 * the threads start, stopper_close after they have been joined. */
#ifndef VF_STOPPER_H
#define VF_STOPPER_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct stopper {
    pthread_mutex_t *lock; /* borrowed: the owner's, which may guard more */
    pthread_cond_t wake;   /* timed waits on CLOCK_MONOTONIC */
    /* Set under lock by stopper_stop and never cleared; a thread that
     * cannot take the lock (a provisioner's poll) may read it without. */
    volatile sig_atomic_t stop;
} stopper;

/* Borrows `lock` (which must outlive the stopper). Returns 0, or -1 when
 * the condition cannot be made. */
int stopper_init(stopper *s, pthread_mutex_t *lock) __attribute__((warn_unused_result));

/* Releases the condition; no thread may be waiting. */
void stopper_close(stopper *s);

/* With s->lock held: waits until stopper_stop or until `ms` milliseconds
 * have passed, whichever comes first (other wakeups wait on; ms <= 0 does
 * not wait). The lock is released while waiting and held again on return.
 * Returns true when stopped. */
bool stopper_wait(stopper *s, int64_t ms);

/* As stopper_wait, but any wakeup (stopper_wake) ends the wait too: for a
 * thread that others hand work due sooner than its deadline. */
bool stopper_wait_once(stopper *s, int64_t ms);

/* With s->lock held: ends the waits of stopper_wait_once (stopper_wait
 * waits on). */
void stopper_wake(stopper *s);

/* Takes s->lock, marks the stopper stopped and wakes every waiter. */
void stopper_stop(stopper *s);

#endif
