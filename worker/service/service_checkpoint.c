/* service_checkpoint: WAL checkpoints and lease renewal on a thread of
 * their own (service_internal.h). */
#include "service_internal.h"

#define CHECKPOINT_INTERVAL_MS 500

/* WAL checkpoints on a handle of their own, off the committing thread: they
 * copy pages and fsync the database, which inside a commit would stall every
 * message of that batch. The same thread renews this worker's leases. */
void *service_checkpoint_loop(void *arg)
{
    service *svc = arg;
    vf_error err;
    vf_error_init(&err);
    store *own = store_config_open(svc->config, STORE_READ_WRITE, &err);
    if (!own) {
        log_warn("checkpoints: %s; the WAL is copied back inside commits instead", err.text);
        return NULL;
    }
    int64_t renewed_ms = 0;
    pthread_mutex_lock(&svc->refresh_lock);
    while (!stopper_wait(&svc->refresh_stop, CHECKPOINT_INTERVAL_MS)) {
        pthread_mutex_unlock(&svc->refresh_lock);
        vf_error_init(&err);
        if (store_checkpoint(own, NULL, NULL, &err) < 0)
            log_warn("checkpoint: %s", err.text);
        /* Here, not in the main loop: this thread waits neither for the
         * broker nor for a batch, so a live worker keeps its leases. */
        if (clock_wall_ms() - renewed_ms >= LEASE_RENEW_S * 1000) {
            renewed_ms = clock_wall_ms();
            vf_error_init(&err);
            if (lease_renew_all(own, svc->owner, &err) < 0)
                log_warn("leases: %s", err.text);
        }
        pthread_mutex_lock(&svc->refresh_lock);
    }
    pthread_mutex_unlock(&svc->refresh_lock);
    store_close(own);
    return NULL;
}
