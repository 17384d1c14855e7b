/* service_internal: what the parts of virtflow-worker's service share, and
 * no one else. service.c runs the round (take a batch, record it in one
 * transaction, sync, ack and publish) and the service's life; beside it
 * service_publish.h (the publisher: publishing with confirms, the outbox
 * sweep) and service_checkpoint.h (the checkpointer: WAL checkpoints and
 * lease renewal on a thread of their own) own their state behind their own
 * headers. In service_inventory.c the refresh thread is an
 * inventory_refresher of its own; following the snapshots, and
 * service_recheck.c, still work on struct service. */
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
#include "reload.h"
#include "reservations.h"
#include "retention.h"
#include "service_checkpoint.h"
#include "service_publish.h"
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

typedef struct inventory_refresher inventory_refresher; /* service_inventory.c */

typedef struct service {
    const vf_config *config;
    volatile sig_atomic_t *stop;
    char owner[STORE_OWNER_SIZE]; /* this worker instance, in the store's leases */
    amqp_link *link;
    store *store;
    sched_engine *engine;
    reservation_book *book; /* the engine's reservations and the host generations behind them */
    inventory *inventory;
    inventory_view view; /* the snapshot the engine decides over */
    /* The reservation clock: when `view` was fetched (Unix ms, wall clock).
     * Reservations expire against it, not against the wall clock, so that
     * none ends while the inventory cannot show whether its VM exists. */
    int64_t view_fetched_ms;
    int64_t clock_recorded_ms; /* the last view_fetched_ms the store has */
    /* Inventory snapshots (store_inventory.h): the hash of the last content
     * this worker recorded or found recorded, and of the one being recorded
     * in the open transaction (kept once it commits). "": none yet. */
    char snapshot_hash[STORE_INVENTORY_HASH_SIZE];
    char snapshot_pending[STORE_INVENTORY_HASH_SIZE];
    int64_t snapshot_recorded_ms; /* monotonic: when snapshot_hash was recorded */
    /* `view.hosts`, or NULL while the snapshot is older than
     * inventory.max_age_s: then tasks retry as if there were no inventory. */
    const hostset *placeable;
    bool inventory_too_old;         /* placements stopped by inventory.max_age_s */
    inventory_refresher *refresher; /* fetches `inventory` on a thread of its own */

    wal_sync *sync;
    batch batches[2];
    batch *collecting;            /* the batch being taken and recorded */
    batch *syncing;               /* NULL, or the committed batch awaiting its sync */
    service_publisher *publisher; /* publishes, confirms, the outbox sweep */
    time_t peers_checked_at;      /* follow_peers: when the other workers were last counted */
    char note[VF_ERROR_TEXT + 64];
    bool sync_failed; /* a WAL sync failed: nothing more may be acked */
    uint64_t placed_since_summary;
    uint64_t conflicts_since_summary; /* batches decided again: another worker got there first */
    int64_t last_summary_us;          /* monotonic */
    round_status early_status;        /* of a finish_syncing_early during this round */
    vf_error early_err;
    spare_driver *spares; /* provisioning and readiness waits, on a thread of its own */
    /* service_recheck.c: room grew since the waiting tasks were last sent again */
    bool recheck_pending;
    int64_t recheck_at_ms;        /* monotonic, of the last recheck round */
    bool recheck_sent;            /* a recheck was published on the current connection */
    bool recheck_refused;         /* the broker refused one (403): rechecks are off */
    double room_cpu, room_memory; /* sched_engine_room at the last look */
    /* Waits between store probes while consuming is paused. Reset only once
     * a batch commits, so a store that takes the probe but still fails
     * batches (a nearly full disk) is retried less and less often. */
    backoff store_retry;
    checkpointer *checkpoints; /* WAL checkpoints and lease renewal, on a thread of its own */
    retention *retention;      /* store.retention: prunes old rows, on a thread of its own */
    worker_metrics *metrics;   /* worker.http_listen; NULL when off (every hook is a no-op) */
    reloader reload;           /* SIGHUP: the scheduler section and log.level */
} service;

/* Reservations whose VMs the inventory now shows on their own hosts. */
typedef struct materialised_vm {
    int64_t vmid;
    char node[HOST_NAME_LEN];
} materialised_vm;

typedef struct materialised {
    materialised_vm *vms;
    size_t n, cap;
} materialised;

/* ---- service_inventory.c ---- */

/* The inventory refresh thread: fetches `source` (borrowed, must outlive
 * it) every refresh_s seconds. Returns an owned refresher, or NULL with err
 * set. */
inventory_refresher *service_inventory_refresher_start(inventory *source, int refresh_s,
                                                       vf_error *err);
/* A reload: take refresh_s from now on and fetch at once. */
void service_inventory_refresher_fetch_now(inventory_refresher *r, int refresh_s);
/* Stops the thread, waits for it, frees it. NULL is a no-op. */
void service_inventory_refresher_stop(inventory_refresher *r);
int service_follow_inventory(service *svc, materialised *gone, vf_error *err);
/* Inside the caller's transaction: record svc->view as an inventory snapshot
 * fetched at `fetched`, unless its content is the last one recorded (by this
 * worker, or by any on the store: the store compares with its newest row).
 * Sets svc->snapshot_pending, which the caller moves to snapshot_hash after
 * the commit. Returns 0 or -1 with err set. */
int service_record_snapshot(service *svc, const char *fetched, vf_error *err);

/* service_recheck.c. Look at the engine's free room (after a snapshot
 * switch, an expiry or a release): when it grew, the waiting tasks are due a
 * recheck. */
void service_room_changed(service *svc);
/* When due and at most once a second, send up to retry.recheck_on_room
 * waiting task.schedule tasks again. Returns 0, or -1 when a publish failed
 * (the broker link). A store error only skips the round (logged). */
int service_recheck_waiting(service *svc, vf_error *err);
/* The link was lost: when the broker closed it refusing the worker's own
 * task.schedule publish (403 ACCESS_REFUSED on the topic, a broker whose
 * permissions predate rechecks, docs/upgrading.md) after a recheck, turn
 * rechecks off with one warning instead of reconnecting each time room grows.
 * Returns whether it did. */
bool service_recheck_refused(service *svc);

#endif
