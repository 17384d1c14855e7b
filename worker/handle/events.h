/* events: the events virtflow publishes (docs/contracts.md "Events"):
 *   {"id":"evt_…","type":"task.completed","timestamp":"…Z","data":{…}}
 * published on exchange `virtflow` with routing key event.<type>; the types
 * are common/base/event_types.h's table. */
#ifndef VF_EVENTS_H
#define VF_EVENTS_H

#include <jansson.h>
#include <stdint.h>

#include "event_types.h"
#include "ids.h"

/* Wrap `data` (reference stolen) in an envelope of `type` with a new id.
 * Fills id and routing_key ("event.<type>", up to 64 bytes) and returns the
 * owned JSON text, or NULL when out of memory or `type` is outside the table
 * (`data` is released either way). */
char *events_build(event_type type, json_t *data, int64_t now_s, char id[IDS_LEN],
                   char routing_key[64]);

#endif
