/* spare_provision: the outside systems of the spare lifecycle, one blocking
 * call each, for the spare driver's thread.
 *
 *   provisioner gitlab   POST {url}/api/v4/projects/{project}/trigger/pipeline
 *                        (form: token, ref, variables[VM_NAME], ...[ACTION],
 *                        variables[IDEMPOTENCY_KEY]);
 *                        201 carries the pipeline's "id" and "web_url"
 *   provisioner command  argv from the config, run without a shell, with
 *                        VIRTFLOW_VM_NAME ... VIRTFLOW_ACTION and
 *                        VIRTFLOW_IDEMPOTENCY_KEY in its environment;
 *                        exit 0 is success; its process group is killed at
 *                        provisioner.timeout_s
 *   provisioner awx      POST {url}/api/v2/job_templates/{id}/launch/ with
 *                        extra_vars (spare_awx.h); the job id is followed
 *                        as a gitlab pipeline is (spare_pipeline_status)
 *   provisioner none     nothing to do: success
 *                        spare_pipeline_status then follows the pipeline
 *   readiness kubernetes GET {api_url}/api/v1/nodes/{name} with a bearer token
 *                        (the API of the spare's cluster, spare_kube.h):
 *                        the node's Ready condition is "True"
 *   readiness none       ready at once
 *
 * The idempotency key names one step of one spare (spare_idempotency_key):
 * a run repeated for the same step (a retry, or another worker that took the
 * "spares" lease over from a paused one) carries the same key, so the
 * provisioner can recognise a create it has already done.
 *
 * Tokens are read from their files at each call (a rotated file is picked up)
 * and never reach an error text or a log line. */
#ifndef VF_SPARE_PROVISION_H
#define VF_SPARE_PROVISION_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "vf_error.h"

typedef struct spare_target {
    const char *name; /* VM and Kubernetes node name */
    const char *host;
    const char *host_ip;
    int64_t vmid;
    double cpu;          /* vCPUs */
    int64_t memory;      /* MiB */
    int64_t disk;        /* GiB */
    const char *cluster; /* may be NULL */
    const char *upgrade_id;
    const char *idempotency_key; /* spare_idempotency_key of this step */
} spare_target;

/* "vf1-" + 32 hex digits. */
#define SPARE_IDEMPOTENCY_KEY_SIZE 40

/* The key of step `action` ("create", "destroy") of spare `name` of prepare
 * task `task_id`, placed at `created_at` (the spare row's; may be NULL): the
 * same for every run of that step, by any worker, and different for any
 * other step or spare, a task id used again in another store included (a
 * digest of the four). */
void spare_idempotency_key(const char *task_id, const char *name, const char *created_at,
                           const char *action, char out[SPARE_IDEMPOTENCY_KEY_SIZE]);

typedef struct spare_provision_result {
    int64_t pipeline_id;    /* gitlab: the pipeline triggered; -1 otherwise */
    char pipeline_url[512]; /* gitlab: its web_url; "" otherwise */
} spare_provision_result;

/* Run the provisioner with ACTION `action` ("create" or "destroy"). `stop`
 * (may be NULL) ends a running command early. Returns 0 on success, or -1
 * with err: VF_EUNAVAILABLE for a failure worth retrying (HTTP error status,
 * unreachable, non-zero exit, timeout), VF_ECONFIG for a configuration that
 * cannot work (missing url, unreadable token file, empty command),
 * VF_EINTERNAL when interrupted by `stop`. */
int spare_provision_run(const vf_config *config, const spare_target *target, const char *action,
                        volatile const sig_atomic_t *stop, spare_provision_result *out,
                        vf_error *err) __attribute__((warn_unused_result));

/* Is node `name` Ready, in the Kubernetes API of `cluster` (spare_kube)?
 * Returns 1 ready, 0 not (yet): *why says why ("not joined yet (404)",
 * "Ready is False", "HTTP 503", the connection error, an unknown cluster). */
int spare_readiness_check(const vf_config *config, const char *cluster, const char *name, char *why,
                          size_t size);

/* awx: the status of job `pipeline_id` in the words below (spare_awx.h).
 * gitlab: the status of pipeline `pipeline_id` (GET
 * {url}/api/v4/projects/{project}/pipelines/{id}, PRIVATE-TOKEN from
 * provisioner.api_token_file): created, waiting_for_resource, preparing,
 * pending, running, success, failed, canceled, skipped, manual, scheduled.
 * Returns 0 with `status` filled, or -1 with err VF_EUNAVAILABLE (HTTP error,
 * unreachable) or VF_ECONFIG. */
int spare_pipeline_status(const vf_config *config, int64_t pipeline_id, char *status, size_t size,
                          vf_error *err) __attribute__((warn_unused_result));

#endif
