/* api_publish: see api_publish.h. */
#include "api_publish.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp_link.h"
#include "api_internal.h"
#include "broker_names.h"
#include "clock.h"
#include "log.h"

/* How long a POST waits for the broker's confirm before answering 503. A
 * broker that blocks publishers (memory or disk alarm) never confirms, and
 * an HTTP client should hear so rather than hang. */
#define API_CONFIRM_TIMEOUT_MS 5000

struct api_publisher {
    api_broker *broker;        /* borrowed: the one reconnect schedule of every link */
    amqp_link *link;           /* connected on demand, through `broker` */
    int64_t link_used_us;      /* monotonic: the link's last connect or confirmed round trip */
    amqp_link_confirm confirm; /* the outcome of the publish in flight */
};

api_publisher *api_publisher_new(const vf_config *config, api_broker *broker, vf_error *err)
{
    api_publisher *p = calloc(1, sizeof *p);
    if (!p) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    p->broker = broker;
    if (!(p->link = amqp_link_new(config, "virtflow-api", err))) {
        free(p);
        return NULL;
    }
    amqp_link_set_confirm_callback(p->link, amqp_link_confirm_record, &p->confirm);
    return p;
}

void api_publisher_free(api_publisher *p)
{
    if (!p)
        return;
    amqp_link_free(p->link);
    free(p);
}

int api_publisher_ready(api_publisher *p, vf_error *err)
{
    return api_broker_ready(p->broker, p->link, &p->link_used_us, err);
}

int api_link_ready(api *a, vf_error *err)
{
    return api_publisher_ready(a->publisher, err);
}

/* One publish and its confirm. Returns 0 confirmed, 1 refused by a broker
 * that is still connected (no point retrying), -1 link failure (err). */
static int publish_once(api_publisher *p, const char *routing_key, const amqp_link_message *msg,
                        vf_error *err)
{
    amqp_link_confirm_reset(&p->confirm);
    if (api_publisher_ready(p, err) < 0)
        return -1;
    if (amqp_link_publish(p->link, BROKER_EXCHANGE, routing_key, msg, NULL, err) < 0)
        return -1;
    if (amqp_link_wait_confirms(p->link, API_CONFIRM_TIMEOUT_MS, err) < 0) {
        /* Timed out (flow control) or broke: start the next request afresh
         * rather than with a confirm still owed on this connection. */
        if (amqp_link_is_connected(p->link)) {
            amqp_link_close(p->link);
            return 1;
        }
        return -1;
    }
    p->link_used_us = clock_mono_us(); /* a round trip: the broker heard from us */
    if (!p->confirm.done || !p->confirm.ok) {
        vf_error_set(err, VF_EUNAVAILABLE, "the broker did not accept the message: %s",
                     p->confirm.reason[0] ? p->confirm.reason : "no confirm");
        return amqp_link_is_connected(p->link) ? 1 : -1;
    }
    return 0;
}

int api_publish_to(api *a, const char *routing_key, const char *message_id, const char *task_id,
                   const char *body, vf_error *err)
{
    return api_publisher_send(a->publisher, routing_key, message_id, task_id, body, err);
}

int api_publisher_send(api_publisher *p, const char *routing_key, const char *message_id,
                       const char *task_id, const char *body, vf_error *err)
{
    amqp_link_message msg = {.body = body, .body_len = strlen(body), .message_id = message_id};
    if (api_broker_refuses(p->broker, routing_key)) {
        char why[VF_ERROR_TEXT];
        api_broker_refusal(routing_key, why, sizeof why);
        vf_error_set(err, VF_EUNAVAILABLE, "%s", why);
        return -1;
    }
    int rc = publish_once(p, routing_key, &msg, err);
    if (rc != 0 && api_broker_note_refusal(p->broker, p->link)) {
        /* A second try would be refused too. */
        vf_error_init(err);
        char why[VF_ERROR_TEXT];
        api_broker_refusal(routing_key, why, sizeof why);
        vf_error_set(err, VF_EUNAVAILABLE, "%s", why);
        return -1;
    }
    if (rc < 0 && !api_broker_down(p->broker)) {
        /* An idle link may have been closed by the broker (heartbeats are
         * only sent inside link calls): one fresh connection, one more try.
         * Publishing twice is harmless: the worker knows the task id. */
        log_info("task %s: publish failed (%s); reconnecting once", task_id, err->text);
        vf_error_init(err);
        rc = publish_once(p, routing_key, &msg, err);
    }
    if (rc != 0) {
        if (err->code == VF_OK)
            vf_error_set(err, VF_EUNAVAILABLE, "the broker did not confirm the message");
        err->code = VF_EUNAVAILABLE;
        return -1;
    }
    return 0;
}
