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

#define ADMISSION_REVIEW_TASK_PREFIX "cappx-"

/* A review read by admission_review_parse. */
typedef struct admission_review {
    json_t *document; /* owned: the whole review */
    const char *uid;  /* request.uid, borrowed from document */
    json_t *object;   /* request.object, borrowed from document; may be NULL */
    /* True for a ProxmoxMachine CREATE without spec.node and not a dry
     * run: the one case that is placed. False: allowed as it is. */
    bool place;
    char task_id[REQUEST_TASK_ID_LEN]; /* "cappx-" + uid, when place */
} admission_review;

/* Read `len` bytes of body into *review (which needs no init). -1 with
 * `why` filled (a 400's detail) when the body is no AdmissionReview with a
 * request.uid, or when a review to place has a uid that makes no task id;
 * *review then holds nothing to close (closing it is harmless). */
int admission_review_parse(const char *body, size_t len, admission_review *review, char *why,
                           size_t why_size) __attribute__((warn_unused_result));

/* Release what admission_review_parse kept; a zeroed review is a no-op. */
void admission_review_close(admission_review *review);

/* The task.schedule body for machine `object` (owned), or NULL with `why`
 * filled when its spec.hardware cannot be one: hardware.cpu x sockets vCPUs
 * (CRD defaults: 2 cores, 1 socket), hardware.memory MiB (4096),
 * hardware.disk in GiB ("50G", default 50), the name as vm_name, the string
 * annotations as they are. */
json_t *admission_review_task_body(json_t *object, char *why, size_t why_size);

/* The JSON Patch (owned) placing `object` on `node` with `vmid` (< 0: none):
 * /spec (when the object has none), /spec/node, /spec/vmID. */
json_t *admission_review_patch(json_t *object, const char *node, int64_t vmid);

/* The answering AdmissionReview (owned; NULL when out of memory): allowed
 * (with `patch`, base64 of its compact JSON, when not NULL; the reference is
 * taken either way) or denied with status 403 and `message`. */
json_t *admission_review_answer(const char *uid, bool allowed, json_t *patch, const char *message);

#endif
