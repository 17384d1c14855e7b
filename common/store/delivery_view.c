/* delivery_view: see delivery_view.h. */
#include "delivery_view.h"

#include "json_util.h"

#include <string.h>

const char *const delivery_view_statuses[] = {"pending", "delivering", "delivered", "failed", NULL};

json_t *delivery_view_json(const store_delivery *d)
{
    json_t *event = d->body ? json_loads(d->body, 0, NULL) : NULL;
    const char *type = json_string_value(json_object_get(event, "type"));
    const char *task_id =
        json_string_value(json_object_get(json_object_get(event, "data"), "task_id"));
    json_t *obj = json_object();
    if (obj) {
        json_object_set_new(obj, "event_id", json_util_string_or_null(d->event_id));
        json_object_set_new(obj, "event_type", json_util_string_or_null(type));
        json_object_set_new(obj, "task_id", json_util_string_or_null(task_id));
        json_object_set_new(obj, "receiver", json_util_string_or_null(d->receiver));
        json_object_set_new(obj, "status", json_util_string_or_null(d->status));
        json_object_set_new(obj, "attempts", json_integer(d->attempts));
        json_object_set_new(obj, "next_attempt_at", json_util_string_or_null(d->next_attempt_at));
        json_object_set_new(obj, "last_code",
                            d->last_code ? json_integer(d->last_code) : json_null());
        json_object_set_new(obj, "last_error", json_util_string_or_null(d->last_error));
        json_object_set_new(obj, "delivered_at", json_util_string_or_null(d->delivered_at));
        json_object_set_new(obj, "created_at", json_util_string_or_null(d->created_at));
    }
    json_decref(event);
    return obj;
}
