/* virtflowctl: publish one request, confirmed by the broker, and wait for
 * the worker's reply through a private reply queue (submit, release). */
#include <stdio.h>
#include <string.h>

#include "amqp_link_admin.h"
#include "clock.h"
#include "ctl.h"

#define CONFIRM_TIMEOUT_MS 30000

/* A task.retrying event of task `id` from a trusted publisher: printed as
 * `spare prepare --wait` prints it. Anything else is ignored. */
static void show_progress(const vf_config *config, const amqp_link_delivery *delivery,
                          const char *id)
{
    if (!delivery->user_id || !config_trusts_publisher(config, delivery->user_id) ||
        !delivery->body)
        return; /* anyone allowed to publish on virtflow could forge an event */
    json_t *body = json_loadb((const char *)delivery->body, delivery->body_len, 0, NULL);
    json_t *data = json_object_get(body, "data");
    const char *type = json_string_value(json_object_get(body, "type"));
    const char *of = json_string_value(json_object_get(data, "task_id"));
    if (type && of && strcmp(type, "task.retrying") == 0 && strcmp(of, id) == 0) {
        printf("retrying in %lld s (attempt %lld): %s\n",
               (long long)json_integer_value(json_object_get(data, "delay_s")),
               (long long)json_integer_value(json_object_get(data, "next_attempt")),
               ctl_text(json_string_value(json_object_get(data, "error"))));
        fflush(stdout);
    }
    json_decref(body);
}

/* Wait for the reply whose correlation_id is `id`. */
static int wait_reply(const vf_config *config, amqp_link *link, const char *id, long wait_s,
                      json_t **reply)
{
    vf_error err;
    vf_error_init(&err);
    int64_t deadline = clock_mono_us() / 1000 + wait_s * 1000;
    for (;;) {
        int64_t left = deadline - clock_mono_us() / 1000;
        if (left <= 0) {
            ctl_error("%s was published but is not final after %ld s (still queued, running or "
                      "being retried; it answers only when final): see virtflowctl task %s",
                      id, wait_s, id);
            return CTL_EXIT_PENDING;
        }
        amqp_link_delivery delivery;
        int got = amqp_link_next(link, &delivery, (int)left, &err);
        if (got < 0) {
            ctl_error("waiting for %s: %s (see virtflowctl task %s)", id, err.text, id);
            return CTL_EXIT_UNAVAILABLE;
        }
        if (got == 0)
            continue;
        bool ours = delivery.correlation_id && strcmp(delivery.correlation_id, id) == 0;
        if (!ours)
            show_progress(config, &delivery, id);
        json_t *body =
            ours && delivery.body ? json_loads((const char *)delivery.body, 0, NULL) : NULL;
        /* The reply queue dies with the connection; an ack only keeps it tidy. */
        if (amqp_link_ack(link, delivery.delivery_tag, false, NULL) < 0)
            ctl_error("could not ack the reply (harmless)");
        amqp_link_delivery_close(&delivery);
        if (!ours)
            continue;
        if (!json_is_object(body)) {
            ctl_error("%s: the worker's reply is not a JSON object", id);
            json_decref(body);
            return CTL_EXIT_UNAVAILABLE;
        }
        *reply = body;
        return CTL_EXIT_OK;
    }
}

int ctl_publish_request(const vf_config *config, const ctl_request *request, json_t **reply)
{
    int status = CTL_EXIT_UNAVAILABLE;
    vf_error err;
    vf_error_init(&err);
    *reply = NULL;
    amqp_link *link = ctl_connect(config, request->command);
    if (!link)
        return status;
    ctl_confirm confirm = {0};
    amqp_link_set_confirm_callback(link, ctl_on_confirm, &confirm);
    char reply_queue[256] = "";
    bool wait = request->wait_s > 0;
    if (wait && amqp_link_reply_queue(link, reply_queue, sizeof reply_queue, &err) < 0) {
        ctl_error("cannot set up a reply queue: %s", err.text);
        goto out;
    }
    if (wait && request->progress &&
        amqp_link_bind(link, reply_queue, AMQP_TOPOLOGY_EXCHANGE, "event.task.retrying", &err) <
            0) {
        ctl_error("cannot follow the task's progress: %s", err.text);
        goto out;
    }
    amqp_link_message msg = {.body = request->body,
                             .body_len = strlen(request->body),
                             .message_id = request->id,
                             .correlation_id = wait ? request->id : NULL,
                             .reply_to = wait ? reply_queue : NULL};
    if (amqp_link_publish(link, AMQP_TOPOLOGY_EXCHANGE, request->routing_key, &msg, NULL, &err) <
            0 ||
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
    status = wait ? wait_reply(config, link, request->id, request->wait_s, reply) : CTL_EXIT_OK;
out:
    amqp_link_free(link);
    return status;
}
