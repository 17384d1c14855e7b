/* host_capacity: what is free on each host, the inventory beside the store's
 * live reservations, counted the way the scheduler's filters count (cores
 * minus scheduler.reserve, times the overcommit ratios the engine resolves,
 * minus allocated and reserved). One definition for `virtflowctl nodes
 * --json` and virtflow-api's GET /v1/hosts. */
#ifndef VF_HOST_CAPACITY_H
#define VF_HOST_CAPACITY_H

#include <jansson.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "hostset.h"
#include "store.h"

/* What the store's live reservations hold on one host. */
typedef struct host_held {
    double cpu;     /* vCPUs */
    int64_t memory; /* MiB */
    int64_t disk;   /* GiB */
    int count;
} host_held;

/* The live reservations of `s` (judged by the store's reservation clock, as
 * the worker judges expiry) summed per host: per_host[i] for hosts->hosts[i],
 * n_hosts entries the caller zeroed; *unknown_hosts (may be NULL) receives how
 * many are on hosts `hosts` does not list. Returns 0, or -1 with err. */
int host_capacity_held(const hostset *hosts, store *s, host_held *per_host, int64_t *unknown_hosts,
                       vf_error *err) __attribute__((warn_unused_result));

/* The scheduler's parameters as the engine resolves them: the plugins' args
 * (CPUOvercommit's ratio, ...) refine the config's ratios and reserves.
 * Returns 0, or -1 with err (the parameters the engine refuses). */
int host_capacity_params(const vf_config *config, sched_params *out, vf_error *err)
    __attribute__((warn_unused_result));

/* An array with one object per host of `hosts`: {name, ip, pool, dedicated,
 * status, reservations, cpu: {capacity, allocated, reserved, free}, memory:
 * {capacity, allocated, reserved, free}, disk: {free_before_reservations,
 * reserved, free}, vms: {max, current, reserved, free}, labels (only when
 * the host has topology labels: {key: value})}. Reservations come
 * from `s` (NULL: none counted); *unknown_hosts (may be NULL) receives how
 * many live reservations are on hosts `hosts` does not list. Owned, or NULL
 * with err (the store, the engine's parameters, out of memory). */
json_t *host_capacity_json(const vf_config *config, const hostset *hosts, store *s,
                           int64_t *unknown_hosts, vf_error *err)
    __attribute__((warn_unused_result));

#endif
