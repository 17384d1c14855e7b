/* api_metrics: virtflow-api's /metrics (Prometheus text), served on
 * api.listen beside the routes: requests by route and status, how long they
 * took, and what became of the POSTs (accepted, refused by the broker). */
#ifndef VF_API_METRICS_H
#define VF_API_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "vf_error.h"

typedef struct api_metrics api_metrics;

/* Owned (api_metrics_free); NULL with err when out of memory. */
api_metrics *api_metrics_new(vf_error *err) __attribute__((warn_unused_result));

/* NULL is a no-op. */
void api_metrics_free(api_metrics *am);

/* One answered request: `route` is the route's template ("/schedule",
 * "/result/{task_id}", ..., "other": never the raw path, which would make a
 * series per task id), `status` the HTTP status, `seconds` how long it took. */
void api_metrics_request(api_metrics *am, const char *route, int status, double seconds);

/* A POST /schedule whose task was published and confirmed (`accepted`), or
 * refused by the broker or the store (answered 503). */
void api_metrics_submission(api_metrics *am, bool accepted);

/* The exposition text, malloc'd; -1 when out of memory. */
int api_metrics_render(api_metrics *am, char **out, size_t *out_len)
    __attribute__((warn_unused_result));

#endif
