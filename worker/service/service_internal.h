/* service_internal: what the parts of virtflow-worker's service share, and
 * no one else. service.c runs the round (take a batch, record it in one
 * transaction, sync, ack and publish) and the service's life. Beside it,
 * each with its own state behind its own header: service_publish.h (the
 * publisher: publishing with confirms, the outbox sweep),
 * service_checkpoint.h (the checkpointer: WAL checkpoints and lease renewal
 * on a thread of their own), the inventory refresh thread
 * (inventory_refresher.h, shared with virtflow-api), service_follower.h (following its snapshots:
 * the engine's hosts, the reservation clock, recorded snapshots) and service_recheck.h (sending
 * waiting tasks again when room grows). */
#ifndef VF_SERVICE_INTERNAL_H
#define VF_SERVICE_INTERNAL_H

#include "service.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amqp_link.h"
#include "amqp_refusals.h"
#include "backoff.h"
#include "clock.h"
#include "engine.h"
#include "grow.h"
#include "hangup.h"
#include "ids.h"
#include "host_json.h"
#include "inventory.h"
#include "leases.h"
#include "log.h"
#include "notify.h"
#include "provenance.h"
#include "reload.h"
#include "reservations.h"
#include "retention.h"
#include "service_checkpoint.h"
#include "service_follower.h"
#include "inventory_refresher.h"
#include "service_publish.h"
#include "service_recheck.h"
#include "spare_driver.h"
#include "release_handler.h"
#include "spare_handler.h"
#include "stopper.h"
#include "store.h"
#include "store_hosts.h"
#include "store_inventory.h"
#include "store_outbox.h"
#include "store_reservations.h"
#include "task_attempt.h"
#include "store_config.h"
#include "task_handler.h"
#include "wal_sync.h"
#include "worker_metrics.h"

typedef struct batch_item {
    amqp_link_delivery delivery;
    task_outcome outcome;
    bool read;                         /* parsed and task_id are set */
    json_t *parsed;                    /* owned: the body (task_attempt_read); NULL: unreadable */
    char task_id[REQUEST_TASK_ID_LEN]; /* the task it names, when parsed */
} batch_item;

/* Messages taken together: recorded in one transaction, then acked and
 * published once that transaction is durable. */
typedef struct batch {
    batch_item *items;
    size_t n_items, cap_items;
    uint64_t sync_ticket; /* wal_sync ticket covering its commit */
} batch;

/* Why a round failed: the broker side, the store (nothing of the batch was
 * acked; try again), or a failed fsync, after which nothing can be acked. */
typedef enum { ROUND_OK, ROUND_BROKER, ROUND_STORE, ROUND_FATAL } round_status;

typedef struct service {
    const vf_config *config;
    volatile sig_atomic_t *stop;
    char owner[STORE_OWNER_SIZE]; /* this worker instance, in the store's leases */
    amqp_link *link;
    store *store;
    store *claims; /* PostgreSQL: where the batches' claims run, outside their transactions */
    sched_engine *engine;
    reservation_book *book; /* the engine's reservations and the host generations behind them */
    inventory *inventory;
    inventory_refresher *refresher; /* fetches `inventory` on a thread of its own */
    service_follower *follower;     /* the snapshot decided over, the reservation clock */

    wal_sync *sync;
    batch batches[2];
    batch *collecting;            /* the batch being taken and recorded */
    batch *syncing;               /* NULL, or the committed batch awaiting its sync */
    service_publisher *publisher; /* publishes, confirms, the outbox sweep */
    amqp_refusals *refusals;      /* publish paths the broker refused: never tried again */
    int64_t peers_checked_at_ms;  /* monotonic: follow_peers last counted the other workers */
    int64_t slot_checked_at_ms;   /* monotonic: follow_peers last renewed the vmid class */
    bool slot_held;               /* the lease of a vmid class (slot_stride, slot) is ours */
    uint32_t slot_stride, slot;
    bool sync_failed; /* a WAL sync failed: nothing more may be acked */
    uint64_t placed_since_summary;
    uint64_t conflicts_since_summary; /* batches decided again: another worker got there first */
    uint64_t missed_since_summary;    /* placements decided again: their claims missed */
    double begin_wait_s;              /* seconds store_begin waited (SQLite's write lock) */
    int64_t last_summary_us;          /* monotonic */
    round_status early_status;        /* of a finish_syncing_early during this round */
    vf_error early_err;
    spare_driver *spares;        /* provisioning and readiness waits, on a thread of its own */
    service_rechecker *rechecks; /* waiting tasks sent again when room grows */
    /* Waits between store probes while consuming is paused. Reset only once
     * a batch commits, so a store that takes the probe but still fails
     * batches (a nearly full disk) is retried less and less often. */
    backoff store_retry;
    checkpointer *checkpoints; /* WAL checkpoints and lease renewal, on a thread of its own */
    retention *retention;      /* store.retention: prunes old rows, on a thread of its own */
    worker_metrics *metrics;   /* worker.http_listen; NULL when off (every hook is a no-op) */
    reloader reload;           /* SIGHUP: the scheduler section and log.level */
    decision_view view;        /* what a batch decides over, recorded per decision */
} service;

#endif
