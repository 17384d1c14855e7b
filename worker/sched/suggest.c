/* suggest: see suggest.h. The arithmetic mirrors the capacity filters in
 * plugins.h exactly (the same committed figures and the same epsilon), so a
 * suggestion is as minimal as the filters are strict. */
#include "suggest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins.h"

/* Room left on a host for each resource, as the filters count it. */
typedef struct room {
    double cpu;    /* vCPUs: capacity - allocated - reserved */
    double memory; /* MiB */
    int64_t disk;  /* GiB */
    int32_t slots; /* guest slots */
} room;

static room room_of(const sched_engine *engine, const host *h, size_t i)
{
    const sched_params *params = sched_engine_params(engine);
    const sched_host_load *load = sched_engine_host_load(engine, i);
    room r = {
        .cpu = sched_cpu_capacity(params, h) - h->allocated_cpu - load->cpu,
        .memory =
            sched_memory_capacity(params, h) - (double)h->allocated_memory - (double)load->memory,
        .disk = h->storage - load->disk,
        .slots = h->max_vms - (h->current_vms + load->vms),
    };
    return r;
}

/* The largest whole amount that fits in `left` (what the filters allow). */
static int64_t whole_fit(double left)
{
    double f = floor(left + SCHED_FIT_EPSILON);
    return f > 0 ? (int64_t)f : 0;
}

/* The smallest whole amount to free so that `want` fits in `left`. */
static int64_t whole_shortfall(double want, double left)
{
    double need = want - left;
    return need > SCHED_FIT_EPSILON ? (int64_t)ceil(need - SCHED_FIT_EPSILON) : 0;
}

typedef struct candidate {
    size_t index;
    double cost; /* the change relative to the request: smaller first */
    json_t *entry;
} candidate;

static int by_cost(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost < y->cost ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The change on a host a capacity filter rejected (or that passed them
 * all, when the decision placed elsewhere): what to free, and what it takes. */
static json_t *capacity_change(const sched_engine *engine, const sched_request *req, const host *h,
                               size_t i, double *cost)
{
    room r = room_of(engine, h, i);
    bool slots_on = sched_engine_filter_on(engine, SCHED_FILTER_VM_SLOTS);
    bool cpu_on = sched_engine_filter_on(engine, SCHED_FILTER_CPU);
    bool memory_on = sched_engine_filter_on(engine, SCHED_FILTER_MEMORY);
    bool disk_on = sched_engine_filter_on(engine, SCHED_FILTER_DISK) && req->disk != 0;
    int64_t free_cpu = cpu_on ? whole_shortfall(req->cpu, r.cpu) : 0;
    int64_t free_memory = memory_on ? whole_shortfall((double)req->memory, r.memory) : 0;
    int64_t free_disk = disk_on && r.disk < req->disk ? req->disk - r.disk : 0;
    int64_t free_slots = slots_on && r.slots < 1 ? 1 - (int64_t)r.slots : 0;
    json_t *change = json_object();
    json_t *release = json_object();
    if (free_cpu)
        json_object_set_new(release, "cpu", json_integer(free_cpu));
    if (free_memory)
        json_object_set_new(release, "memory_mib", json_integer(free_memory));
    if (free_disk)
        json_object_set_new(release, "disk_gib", json_integer(free_disk));
    if (free_slots)
        json_object_set_new(release, "vm_slots", json_integer(free_slots));
    json_object_set_new(change, "free", release);
    /* A smaller request needs a slot and at least 1 vCPU and 1 MiB. */
    int64_t fit_cpu = cpu_on ? whole_fit(r.cpu) : req->cpu;
    int64_t fit_memory = memory_on ? whole_fit(r.memory) : req->memory;
    int64_t fit_disk = disk_on ? (r.disk > 0 ? r.disk : 0) : req->disk;
    if (!free_slots && fit_cpu >= 1 && fit_memory >= 1)
        json_object_set_new(
            change, "fits",
            json_pack("{s:I, s:I, s:I}", "cpu",
                      (json_int_t)(fit_cpu < req->cpu ? fit_cpu : req->cpu), "memory_mib",
                      (json_int_t)(fit_memory < req->memory ? fit_memory : req->memory), "disk_gib",
                      (json_int_t)(fit_disk < req->disk ? fit_disk : req->disk)));
    *cost = (double)free_cpu / (req->cpu > 0 ? req->cpu : 1) +
            (double)free_memory / (double)(req->memory > 0 ? req->memory : 1) +
            (double)free_disk / (double)(req->disk > 0 ? req->disk : 1) + (double)free_slots;
    return change;
}

/* The constraint that rejected a host, or NULL for a capacity reason. */
static json_t *constraint_of(sched_reason reason, const host *h)
{
    switch (reason) {
    case SCHED_REASON_POOL:
        return json_pack("{s:s, s:s}", "constraint", "pool", "pool", h->pool);
    case SCHED_REASON_NOT_DEDICATED:
        return json_pack("{s:s, s:s}", "constraint", "dedicated", "detail",
                         "the request asks for a dedicated host; this one is shared");
    case SCHED_REASON_DEDICATED_HOST:
        return json_pack("{s:s, s:s}", "constraint", "dedicated", "detail",
                         "kept for dedicated requests (scheduler.dedicated_exclusive)");
    case SCHED_REASON_OFFLINE:
    case SCHED_REASON_MAINTENANCE:
    case SCHED_REASON_STATUS_UNKNOWN:
        return json_pack("{s:s, s:s}", "constraint", "status", "status",
                         host_status_name(h->status));
    case SCHED_REASON_NODE_REGEX:
        return json_pack("{s:s}", "constraint", "node regex");
    case SCHED_REASON_NODE_NAME:
        return json_pack("{s:s}", "constraint", "node name");
    case SCHED_REASON_ANTI_AFFINITY:
        return json_pack("{s:s}", "constraint", "anti-affinity");
    default:
        return NULL;
    }
}

static json_t *shape(const host *h, const room *r)
{
    return json_pack("{s:s, s:I, s:I, s:I}", "host", h->name, "cpu", (json_int_t)whole_fit(r->cpu),
                     "memory_mib", (json_int_t)whole_fit(r->memory), "disk_gib",
                     (json_int_t)(r->disk > 0 ? r->disk : 0));
}

/* Per pool, the hosts a request like this one could use (online, the
 * dedicated rule) with the most vCPUs and the most memory left. */
static json_t *pool_shapes(const sched_engine *engine, const sched_request *req,
                           const hostset *hosts)
{
    const sched_params *params = sched_engine_params(engine);
    size_t n_pools = hosts->n_pools;
    long *most_cpu = malloc((n_pools ? n_pools : 1) * sizeof *most_cpu);
    long *most_memory = malloc((n_pools ? n_pools : 1) * sizeof *most_memory);
    json_t *pools = json_object();
    if (!most_cpu || !most_memory)
        goto out;
    for (size_t p = 0; p < n_pools; p++)
        most_cpu[p] = most_memory[p] = -1;
    for (size_t i = 0; i < hosts->n_hosts; i++) {
        const host *h = &hosts->hosts[i];
        if (h->status != HOST_ONLINE || h->pool_id >= n_pools)
            continue;
        if (req->dedicated ? !h->dedicated : (h->dedicated && params->dedicated_exclusive))
            continue;
        room r = room_of(engine, h, i);
        if (r.slots < 1 || whole_fit(r.cpu) < 1 || whole_fit(r.memory) < 1)
            continue;
        long *c = &most_cpu[h->pool_id], *m = &most_memory[h->pool_id];
        if (*c < 0) {
            *c = *m = (long)i;
            continue;
        }
        room rc = room_of(engine, &hosts->hosts[*c], (size_t)*c);
        room rm = room_of(engine, &hosts->hosts[*m], (size_t)*m);
        if (whole_fit(r.cpu) > whole_fit(rc.cpu) ||
            (whole_fit(r.cpu) == whole_fit(rc.cpu) && whole_fit(r.memory) > whole_fit(rc.memory)))
            *c = (long)i;
        if (whole_fit(r.memory) > whole_fit(rm.memory) ||
            (whole_fit(r.memory) == whole_fit(rm.memory) && whole_fit(r.cpu) > whole_fit(rm.cpu)))
            *m = (long)i;
    }
    for (size_t p = 0; p < n_pools; p++) {
        if (most_cpu[p] < 0)
            continue;
        const host *hc = &hosts->hosts[most_cpu[p]];
        const host *hm = &hosts->hosts[most_memory[p]];
        room rc = room_of(engine, hc, (size_t)most_cpu[p]);
        room rm = room_of(engine, hm, (size_t)most_memory[p]);
        json_object_set_new(
            pools, hosts->pools[p],
            json_pack("{s:o, s:o}", "most_cpu", shape(hc, &rc), "most_memory", shape(hm, &rm)));
    }
out:
    free(most_cpu);
    free(most_memory);
    return pools;
}

json_t *sched_suggest(const sched_engine *engine, const sched_request *req,
                      const sched_decision *decision, size_t max_hosts)
{
    const hostset *hosts = sched_engine_snapshot(engine);
    if (!hosts)
        return NULL;
    size_t n = hosts->n_hosts < decision->n_hosts ? hosts->n_hosts : decision->n_hosts;
    candidate *held = calloc(n ? n : 1, sizeof *held);
    candidate *blocked = calloc(n ? n : 1, sizeof *blocked);
    json_t *out = json_object();
    size_t n_held = 0, n_blocked = 0;
    if (!held || !blocked || !out)
        goto fail;
    for (size_t i = 0; decision->host_reasons && i < n; i++) {
        sched_reason reason = (sched_reason)decision->host_reasons[i];
        if (reason == SCHED_REASON_NONE)
            continue;
        const host *h = &hosts->hosts[i];
        json_t *entry = constraint_of(reason, h);
        if (entry) {
            json_object_set_new(entry, "reason", json_string(sched_reason_text(reason)));
            blocked[n_blocked++] = (candidate){i, 0, entry};
            continue;
        }
        double cost = 0;
        entry = capacity_change(engine, req, h, i, &cost);
        json_object_set_new(entry, "reason", json_string(sched_reason_text(reason)));
        held[n_held++] = (candidate){i, cost, entry};
    }
    qsort(held, n_held, sizeof *held, by_cost);
    json_t *list = json_object();
    size_t listed = 0;
    for (size_t k = 0; k < n_held + n_blocked; k++) {
        candidate *c = k < n_held ? &held[k] : &blocked[k - n_held];
        if (listed < max_hosts) {
            json_object_set(list, hosts->hosts[c->index].name, c->entry);
            listed++;
        }
    }
    json_object_set_new(out, "hosts", list);
    if (n_held + n_blocked > listed)
        json_object_set_new(out, "hosts_omitted",
                            json_integer((json_int_t)(n_held + n_blocked - listed)));
    json_object_set_new(out, "pools", pool_shapes(engine, req, hosts));
    goto done;
fail:
    json_decref(out);
    out = NULL;
done:
    for (size_t k = 0; held && k < n_held; k++)
        json_decref(held[k].entry);
    for (size_t k = 0; blocked && k < n_blocked; k++)
        json_decref(blocked[k].entry);
    free(held);
    free(blocked);
    return out;
}
