/* virtflowctl prune: delete (or with --dry-run, count) what retention would
 * delete at a given age, now, with the same batches as the worker's job. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "store_prune.h"

/* Between batches, so a running worker's commits get the write lock. */
#define PAUSE_BETWEEN_BATCHES_MS 50

static void prune_usage(FILE *out)
{
    fprintf(out, "usage: virtflowctl prune --older-than D [-c CONFIG] [--dry-run] [--json]\n"
                 "\n"
                 "Delete from the store what the worker's retention job deletes\n"
                 "(docs/operations.md \"Retention\"), for an age of D instead of\n"
                 "store.retention: final tasks (completed, failed, released) last updated\n"
                 "more than D ago, holding no reservation and no unfinished spare, with\n"
                 "their history, reservations and spares; released reservations, confirmed\n"
                 "events and finished deliveries older than D. Safe while workers run: small\n"
                 "transactions, each row once.\n"
                 "\n"
                 "  --older-than D  an age: 90s, 45m, 12h, 30d\n"
                 "  --dry-run       count what would be deleted; change nothing (read-only)\n"
                 "  --json          {\"cutoff\":..., \"dry_run\":..., \"deleted\":{table: rows}}\n"
                 "\n"
                 "Then, on a store created with auto_vacuum=INCREMENTAL, the freed pages are\n"
                 "given back to the file system, and the WAL file is truncated.\n"
                 "\n"
                 "exit status: 0 ok, 2 usage, 3 configuration error, 4 store unreachable.\n");
}

static void pause_ms(int ms)
{
    struct timespec step = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&step, NULL);
}

static void print_counts(const char *cutoff, bool dry_run, const store_prune_counts *c,
                         int64_t freed_pages, bool as_json)
{
    const struct {
        const char *table;
        int64_t rows;
    } rows[] = {
        {"tasks", c->tasks},   {"task_events", c->task_events}, {"reservations", c->reservations},
        {"spares", c->spares}, {"outbox", c->outbox},           {"deliveries", c->deliveries}};
    if (as_json) {
        json_t *counts = json_object();
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            json_object_set_new(counts, rows[i].table, json_integer(rows[i].rows));
        json_t *all = json_pack("{s:s, s:b, s:o}", "cutoff", cutoff, "dry_run", dry_run,
                                dry_run ? "would_delete" : "deleted", counts);
        if (!dry_run)
            json_object_set_new(all, "freed_pages", json_integer(freed_pages));
        ctl_print_json(all);
        json_decref(all);
        return;
    }
    printf("%s rows older than %s:\n", dry_run ? "would delete" : "deleted", cutoff);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        printf("  %-13s %" PRId64 "\n", rows[i].table, rows[i].rows);
    if (!dry_run)
        printf("freed pages: %" PRId64 "\n", freed_pages);
}

int ctl_prune(int argc, char **argv)
{
    const char *older_than = NULL;
    bool dry_run = false;
    const ctl_option options[] = {
        {"older-than", 0, CTL_OPTION_STRING, &older_than, NULL, NULL, NULL},
        {"dry-run", 0, CTL_OPTION_SET, &dry_run, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL},
    };
    ctl_args args;
    int parsed = ctl_options_parse("prune", argc, argv, options, prune_usage, false, &args);
    if (parsed >= 0)
        return parsed;
    const char *config_path = args.config_path;
    bool as_json = args.json;
    int64_t older_than_s = -1;
    if (older_than && config_parse_duration(older_than, &older_than_s) < 0) {
        ctl_error("--older-than: expected an age like 90s, 45m, 12h or 30d, got '%s'", older_than);
        return CTL_EXIT_USAGE;
    }
    if (args.operand_count > 0) {
        ctl_error("prune: unexpected argument '%s'", args.operands[0]);
        return CTL_EXIT_USAGE;
    }
    if (older_than_s < 0) {
        ctl_error("prune: --older-than is required (e.g. --older-than 30d)");
        return CTL_EXIT_USAGE;
    }
    vf_config *config =
        dry_run ? ctl_load_config(config_path) : ctl_load_config_writing(config_path, "prune");
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
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char cutoff[STORE_TIME_SIZE];
    int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    if (store_format_time(now_ms - older_than_s * 1000, cutoff) < 0)
        snprintf(cutoff, sizeof cutoff, "1970-01-01T00:00:00.000Z");
    store_prune_counts counts = {0};
    int64_t freed_pages = 0;
    vf_error err;
    vf_error_init(&err);
    if (dry_run) {
        if (store_prune_count(s, cutoff, &counts, &err) < 0) {
            ctl_error("%s", err.text);
            goto out;
        }
    } else {
        int more;
        while ((more = store_prune_batch(s, cutoff, STORE_PRUNE_BATCH, &counts, &err)) == 1)
            pause_ms(PAUSE_BETWEEN_BATCHES_MS);
        int64_t freed = 0;
        while (more == 0 && (more = store_vacuum_step(s, 256, &freed, &err)) == 0 && freed > 0) {
            freed_pages += freed;
            pause_ms(PAUSE_BETWEEN_BATCHES_MS);
        }
        bool truncated = false;
        if (more == 0)
            more = store_wal_truncate(s, &truncated, &err);
        if (more < 0) {
            /* What committed before the error stays deleted: say so. */
            print_counts(cutoff, false, &counts, freed_pages, false);
            ctl_error("%s", err.text);
            goto out;
        }
    }
    print_counts(cutoff, dry_run, &counts, freed_pages, as_json);
    rc = CTL_EXIT_OK;
out:
    store_close(s);
    config_free(config);
    return rc;
}
