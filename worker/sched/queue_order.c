/* queue_order: a request's priority, and the order of what a worker holds. */
#include "queue_order.h"

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
