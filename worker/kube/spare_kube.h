/* spare_kube: the Kubernetes API of a spare's cluster, for readiness and for
 * release (spare.release.kubernetes).
 *
 * The API server is the request's cluster in spare.clusters; without
 * clusters configured (or for a request naming none) it is
 * spare.readiness.{api_url, token_file, ca_file}, the single-cluster default.
 *
 *   delete        DELETE /api/v1/nodes/{name}
 *   drain_delete  PATCH the node {"spec": {"unschedulable": true}} (cordon),
 *                 list its pods (GET /api/v1/pods?fieldSelector=spec.nodeName=
 *                 {name}), evict each one that is not a DaemonSet's or a
 *                 mirror pod (POST .../pods/{pod}/eviction, policy/v1),
 *                 retrying an eviction answered 429 (a PodDisruptionBudget
 *                 forbids it now), then DELETE the node
 *
 * A node already gone (404) counts as done. Tokens are read at each call and
 * never reach an error text. */
#ifndef VF_SPARE_KUBE_H
#define VF_SPARE_KUBE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "vf_error.h"

typedef struct spare_kube_api {
    const char *api_url; /* NULL: none configured */
    const char *token_file;
    const char *ca_file;
} spare_kube_api;

/* The API server for `cluster` (may be NULL). Returns 0, or -1 when
 * spare.clusters is configured and does not name `cluster` (err VF_EINVAL
 * names the clusters that are). Strings are borrowed from config. */
int spare_kube_api_for(const vf_config *config, const char *cluster, spare_kube_api *out,
                       vf_error *err) __attribute__((warn_unused_result));

/* Is node `name` Ready? 1 ready, 0 not (yet): *why says why ("not joined yet
 * (404)", "Ready is False", "HTTP 503", the connection error). */
int spare_kube_ready(const spare_kube_api *api, int poll_s, const char *name, char *why,
                     size_t size);

/* Take node `name` out of the cluster as spare.release.kubernetes says
 * (none: nothing). `stop` (may be NULL) cuts eviction retries short.
 * Returns 0, or -1 with err VF_EUNAVAILABLE (worth retrying: an API error,
 * evictions still refused after their retries). *evicted counts pods evicted. */
int spare_kube_release(const vf_config *config, const spare_kube_api *api, const char *name,
                       volatile const sig_atomic_t *stop, int *evicted, vf_error *err)
    __attribute__((warn_unused_result));

#endif
