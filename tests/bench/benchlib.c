#include "benchlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

double bench_now_s(void)
{
    return (double)clock_mono_us() / 1e6;
}

hostset *bench_hosts(size_t n, bench_host_fn shape)
{
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    for (size_t i = 0; set && i < n; i++) {
        host h;
        memset(&h, 0, sizeof h);
        snprintf(h.name, sizeof h.name, "bm-%06zu", i);
        snprintf(h.pool, sizeof h.pool, "default");
        h.status = HOST_ONLINE;
        h.cpu = 32 + (double)(i % 4) * 16;
        h.memory = 131072 + (int64_t)(i % 3) * 65536;
        h.storage = 2000;
        h.allocated_cpu = (double)(i * 7 % 64);
        h.allocated_memory = (int64_t)(i * 4099 % 65536);
        h.max_vms = 60;
        h.current_vms = (int32_t)(i % 40);
        if (shape)
            shape(&h, i, n);
        if (hostset_add(set, &h, &err) < 0) {
            fprintf(stderr, "bench: %s\n", err.text);
            exit(1);
        }
    }
    if (!set || hostset_finish(set, &err) < 0) {
        fprintf(stderr, "bench: %s\n", set ? err.text : "out of memory");
        exit(1);
    }
    return set;
}
