#include "events.h"

#include <stdio.h>
#include <stdlib.h>

#include "json_util.h"

char *events_build(event_type type_value, json_t *data, int64_t now_s, char id[IDS_LEN],
                   char routing_key[64])
{
    const char *type = event_types_name(type_value);
    if (!type) {
        json_decref(data);
        return NULL;
    }
    char timestamp[32];
    ids_new("evt", id);
    ids_rfc3339(now_s, timestamp);
    snprintf(routing_key, 64, "event.%s", type);
    /* Built directly rather than with json_pack: the id, the type and the
     * timestamp are ASCII made here, so neither a format string nor a UTF-8
     * check of them is worth its cost on every task. */
    json_t *event = json_object();
    if (!event) {
        json_decref(data);
        return NULL;
    }
    int rc = json_object_set_new_nocheck(event, "id", json_string_nocheck(id));
    rc |= json_object_set_new_nocheck(event, "type", json_string_nocheck(type));
    rc |= json_object_set_new_nocheck(event, "timestamp", json_string_nocheck(timestamp));
    rc |= json_object_set_new_nocheck(event, "data", data);
    if (rc < 0) {
        json_decref(event);
        return NULL;
    }
    char *text = json_util_dump(event);
    json_decref(event);
    return text;
}
