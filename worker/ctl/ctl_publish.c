/* virtflowctl: publish one request, confirmed by the broker, and follow it
 * to its end through a private queue: the worker's reply (submit, release)
 * or the task's events (spare prepare|release). */
#include <stdio.h>
#include <string.h>

#include "amqp_link_admin.h"
#include "clock.h"
#include "ctl.h"

#define CONFIRM_TIMEOUT_MS 30000

void ctl_print_retrying(const json_t *data)
{
    printf("retrying in %lld s (attempt %lld): %s\n",
           (long long)json_integer_value(json_object_get(data, "delay_s")),
           (long long)json_integer_value(json_object_get(data, "next_attempt")),
           ctl_text(json_string_value(json_object_get(data, "error"))));
    fflush(stdout);
}

/* An event about task `id` from a trusted publisher, as {type, data}
 * (owned), or NULL: anyone allowed to publish on virtflow could forge one. */
static json_t *trusted_event(const vf_config *config, const amqp_link_delivery *delivery,
                             const char *id)
{
    if (!delivery->user_id || !config_trusts_publisher(config, delivery->user_id) ||
        !delivery->body)
        return NULL;
    json_t *body = json_loadb((const char *)delivery->body, delivery->body_len, 0, NULL);
    const char *type = json_string_value(json_object_get(body, "type"));
    const char *of = json_string_value(json_object_get(json_object_get(body, "data"), "task_id"));
    if (type && of && strcmp(of, id) == 0)
        return body;
    json_decref(body);
    return NULL;
}

/* What one delivery means: -1 go on, else the exit status (*reply set for
 * a reply). */
static int take_delivery(const vf_config *config, const ctl_request *r,
                         const amqp_link_delivery *delivery, json_t **reply)
{
    if (!r->on_event && delivery->correlation_id && strcmp(delivery->correlation_id, r->id) == 0) {
        json_t *body = delivery->body
                           ? json_loadb((const char *)delivery->body, delivery->body_len, 0, NULL)
                           : NULL;
        if (!json_is_object(body)) {
            ctl_error("%s: the worker's reply is not a JSON object", r->id);
            json_decref(body);
            return CTL_EXIT_UNAVAILABLE;
        }
        *reply = body;
        return CTL_EXIT_OK;
    }
    json_t *event = trusted_event(config, delivery, r->id);
    if (!event)
        return -1;
    const char *type = json_string_value(json_object_get(event, "type"));
    json_t *data = json_object_get(event, "data");
    int status = -1;
    if (r->on_event)
        status = r->on_event(type, data, r->event_ctx);
    else if (strcmp(type, "task.retrying") == 0)
        ctl_print_retrying(data);
    json_decref(event);
    return status;
}

/* Wait for the end of request `r` on `link`'s private queue. */
static int wait_end(const vf_config *config, amqp_link *link, const ctl_request *r, json_t **reply)
{
    vf_error err;
    vf_error_init(&err);
    int64_t deadline = clock_mono_us() / 1000 + r->wait_s * 1000;
    for (;;) {
        int64_t left = deadline - clock_mono_us() / 1000;
        if (left <= 0) {
            ctl_error("%s was published but is not final after %ld s (still queued, running or "
                      "being retried): see virtflowctl task %s",
                      r->id, r->wait_s, r->id);
            return CTL_EXIT_PENDING;
        }
        amqp_link_delivery delivery;
        int got = amqp_link_next(link, &delivery, (int)left, &err);
        if (got < 0) {
            ctl_error("waiting for %s: %s (see virtflowctl task %s)", r->id, err.text, r->id);
            return CTL_EXIT_UNAVAILABLE;
        }
        if (got == 0)
            continue;
        int status = take_delivery(config, r, &delivery, reply);
        /* The private queue dies with the connection; an ack only keeps it tidy. */
        if (amqp_link_ack(link, delivery.delivery_tag, false, NULL) < 0)
            ctl_error("could not ack a message of the private queue (harmless)");
        amqp_link_delivery_close(&delivery);
        if (status >= 0)
            return status;
    }
}

/* The private queue, bound to what the wait needs before anything is
 * published, so nothing is missed. */
static int private_queue(amqp_link *link, const ctl_request *r, char *queue, size_t size)
{
    vf_error err;
    vf_error_init(&err);
    if (amqp_link_reply_queue(link, queue, size, &err) < 0) {
        ctl_error("cannot set up a private queue: %s", err.text);
        return -1;
    }
    static const char *const progress_keys[] = {"event.task.retrying", NULL};
    const char *const *keys = r->on_event ? r->event_keys : r->progress ? progress_keys : NULL;
    for (size_t i = 0; keys && keys[i]; i++) {
        if (amqp_link_bind(link, queue, BROKER_EXCHANGE, keys[i], &err) < 0) {
            ctl_error("cannot follow the task's events: %s", err.text);
            return -1;
        }
    }
    return 0;
}

int ctl_publish_request(const vf_config *config, const ctl_request *request, json_t **reply)
{
    int status = CTL_EXIT_UNAVAILABLE;
    vf_error err;
    vf_error_init(&err);
    *reply = NULL;
    amqp_link *link = ctl_connect(config, request->command, CTL_BROKER_WRITE, &status);
    if (!link)
        return status;
    status = CTL_EXIT_UNAVAILABLE;
    amqp_link_confirm confirm = {0};
    amqp_link_set_confirm_callback(link, amqp_link_confirm_record, &confirm);
    char queue[256] = "";
    bool wait = request->wait_s > 0;
    bool replied = wait && !request->on_event; /* the end comes as a reply */
    if (wait && private_queue(link, request, queue, sizeof queue) < 0)
        goto out;
    amqp_link_message msg = {.body = request->body,
                             .body_len = strlen(request->body),
                             .message_id = request->id,
                             .correlation_id = replied ? request->id : NULL,
                             .reply_to = replied ? queue : NULL};
    if (amqp_link_publish(link, BROKER_EXCHANGE, request->routing_key, &msg, NULL, &err) < 0 ||
        amqp_link_wait_confirms(link, CONFIRM_TIMEOUT_MS, &err) < 0) {
        ctl_error("publishing %s: %s", request->id, err.text);
        goto out;
    }
    if (!confirm.ok) {
        ctl_error("the broker did not accept %s: %s", request->id, confirm.reason);
        goto out;
    }
    if (request->confirmed)
        *request->confirmed = true;
    if (request->announce) {
        printf("%s\n", ctl_text(request->announce));
        fflush(stdout);
    }
    status = wait ? wait_end(config, link, request, reply) : CTL_EXIT_OK;
out:
    amqp_link_free(link);
    return status;
}
