#include "job.h"

#include <string.h>

int job_init(job *j, const char *name, vf_error *err)
{
    memset(j, 0, sizeof *j);
    j->name = name;
    if (pthread_mutex_init(&j->lock, NULL) != 0) {
        vf_error_set(err, VF_EINTERNAL, "cannot make the %s thread's lock", name);
        return -1;
    }
    if (stopper_init(&j->stop, &j->lock) < 0) {
        pthread_mutex_destroy(&j->lock);
        vf_error_set(err, VF_EINTERNAL, "cannot make the %s thread's stopper", name);
        return -1;
    }
    j->made = true;
    return 0;
}

static void *trampoline(void *arg)
{
    job *j = arg;
    j->body(j, j->ctx);
    return NULL;
}

int job_start(job *j, job_body body, void *ctx, vf_error *err)
{
    j->body = body;
    j->ctx = ctx;
    if (pthread_create(&j->thread, NULL, trampoline, j) != 0) {
        vf_error_set(err, VF_EINTERNAL, "cannot start the %s thread", j->name);
        return -1;
    }
    j->running = true;
    return 0;
}

int job_run(job *j, const char *name, job_body body, void *ctx, vf_error *err)
{
    return job_init(j, name, err) < 0 ? -1 : job_start(j, body, ctx, err);
}

bool job_sleep(job *j, int64_t ms)
{
    pthread_mutex_lock(&j->lock);
    bool stopped = stopper_wait(&j->stop, ms);
    pthread_mutex_unlock(&j->lock);
    return stopped;
}

bool job_stopping(const job *j)
{
    return j->stop.stop;
}

void job_stop(job *j)
{
    if (j->running) {
        stopper_stop(&j->stop);
        pthread_join(j->thread, NULL);
    }
    if (j->made) {
        stopper_close(&j->stop);
        pthread_mutex_destroy(&j->lock);
    }
    memset(j, 0, sizeof *j);
}
