#include "ids.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "clock.h"

/* Random bytes straight from the kernel's CSPRNG, taken 4 KiB at a time so
 * an id costs no system call (a getrandom per id, or OpenSSL's RAND_bytes
 * with its locks, took ~3 us: several per cent of recording a task). Per
 * thread; a process that forked would share the unread rest with its child,
 * and none of ours calls ids_new after a fork. */
#define RANDOM_POOL 4096
static _Thread_local unsigned char pool[RANDOM_POOL];
static _Thread_local size_t pool_used = RANDOM_POOL;

static void random_bytes(unsigned char *out, size_t n)
{
    if (pool_used + n > RANDOM_POOL) {
        size_t got = 0;
        while (got < RANDOM_POOL) {
            ssize_t rc = getrandom(pool + got, RANDOM_POOL - got, 0);
            if (rc <= 0)
                break; /* EINTR and the like: use what is there */
            got += (size_t)rc;
        }
        if (got < RANDOM_POOL && RAND_bytes(pool + got, (int)(RANDOM_POOL - got)) != 1) {
            /* Never seen on Linux. Distinct ids still: the clock and a count. */
            static _Thread_local uint64_t counter;
            for (size_t i = got; i + sizeof counter <= RANDOM_POOL; i += sizeof counter) {
                counter++;
                memcpy(pool + i, &counter, sizeof counter);
            }
        }
        pool_used = 0;
    }
    memcpy(out, pool + pool_used, n);
    pool_used += n;
}

/* RFC 9562 UUID version 7: 48 bits of Unix milliseconds, then random bits.
 * Ids made later sort later, so the store's indexes on them (outbox,
 * deliveries, generated task ids) grow at their right edge instead of
 * touching a random page per insert. */
void ids_new(const char *prefix, char out[IDS_LEN])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char uuid[16];
    random_bytes(uuid + 6, sizeof uuid - 6);
    uint64_t ms = (uint64_t)clock_wall_ms();
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

int ids_parse_time_ms(const char *text, int64_t *unix_ms)
{
    int64_t seconds = 0;
    if (!text || ids_parse_time(text, &seconds) < 0)
        return -1;
    const char *dot = strchr(text, '.');
    int64_t ms = 0;
    int digits = 0;
    for (int i = 1; dot && i <= 3 && dot[i] >= '0' && dot[i] <= '9'; i++, digits++)
        ms = ms * 10 + (dot[i] - '0');
    for (; dot && digits < 3; digits++)
        ms *= 10; /* ".5" is 500 ms */
    *unix_ms = seconds * 1000 + ms;
    return 0;
}
