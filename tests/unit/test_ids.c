/* ids: the form of task and event ids, their time order, and the store's
 * timestamp parsing. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ids.h"
#include "testlib.h"

static int compare_ids(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

static void sleep_ms(long ms)
{
    struct timespec pause = {0, ms * 1000000L};
    nanosleep(&pause, NULL);
}

static void test_form(void)
{
    char id[IDS_LEN];
    ids_new("evt", id);
    CHECKF(strlen(id) == 36, "%s", id);
    CHECK(strncmp(id, "evt_", 4) == 0);
    CHECKF(strspn(id + 4, "0123456789abcdef") == 32, "%s", id);
    /* RFC 9562 version 7, variant 10xx. */
    CHECKF(id[4 + 12] == '7', "%s", id);
    CHECKF(strchr("89ab", id[4 + 16]) != NULL, "%s", id);
    /* The first 48 bits are the clock in milliseconds. */
    char head[13];
    memcpy(head, id + 4, 12);
    head[12] = '\0';
    long long ms = strtoll(head, NULL, 16);
    long long now = (long long)time(NULL) * 1000;
    CHECKF(ms > now - 5000 && ms < now + 5000, "%lld vs %lld", ms, now);

    ids_new("longprefixes", id);
    CHECKF(strncmp(id, "longpref_", 9) == 0, "%s", id);
}

static void test_unique_and_ordered(void)
{
    enum { N = 5000 };
    static char made[N][IDS_LEN];
    for (int i = 0; i < N; i++)
        ids_new("tsk", made[i]);
    qsort(made, N, IDS_LEN, compare_ids);
    int repeats = 0;
    for (int i = 1; i < N; i++)
        repeats += strcmp(made[i - 1], made[i]) == 0;
    CHECKF(repeats == 0, "%d ids repeated", repeats);

    /* Made in a later millisecond: sorts later (what keeps the store's
     * indexes on event ids appending at their right edge). */
    char earlier[IDS_LEN], later[IDS_LEN];
    for (int i = 0; i < 20; i++) {
        ids_new("evt", earlier);
        sleep_ms(2);
        ids_new("evt", later);
        CHECKF(strcmp(earlier, later) < 0, "%s !< %s", earlier, later);
    }
}

static void test_times(void)
{
    char text[32];
    ids_rfc3339(1795309323, text);
    CHECK_STR(text, "2026-11-22T01:02:03Z");
    int64_t back = 0;
    CHECK(ids_parse_time("2026-11-22T01:02:03.123Z", &back) == 0 && back == 1795309323);
    CHECK(ids_parse_time("2026-11-22T01:02:03Z", &back) == 0 && back == 1795309323);
    CHECK(ids_parse_time("2026-11-22 01:02:03", &back) < 0);
    CHECK(ids_parse_time("2026-11-22T01:02:03+01:00", &back) < 0);
}

int main(void)
{
    test_form();
    test_unique_and_ordered();
    test_times();
    return test_summary();
}
