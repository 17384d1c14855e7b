/* api: virtflow-api's routes (docs/api.md), the virtflow-scheduler
 * prototype's HTTP interface over virtflow's broker and store:
 *
 *   POST /schedule          record the task as queued, publish task.schedule
 *                           with a publisher confirm, answer {"task_id": ...}
 *   GET  /result/{task_id}  the task's state from the store, in the
 *                           prototype's three shapes
 *   GET  /healthz, /readyz  alive; store and broker reachable
 *   GET  /metrics           requests by route and status, durations (api_metrics.h)
 *   GET  /openapi.json      schema/openapi.json (and the request schema it names)
 *   GET  /docs              the same, as a page to read (api_docs.h)
 *   /v1/tasks ...           the versioned API (api_v1.c)
 *
 * With api.keys_file every route but /healthz, /readyz, /metrics and the
 * documents needs a key with the route's scope (api_keys.h).
 *
 * Stateless: everything it answers comes from the store, so any number of
 * replicas may run side by side. Errors are RFC 9457 problem details.
 *
 * An api is used from the httpd thread only (api_handle): its store handle
 * and broker link are not shared. */
#ifndef VF_API_H
#define VF_API_H

#include "config.h"
#include "httpd.h"
#include "vf_error.h"

typedef struct api api;

/* Opens the store (read-write: POST /schedule records tasks) and prepares
 * the broker link (connected at the first request that needs it, so the
 * program starts while the broker is down and /readyz tells). `config` is
 * borrowed and must outlive the api. NULL with err (VF_ECONFIG,
 * VF_EUNAVAILABLE, ...). */
api *api_new(const vf_config *config, vf_error *err) __attribute__((warn_unused_result));

/* NULL is a no-op. */
void api_free(api *a);

/* The server whose waiting requests the api wakes when their submission is
 * handled (httpd_wake); NULL before stopping that server. */
void api_attach_server(api *a, httpd *srv);

/* How many keys api.keys_file holds (0: none configured, every route open). */
size_t api_key_count(api *a);

/* SIGHUP: read api.keys_file again (the path the program started with) and
 * use its keys for every request from now on; a file that does not load
 * leaves the keys in force (logged as an error, -1). Any thread. */
int api_reload_keys(api *a);

/* Requests that may wait at once: for a task to end (GET
 * /v1/tasks/{id}?wait=), or for their submission's group to be recorded
 * and confirmed (POST /schedule, /v1/tasks); httpd_options.max_waiting.
 * More are answered 503 with Retry-After. */
#define API_MAX_WAITING 128

/* The httpd handler; ctx is the api. */
void api_handle(void *ctx, const httpd_request *req, httpd_response *resp);

#endif
