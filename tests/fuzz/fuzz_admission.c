/* fuzz_admission: a POST /v1/admission/proxmoxmachine body (an
 * AdmissionReview, from the Kubernetes API server or whoever holds a
 * submit key) through admission_review_parse (the machine it names, for a
 * DELETE too) and, for a machine to place,
 * the task.schedule body made of it (which then goes through the worker's
 * own parser, as a submit would), the placing patch and the answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission_review.h"
#include "fuzz_common.h"
#include "request.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    admission_review review;
    char why[256] = "";
    if (admission_review_parse((const char *)data, size, &review, why, sizeof why) < 0) {
        if (strlen(why) == 0) /* a refusal always says why (the 400's detail) */
            abort();
        return 0;
    }
    if (!review.uid || !review.uid[0])
        abort();
    json_t *answer = NULL;
    /* A machine named is "namespace/name", within the table's column. */
    if (review.machine[0] &&
        (!strchr(review.machine, '/') || strlen(review.machine) >= STORE_MACHINE_LEN))
        abort();
    if (review.action != ADMISSION_PLACE) {
        answer = admission_review_answer(review.uid, true, NULL, NULL);
    } else {
        if (strncmp(review.task_id, ADMISSION_REVIEW_TASK_PREFIX,
                    sizeof ADMISSION_REVIEW_TASK_PREFIX - 1) != 0)
            abort();
        json_t *body = admission_review_task_body(review.object, why, sizeof why);
        if (body) {
            json_object_set_new(body, "task_id", json_string(review.task_id));
            sched_request req;
            sched_request_init(&req);
            vf_error err;
            vf_error_init(&err);
            (void)sched_request_parse(body, &req, &err);
            json_decref(body);
            answer = admission_review_answer(
                review.uid, true, admission_review_patch(review.object, "bm-001", 120), NULL);
        } else {
            answer = admission_review_answer(review.uid, false, NULL, why);
        }
    }
    if (answer) {
        char *text = json_dumps(answer, JSON_COMPACT);
        free(text);
        json_decref(answer);
    }
    admission_review_close(&review);
    return 0;
}
