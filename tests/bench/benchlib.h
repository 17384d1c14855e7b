/* benchlib: what the benchmarks share: a monotonic clock in seconds
 * and a hostset of n loaded hosts of mixed sizes. Every failure here ends
 * the benchmark (a benchmark's main decides so; nothing here is library
 * code). */
#ifndef VF_BENCHLIB_H
#define VF_BENCHLIB_H

#include <stddef.h>

#include "hostset.h"

/* The monotonic clock (clock.h) in seconds. */
double bench_now_s(void);

/* Called for host i of n after the shared figures are set, to give it the
 * benchmark's own name, pool, address or status. */
typedef void (*bench_host_fn)(host *h, size_t i, size_t n);

/* n online hosts "bm-NNNNNN" in pool "default", each shaped by `shape`
 * (NULL: none) after the shared figures: 32/48/64/80 vCPUs, 128/192/256 GiB,
 * 2,000 GiB, already partly allocated, up to 60 VMs with 0..39 running.
 * Finished; owned. Exits with a message on failure. */
hostset *bench_hosts(size_t n, bench_host_fn shape);

#endif
