/* service_checkpoint: WAL checkpoints, lease renewal and the heartbeat on
 * a thread of their own (service_checkpoint.h). */
#include "service_checkpoint.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "leases.h"
#include "log.h"
#include "presence.h"
#include "stopper.h"
#include "store.h"
#include "store_config.h"
#include "store_hosts.h"

#define CHECKPOINT_INTERVAL_MS 500

struct checkpointer {
    const vf_config *config;      /* borrowed */
    char owner[STORE_OWNER_SIZE]; /* the worker whose leases it renews */
    pthread_t thread;
    pthread_mutex_t lock;
    stopper stop;
    presence self;        /* this worker's heartbeat row (presence.h) */
    atomic_llong in_hand; /* messages received, not yet acked: the round's */
};

/* WAL checkpoints on a handle of their own, off the committing thread: they
 * copy pages and fsync the database, which inside a commit would stall every
 * message of that batch. The same thread renews this worker's leases. */
static void *checkpoint_loop(void *arg)
{
    checkpointer *cp = arg;
    vf_error err;
    vf_error_init(&err);
    store *own = store_config_open(cp->config, STORE_READ_WRITE, &err);
    if (!own) {
        log_warn("checkpoints: %s; the WAL is copied back inside commits instead", err.text);
        return NULL;
    }
    int64_t renewed_ms = 0;
    pthread_mutex_lock(&cp->lock);
    while (!stopper_wait(&cp->stop, CHECKPOINT_INTERVAL_MS)) {
        pthread_mutex_unlock(&cp->lock);
        vf_error_init(&err);
        if (store_checkpoint(own, NULL, NULL, &err) < 0)
            log_warn("checkpoint: %s", err.text);
        /* Here, not in the main loop: this thread waits neither for the
         * broker nor for a batch, so a live worker keeps its leases. */
        if (clock_wall_ms() - renewed_ms >= LEASE_RENEW_S * 1000) {
            renewed_ms = clock_wall_ms();
            vf_error_init(&err);
            if (lease_renew_all(own, cp->owner, &err) < 0)
                log_warn("leases: %s", err.text);
        }
        presence_beat(&cp->self, own, atomic_load(&cp->in_hand));
        pthread_mutex_lock(&cp->lock);
    }
    pthread_mutex_unlock(&cp->lock);
    presence_end(&cp->self, own); /* stopped: the worker is stopping cleanly */
    store_close(own);
    return NULL;
}

checkpointer *service_checkpoint_start(const vf_config *config, const char *owner, vf_error *err)
{
    checkpointer *cp = calloc(1, sizeof *cp);
    if (!cp) {
        vf_error_set(err, VF_ENOMEM, "out of memory starting the checkpoint thread");
        return NULL;
    }
    cp->config = config;
    snprintf(cp->owner, sizeof cp->owner, "%s", owner);
    presence_init(&cp->self, owner, "virtflow-worker");
    atomic_init(&cp->in_hand, 0);
    pthread_mutex_init(&cp->lock, NULL);
    if (stopper_init(&cp->stop, &cp->lock) < 0) {
        vf_error_set(err, VF_EINTERNAL, "cannot make the checkpoint thread's stopper");
        pthread_mutex_destroy(&cp->lock);
        free(cp);
        return NULL;
    }
    if (pthread_create(&cp->thread, NULL, checkpoint_loop, cp) != 0) {
        vf_error_set(err, VF_EINTERNAL, "cannot start the checkpoint thread");
        stopper_close(&cp->stop);
        pthread_mutex_destroy(&cp->lock);
        free(cp);
        return NULL;
    }
    return cp;
}

void service_checkpoint_in_hand(checkpointer *cp, size_t messages)
{
    if (cp)
        atomic_store(&cp->in_hand, (long long)messages);
}

void service_checkpoint_stop(checkpointer *cp)
{
    if (!cp)
        return;
    stopper_stop(&cp->stop);
    pthread_join(cp->thread, NULL);
    stopper_close(&cp->stop);
    pthread_mutex_destroy(&cp->lock);
    free(cp);
}
