/* virtflowctl nodes: the inventory beside the store's live reservations, and
 * what is left on each host, counted the way the scheduler's filters count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"
#include "host_capacity.h"
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
                 "examples:\n"
                 "  virtflowctl nodes\n"
                 "  virtflowctl nodes --json | jq '.[] | select(.cpu.free < 8) | .name'\n"
                 "\n"
                 "exit status: 0 ok, 2 usage, 3 configuration error, 4 inventory or store\n"
                 "unreachable.\n");
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
    json_t *array = NULL;
    vf_error err;
    vf_error_init(&err);
    if (!(hosts = ctl_fetch_hosts(config, &inv, &rc)))
        goto out;
    bool have_store = !store_config_missing(config);
    if (have_store && !(s = ctl_open_store(config, STORE_READ_ONLY)))
        goto out;
    int64_t unknown_hosts = 0;
    if (!(array = host_capacity_json(config, hosts, s, &unknown_hosts, &err))) {
        ctl_error("%s", err.text);
        goto out;
    }
    if (as_json) {
        ctl_print_json(array);
    } else {
        printf("%-20s %-10s %-11s %5s %9s %9s %11s %11s %8s %7s\n", "NODE", "POOL", "STATUS", "RES",
               "CPU_FREE", "CPU_CAP", "MEM_FREE", "MEM_CAP", "DISK_FREE", "VM_FREE");
        size_t i;
        const json_t *h;
        json_array_foreach(array, i, h)
        {
            const json_t *cpu = json_object_get(h, "cpu"), *memory = json_object_get(h, "memory");
            printf(
                "%-20s %-10s %-11s %5lld %9.1f %9.1f %11.0f %11.0f %8lld %7lld\n",
                ctl_text(json_string_value(json_object_get(h, "name"))),
                ctl_text(json_string_value(json_object_get(h, "pool"))),
                json_string_value(json_object_get(h, "status")),
                (long long)json_integer_value(json_object_get(h, "reservations")),
                json_real_value(json_object_get(cpu, "free")),
                json_real_value(json_object_get(cpu, "capacity")),
                json_real_value(json_object_get(memory, "free")),
                json_real_value(json_object_get(memory, "capacity")),
                (long long)json_integer_value(json_object_get(json_object_get(h, "disk"), "free")),
                (long long)json_integer_value(json_object_get(json_object_get(h, "vms"), "free")));
        }
        if (!have_store)
            printf("(no store at %s yet: no reservations counted)\n", ctl_store_name(config));
    }
    if (unknown_hosts > 0)
        fprintf(stderr, "note: %lld live reservation%s on hosts the inventory does not list\n",
                (long long)unknown_hosts, unknown_hosts == 1 ? "" : "s");
    rc = CTL_EXIT_OK;
out:
    json_decref(array);
    store_close(s);
    hostset_free(hosts);
    inventory_free(inv);
    config_free(config);
    return rc;
}
