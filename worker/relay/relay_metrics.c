#include "relay_metrics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "metrics_http.h"
#include "process_metrics.h"
#include "store_deliveries.h"
#include "store_receivers.h"
#include "store_config.h"

/* From a LAN receiver's milliseconds to a slow one's timeout (15 s default). */
static const double delivery_seconds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                          0.5,   1,    2.5,   5,    10,  30};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct relay_metrics {
    const vf_config *config;
    metrics *m;
    metrics_http *server;
    metrics_family *deliveries; /* {receiver, outcome} */
    metrics_family *latency;    /* {receiver} seconds */
    metrics_family *backlog;    /* {receiver} */
    metrics_family *oldest;     /* {receiver} seconds */
    metrics_family *lag;        /* {receiver} seconds */
    metrics_family *disabled;   /* {receiver} 0 or 1 */
    metrics_series *ready_gauge, *events, *parked, *connected, *consuming, *writable,
        *scrape_errors;
    atomic_bool is_connected, is_consuming, is_writable;
    store *scrape_store; /* the server thread's own */
    process_metrics process;
};

/* "2026-11-22T01:02:03.456Z" (store time) to Unix seconds; -1 if not one. */
static double parse_time(const char *text)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int ms = 0;
    if (!text || sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d.%3d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                        &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) < 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (double)timegm(&tm) + ms / 1000.0;
}

static int add_backlog(const char *receiver, int64_t count, const char *oldest_at, void *arg)
{
    relay_metrics *rm = arg;
    const char *labels[] = {receiver};
    metrics_set(metrics_series_get(rm->backlog, labels), (double)count);
    double oldest = parse_time(oldest_at);
    double age = oldest < 0 ? 0 : (double)clock_wall_ms() / 1e3 - oldest;
    metrics_set(metrics_series_get(rm->oldest, labels), age > 0 ? age : 0);
    return 0;
}

static int add_lag(const char *receiver, const char *oldest_due_at, void *arg)
{
    relay_metrics *rm = arg;
    const char *labels[] = {receiver};
    double due = parse_time(oldest_due_at);
    double lag = due < 0 ? 0 : (double)clock_wall_ms() / 1e3 - due;
    metrics_set(metrics_series_get(rm->lag, labels), lag > 0 ? lag : 0);
    return 0;
}

static bool ready(void *arg, char *why, size_t size);

static void collect(metrics *m, void *arg)
{
    (void)m;
    relay_metrics *rm = arg;
    metrics_family_zero(rm->backlog);
    metrics_family_zero(rm->oldest);
    metrics_family_zero(rm->lag);
    for (size_t i = 0; i < rm->config->relay.n_receivers; i++) {
        const char *labels[] = {rm->config->relay.receivers[i].name};
        metrics_series_get(rm->backlog, labels); /* 0, not absent, when nothing waits */
        metrics_series_get(rm->oldest, labels);
        metrics_series_get(rm->lag, labels);
    }
    vf_error err;
    vf_error_init(&err);
    char now[STORE_TIME_SIZE];
    store_now(now);
    if ((!rm->scrape_store &&
         !(rm->scrape_store = store_config_open(rm->config, STORE_READ_ONLY, &err))) ||
        store_deliveries_backlog(rm->scrape_store, add_backlog, rm, &err) < 0 ||
        store_deliveries_lag(rm->scrape_store, now, add_lag, rm, &err) < 0) {
        log_debug("metrics: %s", err.text);
        metrics_add(rm->scrape_errors, 1);
        store_close(rm->scrape_store);
        rm->scrape_store = NULL;
    }
    metrics_set(rm->connected, atomic_load(&rm->is_connected));
    metrics_set(rm->consuming, atomic_load(&rm->is_consuming));
    metrics_set(rm->writable, atomic_load(&rm->is_writable));
    char why[256];
    metrics_set(rm->ready_gauge, ready(rm, why, sizeof why));
    process_metrics_collect(&rm->process);
}

static bool ready(void *arg, char *why, size_t size)
{
    relay_metrics *rm = arg;
    if (!atomic_load(&rm->is_connected))
        snprintf(why, size, "broker not connected");
    else if (!atomic_load(&rm->is_consuming))
        snprintf(why, size, "not consuming");
    else if (!atomic_load(&rm->is_writable))
        snprintf(why, size, "store not writable");
    else
        return true;
    return false;
}

static metrics_series *single(relay_metrics *rm, metrics_type type, const char *name,
                              const char *help, vf_error *err)
{
    return metrics_series_only(metrics_family_add(rm->m, type, name, help, 0, NULL, NULL, 0, err));
}

static int define(relay_metrics *rm, vf_error *err)
{
    const char *delivery_labels[] = {"receiver", "outcome"};
    const char *receiver[] = {"receiver"};
    rm->deliveries =
        metrics_family_add(rm->m, METRICS_COUNTER, "virtflow_relay_deliveries_total",
                           "Webhook attempts by receiver and outcome (delivered, retrying, failed)",
                           2, delivery_labels, NULL, 0, err);
    rm->latency =
        metrics_family_add(rm->m, METRICS_HISTOGRAM, "virtflow_relay_delivery_duration_seconds",
                           "From the start of a webhook POST to the receiver's answer "
                           "(or the failure)",
                           1, receiver, delivery_seconds, COUNT(delivery_seconds), err);
    rm->backlog = metrics_family_add(rm->m, METRICS_GAUGE, "virtflow_relay_backlog",
                                     "Deliveries not final yet (pending or being sent)", 1,
                                     receiver, NULL, 0, err);
    rm->oldest = metrics_family_add(
        rm->m, METRICS_GAUGE, "virtflow_relay_oldest_pending_age_seconds",
        "Age of the oldest delivery not final yet; 0 when none", 1, receiver, NULL, 0, err);
    rm->lag = metrics_family_add(
        rm->m, METRICS_GAUGE, "virtflow_relay_lag_seconds",
        "How late the receiver's earliest due delivery is (paced, disabled or short of slots); 0 "
        "when nothing is due",
        1, receiver, NULL, 0, err);
    rm->disabled = metrics_family_add(
        rm->m, METRICS_GAUGE, "virtflow_relay_receiver_disabled",
        "1 while the receiver's circuit breaker holds it disabled (probed every probe_s)", 1,
        receiver, NULL, 0, err);
    rm->events = single(rm, METRICS_COUNTER, "virtflow_relay_events_total",
                        "Events consumed and recorded", err);
    rm->parked = single(rm, METRICS_COUNTER, "virtflow_relay_parked_total",
                        "Events from untrusted publishers parked in virtflow.dead", err);
    rm->ready_gauge = single(rm, METRICS_GAUGE, "virtflow_relay_ready",
                             "1 when /readyz answers 200: broker connected, consuming, store "
                             "writable",
                             err);
    rm->connected = single(rm, METRICS_GAUGE, "virtflow_relay_broker_connected",
                           "1 while the broker connection is up", err);
    rm->consuming = single(rm, METRICS_GAUGE, "virtflow_relay_consuming",
                           "1 while the relay consumes virtflow.relay", err);
    rm->writable = single(rm, METRICS_GAUGE, "virtflow_relay_store_writable",
                          "1 unless the store refused the last write", err);
    rm->scrape_errors = single(rm, METRICS_COUNTER, "virtflow_relay_scrape_errors_total",
                               "Scrapes whose store-backed gauges could not be read", err);
    if (!rm->deliveries || !rm->latency || !rm->backlog || !rm->oldest || !rm->lag ||
        !rm->disabled || !rm->events || !rm->parked || !rm->ready_gauge || !rm->connected ||
        !rm->consuming || !rm->writable || !rm->scrape_errors) {
        if (err->code == VF_OK)
            vf_error_set(err, VF_ENOMEM, "out of memory defining metrics");
        return -1;
    }
    /* Every receiver's outcomes at 0 from the start, so an increase() over
     * the first failure sees it (a series born at 1 has no earlier sample). */
    static const char *const outcomes[] = {"delivered", "retrying", "failed"};
    for (size_t i = 0; i < rm->config->relay.n_receivers; i++) {
        const char *labels[] = {rm->config->relay.receivers[i].name};
        if (!metrics_series_get(rm->disabled, labels)) {
            vf_error_set(err, VF_ENOMEM, "out of memory defining metrics");
            return -1;
        }
    }
    for (size_t i = 0; i < rm->config->relay.n_receivers; i++)
        for (size_t o = 0; o < COUNT(outcomes); o++) {
            const char *labels[] = {rm->config->relay.receivers[i].name, outcomes[o]};
            if (!metrics_series_get(rm->deliveries, labels) ||
                !metrics_series_get(rm->latency, labels)) {
                vf_error_set(err, VF_ENOMEM, "out of memory defining metrics");
                return -1;
            }
        }
    return process_metrics_define(rm->m, &rm->process, err);
}

relay_metrics *relay_metrics_start(const vf_config *config, vf_error *err)
{
    if (!config->relay.http_listen)
        return NULL;
    relay_metrics *rm = calloc(1, sizeof *rm);
    if (!rm || !(rm->m = metrics_new())) {
        free(rm);
        rm = NULL;
        vf_error_set(err, VF_ENOMEM, "out of memory");
        goto fail;
    }
    rm->config = config;
    atomic_init(&rm->is_connected, false);
    atomic_init(&rm->is_consuming, false);
    atomic_init(&rm->is_writable, true);
    if (define(rm, err) < 0)
        goto fail;
    metrics_set_collect(rm->m, collect, rm);
    rm->server = metrics_http_start(config->relay.http_listen, rm->m, ready, rm, err);
    if (!rm->server)
        goto fail;
    log_info("serving /metrics, /healthz and /readyz on port %d (relay.http_listen %s)",
             metrics_http_port(rm->server), config->relay.http_listen);
    return rm;
fail:
    /* Stops the relay: see worker_metrics_start. */
    vf_error_prefix(err, "relay.http_listen %s", config->relay.http_listen);
    if (rm)
        metrics_free(rm->m);
    free(rm);
    return NULL;
}

void relay_metrics_stop(relay_metrics *rm)
{
    if (!rm)
        return;
    metrics_http_stop(rm->server);
    store_close(rm->scrape_store);
    metrics_free(rm->m);
    free(rm);
}

void relay_metrics_link(relay_metrics *rm, bool connected, bool consuming)
{
    if (!rm)
        return;
    atomic_store(&rm->is_connected, connected);
    atomic_store(&rm->is_consuming, consuming);
}

void relay_metrics_store_writable(relay_metrics *rm, bool writable)
{
    if (rm)
        atomic_store(&rm->is_writable, writable);
}

void relay_metrics_events(relay_metrics *rm, size_t n)
{
    if (rm && n)
        metrics_add(rm->events, n);
}

void relay_metrics_receiver_disabled(relay_metrics *rm, const char *receiver, bool disabled)
{
    if (!rm)
        return;
    const char *labels[] = {receiver};
    metrics_set(metrics_series_get(rm->disabled, labels), disabled ? 1 : 0);
}

void relay_metrics_parked(relay_metrics *rm)
{
    if (rm)
        metrics_add(rm->parked, 1);
}

void relay_metrics_delivery(relay_metrics *rm, const char *receiver, const char *outcome,
                            double seconds)
{
    if (!rm)
        return;
    const char *labels[] = {receiver, outcome};
    metrics_add(metrics_series_get(rm->deliveries, labels), 1);
    if (seconds >= 0)
        metrics_observe(metrics_series_get(rm->latency, labels), seconds);
}
