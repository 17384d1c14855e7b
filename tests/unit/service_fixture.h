/* service_fixture: the parts of virtflow-worker's service (worker/service/)
 * with everything real but the broker: a service struct holding the default
 * configuration, an SQLite store in a temporary directory with its WAL sync
 * thread, an engine over three roomy hosts, and a broker link that was never
 * connected (every publish fails as on a lost connection). */
#ifndef VF_TEST_SERVICE_FIXTURE_H
#define VF_TEST_SERVICE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service_internal.h"
#include "testlib.h"

typedef struct service_fixture {
    service svc;
    vf_config *config; /* owned; svc.config borrows it */
    hostset *hosts;    /* owned; the engine's snapshot */
    char dir[64];
} service_fixture;

/* n hosts bm-001.. of 8 vCPUs and 16 GiB each. */
static hostset *service_fixture_hosts(int n)
{
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    for (int i = 0; set && i < n; i++) {
        host h;
        memset(&h, 0, sizeof h);
        snprintf(h.name, sizeof h.name, "bm-%03d", i + 1);
        snprintf(h.ip, sizeof h.ip, "10.0.0.%d", i + 1);
        snprintf(h.pool, sizeof h.pool, "default");
        h.status = HOST_ONLINE;
        h.cpu = 8;
        h.memory = 16384;
        h.storage = 500;
        h.max_vms = 10;
        if (hostset_add(set, &h, &err) < 0) {
            hostset_free(set);
            return NULL;
        }
    }
    if (set && hostset_finish(set, &err) < 0) {
        hostset_free(set);
        return NULL;
    }
    return set;
}

static bool service_fixture_open(service_fixture *f)
{
    memset(f, 0, sizeof *f);
    vf_error err;
    vf_error_init(&err);
    snprintf(f->dir, sizeof f->dir, "/tmp/vf-test-service-XXXXXX");
    if (!mkdtemp(f->dir))
        return false;
    char path[128];
    snprintf(path, sizeof path, "%s/virtflow.db", f->dir);
    service *svc = &f->svc;
    if (!(f->config = config_defaults()) || !(f->hosts = service_fixture_hosts(3)))
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
        !(svc->link = amqp_link_new(f->config, "test", &err))) {
        fprintf(stderr, "fixture: %s\n", err.text);
        return false;
    }
    return true;
}

static void service_fixture_close(service_fixture *f)
{
    service *svc = &f->svc;
    for (size_t i = 0; i < svc->n_pubs; i++)
        free(svc->pubs[i].event_id);
    free(svc->pubs);
    service_id_list_clear(&svc->confirmed);
    free(svc->confirmed.ids);
    amqp_link_free(svc->link);
    wal_sync_stop(svc->sync);
    store_close(svc->store);
    sched_engine_free(svc->engine);
    reload_close(&svc->reload);
    hostset_free(f->hosts);
    config_free(f->config);
    static const char *const files[] = {"virtflow.db", "virtflow.db-wal", "virtflow.db-shm"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", f->dir, files[i]);
        unlink(path);
    }
    rmdir(f->dir);
}

#endif
