/* job: the life of one background thread, the one way the programs run
 * theirs (checkpoints and heartbeats, inventory refreshes, retention, the
 * spare driver, the API's requeue sweep): made, started, asleep between
 * rounds in a wait that a stop ends at once, stopped and joined.
 *
 * A value type: embed it in the owner's struct, zeroed. job_init makes its
 * lock and stopper (before the owner shares it), job_start runs
 * body(job, ctx) on a thread of its own, job_stop ends it; job_stop takes a
 * job in any of those states, so an owner's failed start and its normal
 * stop are the same call.
 *
 * The body sleeps with job_sleep (no lock held around it). A body that
 * waits on a condition of its own (work handed to it, a fetch asked for now)
 * holds `lock` and uses `stop` directly (stopper.h): the lock guards the
 * stopper and whatever the owner adds under it.
 *
 * Three threads are not jobs, each for a reason of its own: the WAL sync
 * thread (wal_sync.h) waits for tickets, never for time; the HTTP server's
 * deadline watchdog (httpd.c) shares a lock that libmicrohttpd's callbacks
 * keep using after the watchdog has stopped; the hangup thread (hangup.h)
 * waits in sigwait, which no condition variable can end. */
#ifndef VF_JOB_H
#define VF_JOB_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "stopper.h"
#include "vf_error.h"

typedef struct job job;
typedef void (*job_body)(job *self, void *ctx);

struct job {
    const char *name; /* "retention": what the errors call its thread */
    job_body body;
    void *ctx;
    pthread_t thread;
    pthread_mutex_t lock; /* guards `stop`, and what the owner adds */
    stopper stop;
    bool made;    /* the lock and the stopper exist */
    bool running; /* the thread was started and is not joined yet */
};

/* Makes the lock and the stopper. `name` (static) names the thread in
 * errors. Returns 0, or -1 with err set. */
int job_init(job *j, const char *name, vf_error *err) __attribute__((warn_unused_result));

/* Runs body(j, ctx) on a new thread. Returns 0, or -1 with err set ("cannot
 * start the NAME thread"). */
int job_start(job *j, job_body body, void *ctx, vf_error *err) __attribute__((warn_unused_result));

/* job_init then job_start. */
int job_run(job *j, const char *name, job_body body, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* From the body, holding no lock: sleeps `ms` milliseconds or until
 * job_stop, whichever comes first. Returns true when stopping. */
bool job_sleep(job *j, int64_t ms);

/* Whether job_stop was called (any thread; a provisioner's poll reads it). */
bool job_stopping(const job *j);

/* Ends the sleeps, waits for the thread, releases the lock and the
 * stopper; the job is zeroed again. A zeroed job is a no-op. */
void job_stop(job *j);

#endif
