#include "wal_sync.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "clock.h"

struct wal_sync {
    store *store;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t work; /* requested moved, or stop */
    pthread_cond_t done; /* completed moved, or failed */
    uint64_t requested;  /* tickets handed out */
    uint64_t completed;  /* every ticket up to this one is durable */
    bool failed;
    bool stop;
    vf_error error;           /* the failure, once failed */
    metrics_series *observed; /* fsync durations, or NULL */
};

static void *sync_loop(void *arg)
{
    wal_sync *w = arg;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->stop && w->completed == w->requested)
            pthread_cond_wait(&w->work, &w->lock);
        if (w->completed == w->requested || w->failed)
            break; /* stopping with nothing left, or nothing more can be proven */
        uint64_t target = w->requested;
        pthread_mutex_unlock(&w->lock);
        vf_error err;
        vf_error_init(&err);
        int64_t started = clock_mono_us();
        int rc = store_sync(w->store, &err);
        metrics_observe(w->observed, (double)(clock_mono_us() - started) / 1e6);
        pthread_mutex_lock(&w->lock);
        if (rc < 0) {
            w->failed = true;
            w->error = err;
        } else {
            w->completed = target;
        }
        pthread_cond_broadcast(&w->done);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

wal_sync *wal_sync_start(store *s, vf_error *err)
{
    wal_sync *w = calloc(1, sizeof *w);
    if (!w) {
        vf_error_set(err, VF_ENOMEM, "out of memory starting the WAL sync thread");
        return NULL;
    }
    w->store = s;
    vf_error_init(&w->error);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->done, NULL);
    if (pthread_create(&w->thread, NULL, sync_loop, w) != 0) {
        vf_error_set(err, VF_EINTERNAL, "cannot start the WAL sync thread");
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->work);
        pthread_cond_destroy(&w->done);
        free(w);
        return NULL;
    }
    return w;
}

uint64_t wal_sync_request(wal_sync *w)
{
    pthread_mutex_lock(&w->lock);
    uint64_t ticket = ++w->requested;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->lock);
    return ticket;
}

int wal_sync_wait(wal_sync *w, uint64_t ticket, vf_error *err)
{
    pthread_mutex_lock(&w->lock);
    while (!w->failed && w->completed < ticket)
        pthread_cond_wait(&w->done, &w->lock);
    int rc = 0;
    if (w->failed) {
        vf_error_set(err, w->error.code, "%s", w->error.text);
        rc = -1;
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

bool wal_sync_done(wal_sync *w, uint64_t ticket)
{
    pthread_mutex_lock(&w->lock);
    bool done = !w->failed && w->completed >= ticket;
    pthread_mutex_unlock(&w->lock);
    return done;
}

void wal_sync_stop(wal_sync *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->done);
    free(w);
}

void wal_sync_observe(wal_sync *w, metrics_series *histogram)
{
    w->observed = histogram;
}
