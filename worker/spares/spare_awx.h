/* spare_awx: the AWX / Ansible Tower provisioner, for spare_provision.
 *
 *   launch  POST {url}/api/v2/job_templates/{job_template}/launch/
 *           {"extra_vars": {"vm_name", "host", "host_ip", "vmid", "cpu",
 *           "memory", "disk", "cluster", "upgrade_id", "action",
 *           "idempotency_key"}}; 201 carries the job's "job" (and "id")
 *   follow  GET {url}/api/v2/jobs/{id}/ -> "status": new, pending, waiting,
 *           running, successful, failed, error, canceled
 *
 * Both send `Authorization: Bearer <token>` (an AWX OAuth2 / personal access
 * token). The job template must prompt for variables on launch
 * (ask_variables_on_launch), or AWX drops the extra_vars it was not asked
 * for. The token never reaches an error text. */
#ifndef VF_SPARE_AWX_H
#define VF_SPARE_AWX_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "spare_provision.h"
#include "vf_error.h"

/* Launch the job template with ACTION `action`. Returns 0 with
 * out->pipeline_id the job id and out->pipeline_url its page in the AWX UI,
 * or -1 with err VF_EUNAVAILABLE (HTTP error, unreachable, no job id),
 * VF_ECONFIG, VF_ENOMEM. */
int spare_awx_launch(const vf_config *config, const spare_target *target, const char *action,
                     const char *token, spare_provision_result *out, vf_error *err)
    __attribute__((warn_unused_result));

/* The status of job `job_id` in the spare driver's (GitLab's) words:
 * successful -> success, failed and error -> failed, canceled -> canceled;
 * new, pending, waiting, running are passed as they are (still going).
 * Returns 0 with `status` filled, or -1 with err VF_EUNAVAILABLE. */
int spare_awx_job_status(const vf_config *config, int64_t job_id, const char *token, char *status,
                         size_t size, vf_error *err) __attribute__((warn_unused_result));

#endif
