#include "broker_names.h"

#include <stdio.h>

int broker_names_retry(int delay_s, char *buf, size_t size)
{
    if (delay_s <= 0)
        return -1;
    int n = snprintf(buf, size, "%s%ds", BROKER_RETRY_PREFIX, delay_s);
    return (n < 0 || (size_t)n >= size) ? -1 : 0;
}
