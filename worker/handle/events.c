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
    json_t *event = json_pack("{s:s, s:s, s:s, s:o}", "id", id, "type", type, "timestamp",
                              timestamp, "data", data);
    if (!event)
        return NULL;
    char *text = json_util_dump(event);
    json_decref(event);
    return text;
}
