/* admission_review: the AdmissionReview as data (admission_review.h). */
#include "admission_review.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"

int admission_review_parse(const char *body, size_t len, admission_review *review, char *why,
                           size_t why_size)
{
    memset(review, 0, sizeof *review);
    json_error_t jerr;
    json_t *document = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    json_t *request = json_object_get(document, "request");
    const char *api_version = json_string_value(json_object_get(document, "apiVersion"));
    const char *kind = json_string_value(json_object_get(document, "kind"));
    const char *uid = json_string_value(json_object_get(request, "uid"));
    json_t *object = json_object_get(request, "object");
    if (!document || !api_version || strcmp(api_version, "admission.k8s.io/v1") != 0 || !kind ||
        strcmp(kind, "AdmissionReview") != 0 || !json_is_object(request) || !uid || !uid[0]) {
        snprintf(why, why_size,
                 "expected an AdmissionReview (apiVersion admission.k8s.io/v1) with "
                 "request.uid");
        json_decref(document);
        return -1;
    }
    const char *operation = json_string_value(json_object_get(request, "operation"));
    const char *object_kind = json_string_value(json_object_get(object, "kind"));
    const char *node = json_string_value(json_object_get(json_object_get(object, "spec"), "node"));
    review->document = document;
    review->uid = uid;
    review->object = object;
    review->place = json_is_object(object) && operation && strcmp(operation, "CREATE") == 0 &&
                    object_kind && strcmp(object_kind, "ProxmoxMachine") == 0 &&
                    !(node && node[0]) && !json_is_true(json_object_get(request, "dryRun"));
    if (!review->place)
        return 0;
    snprintf(review->task_id, sizeof review->task_id, "%s%s", ADMISSION_REVIEW_TASK_PREFIX, uid);
    if (strlen(uid) > sizeof review->task_id - sizeof ADMISSION_REVIEW_TASK_PREFIX ||
        !api_task_id_is_valid(review->task_id)) {
        snprintf(why, why_size, "request.uid: expected a UID (letters, digits and -)");
        admission_review_close(review);
        return -1;
    }
    return 0;
}

void admission_review_close(admission_review *review)
{
    json_decref(review->document);
    memset(review, 0, sizeof *review);
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

json_t *admission_review_task_body(json_t *object, char *why, size_t size)
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

json_t *admission_review_patch(json_t *object, const char *node, int64_t vmid)
{
    json_t *patch = json_array();
    if (!json_is_object(json_object_get(object, "spec")))
        json_array_append_new(patch,
                              json_pack("{s:s, s:s, s:{}}", "op", "add", "path", "/spec", "value"));
    json_array_append_new(patch, json_pack("{s:s, s:s, s:s}", "op", "add", "path", "/spec/node",
                                           "value", node ? node : ""));
    if (vmid >= 0)
        json_array_append_new(patch, json_pack("{s:s, s:s, s:I}", "op", "add", "path", "/spec/vmID",
                                               "value", (json_int_t)vmid));
    return patch;
}

json_t *admission_review_answer(const char *uid, bool allowed, json_t *patch, const char *message)
{
    json_t *response = json_pack("{s:s, s:b}", "uid", uid, "allowed", allowed);
    if (response && patch) {
        char *text = json_dumps(patch, JSON_COMPACT);
        size_t len = text ? strlen(text) : 0;
        char *encoded = text ? malloc(4 * ((len + 2) / 3) + 1) : NULL;
        if (!encoded) {
            free(text);
            json_decref(patch);
            json_decref(response);
            return NULL;
        }
        EVP_EncodeBlock((unsigned char *)encoded, (const unsigned char *)text, (int)len);
        json_object_set_new(response, "patchType", json_string("JSONPatch"));
        json_object_set_new(response, "patch", json_string(encoded));
        free(encoded);
        free(text);
    }
    json_decref(patch);
    if (response && !allowed)
        json_object_set_new(response, "status",
                            json_pack("{s:i, s:s, s:s}", "code", 403, "reason", "Forbidden",
                                      "message", message ? message : "denied"));
    if (!response)
        return NULL;
    return json_pack("{s:s, s:s, s:o}", "apiVersion", "admission.k8s.io/v1", "kind",
                     "AdmissionReview", "response", response);
}
