/* service_inventory: the inventory refresh thread (service_inventory.h). */
#include "service_inventory.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "clock.h"
#include "stopper.h"

struct inventory_refresher {
    inventory *source; /* borrowed */
    pthread_t thread;
    pthread_mutex_t lock;
    stopper stop;
    atomic_int refresh_s; /* inventory.refresh_s, as last reloaded */
    bool fetch_now;       /* under lock: a reload asks for a fetch before the interval ends */
};

static void *refresh_loop(void *arg)
{
    inventory_refresher *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stop.stop) {
        /* Until the interval ends, or a reload asks for a fetch now
         * (stopper_wake), or a stop. */
        int64_t until_ms = clock_mono_ms() + (int64_t)atomic_load(&r->refresh_s) * 1000;
        while (!r->fetch_now && !r->stop.stop && clock_mono_ms() < until_ms)
            (void)stopper_wait_once(&r->stop, until_ms - clock_mono_ms());
        if (r->stop.stop)
            break;
        r->fetch_now = false;
        pthread_mutex_unlock(&r->lock);
        vf_error err;
        vf_error_init(&err);
        (void)inventory_refresh(r->source, &err); /* logs its own failures */
        /* Parsing a large inventory churns through megabytes that this
         * thread's arena would otherwise keep resident between refreshes. */
        malloc_trim(0);
        pthread_mutex_lock(&r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

inventory_refresher *service_inventory_refresher_start(inventory *source, int refresh_s,
                                                       vf_error *err)
{
    inventory_refresher *r = calloc(1, sizeof *r);
    if (!r) {
        vf_error_set(err, VF_ENOMEM, "out of memory starting the inventory refresh thread");
        return NULL;
    }
    r->source = source;
    atomic_init(&r->refresh_s, refresh_s);
    pthread_mutex_init(&r->lock, NULL);
    if (stopper_init(&r->stop, &r->lock) < 0) {
        vf_error_set(err, VF_EINTERNAL, "cannot make the refresh thread's stopper");
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
    }
    if (pthread_create(&r->thread, NULL, refresh_loop, r) != 0) {
        vf_error_set(err, VF_EINTERNAL, "cannot start the inventory refresh thread");
        stopper_close(&r->stop);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
    }
    return r;
}

void service_inventory_refresher_fetch_now(inventory_refresher *r, int refresh_s)
{
    atomic_store(&r->refresh_s, refresh_s);
    pthread_mutex_lock(&r->lock);
    r->fetch_now = true;
    stopper_wake(&r->stop);
    pthread_mutex_unlock(&r->lock);
}

void service_inventory_refresher_stop(inventory_refresher *r)
{
    if (!r)
        return;
    stopper_stop(&r->stop);
    pthread_join(r->thread, NULL);
    stopper_close(&r->stop);
    pthread_mutex_destroy(&r->lock);
    free(r);
}
