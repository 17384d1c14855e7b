/* bench_headroom: what a /metrics scrape pays for free capacity and
 * headroom (headroom.h) at 1,000, 10,000 and 100,000 hosts with three
 * reference shapes: sched_headroom_compute alone (no reservation), then a
 * whole scrape's share with 10 live reservations per host summed onto the
 * snapshot by name first (hostset_find, as the scrape does). Prints microseconds per scrape;
 * asserts nothing.
 *
 *   bench_headroom [seconds-per-case]   (default 1.0) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchlib.h"
#include "engine.h"
#include "headroom.h"
#include "hostset.h"

/* Addresses, twenty pools of 5% each (hosts of a pool together, as racks
 * come), one host in 50 in maintenance, one in 100 dedicated. */
static void shape_host(host *h, size_t i, size_t n)
{
    snprintf(h->ip, sizeof h->ip, "10.%zu.%zu.%zu", i >> 16, (i >> 8) & 255, i & 255);
    snprintf(h->pool, sizeof h->pool, "pool-%02zu", i * 20 / n);
    h->status = i % 50 == 49 ? HOST_MAINTENANCE : HOST_ONLINE;
    h->dedicated = i % 100 == 7;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    static char small[] = "small", medium[] = "medium", spare[] = "upgrade-spare";
    config_shape shapes[] = {
        {small, 2, 4096, 0, 0}, {medium, 4, 16384, 40, 0}, {spare, 8, 32768, 100, 3}};
    sched_params params = {.overcommit_cpu = 4.0,
                           .overcommit_memory = 1.0,
                           .dedicated_exclusive = true,
                           .subset_size = 1};
    const size_t sizes[] = {1000, 10000, 100000};
    printf("%-8s %-14s %14s %12s\n", "hosts", "reservations", "us/scrape", "ns/host");
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        size_t n = sizes[c];
        hostset *set = bench_hosts(n, shape_host);
        sched_host_load *loads = calloc(n, sizeof *loads);
        if (!loads)
            return 1;
        /* Reservation node names, as the store's rows give them. */
        size_t n_res = n * 10;
        char(*nodes)[32] = malloc(n_res * sizeof *nodes);
        if (!nodes)
            return 1;
        for (size_t r = 0; r < n_res; r++)
            snprintf(nodes[r], sizeof nodes[r], "bm-%06zu", (r * 7919) % n);
        const size_t res_cases[] = {0, n_res};
        for (size_t rc = 0; rc < 2; rc++) {
            size_t runs = 0;
            int64_t checksum = 0;
            double start = bench_now_s(), elapsed;
            do {
                memset(loads, 0, n * sizeof *loads);
                for (size_t r = 0; r < res_cases[rc]; r++) {
                    const host *h = hostset_find(set, nodes[r]);
                    if (h) {
                        sched_host_load *l = &loads[h - set->hosts];
                        l->cpu += 1;
                        l->memory += 1024;
                        l->vms++;
                    }
                }
                sched_headroom hr;
                if (sched_headroom_compute(&hr, &params, set, loads, shapes, 3) < 0)
                    return 1;
                checksum += hr.n_pools ? hr.pools[0].shapes[0].vms : 0;
                sched_headroom_close(&hr);
                runs++;
                elapsed = bench_now_s() - start;
            } while (elapsed < seconds);
            double us = elapsed / (double)runs * 1e6;
            printf("%-8zu %-14zu %14.1f %12.1f   (%zu runs, checksum %lld)\n", n, res_cases[rc], us,
                   us * 1000 / (double)n, runs, (long long)checksum);
        }
        free(nodes);
        free(loads);
        hostset_free(set);
    }
    return 0;
}
