/* metrics: counters, gauges and histograms with label sets, rendered in the
 * Prometheus text exposition format (version 0.0.4) for /metrics.
 *
 * Debian 12 has no maintained C client library for Prometheus (only Go,
 * Perl and Python ones), and the text format is a few lines per series, so
 * it is rendered here.
 *
 * Threads: families are added before the registry is shared (at start).
 * After that, any thread may look a series up (a short per-family lock,
 * taken only when the series is new or not cached by the caller) and update
 * it with atomic operations only: an increment on the hot path is one
 * relaxed atomic add. Rendering runs on the HTTP server's thread, reading
 * the same atomics; a scrape sees every update made before it began.
 * Series are never removed (their label sets are few: kinds, reasons,
 * receivers, pools). */
#ifndef VF_METRICS_H
#define VF_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "vf_error.h"

#define METRICS_MAX_LABELS 4
#define METRICS_MAX_BUCKETS 24

typedef struct metrics metrics;
typedef struct metrics_family metrics_family;
typedef struct metrics_series metrics_series;

typedef enum { METRICS_COUNTER, METRICS_GAUGE, METRICS_HISTOGRAM } metrics_type;

/* Called at the start of every render, on the rendering thread: where
 * gauges computed from the program's state are set. */
typedef void (*metrics_collect_fn)(metrics *m, void *ctx);

/* An empty registry; NULL when out of memory. */
metrics *metrics_new(void) __attribute__((warn_unused_result));
/* Frees the registry, its families and series. NULL is fine. */
void metrics_free(metrics *m);

/* Runs `fn(m, ctx)` before each render (one hook; a later call replaces it). */
void metrics_set_collect(metrics *m, metrics_collect_fn fn, void *ctx);

/* A family: `name` (a valid Prometheus metric name, borrowed: a literal),
 * `help` (borrowed), `n_labels` label names (borrowed), and for histograms
 * `n_buckets` strictly increasing upper bounds (copied; +Inf is implicit).
 * Returns NULL with err when out of memory or the arguments are invalid. */
metrics_family *metrics_family_add(metrics *m, metrics_type type, const char *name,
                                   const char *help, size_t n_labels,
                                   const char *const *label_names, const double *buckets,
                                   size_t n_buckets, vf_error *err)
    __attribute__((warn_unused_result));

/* The series of `family` with these label values (n_labels of them,
 * copied), created on first use. NULL only when out of memory. The pointer
 * stays valid until metrics_free: callers may keep it. */
metrics_series *metrics_series_get(metrics_family *family, const char *const *label_values);

/* The series of a family without labels. */
metrics_series *metrics_series_only(metrics_family *family);

/* Counter: add n. Gauge: add n (may be used as an up/down count too).
 * NULL series is a no-op, so a disabled registry costs a test. */
void metrics_add(metrics_series *series, uint64_t n);
/* Gauge: set to `value`. Counter: set to a total kept elsewhere (the
 * process's CPU seconds, read from the kernel), for a counter that is never
 * added to. Histogram: no-op. */
void metrics_set(metrics_series *series, double value);
/* Histogram: one observation of `value` (seconds, bytes, items...). */
void metrics_observe(metrics_series *series, double value);

/* Every gauge series of `family` back to 0: for gauges recomputed at each
 * scrape whose label sets may vanish (a pool no host is in any more). */
void metrics_family_zero(metrics_family *family);

/* Drop every series of `family`, for gauges whose label sets are made afresh
 * at each scrape and whose stale sets would read as a real 0 (a request
 * shape no longer among the recent ones). Every pointer metrics_series_get
 * returned for the family dies: only for families nothing keeps one of. */
void metrics_family_clear(metrics_family *family);

/* The value of a counter or gauge series (tests, scrape-time sums). */
double metrics_value(const metrics_series *series);

/* Renders every family into a malloc'd text (*out, *out_len), after running
 * the collect hook. Returns 0, or -1 when out of memory. */
int metrics_render(metrics *m, char **out, size_t *out_len) __attribute__((warn_unused_result));

#endif
