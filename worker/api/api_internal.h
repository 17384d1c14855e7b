/* What api.c shares with the route files beside it. */
#ifndef VF_API_INTERNAL_H
#define VF_API_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "amqp_link.h"
#include "api.h"
#include "api_metrics.h"
#include "store.h"
#include "store_tasks.h"

struct api {
    const vf_config *config;
    store *store;
    amqp_link *link;      /* connected on demand */
    int64_t link_used_us; /* monotonic: the link's last connect or confirmed round trip */
    api_metrics *metrics;
    /* The outcome of the publish in flight (one at a time: one thread). */
    bool confirm_done, confirm_ok;
    char confirm_reason[256];
};

/* POST /schedule. */
void api_schedule(api *a, const httpd_request *req, httpd_response *resp);

/* GET /result/{task_id}; `task_id` is the path's last segment. */
void api_result(api *a, const char *task_id, httpd_response *resp);

/* The prototype's answer for a recorded task: {"status":"processing"},
 * {"status":"completed","result":{"name","ip",...}} or
 * {"status":"failed","error":...}, with virtflow's own fields (task_id,
 * state, reason, vmid, pool, score, attempts) beside them. Owned; NULL on
 * out of memory. */
json_t *api_result_json(const store_task *task);

/* Publish `body` as task.schedule with message_id `task_id` and wait for the
 * broker's confirm, reconnecting once if the link was down or broke.
 * Returns 0 confirmed, or -1 with err: VF_EUNAVAILABLE when the broker is
 * unreachable, refused the message (nack, returned) or did not confirm in
 * time. */
int api_publish(api *a, const char *task_id, const char *body, vf_error *err)
    __attribute__((warn_unused_result));

/* Reply 200 with `value` as JSON; takes the reference. */
void api_reply_json(httpd_response *resp, int status, json_t *value);

#endif
