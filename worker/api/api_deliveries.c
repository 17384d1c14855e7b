/* GET /v1/deliveries (read scope): the relay's webhook deliveries from the
 * store, newest first, with virtflowctl deliveries' filters (status,
 * receiver, event) and a limit; each names its event's type and task. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "delivery_view.h"
#include "log.h"
#include "problem.h"
#include "store_deliveries.h"

#define DELIVERIES_DEFAULT_LIMIT 50
#define DELIVERIES_MAX_LIMIT 500

static int add_row(const store_delivery *d, void *user)
{
    json_t *row = delivery_view_json(d);
    return row ? json_array_append_new(user, row) : -1;
}

static bool known_status(const char *status)
{
    for (const char *const *s = delivery_view_statuses; *s; s++)
        if (strcmp(*s, status) == 0)
            return true;
    return false;
}

void api_deliveries(api *a, const httpd_request *req, httpd_response *resp)
{
    static const char *const known[] = {"status", "receiver", "event", "limit", NULL};
    const char *unknown = httpd_query_unknown(req, known);
    char detail[256];
    if (unknown) {
        snprintf(detail, sizeof detail,
                 "unknown parameter '%.64s' (filters: status, receiver, event, limit)", unknown);
        problem_reply(resp, 400, detail);
        return;
    }
    store_delivery_filter filter = {.status = httpd_query(req, "status"),
                                    .receiver = httpd_query(req, "receiver"),
                                    .event_id = httpd_query(req, "event"),
                                    .limit = DELIVERIES_DEFAULT_LIMIT};
    const char *limit_text = httpd_query(req, "limit");
    if (filter.status && !known_status(filter.status)) {
        problem_reply(resp, 400, "status: expected pending, delivering, delivered or failed");
        return;
    }
    if (limit_text) {
        char *end;
        errno = 0;
        long limit = strtol(limit_text, &end, 10);
        if (errno || end == limit_text || *end || limit < 1 || limit > DELIVERIES_MAX_LIMIT) {
            problem_reply(resp, 400, "limit: expected a number from 1 to 500");
            return;
        }
        filter.limit = (int)limit;
    }
    json_t *rows = json_array();
    vf_error err;
    vf_error_init(&err);
    if (!rows || store_delivery_list(a->store, &filter, add_row, rows, &err) < 0) {
        json_decref(rows);
        if (err.code == VF_OK) {
            problem_reply(resp, 500, "out of memory");
            return;
        }
        log_error("GET /v1/deliveries: store: %s", err.text);
        problem_reply(resp, err.code == VF_EUNAVAILABLE ? 503 : 500,
                      "the store is unavailable; try again");
        return;
    }
    api_reply_json(resp, 200, json_pack("{s:o}", "deliveries", rows));
}
