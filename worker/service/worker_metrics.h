/* worker_metrics: virtflow-worker's metrics and its /metrics, /healthz and
 * /readyz endpoints on worker.http_listen.
 *
 * The service calls the hooks below from its main thread; each is a few
 * relaxed atomic adds, and a NULL handle (worker.http_listen: null) makes
 * every hook a no-op. What the worker already keeps elsewhere is read at
 * scrape time on the server's thread instead of being counted on the hot
 * path: the inventory snapshot (inventory_acquire is thread-safe) for its
 * age, hosts by status and free capacity per pool, and a store handle of
 * that thread's own for live reservations and the unconfirmed outbox.
 *
 * Counters count what is committed: a batch's outcomes are added once its
 * transaction commits, so after a run virtflow_tasks_total equals the
 * store's counts of tasks by kind, status and reason (a redelivered message
 * whose task is final counts as a duplicate, not again). */
#ifndef VF_WORKER_METRICS_H
#define VF_WORKER_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "amqp_link.h"
#include "config.h"
#include "engine.h"
#include "inventory.h"
#include "metrics.h"
#include "task_handler.h"

typedef struct worker_metrics worker_metrics;

/* Starts the endpoints on config->worker.http_listen. NULL with err unset
 * when that is NULL (off); NULL with err set when it cannot listen (the
 * port is taken, the address is not this machine's): the worker then
 * stops. `config` and `inv` are borrowed and must outlive the handle. */
worker_metrics *worker_metrics_start(const vf_config *config, inventory *inv, vf_error *err);

/* Stops the endpoints first (no scrape runs after), then frees. NULL is fine. */
void worker_metrics_stop(worker_metrics *wm);

/* The broker link: connected, and whether the consumers are on. */
void worker_metrics_link(worker_metrics *wm, bool connected, bool consuming);

/* The scheduler's parameters as the engine now resolves them (after a
 * SIGHUP reload): free capacity and headroom are counted with them from the
 * next scrape on. Copied. */
void worker_metrics_scheduler(worker_metrics *wm, const sched_params *params);

/* The store took (true) or refused (false) the last write. */
void worker_metrics_store_writable(worker_metrics *wm, bool writable);

/* One message decided in `seconds` (monotonic clock). */
void worker_metrics_decided(worker_metrics *wm, double seconds);

/* A batch of `n` messages committed in `commit_seconds`. */
void worker_metrics_batch(worker_metrics *wm, size_t n, double commit_seconds);

/* The worker's main store handle has waited `total` times for the
 * database server since it was opened (store_round_trips): the counter
 * follows it. */
void worker_metrics_round_trips(worker_metrics *wm, uint64_t total);

/* One message of a committed batch: counts its outcome. `commit_wall_ms`
 * is when the batch committed (Unix ms), for the publish-to-commit latency
 * from the message's AMQP timestamp. */
void worker_metrics_outcome(worker_metrics *wm, const amqp_link_delivery *d, const task_outcome *o,
                            int64_t commit_wall_ms);

/* The histogram the WAL sync thread observes each fsync into (NULL when off). */
metrics_series *worker_metrics_fsync_series(worker_metrics *wm);

/* The registry, for tests and for other modules' metrics. NULL when off. */
metrics *worker_metrics_registry(worker_metrics *wm);

#endif
