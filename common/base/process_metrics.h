/* process_metrics: the standard process_* series every Prometheus client
 * exports (CPU seconds, resident memory, open file descriptors, start time),
 * read from /proc/self at each scrape, and virtflow_build_info, so the
 * worker's and the relay's /metrics carry them as any other exporter's do.
 * Linux only (/proc). */
#ifndef VF_PROCESS_METRICS_H
#define VF_PROCESS_METRICS_H

#include "metrics.h"

/* The series, kept by the caller (a value type: no allocation of its own;
 * the series belong to the registry). */
typedef struct process_metrics {
    metrics_series *cpu_seconds; /* counter, seconds of user + system CPU */
    metrics_series *resident;    /* gauge, bytes */
    metrics_series *open_fds;    /* gauge */
    metrics_series *max_fds;     /* gauge, the soft RLIMIT_NOFILE */
    metrics_series *start_time;  /* gauge, Unix seconds */
} process_metrics;

/* Adds the process_* families and virtflow_build_info{version, commit} 1 to
 * `m` and fills `pm`. Returns 0, or -1 with err (out of memory). */
int process_metrics_define(metrics *m, process_metrics *pm, vf_error *err)
    __attribute__((warn_unused_result));

/* Reads /proc/self into the series: call from the registry's collect hook.
 * A value that cannot be read keeps its last one. */
void process_metrics_collect(const process_metrics *pm);

#endif
