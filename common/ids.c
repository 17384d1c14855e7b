#include "ids.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <uuid/uuid.h>

void ids_new(const char *prefix, char out[IDS_LEN])
{
    uuid_t uuid;
    uuid_generate_random(uuid);
    int used = snprintf(out, IDS_LEN, "%.8s_", prefix);
    for (size_t i = 0; i < sizeof uuid && used + 2 < IDS_LEN; i++)
        used += snprintf(out + used, (size_t)(IDS_LEN - used), "%02x", uuid[i]);
}

void ids_rfc3339(int64_t unix_s, char out[32])
{
    time_t t = (time_t)unix_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int ids_parse_time(const char *text, int64_t *unix_s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *rest = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!rest)
        return -1;
    if (*rest == '.') {
        rest++;
        while (*rest >= '0' && *rest <= '9')
            rest++;
    }
    if (strcmp(rest, "Z") != 0)
        return -1;
    *unix_s = (int64_t)timegm(&tm);
    return 0;
}
