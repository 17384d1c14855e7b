/* fuzz_event: a message body taken off virtflow.relay, through the relay's
 * event check (relay_policy_event). */
#include <stdlib.h>

#include "fuzz_common.h"
#include "relay_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *id = NULL, *type = NULL;
    if (relay_policy_event(data, size, "msg-fallback", &id, &type, NULL) == 0) {
        /* What the relay relies on: a bounded id that cannot break a header. */
        size_t len = strlen(id);
        if (len == 0 || len > RELAY_EVENT_ID_MAX || strpbrk(id, " \r\n") || !*type)
            abort();
        free(id);
        free(type);
    }
    return 0;
}
