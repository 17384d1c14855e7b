/* Bulk redelivery over HTTP (docs/api.md "Redelivering in bulk"), what
 * virtflowctl deliveries redeliver does:
 *
 *   POST /v1/deliveries/redeliver           {"receiver", "since", "status",   admin
 *                                            "rate_per_s"}; Idempotency-Key
 *                                            202 the redelivery, Location
 *   GET  /v1/deliveries/redeliveries/{id}   its progress                      read
 *
 * One definition for both (delivery_view_redeliver): the deliveries to the
 * receiver created since a time whose last attempt failed go back to
 * pending, the relay sends them at the receiver's pace (or at rate_per_s).
 * The same Idempotency-Key from the same key holder is the same
 * redelivery: nothing is reset twice, and the answer is its progress. */
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "api_routes.h"
#include "delivery_view.h"
#include "ids.h"
#include "json_util.h"
#include "log.h"
#include "problem.h"
#include "store_receivers.h"

#define REDELIVER_PATH "/v1/deliveries/redeliver"
#define REDELIVERY_PREFIX "/v1/deliveries/redeliveries/"

static void store_trouble(const char *what, const vf_error *err, httpd_response *resp)
{
    log_error("%s: store: %s", what, err->text);
    problem_reply(resp, err->code == VF_EUNAVAILABLE ? 503 : 500,
                  "the store is unavailable; try again");
}

/* The body's fields into *ask (borrowed from body): 0, or -1 answered 400. */
static int read_ask(const json_t *body, delivery_view_redeliver_ask *ask, httpd_response *resp)
{
    static const char *const allowed[] = {"receiver", "since", "status", "rate_per_s", NULL};
    vf_error err;
    vf_error_init(&err);
    const json_t *rate = json_object_get(body, "rate_per_s");
    const json_t *status = json_object_get(body, "status");
    if (json_util_only_keys(body, allowed, &err) < 0) {
        problem_reply(resp, 400, err.text);
        return -1;
    }
    ask->receiver = json_string_value(json_object_get(body, "receiver"));
    ask->since = json_string_value(json_object_get(body, "since"));
    ask->status = json_string_value(status);
    if (!ask->receiver || !ask->since || (status && !json_is_null(status) && !ask->status)) {
        problem_reply(resp, 400, "receiver and since are required strings; status a string");
        return -1;
    }
    if (rate && !json_is_null(rate)) {
        if (!json_is_number(rate) || !(json_number_value(rate) > 0)) {
            problem_reply(resp, 400, "rate_per_s: expected a number above 0");
            return -1;
        }
        ask->rate_per_s = json_number_value(rate);
    }
    return 0;
}

static void reply_redelivery(httpd_response *resp, int status, const store_redelivery *r)
{
    char href[sizeof REDELIVERY_PREFIX + sizeof r->id];
    snprintf(href, sizeof href, "%s%s", REDELIVERY_PREFIX, r->id);
    json_t *answer = delivery_view_redelivery_json(r);
    if (answer)
        json_object_set_new(answer, "href", json_string(href));
    api_reply_json(resp, status, answer);
    if (status == 202)
        snprintf(resp->location, sizeof resp->location, "%s", href);
}

static void redeliver(api *a, const httpd_request *req, const api_caller *caller,
                      httpd_response *resp)
{
    const char *key = httpd_header(req, "Idempotency-Key");
    if (key && !api_idempotency_key_is_valid(key)) {
        problem_reply(resp, 400, "Idempotency-Key: expected 1 to 255 printable ASCII characters");
        return;
    }
    json_t *body = api_json_body(req, resp);
    if (!body)
        return;
    char id[IDS_LEN];
    delivery_view_redeliver_ask ask = {.requested_by =
                                           caller->name ? caller->name : "virtflow-api"};
    if (key) {
        api_idempotency_id(a->idempotency, 0, "rdl", caller->name, caller->digest, key, id,
                           sizeof id);
        ask.id = id;
    }
    if (read_ask(body, &ask, resp) < 0) {
        json_decref(body);
        return;
    }
    store_redelivery r;
    vf_error err;
    vf_error_init(&err);
    int rc = delivery_view_redeliver(a->store, a->config, &ask, &r, &err);
    json_decref(body);
    if (rc < 0 && err.code == VF_EINVAL)
        problem_reply(resp, 400, err.text);
    else if (rc < 0)
        store_trouble("POST " REDELIVER_PATH, &err, resp);
    else if (rc == 2)
        problem_reply(resp, 409,
                      "this Idempotency-Key stands for a redelivery with other filters; use a "
                      "new key");
    else
        reply_redelivery(resp, 202, &r);
}

static void progress(api *a, const char *id, httpd_response *resp)
{
    store_redelivery r;
    vf_error err;
    vf_error_init(&err);
    int rc = strlen(id) < IDS_LEN ? store_redelivery_get(a->store, id, &r, &err) : 1;
    if (rc < 0) {
        store_trouble("GET " REDELIVERY_PREFIX "{id}", &err, resp);
    } else if (rc == 1) {
        char detail[IDS_LEN + 32];
        snprintf(detail, sizeof detail, "no redelivery %.*s", IDS_LEN, id);
        problem_reply(resp, 404, detail);
    } else {
        reply_redelivery(resp, 200, &r);
    }
}

void api_route_redeliver(api *a, const api_call *call, httpd_response *resp)
{
    redeliver(a, call->req, call->caller, resp);
}

void api_route_redelivery(api *a, const api_call *call, httpd_response *resp)
{
    progress(a, call->param, resp);
}
