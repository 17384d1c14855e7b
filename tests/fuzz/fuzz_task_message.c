/* fuzz_task_message: a task.schedule message body through the worker's
 * task_handler_handle, recording into a real SQLite store (a temporary file:
 * the store insists on WAL mode, which an in-memory database cannot give).
 * Each input runs in its own transaction that is rolled back, as the worker
 * does when a batch fails, so inputs do not pile up rows and the task id of
 * one does not make the next a duplicate. The attempt number and the
 * redelivered flag come from the input's length so the retry, last-attempt
 * and duplicate paths are reached too. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "engine.h"
#include "fuzz_common.h"
#include "store.h"
#include "task_handler.h"

static hostset *hosts;
static sched_engine *engine;
static vf_config *config;
static store *db;
static char dir[] = "/tmp/fuzz_task_message.XXXXXX";
static char path[sizeof dir + 16];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int64_t fixed_now_ms(void)
{
    return 1790000000000LL; /* 2026-09-21: a fixed clock keeps runs reproducible */
}

static void cleanup(void)
{
    store_close(db);
    char extra[sizeof path + 8];
    unlink(path);
    snprintf(extra, sizeof extra, "%s-wal", path);
    unlink(extra);
    snprintf(extra, sizeof extra, "%s-shm", path);
    unlink(extra);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    if (!mkdtemp(dir))
        abort();
    snprintf(path, sizeof path, "%s/fuzz.db", dir);
    config = config_defaults();
    hosts = fuzz_hosts();
    vf_error err;
    vf_error_init(&err);
    db = store_open(path, STORE_READ_WRITE, &err);
    if (!config || !hosts || !db) {
        fprintf(stderr, "fuzz_task_message: setup failed: %s\n", err.text);
        abort();
    }
    atexit(cleanup);
    sched_params params;
    sched_params_from_config(&params, config);
    params.seed = 42;
    engine = sched_engine_new(&params, NULL);
    if (!engine || sched_engine_set_hosts(engine, hosts, NULL, NULL, NULL) < 0)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* amqp_link hands bodies out NUL-terminated; so does this. */
    unsigned char *body = malloc(size + 1);
    if (!body)
        abort();
    memcpy(body, data, size);
    body[size] = '\0';
    task_handler handler = {db,   engine, config, hosts, "",  fixed_now_ms,
                            NULL, NULL,   NULL,   NULL,  NULL};
    task_message msg = {body,
                        size,
                        false,
                        size,
                        "task.schedule",
                        (size % 3) ? "msg-fuzz-1" : NULL,
                        (size % 5) ? NULL : "reply.queue",
                        (size % 7) == 0,
                        (int64_t)(size % 7),
                        (size % 2) ? "guest" : NULL, /* guest: the default config's trusted user */
                        false,
                        NULL,
                        NULL};
    vf_error err;
    vf_error_init(&err);
    if (store_begin(db, &err) < 0)
        abort();
    task_outcome outcome;
    memset(&outcome, 0, sizeof outcome);
    int rc = task_handler_handle(&handler, &msg, &outcome, &err);
    if (rc == 0 && outcome.reserved)
        sched_engine_release(engine, outcome.task_id);
    if (rc == 0)
        task_outcome_close(&outcome);
    if (store_rollback(db, &err) < 0)
        abort();
    free(body);
    return 0;
}
