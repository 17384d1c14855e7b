#include "host_capacity.h"

#include <stdlib.h>
#include <string.h>

#include "store_reservations.h"

typedef struct held_ctx {
    const hostset *hosts;
    host_held *per_host;
    int64_t unknown_hosts; /* reservations on hosts the inventory no longer lists */
} held_ctx;

static int add_reservation(const store_reservation *r, void *user)
{
    held_ctx *ctx = user;
    const host *h = hostset_find(ctx->hosts, r->node);
    if (!h) {
        ctx->unknown_hosts++;
        return 0;
    }
    host_held *held = &ctx->per_host[h - ctx->hosts->hosts];
    held->cpu += r->cpu;
    held->memory += r->memory;
    held->disk += r->disk;
    held->count++;
    return 0;
}

int host_capacity_held(const hostset *hosts, store *s, host_held *per_host, int64_t *unknown_hosts,
                       vf_error *err)
{
    held_ctx ctx = {hosts, per_host, 0};
    char now[STORE_TIME_SIZE]; /* the reservation clock, as the worker judges expiry */
    if (store_reservation_clock(s, now, err) < 0 ||
        store_reservations_live(s, now, add_reservation, &ctx, err) < 0)
        return -1;
    if (unknown_hosts)
        *unknown_hosts = ctx.unknown_hosts;
    return 0;
}

int host_capacity_params(const vf_config *config, sched_params *out, vf_error *err)
{
    sched_params_from_config(out, config);
    sched_engine *resolver = sched_engine_new(out, err);
    if (!resolver)
        return -1;
    *out = *sched_engine_params(resolver);
    sched_engine_free(resolver);
    return 0;
}

json_t *host_capacity_json(const vf_config *config, const hostset *hosts, store *s,
                           int64_t *unknown_hosts, vf_error *err)
{
    json_t *array = NULL;
    int64_t unknown = 0;
    host_held *per_host = calloc(hosts->n_hosts ? hosts->n_hosts : 1, sizeof *per_host);
    if (!per_host) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        goto out;
    }
    if (s && host_capacity_held(hosts, s, per_host, &unknown, err) < 0)
        goto out;
    sched_params params;
    if (host_capacity_params(config, &params, err) < 0)
        goto out;
    if (!(array = json_array())) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < hosts->n_hosts; i++) {
        const host *h = &hosts->hosts[i];
        const host_held *r = &per_host[i];
        double cpu_cap = sched_cpu_capacity(&params, h);
        double mem_cap = sched_memory_capacity(&params, h);
        sched_host_load load = {r->cpu, r->memory, r->disk, r->count};
        sched_room room = sched_host_room(&params, h, &load);
        double cpu_free = room.cpu;
        double mem_free = room.memory;
        int64_t disk_free = room.disk;
        int64_t vm_free = room.slots;
        json_t *obj = json_pack(
            "{s:s, s:s, s:s, s:b, s:s, s:i, s:{s:f, s:f, s:f, s:f}, s:{s:f, s:I, s:I, s:f}, "
            "s:{s:I, s:I, s:I}, s:{s:i, s:i, s:i, s:I}}",
            "name", h->name, "ip", h->ip, "pool", h->pool, "dedicated", h->dedicated, "status",
            host_status_name(h->status), "reservations", r->count, "cpu", "capacity", cpu_cap,
            "allocated", h->allocated_cpu, "reserved", r->cpu, "free", cpu_free, "memory",
            "capacity", mem_cap, "allocated", (json_int_t)h->allocated_memory, "reserved",
            (json_int_t)r->memory, "free", mem_free, "disk", "free_before_reservations",
            (json_int_t)h->storage, "reserved", (json_int_t)r->disk, "free", (json_int_t)disk_free,
            "vms", "max", h->max_vms, "current", h->current_vms, "reserved", r->count, "free",
            (json_int_t)vm_free);
        if (obj && h->traits && h->traits->labels.n)
            json_object_set_new(obj, "labels", label_set_to_json(&h->traits->labels));
        if (!obj || json_array_append_new(array, obj) < 0) {
            vf_error_set(err, VF_ENOMEM, "out of memory");
            json_decref(array);
            array = NULL;
            goto out;
        }
    }
    if (unknown_hosts)
        *unknown_hosts = unknown;
out:
    free(per_host);
    return array;
}
