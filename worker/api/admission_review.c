/* admission_review: the AdmissionReview as data (admission_review.h). */
#include "admission_review.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"

/* A Kubernetes name (a DNS subdomain: lower-case letters, digits, '-' and
 * '.', 1..max characters). */
static bool is_name(const char *text, size_t max)
{
    size_t len = text ? strlen(text) : 0;
    return len > 0 && len <= max && strspn(text, "abcdefghijklmnopqrstuvwxyz0123456789-.") == len;
}

/* The machine "namespace/name" and its owner's uid, from the request (the
 * API server fills namespace and name) or the object's metadata; left ""
 * when either is no name (a CREATE by generateName has none yet). */
static void machine_of(const json_t *request, const json_t *object, admission_review *review)
{
    const json_t *metadata = json_object_get(object, "metadata");
    const char *ns = json_string_value(json_object_get(request, "namespace"));
    const char *name = json_string_value(json_object_get(request, "name"));
    if (!is_name(ns, 63))
        ns = json_string_value(json_object_get(metadata, "namespace"));
    if (!is_name(name, 253))
        name = json_string_value(json_object_get(metadata, "name"));
    if (is_name(ns, 63) && is_name(name, 253))
        snprintf(review->machine, sizeof review->machine, "%s/%s", ns, name);
    const json_t *owners = json_object_get(metadata, "ownerReferences");
    const char *owner = json_string_value(json_object_get(json_array_get(owners, 0), "uid"));
    if (owner && strlen(owner) < sizeof review->owner)
        snprintf(review->owner, sizeof review->owner, "%s", owner);
}

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
    bool create = operation && strcmp(operation, "CREATE") == 0;
    bool delete = operation && strcmp(operation, "DELETE") == 0;
    if (delete)
        object = json_object_get(request, "oldObject");
    const char *object_kind = json_string_value(json_object_get(object, "kind"));
    const char *node = json_string_value(json_object_get(json_object_get(object, "spec"), "node"));
    bool machine = json_is_object(object) && object_kind &&
                   strcmp(object_kind, "ProxmoxMachine") == 0 &&
                   !json_is_true(json_object_get(request, "dryRun"));
    review->document = document;
    review->uid = uid;
    review->object = object;
    review->action = machine && create && !(node && node[0]) ? ADMISSION_PLACE
                     : machine && delete                     ? ADMISSION_RELEASE
                                                             : ADMISSION_ALLOW;
    if (review->action == ADMISSION_ALLOW)
        return 0;
    machine_of(request, object, review);
    if (review->action == ADMISSION_RELEASE)
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

/* An annotation's whole number (1..1000) into `body`'s object `section`
 * under `key`; absent: nothing. Returns 0, or -1 with `why` filled. */
static int annotation_number(const json_t *annotations, const char *annotation, json_t *section,
                             const char *key, char *why, size_t size)
{
    const char *text = json_string_value(json_object_get(annotations, annotation));
    if (!text)
        return 0;
    char *end = NULL;
    long value = strtol(text, &end, 10);
    if (end == text || *end || value < 1 || value > 1000) {
        snprintf(why, size,
                 "metadata.annotations.%s: expected a whole number 1..1000, got \"%.32s\"",
                 annotation, text);
        return -1;
    }
    json_object_set_new(section, key, json_integer(value));
    return 0;
}

/* The group a spread machine is a member of when its annotations name
 * none: its cluster's control plane or workers ("NAMESPACE.CLUSTER-control-
 * plane", "NAMESPACE.CLUSTER-DEPLOYMENT"), from the labels Cluster API puts
 * on every machine. NULL (why filled) when those are missing or too long. */
static json_t *default_group(const json_t *metadata, char *why, size_t size)
{
    const json_t *labels = json_object_get(metadata, "labels");
    const char *ns = json_string_value(json_object_get(metadata, "namespace"));
    const char *cluster = json_string_value(json_object_get(labels, ADMISSION_LABEL_CLUSTER));
    const char *deployment = json_string_value(json_object_get(labels, ADMISSION_LABEL_DEPLOYMENT));
    bool control_plane = json_object_get(labels, ADMISSION_LABEL_CONTROL_PLANE) != NULL;
    char name[REQUEST_GROUP_NAME_LEN + 1];
    int n = snprintf(name, sizeof name, "%s.%s-%s", ns ? ns : "default", cluster ? cluster : "",
                     control_plane ? "control-plane"
                     : deployment  ? deployment
                                   : "workers");
    if (!cluster || n < 0 || (size_t)n >= REQUEST_GROUP_NAME_LEN) {
        snprintf(why, size,
                 "metadata.annotations.%s: a spread needs a group: name one in %s (the machine "
                 "has no label %s, or its namespace and names make a group name over 63 "
                 "characters)",
                 ADMISSION_SPREAD_KEY, ADMISSION_GROUP_NAME, ADMISSION_LABEL_CLUSTER);
        return NULL;
    }
    return json_pack("{s:s}", "name", name);
}

/* The spread and group a machine's annotations ask (docs/cappx.md), into
 * `body`. Returns 0 (nothing asked, or set), -1 with `why` filled. */
static int machine_spread(const json_t *metadata, json_t *body, char *why, size_t size)
{
    const json_t *annotations = json_object_get(metadata, "annotations");
    const char *key = json_string_value(json_object_get(annotations, ADMISSION_SPREAD_KEY));
    const char *group = json_string_value(json_object_get(annotations, ADMISSION_GROUP_NAME));
    const char *policy = json_string_value(json_object_get(annotations, ADMISSION_GROUP_POLICY));
    const char *when = json_string_value(json_object_get(annotations, ADMISSION_SPREAD_WHEN));
    json_t *spread = key ? json_pack("{s:s}", "key", key) : NULL;
    json_t *membership = group ? json_pack("{s:s}", "name", group) : NULL;
    int rc = -1;
    if ((key && !spread) || (group && !membership)) {
        snprintf(why, size, "out of memory");
        goto out;
    }
    if (spread && (annotation_number(annotations, ADMISSION_SPREAD_MAX_SKEW, spread, "max_skew",
                                     why, size) < 0 ||
                   annotation_number(annotations, ADMISSION_SPREAD_MIN_DOMAINS, spread,
                                     "min_domains", why, size) < 0))
        goto out;
    if (spread && when)
        json_object_set_new(spread, "when_unsatisfiable", json_string(when));
    if (spread && !membership && !(membership = default_group(metadata, why, size)))
        goto out;
    if (membership && policy)
        json_object_set_new(membership, "policy", json_string(policy));
    if (spread)
        json_object_set(body, "spread", spread);
    if (membership)
        json_object_set(body, "group", membership);
    rc = 0;
out:
    json_decref(spread);
    json_decref(membership);
    return rc;
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
    if (body && machine_spread(metadata, body, why, size) < 0) {
        json_decref(body);
        return NULL;
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
