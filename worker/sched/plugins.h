/* plugins: the interface between the engine and its filter, score and vmid
 * plugins, and the one registry that lists them all (registry.c).
 *
 * Filters and scores work on a whole candidate list per call (one indirect
 * call per plugin per decision, tight loops inside), which is what keeps a
 * decision over 10,000 hosts well under a millisecond. */
#ifndef VF_PLUGINS_H
#define VF_PLUGINS_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* The figures filters and scores read, per host, packed together and with
 * capacities precomputed when the snapshot is set: a pass over 10,000 of
 * these stays in cache where the full host records (names, addresses) do not. */
typedef struct sched_hot {
    double cpu_capacity;     /* vCPUs after reserve and overcommit */
    double memory_capacity;  /* MiB after reserve and overcommit */
    double allocated_cpu;    /* vCPUs */
    double allocated_memory; /* MiB */
    int64_t storage;         /* GiB */
    int32_t max_vms;
    int32_t current_vms;
    uint32_t pool_id;
    uint8_t status; /* host_status */
    bool dedicated;
} sched_hot;

/* What the pre-filter prepared for one request. */
typedef struct sched_ctx {
    const sched_params *params;
    const hostset *hosts;
    const sched_hot *hot;        /* per host index */
    const sched_host_load *load; /* per host index */
    const sched_request *req;
    int pool_id;               /* -1: no host has the requested pool */
    const regex_t *node_regex; /* NULL: no node annotation (or NodeRegex disabled) */
    uint8_t *node_match;       /* per host: 0 unknown, 1 match, 2 mismatch (cache) */
    /* Per candidate position, filled before scoring: committed / capacity
     * after placing the request (0..1 when it fits). */
    const double *cpu_fraction;
    const double *memory_fraction;
} sched_ctx;

/* Keep the passing candidates at the front of `candidates`, in order; write
 * the reason for each rejected host into reasons[host index]. Returns how
 * many remain. */
typedef size_t (*sched_filter_fn)(const sched_ctx *ctx, uint32_t *candidates, size_t n,
                                  uint8_t *reasons);
/* Write a raw score for each candidate into out[i] (same order), 0..100. */
typedef void (*sched_score_fn)(const sched_ctx *ctx, const uint32_t *candidates, size_t n,
                               double *out);

typedef enum { SCHED_VMID_RANGE = 1, SCHED_VMID_REGEX } sched_vmid_plugin;

typedef struct sched_plugin {
    const char *name;
    config_plugin_kind kind;
    bool enabled_by_default;
    double default_weight; /* scores only */
    sched_filter_fn filter;
    sched_score_fn score;
    sched_vmid_plugin vmid;
} sched_plugin;

extern const sched_plugin sched_plugins[];
extern const size_t sched_plugin_count;

/* Filters (filters.c) and scores (scores.c). */
size_t sched_filter_pool(const sched_ctx *, uint32_t *, size_t, uint8_t *);
size_t sched_filter_dedicated(const sched_ctx *, uint32_t *, size_t, uint8_t *);
size_t sched_filter_status(const sched_ctx *, uint32_t *, size_t, uint8_t *);
size_t sched_filter_node_regex(const sched_ctx *, uint32_t *, size_t, uint8_t *);
size_t sched_filter_vm_slots(const sched_ctx *, uint32_t *, size_t, uint8_t *);
size_t sched_filter_cpu(const sched_ctx *, uint32_t *, size_t, uint8_t *);
size_t sched_filter_memory(const sched_ctx *, uint32_t *, size_t, uint8_t *);
size_t sched_filter_disk(const sched_ctx *, uint32_t *, size_t, uint8_t *);

void sched_score_free(const sched_ctx *, const uint32_t *, size_t, double *);
void sched_score_most_allocated(const sched_ctx *, const uint32_t *, size_t, double *);
void sched_score_balanced(const sched_ctx *, const uint32_t *, size_t, double *);
void sched_score_vm_slots(const sched_ctx *, const uint32_t *, size_t, double *);

#endif
