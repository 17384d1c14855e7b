#include "retention.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "leases.h"
#include "clock.h"
#include "job.h"
#include "log.h"
#include "store.h"
#include "store_config.h"
#include "store_hosts.h"
#include "store_prune.h"

/* Between two batches the main loop gets the write lock: a waiting writer
 * tries every millisecond (db_sqlite.c), so this pause lets a waiting commit
 * in before the next batch. */
#define PAUSE_BETWEEN_BATCHES_MS 50
/* Pages (4 KiB) freed per incremental vacuum step, and steps per round:
 * each step is a short write transaction of its own. */
#define VACUUM_PAGES_PER_STEP 256
#define VACUUM_STEPS_PER_ROUND 64

struct retention {
    const vf_config *config;
    char owner[STORE_OWNER_SIZE]; /* this worker, in the "retention" lease */
    store *store;
    job job;
};

int64_t retention_interval_ms(int64_t retention_s)
{
    int64_t ms = retention_s * 1000 / 4;
    if (ms < 1000)
        ms = 1000;
    if (ms > 60000)
        ms = 60000;
    return ms;
}

/* The earlier of `cutoff_ms` and now - keep_s, as store time. */
static void no_later_than(int64_t cutoff_ms, int64_t now_ms, int64_t keep_s, char out[])
{
    int64_t kept_ms = now_ms - keep_s * 1000;
    if (store_format_time(kept_ms < cutoff_ms ? kept_ms : cutoff_ms, out) < 0)
        snprintf(out, STORE_TIME_SIZE, "1970-01-01T00:00:00.000Z"); /* nothing is that old */
}

int retention_cutoffs_at(const vf_config *config, int64_t older_than_s, int64_t now_ms,
                         retention_cutoffs *out)
{
    int64_t cutoff_ms = now_ms - older_than_s * 1000;
    if (store_format_time(cutoff_ms, out->rows) < 0)
        return -1;
    no_later_than(cutoff_ms, now_ms, config_final_task_keep_s(config), out->tasks);
    no_later_than(cutoff_ms, now_ms, config_bound_reservation_keep_s(config), out->bound);
    return 0;
}

store_prune_cutoffs retention_cutoffs_view(const retention_cutoffs *c)
{
    return (store_prune_cutoffs){.rows = c->rows, .tasks = c->tasks, .bound = c->bound};
}

/* Wait up to `ms`; returns true when asked to stop. */
static bool wait_or_stop(retention *r, int64_t ms)
{
    return job_sleep(&r->job, ms);
}

static void round_of_pruning(retention *r)
{
    /* Several workers on one store: the holder of the "retention" lease
     * prunes, so two never fight over the same rows and the write lock. */
    vf_error lease_err;
    vf_error_init(&lease_err);
    int held = lease_hold(r->store, "retention", r->owner, NULL, &lease_err);
    if (held < 0)
        log_warn("retention: %s (tried again in the next round)", lease_err.text);
    if (held <= 0)
        return;
    retention_cutoffs cutoffs;
    if (retention_cutoffs_at(r->config, r->config->store.retention_s, clock_wall_ms(), &cutoffs) <
        0)
        return; /* a retention reaching before 1970: nothing can be that old */
    store_prune_cutoffs view = retention_cutoffs_view(&cutoffs);
    const char *cutoff = cutoffs.rows;
    store_prune_counts deleted = {0};
    vf_error err;
    vf_error_init(&err);
    int batches = 0, rc;
    int64_t longest_us = 0;
    for (;;) {
        int64_t started = clock_mono_us();
        rc = store_prune_batch_at(r->store, &view, STORE_PRUNE_BATCH, &deleted, &err);
        int64_t spent = clock_mono_us() - started;
        longest_us = spent > longest_us ? spent : longest_us;
        batches++;
        if (rc != 1 || wait_or_stop(r, PAUSE_BETWEEN_BATCHES_MS))
            break;
    }
    if (rc < 0)
        log_warn("retention: %s (tried again in the next round)", err.text);
    int64_t freed_pages = 0;
    for (int i = 0; rc >= 0 && i < VACUUM_STEPS_PER_ROUND; i++) {
        int64_t freed = 0;
        vf_error_init(&err);
        if (store_vacuum_step(r->store, VACUUM_PAGES_PER_STEP, &freed, &err) < 0) {
            log_warn("retention: vacuum: %s", err.text);
            break;
        }
        freed_pages += freed;
        if (freed < VACUUM_PAGES_PER_STEP || wait_or_stop(r, PAUSE_BETWEEN_BATCHES_MS))
            break;
    }
    /* The passive checkpoints never reach the end of a WAL that is always
     * being appended to, so it would grow for as long as the load lasts. */
    bool truncated = false;
    vf_error_init(&err);
    if (store_wal_truncate(r->store, &truncated, &err) < 0)
        log_warn("retention: %s", err.text);
    else if (!truncated)
        log_debug("retention: the WAL was busy; truncating it next round");
    int64_t rows = deleted.tasks + deleted.task_events + deleted.reservations + deleted.spares +
                   deleted.outbox + deleted.deliveries + deleted.inventory_snapshots +
                   deleted.dead_letters;
    if (rows > 0 || freed_pages > 0)
        log_info("retention: deleted rows older than %s: %" PRId64 " tasks, %" PRId64
                 " history rows, %" PRId64 " reservations, %" PRId64 " spares, %" PRId64
                 " events, %" PRId64 " inventory snapshots, %" PRId64 " deliveries, %" PRId64
                 " dead-letter records (%d batches, the longest %.1f ms); %" PRId64 " pages freed",
                 cutoff, deleted.tasks, deleted.task_events, deleted.reservations, deleted.spares,
                 deleted.outbox, deleted.inventory_snapshots, deleted.deliveries,
                 deleted.dead_letters, batches, (double)longest_us / 1000.0, freed_pages);
}

static void retention_loop(job *j, void *ctx)
{
    (void)j;
    retention *r = ctx;
    int64_t interval = retention_interval_ms(r->config->store.retention_s);
    do
        round_of_pruning(r);
    while (!wait_or_stop(r, interval));
}

retention *retention_start(const vf_config *config, const char *owner, vf_error *err)
{
    retention *r = calloc(1, sizeof *r);
    if (!r) {
        vf_error_set(err, VF_ENOMEM, "out of memory starting the retention job");
        return NULL;
    }
    r->config = config;
    snprintf(r->owner, sizeof r->owner, "%s", owner);
    if (job_init(&r->job, "retention", err) < 0) {
        retention_stop(r);
        return NULL;
    }
    r->store = store_config_open(config, STORE_READ_WRITE, err);
    if (!r->store) {
        retention_stop(r);
        return NULL;
    }
    /* No fsync inside a prune commit, which would hold the write lock for
     * the length of a disk flush: a delete lost to a power cut is simply
     * done again next round, and the worker's WAL syncs cover these frames
     * too. (WAL with synchronous=NORMAL stays consistent.) */
    if (store_defer_sync(r->store, err) < 0) {
        retention_stop(r);
        return NULL;
    }
    bool incremental = true;
    vf_error mode;
    vf_error_init(&mode);
    if (store_auto_vacuum_incremental(r->store, &incremental, &mode) < 0)
        log_warn("retention: %s", mode.text);
    else if (!incremental)
        log_warn("store %s was created without auto_vacuum=INCREMENTAL: pruned pages are "
                 "reused but the file never shrinks; to shrink it once, stop every program "
                 "using it and run: sqlite3 %s 'PRAGMA auto_vacuum=INCREMENTAL; VACUUM;' "
                 "(docs/upgrading.md)",
                 config->store.path, config->store.path);
    log_info("retention: deleting final rows older than %" PRId64 " s, every %" PRId64 " ms",
             config->store.retention_s, retention_interval_ms(config->store.retention_s));
    if (job_start(&r->job, retention_loop, r, err) < 0) {
        retention_stop(r);
        return NULL;
    }
    return r;
}

void retention_stop(retention *r)
{
    if (!r)
        return;
    job_stop(&r->job);
    if (r->store) {
        vf_error ignored;
        vf_error_init(&ignored);
        (void)store_lease_release(r->store, "retention", r->owner, &ignored);
    }
    store_close(r->store);
    free(r);
}
