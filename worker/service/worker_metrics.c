#include "worker_metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_names.h"
#include "clock.h"
#include "engine.h"
#include "headroom.h"
#include "log.h"
#include "metrics_http.h"
#include "process_metrics.h"
#include "headroom_forecast.h"
#include "scrape_shapes.h"
#include "handler.h"
#include "store_outbox.h"
#include "store_reservations.h"
#include "store_config.h"

/* Seconds: a decision takes tens of microseconds, a commit milliseconds, a
 * message waits in the queue up to minutes while the worker is behind. */
static const double fast_seconds[] = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
                                      0.001,   0.0025,   0.005,   0.01,   0.025,   0.05,
                                      0.1,     0.25,     0.5,     1,      2.5};
static const double latency_seconds[] = {0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800};
static const double batch_sizes[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct worker_metrics {
    const vf_config *config;
    inventory *inv;
    metrics *m;
    metrics_http *server;

    metrics_family *tasks;        /* {kind, status, reason}: final states recorded */
    metrics_family *messages;     /* {kind, outcome}: every message handled */
    metrics_family *retries;      /* {kind} */
    metrics_family *dead;         /* {reason} */
    metrics_family *placements;   /* {scheduler, status}: task.schedule final states */
    metrics_family *lane;         /* {lane}: task.schedule messages handled */
    metrics_family *lane_latency; /* {lane}: publish-to-commit seconds */
    metrics_series *decision;     /* seconds */
    metrics_series *latency;      /* publish-to-commit seconds */
    metrics_series *batch;        /* messages per batch */
    metrics_series *commit;       /* seconds */
    metrics_series *fsync;        /* seconds */
    metrics_series *ready_gauge;  /* 0/1, what /readyz answers */
    metrics_series *connected;    /* 0/1 */
    metrics_series *consuming;    /* 0/1 */
    metrics_series *writable;     /* 0/1 */
    metrics_series *inventory_age, *inventory_hosts, *inventory_max_age;
    metrics_family *hosts;          /* {status} */
    metrics_family *free_vcpus;     /* {pool} */
    metrics_family *free_memory;    /* {pool} MiB */
    metrics_family *free_slots;     /* {pool} */
    metrics_family *headroom_vms;   /* {pool, shape} */
    metrics_family *headroom_days;  /* {pool, shape}: virtflow_headroom_days_left */
    headroom_flow flow;             /* server thread only: the forecast's window, reread
                                       every FORECAST_REREAD_S */
    int64_t flow_read_ms;           /* monotonic; 0: never */
    metrics_family *headroom_hosts; /* {pool, shape} */
    metrics_family *headroom_min;   /* {shape}: worker.headroom_shapes.NAME.min_hosts */
    metrics_family *spares_fit;     /* {pool, shape}: the last spare.prepare's spares fit */
    metrics_family *spares_wanted;  /* {pool, shape}: its count */
    /* As the engine resolves them (plugins' args applied): set at start, and
     * by the main thread after a SIGHUP reload; read by scrapes. */
    pthread_mutex_t params_lock;
    sched_params params;
    metrics_series *reservations, *outbox, *scrape_errors;
    metrics_series *round_trips;   /* the batches' and claims' waits for the server */
    metrics_series *claims;        /* placements claimed (reservations.h), a total kept there */
    metrics_series *claims_missed; /* of which missed: decided again */
    metrics_series *lock_wait;     /* seconds waited for the store's locks, a total kept here */
    uint64_t round_trips_seen;     /* main thread only: what round_trips counts up to */
    process_metrics process;

    atomic_bool is_connected, is_consuming, is_writable;
    store *scrape_store;  /* the server thread's own handle, opened at the first scrape */
    scrape_shapes shapes; /* server thread only: recent shapes, the last spare.prepare */
};

/* ---- scrape time ---- */

/* Live reservations summed per host of the snapshot the scrape reads. */
typedef struct live_sums {
    const hostset *hosts;   /* NULL: no snapshot yet */
    sched_host_load *loads; /* per host of `hosts` */
    size_t count;           /* every live reservation, on a listed host or not */
} live_sums;

static int add_live(const store_reservation *r, void *arg)
{
    live_sums *sums = arg;
    sums->count++;
    const host *h = sums->hosts ? hostset_find(sums->hosts, r->node) : NULL;
    if (h) {
        sched_host_load *load = &sums->loads[h - sums->hosts->hosts];
        load->cpu += r->cpu;
        load->memory += r->memory;
        load->disk += r->disk;
        load->vms++;
    }
    return 0;
}

/* Reservations and the outbox, from the store. False when the store could
 * not be read (the gauges keep their last values; scrape errors count). */
static bool collect_store(worker_metrics *wm, live_sums *sums)
{
    vf_error err;
    vf_error_init(&err);
    if (!wm->scrape_store &&
        !(wm->scrape_store = store_config_open(wm->config, STORE_READ_ONLY, &err))) {
        log_debug("metrics: %s", err.text);
        return false;
    }
    char now[STORE_TIME_SIZE];
    int64_t pending = 0;
    if (store_reservation_clock(wm->scrape_store, now, &err) < 0 ||
        store_reservations_live(wm->scrape_store, now, add_live, sums, &err) < 0 ||
        store_outbox_count_pending(wm->scrape_store, &pending, &err) < 0) {
        log_debug("metrics: %s", err.text);
        store_close(wm->scrape_store); /* a fresh handle next time */
        wm->scrape_store = NULL;
        return false;
    }
    metrics_set(wm->reservations, (double)sums->count);
    metrics_set(wm->outbox, (double)pending);
    if (scrape_shapes_read(&wm->shapes, wm->scrape_store, clock_wall_ms(), &err) < 0) {
        /* The shapes of the last good read stay: the headroom still counts. */
        log_debug("metrics: %s", err.text);
        metrics_add(wm->scrape_errors, 1);
    }
    return true;
}

/* The shapes headroom counts: worker.headroom_shapes, the recent ones and
 * the last spare.prepare's (scrape_shapes.h). Returns how many. */
static size_t headroom_shapes(const worker_metrics *wm, config_shape *out, size_t cap)
{
    const vf_config *c = wm->config;
    size_t n = 0;
    for (size_t k = 0; k < c->worker.n_headroom_shapes && n < cap; k++)
        out[n++] = c->worker.headroom_shapes[k];
    for (size_t k = 0; k < wm->shapes.n_recent && n < cap; k++)
        out[n++] = wm->shapes.recent[k];
    if (wm->shapes.have_spare && n < cap)
        out[n++] = wm->shapes.spare;
    return n;
}

/* The forecast reads a pass over the reservations: once in this many
 * seconds, not at every scrape (the rate moves over days). */
#define FORECAST_REREAD_S 300

/* virtflow_headroom_days_left (forecast.h) for the configured shapes and
 * the last spare.prepare's (the recent ones come and go too fast for a
 * rate): the first nconfigured shapes and, with have_spare, the last. */
static void collect_forecast(worker_metrics *wm, const hostset *hosts, const sched_headroom *now,
                             const config_shape *shapes, size_t n_shapes)
{
    int64_t mono = clock_mono_ms();
    vf_error err;
    vf_error_init(&err);
    if (wm->scrape_store &&
        (!wm->flow_read_ms || mono - wm->flow_read_ms >= FORECAST_REREAD_S * 1000)) {
        headroom_flow fresh;
        if (headroom_flow_read(&fresh, wm->scrape_store, clock_wall_ms(),
                               HEADROOM_FORECAST_WINDOW_DAYS, &err) < 0) {
            log_debug("metrics: forecast: %s", err.text);
            metrics_add(wm->scrape_errors, 1);
            headroom_flow_close(&fresh);
        } else {
            headroom_flow_close(&wm->flow);
            wm->flow = fresh;
            wm->flow_read_ms = mono;
        }
    }
    if (!wm->flow_read_ms)
        return;
    forecast *f = calloc(now->n_pools * n_shapes + 1, sizeof *f);
    if (!f || headroom_forecast(&wm->flow, hosts, now, shapes, n_shapes, f) < 0) {
        metrics_add(wm->scrape_errors, 1);
        free(f);
        return;
    }
    size_t configured = wm->config->worker.n_headroom_shapes;
    for (size_t p = 0; p < now->n_pools; p++)
        for (size_t k = 0; k < n_shapes; k++) {
            bool spare = wm->shapes.have_spare && k == n_shapes - 1;
            if (k >= configured && !spare)
                continue;
            const char *labels[] = {now->pools[p].pool, shapes[k].name};
            metrics_set(metrics_series_get(wm->headroom_days, labels), f[p * n_shapes + k].days);
        }
    free(f);
}

/* Free capacity and headroom per pool (headroom.h), from the snapshot and
 * the live reservations on it. */
static void collect_pools(worker_metrics *wm, const hostset *hosts, const sched_host_load *loads)
{
    metrics_family_zero(wm->free_vcpus);
    metrics_family_zero(wm->free_memory);
    metrics_family_zero(wm->free_slots);
    /* Shapes come and go (recent ones, the last spare.prepare's): what is
     * not counted now must not read as a real 0. */
    metrics_family_clear(wm->headroom_vms);
    metrics_family_clear(wm->headroom_hosts);
    metrics_family_clear(wm->headroom_days);
    metrics_family_clear(wm->spares_fit);
    metrics_family_clear(wm->spares_wanted);
    if (!hosts)
        return;
    pthread_mutex_lock(&wm->params_lock);
    sched_params params = wm->params;
    pthread_mutex_unlock(&wm->params_lock);
    config_shape *shapes =
        calloc(wm->config->worker.n_headroom_shapes + SCRAPE_RECENT_SHAPES + 1, sizeof *shapes);
    size_t n_shapes =
        shapes ? headroom_shapes(wm, shapes,
                                 wm->config->worker.n_headroom_shapes + SCRAPE_RECENT_SHAPES + 1)
               : 0;
    sched_headroom headroom;
    if (!shapes || sched_headroom_compute(&headroom, &params, hosts, loads, shapes, n_shapes) < 0) {
        log_debug("metrics: out of memory counting headroom");
        metrics_add(wm->scrape_errors, 1);
        if (shapes)
            sched_headroom_close(&headroom);
        free(shapes);
        return;
    }
    bool spare_pool_seen = false;
    for (size_t p = 0; p < headroom.n_pools; p++) {
        const sched_headroom_pool *pool = &headroom.pools[p];
        const char *labels[] = {pool->pool};
        metrics_set(metrics_series_get(wm->free_vcpus, labels), pool->free_cpu);
        metrics_set(metrics_series_get(wm->free_memory, labels), pool->free_memory);
        metrics_set(metrics_series_get(wm->free_slots, labels), (double)pool->free_slots);
        for (size_t k = 0; k < headroom.n_shapes; k++) {
            const char *shape_labels[] = {pool->pool, shapes[k].name};
            metrics_set(metrics_series_get(wm->headroom_vms, shape_labels),
                        (double)pool->shapes[k].vms);
            metrics_set(metrics_series_get(wm->headroom_hosts, shape_labels),
                        (double)pool->shapes[k].hosts);
        }
        /* The last spare.prepare asked for its own pool only: the last shape. */
        if (wm->shapes.have_spare && strcmp(pool->pool, wm->shapes.spare_pool) == 0) {
            spare_pool_seen = true;
            const char *spare_labels[] = {pool->pool, SCRAPE_LAST_SPARE_SHAPE};
            bool fits =
                sched_headroom_spares_fit(&pool->shapes[n_shapes - 1], wm->shapes.spare_count,
                                          wm->config->spare.anti_affinity_strict);
            metrics_set(metrics_series_get(wm->spares_fit, spare_labels), fits);
            metrics_set(metrics_series_get(wm->spares_wanted, spare_labels),
                        (double)wm->shapes.spare_count);
        }
    }
    if (wm->shapes.have_spare && !spare_pool_seen) {
        /* Its pool has no host any more: nothing fits. */
        const char *spare_labels[] = {wm->shapes.spare_pool, SCRAPE_LAST_SPARE_SHAPE};
        metrics_set(metrics_series_get(wm->spares_fit, spare_labels), 0);
        metrics_set(metrics_series_get(wm->spares_wanted, spare_labels),
                    (double)wm->shapes.spare_count);
    }
    collect_forecast(wm, hosts, &headroom, shapes, n_shapes);
    sched_headroom_close(&headroom);
    free(shapes);
}

static bool ready(void *arg, char *why, size_t size);

static void collect(metrics *m, void *arg)
{
    (void)m;
    worker_metrics *wm = arg;
    inventory_view view;
    inventory_acquire(wm->inv, &view);
    size_t n_hosts = view.hosts ? view.hosts->n_hosts : 0;
    live_sums sums = {view.hosts, calloc(n_hosts ? n_hosts : 1, sizeof *sums.loads), 0};
    if (!sums.loads)
        sums.hosts = NULL; /* out of memory: no free capacity this scrape */
    if (!sums.loads || !collect_store(wm, &sums)) {
        metrics_add(wm->scrape_errors, 1);
        /* What the store holds is unknown: count free room without it. */
        if (sums.loads)
            memset(sums.loads, 0, n_hosts * sizeof *sums.loads);
    }
    metrics_set(wm->inventory_age, view.hosts ? view.age_s : -1);
    static const char *const status_names[] = {"online", "offline", "maintenance", "unknown"};
    metrics_family_zero(wm->hosts);
    metrics_set(wm->inventory_hosts, (double)n_hosts);
    for (size_t i = 0; i < n_hosts; i++) {
        const host *h = &view.hosts->hosts[i];
        const char *status[] = {status_names[h->status <= HOST_UNKNOWN ? h->status : HOST_UNKNOWN]};
        metrics_set(metrics_series_get(wm->hosts, status),
                    metrics_value(metrics_series_get(wm->hosts, status)) + 1);
    }
    collect_pools(wm, sums.hosts, sums.loads);
    free(sums.loads);
    inventory_release(&view);
    metrics_set(wm->connected, atomic_load(&wm->is_connected));
    metrics_set(wm->consuming, atomic_load(&wm->is_consuming));
    metrics_set(wm->writable, atomic_load(&wm->is_writable));
    char why[256];
    metrics_set(wm->ready_gauge, ready(wm, why, sizeof why));
    process_metrics_collect(&wm->process);
}

static bool ready(void *arg, char *why, size_t size)
{
    worker_metrics *wm = arg;
    if (!atomic_load(&wm->is_connected)) {
        snprintf(why, size, "broker not connected");
        return false;
    }
    if (!atomic_load(&wm->is_writable)) {
        snprintf(why, size, "store not writable");
        return false;
    }
    if (!atomic_load(&wm->is_consuming)) {
        snprintf(why, size, "not consuming");
        return false;
    }
    inventory_view view;
    inventory_acquire(wm->inv, &view);
    bool fresh = view.hosts && view.age_s <= wm->config->inventory.max_age_s;
    if (!view.hosts)
        snprintf(why, size, "no inventory yet%s%.200s", view.error[0] ? ": " : "", view.error);
    else if (!fresh)
        snprintf(why, size, "inventory is %.0f s old (inventory.max_age_s %d)%s%.200s", view.age_s,
                 wm->config->inventory.max_age_s, view.error[0] ? ": " : "", view.error);
    inventory_release(&view);
    return fresh;
}

/* ---- start, stop ---- */

/* Every label set the worker knows of, created at 0 before anything
 * happens: a counter that appears at 1 has no earlier sample, so
 * increase(virtflow_dead_letters_total[15m]) > 0 would miss the first dead
 * letter. Label sets this list lacks (a spare state) still appear on first use. */
static int born_at_zero(worker_metrics *wm, vf_error *err)
{
    static const char *const task_kinds[] = {"schedule", "spare"};
    static const char *const message_kinds[] = {"schedule", "spare", "release"};
    static const char *const failed_reasons[] = {"invalid", "unschedulable", "never_fits",
                                                 "exhausted"};
    /* Per kind in message_kinds' order; a spare's states appear as reached. */
    static const char *const outcomes[][6] = {
        {"completed", "failed", "retrying", "duplicate", "dead", "conflict"},
        {"failed", "retrying", "duplicate", "dead", "conflict", NULL},
        {"released", "refused", "duplicate", "dead", NULL},
    };
    static const char *const dead_reasons[] = {"malformed", "too_large", "exhausted",
                                               "kind_mismatch"};
    bool ok = true;
    for (size_t k = 0; k < COUNT(task_kinds); k++) {
        const char *completed[] = {task_kinds[k], "completed", ""};
        ok = ok && metrics_series_get(wm->tasks, completed);
        for (size_t r = 0; r < COUNT(failed_reasons); r++) {
            const char *failed[] = {task_kinds[k], "failed", failed_reasons[r]};
            ok = ok && metrics_series_get(wm->tasks, failed);
        }
    }
    for (size_t k = 0; k < COUNT(message_kinds); k++) {
        const char *kind[] = {message_kinds[k]};
        ok = ok && metrics_series_get(wm->retries, kind);
        for (size_t o = 0; o < COUNT(outcomes[k]) && outcomes[k][o]; o++) {
            const char *labels[] = {message_kinds[k], outcomes[k][o]};
            ok = ok && metrics_series_get(wm->messages, labels);
        }
    }
    for (size_t r = 0; r < COUNT(dead_reasons); r++) {
        const char *reason[] = {dead_reasons[r]};
        ok = ok && metrics_series_get(wm->dead, reason);
    }
    for (size_t p = 0; p <= wm->config->scheduler.n_profiles; p++) {
        const char *name = p == 0 ? "default" : wm->config->scheduler.profiles[p - 1].name;
        const char *completed[] = {name, "completed"}, *failed[] = {name, "failed"};
        ok = ok && metrics_series_get(wm->placements, completed) &&
             metrics_series_get(wm->placements, failed);
    }
    if (!ok)
        vf_error_set(err, VF_ENOMEM, "out of memory defining metrics");
    return ok ? 0 : -1;
}

/* One metric the worker exposes, kept in `field` of struct worker_metrics:
 * a metrics_family * when it has labels, else its one metrics_series *. */
typedef struct metric_definition {
    size_t field;
    metrics_type type;
    const char *name;
    const char *help;
    const char *labels[3]; /* up to the first NULL; borrowed by the registry */
    const double *buckets; /* histograms */
    size_t n_buckets;
} metric_definition;

#define FIELD(member) .field = offsetof(struct worker_metrics, member)
#define BUCKETS(bounds) .buckets = (bounds), .n_buckets = COUNT(bounds)

/* In the order /metrics shows them (docs/operations.md lists them). */
static const metric_definition definitions[] = {
    {FIELD(tasks), .type = METRICS_COUNTER, .name = "virtflow_tasks_total",
     .help = "Tasks that reached a final state (completed or failed), by kind, status "
             "and reason; equals the store's counts",
     .labels = {"kind", "status", "reason"}},
    {FIELD(messages), .type = METRICS_COUNTER, .name = "virtflow_task_messages_total",
     .help = "Messages handled, by kind and outcome (completed, failed, retrying, "
             "duplicate, dead, or a spare state)",
     .labels = {"kind", "outcome"}},
    {FIELD(retries), .type = METRICS_COUNTER, .name = "virtflow_retries_total",
     .help = "Messages sent back through a retry delay tier", .labels = {"kind"}},
    {FIELD(dead), .type = METRICS_COUNTER, .name = "virtflow_dead_letters_total",
     .help = "Messages parked in virtflow.dead, by reason (malformed, too_large, "
             "exhausted, kind_mismatch)",
     .labels = {"reason"}},
    {FIELD(placements), .type = METRICS_COUNTER, .name = "virtflow_placements_total",
     .help = "task.schedule tasks that reached a final state, by scheduling "
             "profile (scheduler.profiles; \"(unknown)\": a name no profile has) "
             "and status",
     .labels = {"scheduler", "status"}},
    {FIELD(decision), .type = METRICS_HISTOGRAM, .name = "virtflow_decision_duration_seconds",
     .help = "Time to decide and record one message", BUCKETS(fast_seconds)},
    {FIELD(lane), .type = METRICS_COUNTER, .name = "virtflow_lane_messages_total",
     .help = "task.schedule messages handled, by lane: priority (routing key "
             "task.schedule.priority) or normal",
     .labels = {"lane"}},
    {FIELD(lane_latency), .type = METRICS_HISTOGRAM,
     .name = "virtflow_lane_publish_to_commit_seconds",
     .help = "virtflow_publish_to_commit_seconds of task.schedule messages, by "
             "lane: how long each lane waits",
     .labels = {"lane"}, BUCKETS(latency_seconds)},
    {FIELD(latency), .type = METRICS_HISTOGRAM, .name = "virtflow_publish_to_commit_seconds",
     .help = "From the request's AMQP timestamp (whole seconds, as published) to the "
             "commit of its outcome",
     BUCKETS(latency_seconds)},
    {FIELD(batch), .type = METRICS_HISTOGRAM, .name = "virtflow_batch_size",
     .help = "Messages recorded per store transaction", BUCKETS(batch_sizes)},
    {FIELD(commit), .type = METRICS_HISTOGRAM, .name = "virtflow_commit_duration_seconds",
     .help = "Time to commit one batch's transaction", BUCKETS(fast_seconds)},
    {FIELD(fsync), .type = METRICS_HISTOGRAM, .name = "virtflow_fsync_duration_seconds",
     .help = "Time of one WAL sync (fsync) making committed batches durable",
     BUCKETS(fast_seconds)},
    {FIELD(inventory_age), .type = METRICS_GAUGE, .name = "virtflow_inventory_age_seconds",
     .help = "Age of the newest inventory snapshot; -1 before the first fetch"},
    {FIELD(inventory_max_age), .type = METRICS_GAUGE, .name = "virtflow_inventory_max_age_seconds",
     .help = "inventory.max_age_s: past this age no placement is made (the stale-inventory "
             "alert compares virtflow_inventory_age_seconds with it)"},
    {FIELD(inventory_hosts), .type = METRICS_GAUGE, .name = "virtflow_inventory_hosts",
     .help = "Hosts in the newest inventory snapshot"},
    {FIELD(hosts), .type = METRICS_GAUGE, .name = "virtflow_hosts",
     .help = "Hosts in the inventory by status", .labels = {"status"}},
    {FIELD(free_vcpus), .type = METRICS_GAUGE, .name = "virtflow_free_vcpus",
     .help = "vCPUs still placeable per pool on online hosts (overcommit and "
             "reserve applied, live reservations taken off)",
     .labels = {"pool"}},
    {FIELD(free_memory), .type = METRICS_GAUGE, .name = "virtflow_free_memory_mib",
     .help = "Memory still placeable per pool on online hosts, MiB", .labels = {"pool"}},
    {FIELD(free_slots), .type = METRICS_GAUGE, .name = "virtflow_free_vm_slots",
     .help = "VM slots still free per pool on online hosts (live reservations "
             "taken off)",
     .labels = {"pool"}},
    {FIELD(headroom_vms), .type = METRICS_GAUGE, .name = "virtflow_headroom_vms",
     .help = "VMs of each shape that still fit per pool (shared requests on "
             "online hosts, live reservations taken off); shapes: "
             "worker.headroom_shapes, recent:<size> (the 3 most requested in "
             "the last hour), last_spare_prepare",
     .labels = {"pool", "shape"}},
    {FIELD(headroom_days), .type = METRICS_GAUGE, .name = "virtflow_headroom_days_left",
     .help = "Days until no VM of the shape fits the pool at the rate of the "
             "last 14 days (least-squares slope of placements less releases; "
             "+Inf: not running out); shapes: worker.headroom_shapes, "
             "last_spare_prepare",
     .labels = {"pool", "shape"}},
    {FIELD(headroom_hosts), .type = METRICS_GAUGE, .name = "virtflow_headroom_hosts",
     .help = "Hosts per pool that still take at least one VM of each shape: "
             "anti-affine spares that fit",
     .labels = {"pool", "shape"}},
    {FIELD(spares_fit), .type = METRICS_GAUGE, .name = "virtflow_headroom_spares_fit",
     .help = "1 when the last spare.prepare's count of spares of its shape fits "
             "its pool now (one a host under spare.anti_affinity_strict), else 0",
     .labels = {"pool", "shape"}},
    {FIELD(spares_wanted), .type = METRICS_GAUGE, .name = "virtflow_headroom_spares_wanted",
     .help = "Spares the last spare.prepare asked for (its count), by its pool",
     .labels = {"pool", "shape"}},
    {FIELD(headroom_min), .type = METRICS_GAUGE, .name = "virtflow_headroom_min_hosts",
     .help = "worker.headroom_shapes.NAME.min_hosts: below this many hosts "
             "taking one, VirtflowHeadroomLow fires (0: no alert)",
     .labels = {"shape"}},
    {FIELD(reservations), .type = METRICS_GAUGE, .name = "virtflow_reservations_live",
     .help = "Reservations held (not yet released or expired)"},
    {FIELD(outbox), .type = METRICS_GAUGE, .name = "virtflow_outbox_unconfirmed",
     .help = "Events in the outbox not yet confirmed by the broker"},
    {FIELD(ready_gauge), .type = METRICS_GAUGE, .name = "virtflow_ready",
     .help = "1 when /readyz answers 200: consuming, broker connected, store "
             "writable, inventory fresh"},
    {FIELD(connected), .type = METRICS_GAUGE, .name = "virtflow_broker_connected",
     .help = "1 while the broker connection is up"},
    {FIELD(consuming), .type = METRICS_GAUGE, .name = "virtflow_consuming",
     .help = "1 while the worker consumes its queues"},
    {FIELD(writable), .type = METRICS_GAUGE, .name = "virtflow_store_writable",
     .help = "1 unless the store refused the last write"},
    {FIELD(scrape_errors), .type = METRICS_COUNTER, .name = "virtflow_scrape_errors_total",
     .help = "Scrapes whose store-backed gauges could not be read"},
    {FIELD(round_trips), .type = METRICS_COUNTER, .name = "virtflow_store_round_trips_total",
     .help = "Times the worker's batches and claims waited for the database "
             "server's answer (PostgreSQL; 0 on SQLite)"},
    {FIELD(claims), .type = METRICS_COUNTER, .name = "virtflow_claims_total",
     .help = "Placements claimed by fit in the store (docs/operations.md \"Running "
             "several workers\")"},
    {FIELD(claims_missed), .type = METRICS_COUNTER, .name = "virtflow_claims_missed_total",
     .help = "Claims that missed (no room left on the host in the store, or "
             "the vmid held): the placement was decided again"},
    {FIELD(lock_wait), .type = METRICS_COUNTER, .name = "virtflow_store_lock_wait_seconds_total",
     .help = "Seconds the batches waited for the store's locks: SQLite's write "
             "lock; PostgreSQL's claims' host locks"},
};

/* Add `d` to the registry and keep it in its field. 0, or -1 with err. */
static int define_one(worker_metrics *wm, const metric_definition *d, vf_error *err)
{
    size_t n_labels = 0;
    while (n_labels < COUNT(d->labels) && d->labels[n_labels])
        n_labels++;
    metrics_family *f = metrics_family_add(wm->m, d->type, d->name, d->help, n_labels, d->labels,
                                           d->buckets, d->n_buckets, err);
    if (!f)
        return -1;
    void *slot = (char *)wm + d->field;
    if (n_labels) {
        *(metrics_family **)slot = f;
        return 0;
    }
    metrics_series *only = metrics_series_only(f);
    *(metrics_series **)slot = only;
    if (only)
        return 0;
    vf_error_set(err, VF_ENOMEM, "out of memory defining metrics");
    return -1;
}

static int define(worker_metrics *wm, vf_error *err)
{
    for (size_t i = 0; i < COUNT(definitions); i++)
        if (define_one(wm, &definitions[i], err) < 0)
            return -1;
    metrics_set(wm->inventory_max_age, wm->config->inventory.max_age_s);
    for (size_t k = 0; k < wm->config->worker.n_headroom_shapes; k++) {
        const config_shape *sh = &wm->config->worker.headroom_shapes[k];
        const char *labels[] = {sh->name};
        metrics_series *min = metrics_series_get(wm->headroom_min, labels);
        if (!min) {
            vf_error_set(err, VF_ENOMEM, "out of memory defining metrics");
            return -1;
        }
        metrics_set(min, (double)sh->min_hosts);
    }
    return born_at_zero(wm, err) < 0 || process_metrics_define(wm->m, &wm->process, err) < 0 ? -1
                                                                                             : 0;
}

worker_metrics *worker_metrics_start(const vf_config *config, inventory *inv, vf_error *err)
{
    if (!config->worker.http_listen)
        return NULL;
    worker_metrics *wm = calloc(1, sizeof *wm);
    if (!wm || !(wm->m = metrics_new())) {
        free(wm);
        vf_error_set(err, VF_ENOMEM, "out of memory");
        wm = NULL;
        goto fail;
    }
    wm->config = config;
    wm->inv = inv;
    pthread_mutex_init(&wm->params_lock, NULL);
    atomic_init(&wm->is_connected, false);
    atomic_init(&wm->is_consuming, false);
    atomic_init(&wm->is_writable, true);
    if (define(wm, err) < 0)
        goto fail;
    /* Free room counts as the filters do: with the ratios and reserves the
     * plugins' args refine, resolved once as the engine resolves them (a
     * plugin error stops the worker before this). */
    sched_params_from_config(&wm->params, config);
    sched_engine *resolver = sched_engine_new(&wm->params, err);
    if (!resolver)
        goto fail;
    wm->params = *sched_engine_params(resolver);
    wm->params.plugins = NULL; /* borrowed by sched_engine_new only */
    wm->params.n_plugins = 0;
    sched_engine_free(resolver);
    metrics_set_collect(wm->m, collect, wm);
    wm->server = metrics_http_start(config->worker.http_listen, wm->m, ready, wm, err);
    if (!wm->server)
        goto fail;
    log_info("serving /metrics, /healthz and /readyz on port %d (worker.http_listen %s)",
             metrics_http_port(wm->server), config->worker.http_listen);
    return wm;
fail:
    /* A worker whose probes cannot answer would be restarted by a kubelet
     * and reported ready by nobody: it stops at once, as virtflow-api does,
     * so the operator sees the taken port instead of a silent target. */
    vf_error_prefix(err, "worker.http_listen %s", config->worker.http_listen);
    if (wm) {
        metrics_free(wm->m);
        pthread_mutex_destroy(&wm->params_lock);
    }
    free(wm);
    return NULL;
}

void worker_metrics_stop(worker_metrics *wm)
{
    if (!wm)
        return;
    metrics_http_stop(wm->server);
    store_close(wm->scrape_store);
    headroom_flow_close(&wm->flow);
    metrics_free(wm->m);
    pthread_mutex_destroy(&wm->params_lock);
    free(wm);
}

metrics *worker_metrics_registry(worker_metrics *wm)
{
    return wm ? wm->m : NULL;
}

metrics_series *worker_metrics_fsync_series(worker_metrics *wm)
{
    return wm ? wm->fsync : NULL;
}

/* ---- hooks ---- */

void worker_metrics_link(worker_metrics *wm, bool connected, bool consuming)
{
    if (!wm)
        return;
    atomic_store_explicit(&wm->is_connected, connected, memory_order_relaxed);
    atomic_store_explicit(&wm->is_consuming, consuming, memory_order_relaxed);
}

void worker_metrics_scheduler(worker_metrics *wm, const sched_params *params)
{
    if (!wm)
        return;
    pthread_mutex_lock(&wm->params_lock);
    wm->params = *params;
    wm->params.plugins = NULL; /* borrowed by sched_engine_new only */
    wm->params.n_plugins = 0;
    pthread_mutex_unlock(&wm->params_lock);
}

void worker_metrics_store_writable(worker_metrics *wm, bool writable)
{
    if (wm)
        atomic_store_explicit(&wm->is_writable, writable, memory_order_relaxed);
}

void worker_metrics_decided(worker_metrics *wm, double seconds)
{
    if (wm)
        metrics_observe(wm->decision, seconds);
}

void worker_metrics_batch(worker_metrics *wm, size_t n, double commit_seconds)
{
    if (!wm)
        return;
    metrics_observe(wm->batch, (double)n);
    metrics_observe(wm->commit, commit_seconds);
}

void worker_metrics_round_trips(worker_metrics *wm, uint64_t total)
{
    if (!wm)
        return;
    if (total > wm->round_trips_seen)
        metrics_add(wm->round_trips, total - wm->round_trips_seen);
    wm->round_trips_seen = total;
}

void worker_metrics_claims(worker_metrics *wm, uint64_t claims, uint64_t missed, double lock_wait_s)
{
    if (!wm)
        return;
    metrics_set(wm->claims, (double)claims);
    metrics_set(wm->claims_missed, (double)missed);
    metrics_set(wm->lock_wait, lock_wait_s);
}

static const char *dead_reason(const amqp_link_delivery *d, const task_outcome *o)
{
    if (d->too_large)
        return "too_large";
    if (!o->task_id[0])
        return "malformed";
    if (!o->status[0])
        return "kind_mismatch"; /* the id names a task of the other kind: nothing recorded */
    return o->reason[0] ? o->reason : "exhausted";
}

void worker_metrics_outcome(worker_metrics *wm, const amqp_link_delivery *d, const task_outcome *o,
                            int64_t commit_wall_ms)
{
    if (!wm)
        return;
    const char *kind = handler_for(d->routing_key)->kind;
    const char *outcome = o->duplicate             ? "duplicate"
                          : o->action == TASK_DEAD ? "dead"
                          : o->status[0]           ? o->status
                                                   : "none";
    const char *message_labels[] = {kind, outcome};
    metrics_add(metrics_series_get(wm->messages, message_labels), 1);
    if (!o->duplicate &&
        (strcmp(o->status, "completed") == 0 || strcmp(o->status, "failed") == 0)) {
        const char *task_labels[] = {kind, o->status, o->reason};
        metrics_add(metrics_series_get(wm->tasks, task_labels), 1);
        if (strcmp(kind, "schedule") == 0) {
            /* Label values only from the config: a client's name is not one. */
            const char *scheduler =
                !o->scheduler[0] || strcmp(o->scheduler, "default") == 0 ? "default"
                : config_scheduler_profile(wm->config, o->scheduler)     ? o->scheduler
                                                                         : "(unknown)";
            const char *labels[] = {scheduler, o->status};
            metrics_add(metrics_series_get(wm->placements, labels), 1);
        }
    }
    if (o->action == TASK_RETRY) {
        const char *labels[] = {kind};
        metrics_add(metrics_series_get(wm->retries, labels), 1);
    } else if (o->action == TASK_DEAD) {
        const char *labels[] = {dead_reason(d, o)};
        metrics_add(metrics_series_get(wm->dead, labels), 1);
    }
    const char *lane[] = {
        d->routing_key && strcmp(d->routing_key, BROKER_KEY_SCHEDULE_PRIORITY) == 0 ? "priority"
                                                                                    : "normal"};
    bool schedule = strcmp(kind, "schedule") == 0;
    if (schedule)
        metrics_add(metrics_series_get(wm->lane, lane), 1);
    if (d->timestamp > 0 && !o->duplicate) {
        double seconds = (double)(commit_wall_ms - d->timestamp * 1000) / 1e3;
        metrics_observe(wm->latency, seconds > 0 ? seconds : 0);
        if (schedule)
            metrics_observe(metrics_series_get(wm->lane_latency, lane), seconds > 0 ? seconds : 0);
    }
}
