/* store_receivers: the relay's receivers as operated (docs/webhooks.md "Pace
 * and circuit breaker", "Bulk redelivery"): each receiver's circuit breaker
 * (receiver_states), how late each is (lag), and operators' bulk
 * redeliveries (redeliveries, deliveries.redelivery_id). Part of the store:
 * what store.h says about durability, timestamps, strings, errors, threads
 * and listing callbacks holds here too. */
#ifndef VF_STORE_RECEIVERS_H
#define VF_STORE_RECEIVERS_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* ---- receiver_states: the circuit breaker ---- */

/* One receiver's breaker. Borrowed in listings (valid during the
 * callback), borrowed for the call as input; NULL strings are SQL NULL. */
typedef struct store_receiver_state {
    const char *receiver;
    const char *state;         /* "enabled" or "disabled" */
    const char *failing_since; /* the first failure since the last success; NULL: none */
    const char *disabled_at;   /* while disabled */
    const char *last_error;
    const char *updated_at;
} store_receiver_state;

typedef int (*store_receiver_state_fn)(const store_receiver_state *state, void *ctx);

/* Insert or overwrite the row of state->receiver. Returns 0 or -1. */
int store_receiver_state_put(store *s, const store_receiver_state *state, vf_error *err)
    __attribute__((warn_unused_result));

/* Call fn for every recorded receiver, by name. Returns 0 or -1. */
int store_receiver_states(store *s, store_receiver_state_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* Per receiver with due deliveries: the earliest next_attempt_at among its
 * 'pending' deliveries due by `now` (how far behind its schedule the relay
 * is for it). Borrowed during the callback. Returns 0 or -1. */
typedef int (*store_lag_fn)(const char *receiver, const char *oldest_due_at, void *ctx);
int store_deliveries_lag(store *s, const char *now, store_lag_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

/* ---- redeliveries: bulk redelivery ---- */

typedef struct store_redelivery_request {
    const char *id;           /* rdl_...: the same id is the same request */
    const char *receiver;     /* required */
    const char *since;        /* store time: deliveries created at or after it */
    bool exhausted_only;      /* only 'failed' rows (no attempt left); else also the
                                 'pending' ones whose last attempt failed */
    double rate_per_s;        /* > 0: the deliveries are due one after the other at this
                                 pace, oldest first; else all due now */
    const char *requested_by; /* NULL: unknown */
    const char *request;      /* the filters as given (JSON text), compared on a repeat */
    int64_t now_ms;           /* wall clock, ms */
} store_redelivery_request;

/* A redelivery and its progress: the deliveries it reset, by status now. */
typedef struct store_redelivery {
    char id[64];
    char receiver[128];
    char created_at[STORE_TIME_SIZE];
    char status_filter[16]; /* "failed" or "exhausted" */
    double rate_per_s;      /* 0: none asked */
    int64_t matched;        /* deliveries reset */
    int64_t pending, delivering, delivered, failed;
} store_redelivery;

/* In one transaction of its own: when no redelivery of req->id exists,
 * every delivery of req->receiver created at or after req->since whose last
 * attempt failed (exhausted_only: only those with no attempt left) goes back
 * to 'pending' with attempts 0 and redelivery_id = req->id, due now or, with
 * a rate, one after the other, oldest first; the redelivery is recorded.
 * Deliveries in flight ('delivering') are left alone. Returns 0 started, 1
 * it existed with the same request (nothing reset again), 2 it existed with
 * another request (nothing changed), -1 with err; *out is the redelivery
 * with its progress for 0 and 1. */
int store_redelivery_start(store *s, const store_redelivery_request *req, store_redelivery *out,
                           vf_error *err) __attribute__((warn_unused_result));

/* The redelivery `id` with its progress into *out: 0, 1 none of that id,
 * -1 with err. */
int store_redelivery_get(store *s, const char *id, store_redelivery *out, vf_error *err)
    __attribute__((warn_unused_result));

#endif
