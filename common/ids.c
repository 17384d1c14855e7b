#include "ids.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* RFC 9562 UUID version 7: 48 bits of Unix milliseconds, then random bits.
 * Ids made later sort later, so the store's indexes on them (outbox,
 * deliveries, generated task ids) grow at their right edge instead of
 * touching a random page per insert. The random bits come from OpenSSL's
 * DRBG (no system call per id); getrandom is the fallback. */
void ids_new(const char *prefix, char out[IDS_LEN])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char uuid[16];
    if (RAND_bytes(uuid, sizeof uuid) != 1 && getrandom(uuid, sizeof uuid, 0) != sizeof uuid) {
        /* Never seen on Linux; still distinct from the previous id. */
        static unsigned long counter;
        memcpy(uuid + 8, &counter, sizeof counter);
        counter++;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
    for (int i = 0; i < 6; i++)
        uuid[i] = (unsigned char)(ms >> (40 - 8 * i));
    uuid[6] = (unsigned char)(0x70 | (uuid[6] & 0x0f)); /* version 7 */
    uuid[8] = (unsigned char)(0x80 | (uuid[8] & 0x3f)); /* variant 10 */
    int used = snprintf(out, IDS_LEN, "%.8s_", prefix);
    for (size_t i = 0; i < sizeof uuid && used + 2 < IDS_LEN; i++) {
        out[used++] = hex[uuid[i] >> 4];
        out[used++] = hex[uuid[i] & 15];
    }
    out[used] = '\0';
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
