/* inventory_refresher: see inventory_refresher.h. */
#include "inventory_refresher.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "clock.h"
#include "job.h"

struct inventory_refresher {
    inventory *source; /* borrowed */
    job job;
    atomic_int refresh_s; /* inventory.refresh_s, as last reloaded */
    bool fetch_now;       /* under job.lock: fetch before the interval ends */
};

static void refresh_loop(job *j, void *ctx)
{
    inventory_refresher *r = ctx;
    pthread_mutex_lock(&j->lock);
    while (!j->stop.stop) {
        /* Until the interval ends, or a reload asks for a fetch now
         * (stopper_wake), or a stop. */
        int64_t until_ms = clock_mono_ms() + (int64_t)atomic_load(&r->refresh_s) * 1000;
        while (!r->fetch_now && !j->stop.stop && clock_mono_ms() < until_ms)
            (void)stopper_wait_once(&j->stop, until_ms - clock_mono_ms());
        if (j->stop.stop)
            break;
        r->fetch_now = false;
        pthread_mutex_unlock(&j->lock);
        vf_error err;
        vf_error_init(&err);
        (void)inventory_refresh(r->source, &err); /* logs its own failures */
        /* Parsing a large inventory churns through megabytes that this
         * thread's arena would otherwise keep resident between refreshes. */
        malloc_trim(0);
        pthread_mutex_lock(&j->lock);
    }
    pthread_mutex_unlock(&j->lock);
}

inventory_refresher *inventory_refresher_start(inventory *source, int refresh_s, bool fetch_first,
                                               vf_error *err)
{
    inventory_refresher *r = calloc(1, sizeof *r);
    if (!r) {
        vf_error_set(err, VF_ENOMEM, "out of memory starting the inventory refresh thread");
        return NULL;
    }
    r->source = source;
    r->fetch_now = fetch_first;
    atomic_init(&r->refresh_s, refresh_s);
    if (job_run(&r->job, "inventory refresh", refresh_loop, r, err) < 0) {
        inventory_refresher_stop(r);
        return NULL;
    }
    return r;
}

void inventory_refresher_fetch_now(inventory_refresher *r, int refresh_s)
{
    atomic_store(&r->refresh_s, refresh_s);
    pthread_mutex_lock(&r->job.lock);
    r->fetch_now = true;
    stopper_wake(&r->job.stop);
    pthread_mutex_unlock(&r->job.lock);
}

void inventory_refresher_stop(inventory_refresher *r)
{
    if (!r)
        return;
    job_stop(&r->job);
    free(r);
}
