#include "spare_awx.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "spare_status.h"

#define AUTH_MAX 4200

/* The base URL without trailing slashes: its length. */
static int base_length(const char *url)
{
    size_t base = strlen(url);
    while (base > 0 && url[base - 1] == '/')
        base--;
    return (int)base;
}

int spare_awx_launch(const vf_config *config, const spare_target *t, const char *action,
                     const char *token, spare_provision_result *out, vf_error *err)
{
    const char *base = config->spare.provisioner.url;
    if (!base || config->spare.provisioner.job_template <= 0) {
        vf_error_set(err, VF_ECONFIG, "spare.provisioner: awx needs url and job_template");
        return -1;
    }
    char url[2048];
    snprintf(url, sizeof url, "%.*s/api/v2/job_templates/%lld/launch/", base_length(base), base,
             (long long)config->spare.provisioner.job_template);
    json_t *body =
        json_pack("{s:{s:s, s:s, s:s, s:I, s:f, s:I, s:I, s:s, s:s, s:s, s:s}}", "extra_vars",
                  "vm_name", t->name, "host", t->host, "host_ip", t->host_ip ? t->host_ip : "",
                  "vmid", (json_int_t)t->vmid, "cpu", t->cpu, "memory", (json_int_t)t->memory,
                  "disk", (json_int_t)t->disk, "cluster", t->cluster ? t->cluster : "",
                  "upgrade_id", t->upgrade_id ? t->upgrade_id : "", "action", action,
                  "idempotency_key", t->idempotency_key ? t->idempotency_key : "");
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    char authorization[AUTH_MAX];
    snprintf(authorization, sizeof authorization, "Authorization: Bearer %s", token);
    const char *headers[] = {"Content-Type: application/json", "Accept: application/json",
                             authorization};
    http_request req = {.url = url,
                        .headers = headers,
                        .n_headers = 3,
                        .timeout_s = config->spare.provisioner.timeout_s};
    http_response resp;
    int rc = http_send(&req, "POST", text, &resp, err);
    memset(authorization, 0, sizeof authorization);
    free(text);
    if (rc < 0)
        return -1;
    rc = -1;
    if (resp.status != 201 && resp.status != 200) {
        /* AWX explains a refusal in {"detail": ...} or per field
         * ({"variables_needed_to_start": [...]}); quote a little of it. */
        vf_error_set(err, VF_EUNAVAILABLE, "awx job template %lld launch answered HTTP %ld: %.160s",
                     (long long)config->spare.provisioner.job_template, resp.status,
                     resp.body ? resp.body : "");
        goto out;
    }
    json_t *answer = json_loadb(resp.body, resp.body_len, 0, NULL);
    json_t *id = json_object_get(answer, "job");
    if (!json_is_integer(id))
        id = json_object_get(answer, "id");
    if (!json_is_integer(id) || json_integer_value(id) <= 0) {
        vf_error_set(err, VF_EUNAVAILABLE,
                     "awx job template %lld launch answered HTTP %ld without a job id",
                     (long long)config->spare.provisioner.job_template, resp.status);
    } else {
        out->pipeline_id = (int64_t)json_integer_value(id);
        snprintf(out->pipeline_url, sizeof out->pipeline_url, "%.*s/#/jobs/playbook/%lld",
                 base_length(base), base, (long long)out->pipeline_id);
        rc = 0;
    }
    json_decref(answer);
out:
    http_response_close(&resp);
    return rc;
}

/* AWX's job states in the words the spare driver follows GitLab's with. */
static const char *driver_status(const char *awx)
{
    if (strcmp(awx, "successful") == 0)
        return "success";
    if (strcmp(awx, "failed") == 0 || strcmp(awx, "error") == 0)
        return "failed";
    return awx; /* canceled; new, pending, waiting, running: still going */
}

int spare_awx_job_status(const vf_config *config, int64_t job_id, const char *token, char *status,
                         size_t size, vf_error *err)
{
    const char *base = config->spare.provisioner.url;
    if (!base) {
        vf_error_set(err, VF_ECONFIG, "spare.provisioner: awx needs url");
        return -1;
    }
    char url[2048];
    snprintf(url, sizeof url, "%.*s/api/v2/jobs/%lld/", base_length(base), base, (long long)job_id);
    char authorization[AUTH_MAX];
    snprintf(authorization, sizeof authorization, "Authorization: Bearer %s", token);
    char what[48];
    snprintf(what, sizeof what, "awx job %lld", (long long)job_id);
    spare_status_request req = {
        .url = url,
        .authorization = authorization,
        .what = what,
        .refused = {401, 403},
        .refused_hint = " (spare.provisioner.token_file needs a token that may read the job)"};
    char awx_status[256];
    int rc = spare_status_get(&req, awx_status, sizeof awx_status, err);
    memset(authorization, 0, sizeof authorization);
    if (rc == 0)
        snprintf(status, size, "%s", driver_status(awx_status));
    return rc;
}
