/* service_checkpoint: WAL checkpoints, lease renewal and the heartbeat on
 * a thread of their own (service_checkpoint.h). */
#include "service_checkpoint.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "job.h"
#include "leases.h"
#include "log.h"
#include "presence.h"
#include "store.h"
#include "store_config.h"
#include "store_hosts.h"

#define CHECKPOINT_INTERVAL_MS 500

struct checkpointer {
    const vf_config *config;      /* borrowed */
    char owner[STORE_OWNER_SIZE]; /* the worker whose leases it renews */
    job job;
    presence self;        /* this worker's heartbeat row (presence.h) */
    atomic_llong in_hand; /* messages received, not yet acked: the round's */
};

/* WAL checkpoints on a handle of their own, off the committing thread: they
 * copy pages and fsync the database, which inside a commit would stall every
 * message of that batch. The same thread renews this worker's leases. */
static void checkpoint_loop(job *j, void *ctx)
{
    checkpointer *cp = ctx;
    vf_error err;
    vf_error_init(&err);
    store *own = store_config_open(cp->config, STORE_READ_WRITE, &err);
    if (!own) {
        log_warn("checkpoints: %s; the WAL is copied back inside commits instead", err.text);
        return;
    }
    int64_t renewed_ms = 0;
    while (!job_sleep(j, CHECKPOINT_INTERVAL_MS)) {
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
    }
    presence_end(&cp->self, own); /* stopped: the worker is stopping cleanly */
    store_close(own);
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
    if (job_run(&cp->job, "checkpoint", checkpoint_loop, cp, err) < 0) {
        service_checkpoint_stop(cp);
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
    job_stop(&cp->job);
    free(cp);
}
