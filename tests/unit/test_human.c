/* human: the amounts the console and virtflowctl's tables show people
 * (issue 36 item 12: memory was raw MiB, ages raw timestamps). */
#include "human.h"
#include "testlib.h"

static const char *mib(int64_t value)
{
    static char out[HUMAN_SIZE];
    human_mib(value, out);
    return out;
}

static const char *duration(int64_t seconds)
{
    static char out[HUMAN_SIZE];
    human_duration(seconds, out);
    return out;
}

static void test_memory(void)
{
    CHECK_STR(mib(0), "0 MiB");
    CHECK_STR(mib(512), "512 MiB");
    CHECK_STR(mib(1023), "1023 MiB");
    CHECK_STR(mib(1024), "1 GiB");
    CHECK_STR(mib(7680), "7.5 GiB");
    CHECK_STR(mib(262144), "256 GiB");
    CHECK_STR(mib(1572864), "1.5 TiB");
    CHECK_STR(mib(-2048), "-2 GiB");
    /* TiB is the largest: petabytes of memory stay in TiB. */
    CHECK_STR(mib(1024LL * 1024 * 2048), "2048 TiB");
}

static void test_durations(void)
{
    CHECK_STR(duration(-5), "0 s");
    CHECK_STR(duration(0), "0 s");
    CHECK_STR(duration(45), "45 s");
    CHECK_STR(duration(60), "1 min");
    CHECK_STR(duration(125), "2 min 5 s");
    CHECK_STR(duration(3600), "1 h");
    CHECK_STR(duration(3 * 3600 + 5 * 60 + 59), "3 h 5 min");
    CHECK_STR(duration(2 * 86400 + 4 * 3600), "2 d 4 h");
    CHECK_STR(duration(400 * 86400), "400 d");
}

int main(void)
{
    test_memory();
    test_durations();
    return test_summary();
}
