/* virtflowctl prune: delete (or with --dry-run, count) what retention would
 * delete at a given age, now, with the same batches as the worker's job. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ctl.h"
#include "leases.h"
#include "store_hosts.h"
#include "retention.h"
#include "store_prune.h"

/* A pause between batches lets other writers take the write lock (SQLite's
 * busy handler polls, so a writer waiting for it gets in only if the lock
 * stays free a while). It is made only when it can help someone: a worker
 * announced in the store is alive (leases.h; checked every
 * WORKERS_CHECK_MS), another connection committed since the last batch (a
 * relay, a second virtflowctl), or a batch took longer than SLOW_BATCH_MS
 * (it probably waited). With nobody else there, the batches run back to
 * back. */
#define DEFAULT_PAUSE_MS 50
#define SLOW_BATCH_MS 250
#define PROGRESS_EVERY_MS 200
#define WORKERS_CHECK_MS 1000

static void prune_usage(FILE *out)
{
    fprintf(out,
            "usage: virtflowctl prune --older-than D [-c CONFIG] [--dry-run] [--batch N]\n"
            "                         [--pause MS] [--json]\n"
            "\n"
            "Delete from the store what the worker's retention job deletes\n"
            "(docs/operations.md \"Retention\"), for an age of D instead of\n"
            "store.retention: final tasks (completed, failed, released) last updated\n"
            "more than D ago, holding no reservation and no unfinished spare, with\n"
            "their history, reservations and spares; released reservations, confirmed\n"
            "events, finished deliveries, superseded inventory snapshots and dead-letter\n"
            "records older than D. Safe while workers run: small transactions, each row\n"
            "once. What a worker may still need outlives D as it outlives store.retention\n"
            "(docs/configuration.md \"Keys that must agree\"): a reservation an inventory\n"
            "ended, and its task, until bound and expired inventory.max_age_s ago; a\n"
            "final task until last changed the longest retry delay ago.\n"
            "\n"
            "  --older-than D  an age: 90s, 45m, 12h, 30d\n"
            "  --dry-run       count what would be deleted; change nothing (read-only)\n"
            "  --batch N       tasks (and rows of each other table) per transaction\n"
            "                  (default %d)\n"
            "  --pause MS      the pause between batches (default %d; 0: none), made only\n"
            "                  when another connection wrote to the store since the last\n"
            "                  batch or a batch took over %d ms: with no worker\n"
            "                  writing, the batches run back to back\n"
            "  --json          {\"cutoff\":..., \"dry_run\":..., \"deleted\":{table: rows},\n"
            "                  \"batches\":..., \"pauses\":...}\n"
            "\n"
            "Then, on a store created with auto_vacuum=INCREMENTAL, the freed pages are\n"
            "given back to the file system, and the WAL file is truncated. On a\n"
            "terminal, progress goes to stderr as it runs.\n"
            "\n"
            "examples:\n"
            "  virtflowctl prune --older-than 30d --dry-run\n"
            "\n"
            "exit status: 0 ok, 2 usage, 3 configuration error, 4 store unreachable.\n",
            STORE_PRUNE_BATCH, DEFAULT_PAUSE_MS, SLOW_BATCH_MS);
}

static void pause_ms(int ms)
{
    struct timespec step = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&step, NULL);
}

/* How the deleting went: batches run, pauses made. */
typedef struct prune_run {
    long batches, pauses;
    int64_t pause_ms; /* each pause */
    int64_t version;  /* store_others_wrote's state */
    char self[STORE_OWNER_SIZE];
    int workers;                /* live workers announced in the store, at the last check */
    int64_t workers_checked_ms; /* monotonic; 0: never */
    bool progress;              /* stderr is a terminal */
    int64_t last_progress_ms;   /* monotonic */
    int64_t started_ms;
} prune_run;

static int64_t total_rows(const store_prune_counts *c)
{
    return c->tasks + c->task_events + c->reservations + c->spares + c->outbox + c->deliveries +
           c->inventory_snapshots + c->dead_letters;
}

static void show_progress(prune_run *run, const store_prune_counts *c, int64_t freed_pages,
                          bool last)
{
    if (!run->progress)
        return;
    int64_t now = clock_mono_ms();
    if (!last && now - run->last_progress_ms < PROGRESS_EVERY_MS)
        return;
    run->last_progress_ms = now;
    double seconds = (double)(now - run->started_ms) / 1000.0;
    fprintf(stderr,
            "\rprune: %" PRId64 " tasks, %" PRId64 " rows deleted in %.1f s (%ld batches, %ld "
            "pauses)",
            c->tasks, total_rows(c), seconds, run->batches, run->pauses);
    if (freed_pages > 0)
        fprintf(stderr, ", %" PRId64 " pages given back", freed_pages);
    fprintf(stderr, last ? "\n" : "\033[K");
    fflush(stderr);
}

/* After a batch: pause when it helps someone. */
static void maybe_pause(store *s, prune_run *run, int64_t batch_ms)
{
    bool others = false;
    vf_error err;
    vf_error_init(&err);
    if (store_others_wrote(s, &run->version, &others, &err) < 0)
        others = true; /* cannot tell: be polite */
    int64_t now = clock_mono_ms();
    if (!run->workers_checked_ms || now - run->workers_checked_ms >= WORKERS_CHECK_MS) {
        run->workers_checked_ms = now;
        if (lease_others_alive(s, run->self, &run->workers, &err) < 0)
            run->workers = 1;
    }
    others = others || run->workers > 0;
    if (run->pause_ms <= 0 || (!others && batch_ms <= SLOW_BATCH_MS))
        return;
    run->pauses++;
    pause_ms((int)run->pause_ms);
}

static void print_counts(const char *cutoff, bool dry_run, const store_prune_counts *c,
                         int64_t freed_pages, const prune_run *run, bool as_json)
{
    const struct {
        const char *table;
        int64_t rows;
    } rows[] = {{"tasks", c->tasks},
                {"task_events", c->task_events},
                {"reservations", c->reservations},
                {"spares", c->spares},
                {"outbox", c->outbox},
                {"deliveries", c->deliveries},
                {"inventory_snapshots", c->inventory_snapshots},
                {"dead_letters", c->dead_letters}};
    if (as_json) {
        json_t *counts = json_object();
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            json_object_set_new(counts, rows[i].table, json_integer(rows[i].rows));
        json_t *all = json_pack("{s:s, s:b, s:o}", "cutoff", cutoff, "dry_run", dry_run,
                                dry_run ? "would_delete" : "deleted", counts);
        if (!dry_run) {
            json_object_set_new(all, "freed_pages", json_integer(freed_pages));
            json_object_set_new(all, "batches", json_integer(run->batches));
            json_object_set_new(all, "pauses", json_integer(run->pauses));
        }
        ctl_print_json(all);
        json_decref(all);
        return;
    }
    printf("%s rows older than %s:\n", dry_run ? "would delete" : "deleted", cutoff);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        printf("  %-19s %" PRId64 "\n", rows[i].table, rows[i].rows);
    if (!dry_run) {
        printf("freed pages: %" PRId64 "\n", freed_pages);
        printf("batches: %ld, pauses for other writers: %ld\n", run->batches, run->pauses);
    }
}

/* The options' values checked: --older-than into *older_than_s and --pause
 * into run->pause_ms. CTL_EXIT_OK, or CTL_EXIT_USAGE said. */
static int check_options(const char *older_than, const char *pause_text, long batch,
                         const ctl_args *args, int64_t *older_than_s, prune_run *run)
{
    *older_than_s = -1;
    if (older_than && config_parse_duration(older_than, older_than_s) < 0) {
        ctl_error("--older-than: expected an age like 90s, 45m, 12h or 30d, got '%s'", older_than);
        return CTL_EXIT_USAGE;
    }
    if (pause_text) {
        char *end = NULL;
        errno = 0;
        long long value = strtoll(pause_text, &end, 10);
        if (errno != 0 || end == pause_text || *end || value < 0 || value > 60000) {
            ctl_error("--pause: expected milliseconds from 0 to 60000, got '%s'", pause_text);
            return CTL_EXIT_USAGE;
        }
        run->pause_ms = value;
    }
    if (batch > 100000) {
        ctl_error("--batch: at most 100000 per transaction, got %ld", batch);
        return CTL_EXIT_USAGE;
    }
    if (args->operand_count > 0) {
        ctl_error("prune: unexpected argument '%s'", args->operands[0]);
        return CTL_EXIT_USAGE;
    }
    if (*older_than_s < 0) {
        ctl_error("prune: --older-than is required (e.g. --older-than 30d)");
        return CTL_EXIT_USAGE;
    }
    return CTL_EXIT_OK;
}

/* Delete in batches of `batch` rows, each its own transaction, then give
 * the pages back (vacuum steps) and truncate the WAL, pausing between
 * steps as maybe_pause says and showing progress. Returns 0, or -1 with
 * err: what committed before stays deleted, in *counts. */
static int prune_in_batches(store *s, const store_prune_cutoffs *view, long batch, prune_run *run,
                            store_prune_counts *counts, int64_t *freed_pages, vf_error *err)
{
    run->started_ms = clock_mono_ms();
    store_owner_name(run->self);
    /* Takes note of the store's version: writes before this are not ours to wait for. */
    maybe_pause(s, run, 0);
    int more;
    for (;;) {
        int64_t began = clock_mono_ms();
        more = store_prune_batch_at(s, view, (int)batch, counts, err);
        run->batches++;
        show_progress(run, counts, *freed_pages, false);
        if (more != 1)
            break;
        maybe_pause(s, run, clock_mono_ms() - began);
    }
    int64_t freed = 0;
    for (;;) {
        int64_t began = clock_mono_ms();
        if (more != 0 || (more = store_vacuum_step(s, 256, &freed, err)) != 0 || freed == 0)
            break;
        *freed_pages += freed;
        show_progress(run, counts, *freed_pages, false);
        maybe_pause(s, run, clock_mono_ms() - began);
    }
    show_progress(run, counts, *freed_pages, true);
    bool truncated = false;
    if (more == 0)
        more = store_wal_truncate(s, &truncated, err);
    return more < 0 ? -1 : 0;
}

int ctl_prune(int argc, char **argv)
{
    const char *older_than = NULL;
    const char *pause_text = NULL;
    long batch = STORE_PRUNE_BATCH;
    bool dry_run = false;
    const ctl_option options[] = {
        {"older-than", 0, CTL_OPTION_STRING, &older_than, NULL, NULL, NULL, NULL},
        {"dry-run", 0, CTL_OPTION_SET, &dry_run, NULL, NULL, NULL, NULL},
        {"batch", 0, CTL_OPTION_POSITIVE, &batch, NULL, NULL, NULL, NULL},
        {"pause", 0, CTL_OPTION_STRING, &pause_text, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed = ctl_options_parse("prune", argc, argv, options, prune_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    bool as_json = args.json;
    prune_run run = {
        .pause_ms = DEFAULT_PAUSE_MS, .version = -1, .progress = !as_json && isatty(STDERR_FILENO)};
    int64_t older_than_s;
    if (check_options(older_than, pause_text, batch, &args, &older_than_s, &run) != CTL_EXIT_OK)
        return CTL_EXIT_USAGE;
    vf_config *config = dry_run ? ctl_load_config(args.config_path)
                                : ctl_load_config_writing(args.config_path, "prune");
    if (!config)
        return CTL_EXIT_CONFIG;
    int rc = CTL_EXIT_UNAVAILABLE;
    /* Read-only first: a missing store is an error here, never created. */
    store *s = ctl_open_store(config, STORE_READ_ONLY);
    if (s && !dry_run) {
        store_close(s);
        s = ctl_open_store(config, STORE_READ_WRITE);
    }
    if (!s)
        goto out;
    /* The configuration's windows hold here too: rows a worker may still
     * need outlive --older-than as they outlive store.retention. */
    retention_cutoffs cutoffs;
    if (retention_cutoffs_at(config, older_than_s, clock_wall_ms(), &cutoffs) < 0) {
        snprintf(cutoffs.rows, sizeof cutoffs.rows, "1970-01-01T00:00:00.000Z");
        memcpy(cutoffs.tasks, cutoffs.rows, sizeof cutoffs.rows);
        memcpy(cutoffs.bound, cutoffs.rows, sizeof cutoffs.rows);
    }
    store_prune_cutoffs view = retention_cutoffs_view(&cutoffs);
    store_prune_counts counts = {0};
    int64_t freed_pages = 0;
    vf_error err;
    vf_error_init(&err);
    if (dry_run && store_prune_count_at(s, &view, &counts, &err) < 0) {
        ctl_error("%s", err.text);
        goto out;
    }
    if (!dry_run && prune_in_batches(s, &view, batch, &run, &counts, &freed_pages, &err) < 0) {
        /* What committed before the error stays deleted: say so. */
        print_counts(cutoffs.rows, false, &counts, freed_pages, &run, false);
        ctl_error("%s", err.text);
        goto out;
    }
    print_counts(cutoffs.rows, dry_run, &counts, freed_pages, &run, as_json);
    rc = CTL_EXIT_OK;
out:
    store_close(s);
    config_free(config);
    return rc;
}
