/* api_publish: requests to the broker with a publisher confirm, on the
 * api's one link (api_internal.h). */
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "clock.h"
#include "log.h"

/* How long a POST waits for the broker's confirm before answering 503. A
 * broker that blocks publishers (memory or disk alarm) never confirms, and
 * an HTTP client should hear so rather than hang. */
#define API_CONFIRM_TIMEOUT_MS 5000

int api_link_ready(api *a, vf_error *err)
{
    return api_broker_ready(a->broker, a->link, &a->link_used_us, err);
}

/* One publish and its confirm. Returns 0 confirmed, 1 refused by a broker
 * that is still connected (no point retrying), -1 link failure (err). */
static int publish_once(api *a, const char *routing_key, const amqp_link_message *msg,
                        vf_error *err)
{
    amqp_link_confirm_reset(&a->confirm);
    if (api_link_ready(a, err) < 0)
        return -1;
    if (amqp_link_publish(a->link, BROKER_EXCHANGE, routing_key, msg, NULL, err) < 0)
        return -1;
    if (amqp_link_wait_confirms(a->link, API_CONFIRM_TIMEOUT_MS, err) < 0) {
        /* Timed out (flow control) or broke: start the next request afresh
         * rather than with a confirm still owed on this connection. */
        if (amqp_link_is_connected(a->link)) {
            amqp_link_close(a->link);
            return 1;
        }
        return -1;
    }
    a->link_used_us = clock_mono_us(); /* a round trip: the broker heard from us */
    if (!a->confirm.done || !a->confirm.ok) {
        vf_error_set(err, VF_EUNAVAILABLE, "the broker did not accept the message: %s",
                     a->confirm.reason[0] ? a->confirm.reason : "no confirm");
        return amqp_link_is_connected(a->link) ? 1 : -1;
    }
    return 0;
}

int api_publish_to(api *a, const char *routing_key, const char *message_id, const char *task_id,
                   const char *body, vf_error *err)
{
    amqp_link_message msg = {.body = body, .body_len = strlen(body), .message_id = message_id};
    if (api_broker_refuses(a->broker, routing_key)) {
        char why[VF_ERROR_TEXT];
        api_broker_refusal(routing_key, why, sizeof why);
        vf_error_set(err, VF_EUNAVAILABLE, "%s", why);
        return -1;
    }
    int rc = publish_once(a, routing_key, &msg, err);
    if (rc != 0 && api_broker_note_refusal(a->broker, a->link)) {
        /* A second try would be refused too. */
        vf_error_init(err);
        char why[VF_ERROR_TEXT];
        api_broker_refusal(routing_key, why, sizeof why);
        vf_error_set(err, VF_EUNAVAILABLE, "%s", why);
        return -1;
    }
    if (rc < 0 && !api_broker_down(a->broker)) {
        /* An idle link may have been closed by the broker (heartbeats are
         * only sent inside link calls): one fresh connection, one more try.
         * Publishing twice is harmless: the worker knows the task id. */
        log_info("task %s: publish failed (%s); reconnecting once", task_id, err->text);
        vf_error_init(err);
        rc = publish_once(a, routing_key, &msg, err);
    }
    if (rc != 0) {
        if (err->code == VF_OK)
            vf_error_set(err, VF_EUNAVAILABLE, "the broker did not confirm the message");
        err->code = VF_EUNAVAILABLE;
        return -1;
    }
    return 0;
}
