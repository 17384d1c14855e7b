/* handler_fixture: a message handler (worker/handle/) with everything real
 * but the broker: an SQLite store in a temporary directory, the engine over
 * three hosts, the default configuration, and the handler's clock seam fixed
 * at FIXED_MS, so every timestamp a handler writes is known. Each message
 * runs in its own transaction, as the worker's round runs a batch. */
#ifndef VF_TEST_HANDLER_FIXTURE_H
#define VF_TEST_HANDLER_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handler.h"
#include "sched_fixture.h"
#include "store_fixture.h"
#include "testlib.h"

/* 2026-11-22T01:02:03.250Z */
#define FIXED_MS INT64_C(1795309323250)
#define FIXED_TEXT "2026-11-22T01:02:03.250Z"

static int64_t fixed_clock(void)
{
    return FIXED_MS;
}

typedef struct fixture {
    vf_config *config;
    hostset *hosts;
    sched_engine *engine;
    store *store;
    task_handler handler;
    store_fixture files; /* the store's directory */
} fixture;

/* The fixture over the store at `location` (an SQLite path or a PostgreSQL
 * URL, as store_fixture_each hands them out); f->files stays unused. */
static inline bool fixture_open_at(fixture *f, const char *location)
{
    vf_error err;
    vf_error_init(&err);
    sched_params params;
    if (!(f->config = config_defaults()) || !(f->hosts = fixture_roomy_hosts(3)))
        return false;
    sched_params_from_config(&params, f->config);
    if (!(f->engine = sched_engine_new(&params, &err)) ||
        sched_engine_set_hosts(f->engine, f->hosts, NULL, NULL, &err) < 0 ||
        !(f->store = store_open(location, STORE_READ_WRITE, &err))) {
        fprintf(stderr, "fixture: %s\n", err.text);
        return false;
    }
    f->handler = (task_handler){f->store, f->engine, f->config, f->hosts, "",  fixed_clock,
                                NULL,     "test:1",  NULL,      NULL,     NULL};
    return true;
}

static inline bool fixture_open(fixture *f)
{
    memset(f, 0, sizeof *f);
    if (store_fixture_init(&f->files, "handler") != 0)
        return false;
    char path[256];
    store_fixture_file(&f->files, "virtflow.db", path, sizeof path);
    return fixture_open_at(f, path);
}

static void fixture_close(fixture *f)
{
    store_close(f->store);
    sched_engine_free(f->engine);
    hostset_free(f->hosts);
    config_free(f->config);
    if (f->files.dir[0])
        store_fixture_close(&f->files);
}

typedef int (*handler_fn)(task_handler *, const task_message *, task_outcome *, vf_error *);

/* `msg` through the handler in a transaction of its own, as the worker's
 * round does it. */
static inline int handle_message(fixture *f, handler_fn fn, const task_message *msg,
                                 task_outcome *out)
{
    vf_error err;
    vf_error_init(&err);
    memset(out, 0, sizeof *out);
    if (store_begin(f->store, &err) < 0)
        return -1;
    int rc = fn(&f->handler, msg, out, &err);
    if (rc < 0) {
        fprintf(stderr, "handle: %s\n", err.text);
        (void)store_rollback(f->store, NULL);
        return -1;
    }
    return store_commit(f->store, &err);
}

/* One message from trusted publisher "guest" (the default login). */
static inline int handle_with(fixture *f, handler_fn fn, const char *routing_key, const char *body,
                              const char *id, int64_t attempt, task_outcome *out)
{
    task_message msg = {(const unsigned char *)body,
                        strlen(body),
                        false,
                        strlen(body),
                        routing_key,
                        id,
                        NULL,
                        false,
                        attempt,
                        "guest",
                        false,
                        NULL,
                        NULL};
    return handle_message(f, fn, &msg, out);
}

#endif
