/* queue_order: a request's priority, and the order of what a worker holds. */
#include "queue_order.h"

#include <stdio.h>

/* The key names only: nothing here talks to the broker. */
#include "broker_names.h"

int queue_order_priority(const sched_request *req, const vf_config *config, int32_t *out,
                         vf_error *err)
{
    const char *name = req->priority_class[0] ? req->priority_class : NULL;
    if (!name && req->has_priority) {
        *out = req->priority;
        return 0;
    }
    if (!name)
        name = config->scheduler.default_priority_class;
    if (!name) {
        *out = 0;
        return 0;
    }
    const config_priority_class *pc = config_priority_class_named(config, name);
    if (!pc) {
        vf_error_set(err, VF_EINVAL,
                     "priority_class: no class \"%s\" in scheduler.priority_classes", name);
        return -1;
    }
    if (req->has_priority && req->priority != pc->value) {
        vf_error_set(err, VF_EINVAL,
                     "priority: %d disagrees with priority_class \"%s\" (%d) (give one, or the "
                     "class's value)",
                     (int)req->priority, name, pc->value);
        return -1;
    }
    *out = pc->value;
    return 0;
}

void queue_order_sort(const int32_t *priority, size_t n, size_t *order)
{
    /* Insertion sort: stable, no allocation; n is at most amqp.prefetch, and
     * an all-equal window (the common case) costs n comparisons. */
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j > 0 && priority[order[j - 1]] < priority[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
}

int32_t queue_order_body_priority(const json_t *body, const vf_config *config)
{
    if (!json_is_object(body))
        return 0;
    sched_request req;
    sched_request_init(&req);
    const json_t *priority = json_object_get(body, "priority");
    const json_t *name = json_object_get(body, "priority_class");
    if (priority && json_is_integer(priority) && json_integer_value(priority) >= INT32_MIN &&
        json_integer_value(priority) <= INT32_MAX) {
        req.has_priority = true;
        req.priority = (int32_t)json_integer_value(priority);
    }
    if (name && json_is_string(name))
        snprintf(req.priority_class, sizeof req.priority_class, "%s", json_string_value(name));
    int32_t value = 0;
    vf_error ignored;
    vf_error_init(&ignored);
    return queue_order_priority(&req, config, &value, &ignored) == 0 ? value : 0;
}

bool queue_order_lane(int32_t priority, const vf_config *config)
{
    return priority >= config->scheduler.priority_lane_min;
}

const char *queue_order_routing_key(int32_t priority, const vf_config *config)
{
    return queue_order_lane(priority, config) ? BROKER_KEY_SCHEDULE_PRIORITY : BROKER_KEY_SCHEDULE;
}

const char *queue_order_text_routing_key(const char *body, size_t length, const vf_config *config)
{
    json_t *parsed = body ? json_loadb(body, length, 0, NULL) : NULL;
    /* Not an object (or not JSON): priority 0 would still reach the lane
     * under a priority_lane_min <= 0; such a body goes the normal way. */
    const char *key =
        parsed && json_is_object(parsed)
            ? queue_order_routing_key(queue_order_body_priority(parsed, config), config)
            : BROKER_KEY_SCHEDULE;
    json_decref(parsed);
    return key;
}
