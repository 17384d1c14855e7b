/* virtflowctl nodes: the inventory beside the store's live reservations, and
 * what is left on each host, counted the way the scheduler's filters count. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"
#include "engine.h"
#include "inventory.h"
#include "store_config.h"

static void nodes_usage(FILE *out)
{
    fprintf(out, "usage: virtflowctl nodes [-c CONFIG] [--json]\n"
                 "\n"
                 "The hosts from the configured inventory, with the store's live reservations\n"
                 "(store opened read-only; none if there is no store yet) and what is free on\n"
                 "each: vCPUs (cores minus scheduler.reserve, times scheduler.overcommit, minus\n"
                 "allocated and reserved), memory in MiB (the same way), disk in GiB, VM slots.\n"
                 "\n"
                 "  --json   an array of {name, ip, pool, dedicated, status, reservations,\n"
                 "           cpu: {capacity, allocated, reserved, free}, memory: {...}, disk:\n"
                 "           {free_before_reservations, reserved, free}, vms: {max, current,\n"
                 "           reserved, free}}\n"
                 "\n"
                 "exit status: 0 ok, 2 usage, 3 configuration error, 4 inventory or store\n"
                 "unreachable.\n");
}

typedef struct held {
    double cpu;     /* vCPUs */
    int64_t memory; /* MiB */
    int64_t disk;   /* GiB */
    int count;
} held;

typedef struct held_ctx {
    const hostset *hosts;
    held *per_host;
    int64_t unknown_hosts; /* reservations on hosts the inventory no longer lists */
} held_ctx;

static int add_reservation(const store_reservation *r, void *user)
{
    held_ctx *ctx = user;
    for (size_t i = 0; i < ctx->hosts->n_hosts; i++) {
        if (strcmp(ctx->hosts->hosts[i].name, r->node) == 0) {
            ctx->per_host[i].cpu += r->cpu;
            ctx->per_host[i].memory += r->memory;
            ctx->per_host[i].disk += r->disk;
            ctx->per_host[i].count++;
            return 0;
        }
    }
    ctx->unknown_hosts++;
    return 0;
}

int ctl_nodes(int argc, char **argv)
{
    const char *config_path;
    bool as_json;
    int early = ctl_only_common_options(argc, argv, "nodes", nodes_usage, &config_path, &as_json);
    if (early >= 0)
        return early;
    vf_config *config = ctl_load_config(config_path);
    if (!config)
        return CTL_EXIT_CONFIG;
    int rc = CTL_EXIT_CONFIG;
    inventory *inv = NULL;
    hostset *hosts = NULL;
    store *s = NULL;
    held *per_host = NULL;
    json_t *array = NULL;
    vf_error err;
    vf_error_init(&err);
    if (!(inv = inventory_new(config, &err))) {
        ctl_error("%s", err.text);
        goto out;
    }
    rc = CTL_EXIT_UNAVAILABLE;
    if (!(hosts = inventory_fetch(inv, &err))) {
        ctl_error("inventory unavailable: %s", err.text);
        goto out;
    }
    per_host = calloc(hosts->n_hosts ? hosts->n_hosts : 1, sizeof *per_host);
    if (!per_host) {
        ctl_error("out of memory");
        goto out;
    }
    held_ctx ctx = {hosts, per_host, 0};
    bool have_store = !store_config_missing(config);
    if (have_store) {
        if (!(s = ctl_open_store(config, STORE_READ_ONLY)))
            goto out;
        char now[STORE_TIME_SIZE]; /* the reservation clock, as the worker judges expiry */
        if (store_reservation_clock(s, now, &err) < 0 ||
            store_reservations_live(s, now, add_reservation, &ctx, &err) < 0) {
            ctl_error("%s", err.text);
            goto out;
        }
    }
    sched_params params;
    sched_params_from_config(&params, config);
    /* The plugins' args (CPUOvercommit's ratio, …) refine the ratios and
     * reserves: take them as the engine resolves them. */
    sched_engine *resolver = sched_engine_new(&params, &err);
    if (!resolver) {
        ctl_error("%s", err.text);
        goto out;
    }
    params = *sched_engine_params(resolver);
    sched_engine_free(resolver);
    if (as_json)
        array = json_array();
    else
        printf("%-20s %-10s %-11s %5s %9s %9s %11s %11s %8s %7s\n", "NODE", "POOL", "STATUS", "RES",
               "CPU_FREE", "CPU_CAP", "MEM_FREE", "MEM_CAP", "DISK_FREE", "VM_FREE");
    for (size_t i = 0; i < hosts->n_hosts; i++) {
        const host *h = &hosts->hosts[i];
        const held *r = &per_host[i];
        double cpu_cap = sched_cpu_capacity(&params, h);
        double mem_cap = sched_memory_capacity(&params, h);
        double cpu_free = cpu_cap - h->allocated_cpu - r->cpu;
        double mem_free = mem_cap - (double)h->allocated_memory - (double)r->memory;
        int64_t disk_free = h->storage - r->disk;
        int64_t vm_free = (int64_t)h->max_vms - h->current_vms - r->count;
        if (as_json) {
            json_t *obj = json_pack(
                "{s:s, s:s, s:s, s:b, s:s, s:i, s:{s:f, s:f, s:f, s:f}, s:{s:f, s:I, s:I, s:f}, "
                "s:{s:I, s:I, s:I}, s:{s:i, s:i, s:i, s:I}}",
                "name", h->name, "ip", h->ip, "pool", h->pool, "dedicated", h->dedicated, "status",
                host_status_name(h->status), "reservations", r->count, "cpu", "capacity", cpu_cap,
                "allocated", h->allocated_cpu, "reserved", r->cpu, "free", cpu_free, "memory",
                "capacity", mem_cap, "allocated", (json_int_t)h->allocated_memory, "reserved",
                (json_int_t)r->memory, "free", mem_free, "disk", "free_before_reservations",
                (json_int_t)h->storage, "reserved", (json_int_t)r->disk, "free",
                (json_int_t)disk_free, "vms", "max", h->max_vms, "current", h->current_vms,
                "reserved", r->count, "free", (json_int_t)vm_free);
            json_array_append_new(array, obj);
        } else {
            printf("%-20s %-10s %-11s %5d %9.1f %9.1f %11.0f %11.0f %8lld %7lld\n",
                   ctl_text(h->name), ctl_text(h->pool), host_status_name(h->status), r->count,
                   cpu_free, cpu_cap, mem_free, mem_cap, (long long)disk_free, (long long)vm_free);
        }
    }
    if (as_json)
        ctl_print_json(array);
    else if (!have_store)
        printf("(no store at %s yet: no reservations counted)\n", ctl_store_name(config));
    if (ctx.unknown_hosts > 0)
        fprintf(stderr, "note: %lld live reservation%s on hosts the inventory does not list\n",
                (long long)ctx.unknown_hosts, ctx.unknown_hosts == 1 ? "" : "s");
    rc = CTL_EXIT_OK;
out:
    json_decref(array);
    free(per_host);
    store_close(s);
    hostset_free(hosts);
    inventory_free(inv);
    config_free(config);
    return rc;
}
