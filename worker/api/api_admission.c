/* POST /v1/admission/proxmoxmachine: a Kubernetes mutating admission
 * webhook (AdmissionReview admission.k8s.io/v1) for CAPPX's ProxmoxMachine
 * (infrastructure.cluster.x-k8s.io/v1beta1; docs/cappx.md).
 *
 * A machine created without spec.node is placed now through the same path
 * as POST /v1/tasks: its task ("cappx-" + the review's request.uid) is
 * recorded queued and published with a confirm, a worker places and
 * reserves it as any task, and the answer waits (a long poll, at most
 * ADMISSION_WAIT_MS) for the task to end. Completed: allowed, with a JSON
 * patch setting spec.node and spec.vmID. Failed: denied, the message the
 * task's error (the placement's explanation). Still running at the bound:
 * denied, saying so; the API server's retry (same uid) finds the task and
 * its outcome, so a review answered twice places once.
 *
 * A machine that has a node already, another kind, an operation other than
 * CREATE, or a dry run (which must have no side effects) is allowed as it
 * is. A body that is no AdmissionReview is 400. */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "clock.h"
#include "json_util.h"
#include "log.h"
#include "problem.h"
#include "task_view.h"

#define ADMISSION_TASK_PREFIX "cappx-"
/* Below the webhook's default timeoutSeconds (10): an answer, even "still
 * placing", reaches the API server before it gives up. */
#define ADMISSION_WAIT_MS 8000
#define ADMISSION_POLL_MS 250

/* The AdmissionReview answer: allowed (with `patch`, a JSON Patch array,
 * when not NULL; the reference is taken) or denied with `message`. */
static void review_reply(httpd_response *resp, const char *uid, bool allowed, json_t *patch,
                         const char *message)
{
    json_t *response = json_pack("{s:s, s:b}", "uid", uid, "allowed", allowed);
    if (patch) {
        char *text = json_dumps(patch, JSON_COMPACT);
        json_decref(patch);
        size_t len = text ? strlen(text) : 0;
        char *encoded = text ? malloc(4 * ((len + 2) / 3) + 1) : NULL;
        if (!encoded) {
            free(text);
            json_decref(response);
            problem_reply(resp, 500, "out of memory");
            return;
        }
        EVP_EncodeBlock((unsigned char *)encoded, (const unsigned char *)text, (int)len);
        json_object_set_new(response, "patchType", json_string("JSONPatch"));
        json_object_set_new(response, "patch", json_string(encoded));
        free(encoded);
        free(text);
    }
    if (!allowed)
        json_object_set_new(response, "status",
                            json_pack("{s:i, s:s, s:s}", "code", 403, "reason", "Forbidden",
                                      "message", message ? message : "denied"));
    api_reply_json(resp, 200,
                   json_pack("{s:s, s:s, s:o}", "apiVersion", "admission.k8s.io/v1", "kind",
                             "AdmissionReview", "response", response));
}

/* CAPPX's disk size ("50G": a number and K, M, G or T; none is bytes, as
 * Proxmox reads it) in GiB, rounded up; -1 when it is none of these. */
static int64_t disk_gib(const char *size)
{
    char *end = NULL;
    double value = strtod(size, &end);
    if (end == size || value < 0)
        return -1;
    double bytes_per_unit = 1;
    if (*end == 'K')
        bytes_per_unit = 1024.0;
    else if (*end == 'M')
        bytes_per_unit = 1024.0 * 1024;
    else if (*end == 'G')
        bytes_per_unit = 1024.0 * 1024 * 1024;
    else if (*end == 'T')
        bytes_per_unit = 1024.0 * 1024 * 1024 * 1024;
    else if (*end != '\0')
        return -1;
    if (*end && end[1] != '\0')
        return -1;
    double gib = value * bytes_per_unit / (1024.0 * 1024 * 1024);
    if (gib > 1048576)
        return -1;
    int64_t whole = (int64_t)gib;
    return (double)whole < gib ? whole + 1 : whole;
}

/* The task.schedule body for machine `object`: hardware.cpu x sockets vCPUs
 * (CRD defaults: 2 cores, 1 socket), hardware.memory MiB (4096),
 * hardware.disk in GiB ("50G"), the name as vm_name, the annotations as
 * they are (the qemu-scheduler keys are read, the rest ignored). NULL with
 * `why` filled when the object cannot be one. */
static json_t *task_body(json_t *object, char *why, size_t size)
{
    json_t *metadata = json_object_get(object, "metadata");
    json_t *hardware = json_object_get(json_object_get(object, "spec"), "hardware");
    json_t *cpu = json_object_get(hardware, "cpu");
    json_t *sockets = json_object_get(hardware, "sockets");
    json_t *memory = json_object_get(hardware, "memory");
    json_t *disk = json_object_get(hardware, "disk");
    json_int_t cores = json_is_integer(cpu) ? json_integer_value(cpu) : 2;
    json_int_t socket_count = json_is_integer(sockets) ? json_integer_value(sockets) : 1;
    json_int_t mib = json_is_integer(memory) ? json_integer_value(memory) : 4096;
    int64_t gib = json_is_string(disk) ? disk_gib(json_string_value(disk)) : 50;
    if ((cpu && !json_is_integer(cpu)) || (sockets && !json_is_integer(sockets)) ||
        (memory && !json_is_integer(memory)) || cores < 1 || socket_count < 1 ||
        cores > 1024 / socket_count) {
        snprintf(why, size,
                 "spec.hardware: cpu and sockets must be integers >= 1 (at most 1024 "
                 "vCPUs), memory an integer");
        return NULL;
    }
    if ((disk && !json_is_string(disk)) || gib < 0) {
        snprintf(why, size, "spec.hardware.disk: expected a size like 50G");
        return NULL;
    }
    json_t *body = json_pack("{s:I, s:I, s:I}", "requested_cpu", cores * socket_count,
                             "requested_memory", mib, "requested_disk", (json_int_t)gib);
    const char *name = json_string_value(json_object_get(metadata, "name"));
    if (body && name && name[0] && strlen(name) <= 63)
        json_object_set_new(body, "vm_name", json_string(name));
    json_t *annotations = json_object_get(metadata, "annotations");
    if (body && json_is_object(annotations)) {
        json_t *strings = json_object();
        const char *key;
        json_t *value;
        json_object_foreach(annotations, key, value)
        {
            if (json_is_string(value))
                json_object_set(strings, key, value);
        }
        json_object_set_new(body, "annotations", strings);
    }
    if (!body)
        snprintf(why, size, "out of memory");
    return body;
}

/* The patch for a placed machine: spec.node and spec.vmID. */
static json_t *placement_patch(json_t *object, const store_task *task)
{
    json_t *patch = json_array();
    if (!json_is_object(json_object_get(object, "spec")))
        json_array_append_new(patch,
                              json_pack("{s:s, s:s, s:{}}", "op", "add", "path", "/spec", "value"));
    json_array_append_new(patch, json_pack("{s:s, s:s, s:s}", "op", "add", "path", "/spec/node",
                                           "value", task->node ? task->node : ""));
    if (task->vmid >= 0)
        json_array_append_new(patch, json_pack("{s:s, s:s, s:I}", "op", "add", "path", "/spec/vmID",
                                               "value", (json_int_t)task->vmid));
    return patch;
}

/* Answer from the task as it ended. */
static void answer_from_task(httpd_response *resp, const char *uid, json_t *object,
                             const store_task *task)
{
    char message[1024];
    if (strcmp(task->status, "completed") == 0 && task->node) {
        log_info("task %s: admission: ProxmoxMachine placed on %s (vmid %lld)", task->id,
                 task->node, (long long)task->vmid);
        review_reply(resp, uid, true, placement_patch(object, task), NULL);
        return;
    }
    if (strcmp(task->status, "failed") == 0)
        snprintf(message, sizeof message,
                 "virtflow could not place this machine (task %s, %s): %.900s", task->id,
                 task->reason ? task->reason : "failed",
                 task->error ? task->error : "no reason recorded");
    else
        snprintf(message, sizeof message,
                 "virtflow task %s ended %s: its placement is no longer held", task->id,
                 task->status);
    log_info("task %s: admission: denied: %s", task->id, message);
    review_reply(resp, uid, false, NULL, message);
}

void api_admission(api *a, const httpd_request *req, const api_caller *caller, httpd_response *resp)
{
    json_error_t jerr;
    char detail[VF_ERROR_TEXT + 128];
    json_t *review = NULL;
    store_task task = {0};
    if (req->body_too_large) {
        snprintf(detail, sizeof detail, "the request body is over %d bytes", HTTPD_MAX_BODY);
        problem_reply(resp, 413, detail);
        goto out;
    }
    review = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    json_t *request = json_object_get(review, "request");
    const char *api_version = json_string_value(json_object_get(review, "apiVersion"));
    const char *kind = json_string_value(json_object_get(review, "kind"));
    const char *uid = json_string_value(json_object_get(request, "uid"));
    json_t *object = json_object_get(request, "object");
    if (!review || !api_version || strcmp(api_version, "admission.k8s.io/v1") != 0 || !kind ||
        strcmp(kind, "AdmissionReview") != 0 || !json_is_object(request) || !uid || !uid[0]) {
        problem_reply(resp, 400,
                      "expected an AdmissionReview (apiVersion admission.k8s.io/v1) with "
                      "request.uid");
        goto out;
    }
    const char *operation = json_string_value(json_object_get(request, "operation"));
    const char *object_kind = json_string_value(json_object_get(object, "kind"));
    const char *node = json_string_value(json_object_get(json_object_get(object, "spec"), "node"));
    if (!json_is_object(object) || !operation || strcmp(operation, "CREATE") != 0 || !object_kind ||
        strcmp(object_kind, "ProxmoxMachine") != 0 || (node && node[0]) ||
        json_is_true(json_object_get(request, "dryRun"))) {
        review_reply(resp, uid, true, NULL, NULL);
        goto out;
    }
    char task_id[REQUEST_TASK_ID_LEN];
    snprintf(task_id, sizeof task_id, "%s%s", ADMISSION_TASK_PREFIX, uid);
    if (strlen(uid) > sizeof task_id - sizeof ADMISSION_TASK_PREFIX ||
        !api_task_id_is_valid(task_id)) {
        problem_reply(resp, 400, "request.uid: expected a UID (letters, digits and -)");
        goto out;
    }

    vf_error err;
    vf_error_init(&err);
    int found = store_task_get(a->store, task_id, &task, &err);
    if (found < 0) {
        log_error("task %s: admission: store: %s", task_id, err.text);
        problem_reply(resp, err.code == VF_EUNAVAILABLE ? 503 : 500,
                      "the store is unavailable; try again");
        goto out;
    }
    if (found == 1) {
        /* Not placed yet: submit as POST /v1/tasks would, with the
         * machine's request as the body (same checks, record, publish). */
        char why[256];
        json_t *body = task_body(object, why, sizeof why);
        if (!body) {
            review_reply(resp, uid, false, NULL, why);
            goto out;
        }
        json_object_set_new(body, "task_id", json_string(task_id));
        char *text = json_util_dump(body);
        json_decref(body);
        if (!text) {
            problem_reply(resp, 500, "out of memory");
            goto out;
        }
        httpd_request submit = *req;
        submit.body = text;
        submit.body_len = strlen(text);
        char submitted[REQUEST_TASK_ID_LEN];
        int rc = api_submit(a, &submit, caller->name ? caller->name : "cappx", NULL, true,
                            submitted, resp);
        free(text);
        if (rc < 0) {
            /* A request the worker would refuse is the machine's fault: a
             * denial the user reads in kubectl; the rest (503) the API
             * server's failurePolicy decides. */
            if (resp->status == 400 || resp->status == 409) {
                json_t *problem = resp->body ? json_loads(resp->body, 0, NULL) : NULL;
                const char *said = json_string_value(json_object_get(problem, "detail"));
                char message[512];
                snprintf(message, sizeof message, "virtflow refused this machine's request: %s",
                         said ? said : "invalid");
                json_decref(problem);
                free(resp->body);
                resp->body = NULL;
                resp->body_len = 0;
                review_reply(resp, uid, false, NULL, message);
            }
            goto out;
        }
        const char *machine =
            json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
        log_info("task %s: admission: ProxmoxMachine %s submitted", task_id,
                 machine ? machine : "(unnamed)");
        found = store_task_get(a->store, task_id, &task, &err);
        if (found != 0) {
            problem_reply(resp, 503, "the store is unavailable; try again");
            goto out;
        }
    }
    if (task_view_is_final(task.status)) {
        answer_from_task(resp, uid, object, &task);
        goto out;
    }
    int64_t left_ms = req->started_ms + ADMISSION_WAIT_MS - clock_mono_us() / 1000;
    if (left_ms > 0 && req->can_wait) {
        resp->wait_ms = (int)(left_ms < ADMISSION_POLL_MS ? left_ms : ADMISSION_POLL_MS);
        goto out;
    }
    snprintf(detail, sizeof detail,
             "virtflow is still placing this machine (task %s, %s); the API server's retry "
             "will have its answer",
             task_id, task.status);
    review_reply(resp, uid, false, NULL, detail);
out:
    store_task_clear(&task);
    json_decref(review);
}
