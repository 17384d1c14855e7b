/* service_fixture: the parts of virtflow-worker's service (worker/service/)
 * with everything real but the broker: a service struct holding the default
 * configuration, an SQLite store in a temporary directory with its WAL sync
 * thread, an engine over three roomy hosts, and a broker link that was never
 * connected (every publish fails as on a lost connection), and the
 * publisher on them. */
#ifndef VF_TEST_SERVICE_FIXTURE_H
#define VF_TEST_SERVICE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched_fixture.h"
#include "service_internal.h"
#include "store_fixture.h"
#include "testlib.h"

typedef struct service_fixture {
    service svc;
    vf_config *config;   /* owned; svc.config borrows it */
    hostset *hosts;      /* owned; the engine's snapshot */
    store_fixture files; /* the store's directory */
} service_fixture;

static bool service_fixture_open(service_fixture *f)
{
    memset(f, 0, sizeof *f);
    vf_error err;
    vf_error_init(&err);
    if (store_fixture_init(&f->files, "service") != 0)
        return false;
    char path[256];
    store_fixture_file(&f->files, "virtflow.db", path, sizeof path);
    service *svc = &f->svc;
    if (!(f->config = config_defaults()) || !(f->hosts = fixture_roomy_hosts(3)))
        return false;
    svc->config = f->config;
    reload_init(&svc->reload, f->config, CONFIG_RELOADS_WORKER);
    snprintf(svc->owner, sizeof svc->owner, "test:1");
    sched_params params;
    sched_params_from_config(&params, f->config);
    if (!(svc->engine = sched_engine_new(&params, &err)) ||
        sched_engine_set_hosts(svc->engine, f->hosts, NULL, NULL, &err) < 0 ||
        !(svc->store = store_open(path, STORE_READ_WRITE, &err)) ||
        store_defer_sync(svc->store, &err) < 0 || !(svc->sync = wal_sync_start(svc->store, &err)) ||
        !(svc->link = amqp_link_new(f->config, "test", &err)) ||
        !(svc->publisher =
              service_publish_new(svc->link, svc->store, svc->sync, svc->owner, NULL, &err))) {
        fprintf(stderr, "fixture: %s\n", err.text);
        return false;
    }
    return true;
}

static void service_fixture_close(service_fixture *f)
{
    service *svc = &f->svc;
    amqp_link_free(svc->link);
    service_publish_free(svc->publisher);
    wal_sync_stop(svc->sync);
    store_close(svc->store);
    sched_engine_free(svc->engine);
    reload_close(&svc->reload);
    hostset_free(f->hosts);
    config_free(f->config);
    store_fixture_close(&f->files);
}

#endif
