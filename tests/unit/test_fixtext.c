/* fixtext: its numbers are printf's, byte for byte ("%.2f" and "%llu" over
 * millions of values: uniform, exact halves and their neighbours, the
 * edges snprintf is left with), and it truncates as snprintf does, its
 * length the one snprintf answers. */
#include "fixtext.h"
#include "testlib.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t state = 0x9e3779b97f4a7c15ULL;

static uint64_t next_random(void)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform(double below)
{
    return (double)(next_random() >> 11) / 9007199254740992.0 * below;
}

static int fixed2_differs;
/* Fewer values under Valgrind (about 50 times slower). */
static int scale = 1;

static void check_fixed2(double v)
{
    char want[400], got[400];
    snprintf(want, sizeof want, "%.2f", v);
    fixtext t;
    fixtext_init(&t, got, sizeof got, 0);
    fixtext_fixed2(&t, v);
    if (strcmp(want, got) != 0 || t.len != strlen(want)) {
        if (fixed2_differs++ < 5)
            CHECKF(0, "%.17g: printf %s, fixtext %s", v, want, got);
    }
}

static void test_fixed2(void)
{
    for (int i = 0; i < 1000000 / scale; i++)
        check_fixed2(uniform(1000));
    for (int i = 0; i < 200000 / scale; i++)
        check_fixed2(uniform(1e6 * 1.5));
    for (int i = 0; i < 200000 / scale; i++)
        check_fixed2(uniform(1.0));
    /* Exact binary halves of a cent (k / 8) and the doubles either side. */
    for (int k = 0; k < 800000; k += scale) {
        double v = k / 8.0;
        check_fixed2(v);
        check_fixed2(nextafter(v, 0));
        check_fixed2(nextafter(v, INFINITY));
    }
    /* Decimal halves that are not exact in binary (0.005, 12.345, ...). */
    for (int k = 0; k < 200000; k += scale) {
        double v = (k + 0.5) / 100.0;
        check_fixed2(v);
        check_fixed2(nextafter(v, 0));
        check_fixed2(nextafter(v, INFINITY));
    }
    double edges[] = {0.0,   -0.0,     -1.5,      -0.004, 0.004999,  999999.995, 999999.99,
                      1e6,   1e6 + 1,  1e15,      1e300,  DBL_MAX,   DBL_MIN,    4.9e-324,
                      NAN,   INFINITY, -INFINITY, 0.125,  0.375,     2.675,      1.005,
                      100.0, 99.995,   99.99499,  1e-7,   0.0049999, 0.005,      0.015};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        check_fixed2(edges[i]);
    CHECKF(fixed2_differs == 0, "%d values written otherwise than printf's %%.2f", fixed2_differs);
}

static void test_uint(void)
{
    int differs = 0;
    for (int i = 0; i < 1000000 / scale; i++) {
        uint64_t v = next_random() >> (next_random() % 64);
        if (i == 0)
            v = 0;
        if (i == 1)
            v = UINT64_MAX;
        char want[32], got[32];
        snprintf(want, sizeof want, "%llu", (unsigned long long)v);
        fixtext t;
        fixtext_init(&t, got, sizeof got, 0);
        fixtext_uint(&t, v);
        differs += strcmp(want, got) != 0 || t.len != strlen(want);
    }
    CHECKF(differs == 0, "%d integers written otherwise than printf's", differs);
}

/* The same pieces into every size from 1 to past the whole: the bytes and
 * the length snprintf gives. */
static void test_truncation(void)
{
    char want[128], whole[128];
    int full = snprintf(whole, sizeof whole, "%s chosen with score %.2f, vmid %u; %zu/%zu", "bm-7",
                        87.125, 4321u, (size_t)99, (size_t)100);
    int differs = 0;
    for (size_t size = 1; size <= (size_t)full + 2; size++) {
        char got[128];
        memset(got, 'x', sizeof got);
        memset(want, 'x', sizeof want);
        snprintf(want, size, "%s chosen with score %.2f, vmid %u; %zu/%zu", "bm-7", 87.125, 4321u,
                 (size_t)99, (size_t)100);
        fixtext t;
        fixtext_init(&t, got, size, 0);
        fixtext_puts(&t, "bm-7");
        fixtext_puts(&t, " chosen with score ");
        fixtext_fixed2(&t, 87.125);
        fixtext_puts(&t, ", vmid ");
        fixtext_uint(&t, 4321);
        fixtext_puts(&t, "; ");
        fixtext_uint(&t, 99);
        fixtext_put(&t, "/", 1);
        fixtext_uint(&t, 100);
        differs += memcmp(want, got, sizeof got) != 0 || t.len != (size_t)full ||
                   (bool)fixtext_truncated(&t) != (size <= (size_t)full);
    }
    CHECKF(differs == 0, "%d sizes truncated otherwise than snprintf", differs);
    /* Continuing after a text already there. */
    char buf[32] = "abc";
    fixtext t;
    fixtext_init(&t, buf, sizeof buf, 3);
    fixtext_uint(&t, 42);
    CHECK(strcmp(buf, "abc42") == 0 && t.len == 5);
}

int main(void)
{
    if (getenv("VF_UNDER_VALGRIND"))
        scale = 50;
    test_fixed2();
    test_uint();
    test_truncation();
    return test_summary();
}
