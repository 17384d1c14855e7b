/* relay_metrics: virtflow-relay's metrics and its /metrics, /healthz and
 * /readyz endpoints on relay.http_listen.
 *
 * The relay's loop calls the hooks (atomic adds; a NULL handle, when
 * relay.http_listen is null or cannot be bound, makes each a no-op). The
 * backlog per receiver is read at scrape time from a store handle of the
 * server thread's own, not counted on the delivery path. Delivery counters
 * are added when the transaction recording the outcome commits, so they
 * match the deliveries table: after a run, outcome "delivered" equals the
 * receiver's delivered rows and "failed" its failed rows. */
#ifndef VF_RELAY_METRICS_H
#define VF_RELAY_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "metrics.h"

typedef struct relay_metrics relay_metrics;

/* NULL with err unset when relay.http_listen is NULL (off); NULL with err
 * set when it cannot listen there (the relay then stops). */
relay_metrics *relay_metrics_start(const vf_config *config, vf_error *err);
void relay_metrics_stop(relay_metrics *rm);

void relay_metrics_link(relay_metrics *rm, bool connected, bool consuming);
void relay_metrics_store_writable(relay_metrics *rm, bool writable);

/* `n` events recorded (one row per matching receiver each). */
void relay_metrics_events(relay_metrics *rm, size_t n);

/* One attempt's outcome, committed: "delivered", "retrying" (another
 * attempt is scheduled) or "failed" (none left); `seconds` from the start
 * of the POST to its answer, < 0 when unknown. */
void relay_metrics_delivery(relay_metrics *rm, const char *receiver, const char *outcome,
                            double seconds);

/* A receiver's circuit breaker: disabled or enabled (relay_flow.h). */
void relay_metrics_receiver_disabled(relay_metrics *rm, const char *receiver, bool disabled);

/* Untrusted events parked in virtflow.dead. */
void relay_metrics_parked(relay_metrics *rm);

#endif
