/* Building hostsets in tests without an inventory file. */
#ifndef VF_SCHED_FIXTURE_H
#define VF_SCHED_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "hostset.h"

/* An online shared host in pool "default" with 16 cores, 64 GiB, 1 TiB,
 * nothing allocated and 100 slots. */
static inline host fixture_host(const char *name)
{
    host h;
    memset(&h, 0, sizeof h);
    snprintf(h.name, sizeof h.name, "%s", name);
    snprintf(h.ip, sizeof h.ip, "10.0.0.%zu", strlen(name));
    snprintf(h.pool, sizeof h.pool, "default");
    h.status = HOST_ONLINE;
    h.cpu = 16;
    h.memory = 65536;
    h.storage = 1024;
    h.max_vms = 100;
    return h;
}

/* n roomy hosts bm-001.. (8 vCPUs, 16 GiB, 500 GiB, 10 slots each, online,
 * pool "default"), finished; owned, NULL on failure. */
static inline hostset *fixture_roomy_hosts(int n)
{
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    for (int i = 0; set && i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "bm-%03d", i + 1);
        host h = fixture_host(name);
        snprintf(h.ip, sizeof h.ip, "10.0.0.%d", i + 1);
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

static inline void fixture_params(sched_params *p)
{
    memset(p, 0, sizeof *p);
    p->overcommit_cpu = 4.0;
    p->overcommit_memory = 1.0;
    p->dedicated_exclusive = true;
    p->subset_size = 1;
    p->seed = 42;
}

static inline void fixture_request(sched_request *r, int cpu, int64_t memory)
{
    sched_request_init(r);
    r->cpu = cpu;
    r->memory = memory;
}

#endif
