/* admission_review: the AdmissionReview (admission.k8s.io/v1) of CAPPX's
 * ProxmoxMachine as data, without I/O: reading the review the API server
 * sends, the task.schedule body for a machine, the JSON Patch placing it,
 * and the review answered. api_admission.c does the store and broker part;
 * tests/fuzz/fuzz_admission.c feeds this one untrusted bodies. */
#ifndef VF_ADMISSION_REVIEW_H
#define VF_ADMISSION_REVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "request.h"
#include "store_admission.h"

#define ADMISSION_REVIEW_TASK_PREFIX "cappx-"

/* A machine's annotations asking a topology spread and a group
 * (docs/cappx.md): task.schedule's `spread` and `group` fields. */
#define ADMISSION_SPREAD_KEY "spread.virtflow.io/key"
#define ADMISSION_SPREAD_MAX_SKEW "spread.virtflow.io/max-skew"
#define ADMISSION_SPREAD_WHEN "spread.virtflow.io/when-unsatisfiable"
#define ADMISSION_SPREAD_MIN_DOMAINS "spread.virtflow.io/min-domains"
#define ADMISSION_GROUP_NAME "group.virtflow.io/name"
#define ADMISSION_GROUP_POLICY "group.virtflow.io/policy"
/* The labels Cluster API gives every machine, which name a spread
 * machine's default group. */
#define ADMISSION_LABEL_CLUSTER "cluster.x-k8s.io/cluster-name"
#define ADMISSION_LABEL_CONTROL_PLANE "cluster.x-k8s.io/control-plane"
#define ADMISSION_LABEL_DEPLOYMENT "cluster.x-k8s.io/deployment-name"

/* What a review asks of virtflow. */
typedef enum {
    ADMISSION_ALLOW,   /* nothing: allowed as it is */
    ADMISSION_PLACE,   /* a ProxmoxMachine CREATE without spec.node, not a dry run */
    ADMISSION_RELEASE, /* a ProxmoxMachine DELETE, not a dry run: its placement goes */
} admission_action;

/* A review read by admission_review_parse. */
typedef struct admission_review {
    json_t *document; /* owned: the whole review */
    const char *uid;  /* request.uid, borrowed from document */
    /* request.object (CREATE) or request.oldObject (DELETE), borrowed from
     * document; may be NULL */
    json_t *object;
    admission_action action;
    char task_id[REQUEST_TASK_ID_LEN]; /* "cappx-" + uid, when placing */
    /* "namespace/name" when placing or releasing and the review names the
     * machine (a CREATE by generateName may not: then ""), and the uid of
     * its first ownerReference ("" none). */
    char machine[STORE_MACHINE_LEN];
    char owner[STORE_OWNER_LEN];
} admission_review;

/* Read `len` bytes of body into *review (which needs no init). -1 with
 * `why` filled (a 400's detail) when the body is no AdmissionReview with a
 * request.uid, or when a review to place has a uid that makes no task id;
 * *review then holds nothing to close (closing it is harmless). The machine
 * is request.namespace and request.name (or the object's metadata), when
 * both are Kubernetes names. */
int admission_review_parse(const char *body, size_t len, admission_review *review, char *why,
                           size_t why_size) __attribute__((warn_unused_result));

/* Release what admission_review_parse kept; a zeroed review is a no-op. */
void admission_review_close(admission_review *review);

/* The task.schedule body for machine `object` (owned), or NULL with `why`
 * filled when its spec.hardware cannot be one: hardware.cpu x sockets vCPUs
 * (CRD defaults: 2 cores, 1 socket), hardware.memory MiB (4096),
 * hardware.disk in GiB ("50G", default 50), the name as vm_name, the string
 * annotations as they are; and a `spread` and `group` from the
 * ADMISSION_SPREAD_* and ADMISSION_GROUP_* annotations (numbers checked
 * here, the rest by the request's parser), the group, when a spread names
 * none, "NAMESPACE.CLUSTER-control-plane" or "NAMESPACE.CLUSTER-DEPLOYMENT"
 * (-workers without a deployment) from the machine's Cluster API labels. */
json_t *admission_review_task_body(json_t *object, char *why, size_t why_size);

/* The JSON Patch (owned) placing `object` on `node` with `vmid` (< 0: none):
 * /spec (when the object has none), /spec/node, /spec/vmID. */
json_t *admission_review_patch(json_t *object, const char *node, int64_t vmid);

/* The answering AdmissionReview (owned; NULL when out of memory): allowed
 * (with `patch`, base64 of its compact JSON, when not NULL; the reference is
 * taken either way) or denied with status 403 and `message`. */
json_t *admission_review_answer(const char *uid, bool allowed, json_t *patch, const char *message);

#endif
