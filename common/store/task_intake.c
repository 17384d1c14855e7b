/* task_intake: recording a task before its publish, and taking it back. */
#include "task_intake.h"

#include <jansson.h>
#include <stdlib.h>

#include "json_util.h"
#include "store_tasks.h"

int task_intake_record_new(store *s, const char *task_id, const char *request_text, const char *via,
                           const char *submitter, const char *now, vf_error *err)
{
    return task_intake_record_as(s, "schedule", task_id, request_text, via, submitter, now, err);
}

int task_intake_record_as(store *s, const char *kind, const char *task_id, const char *request_text,
                          const char *via, const char *submitter, const char *now, vf_error *err)
{
    store_task_fields fields = {.id = task_id,
                                .kind = kind,
                                .status = "queued",
                                .request = request_text,
                                .vmid = -1,
                                .at = now};
    int inserted = store_task_insert_new(s, &fields, err);
    if (inserted <= 0)
        return inserted;
    json_t *detail = json_pack("{s:s, s:s*}", "via", via, "submitter", submitter);
    char *detail_text = detail ? json_util_dump(detail) : NULL;
    json_decref(detail);
    if (!detail_text) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    int rc = store_task_event_add(s, task_id, now, "queued", detail_text, err);
    free(detail_text);
    return rc < 0 ? -1 : 1;
}

int task_intake_record(store *s, const char *task_id, const char *request_text, const char *via,
                       const char *submitter, vf_error *err)
{
    char now[STORE_TIME_SIZE];
    store_now(now);
    if (store_begin(s, err) < 0)
        return -1;
    int rc = task_intake_record_new(s, task_id, request_text, via, submitter, now, err);
    if (rc == 1 && store_commit(s, err) == 0)
        return 0;
    (void)store_rollback(s, NULL);
    return rc == 0 ? 1 : -1;
}

int task_intake_withdraw(store *s, const char *task_id, vf_error *err)
{
    int rc = store_begin(s, err);
    if (rc == 0)
        rc = store_task_withdraw(s, task_id, err);
    if (rc >= 0 && store_commit(s, err) < 0)
        rc = -1;
    if (rc < 0)
        (void)store_rollback(s, NULL);
    return rc;
}

char *task_intake_release_body(const char *task_id)
{
    json_t *body = json_pack("{s:s}", "task_id", task_id);
    char *text = body ? json_util_dump(body) : NULL;
    json_decref(body);
    return text;
}
