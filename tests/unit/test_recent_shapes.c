/* recent_shapes: the shapes asked for most come first, ties by size, at
 * most n of them, named after their size; an empty tally gives none. And
 * headroom's spare fit: distinct hosts when strict, any VMs otherwise. */
#include <string.h>

#include "headroom.h"
#include "recent_shapes.h"
#include "testlib.h"

static void test_names(void)
{
    char buf[SCHED_SHAPE_NAME_LEN];
    sched_shape_name(4, 8192, 40, buf, sizeof buf);
    CHECK_STR(buf, "4c-8g-40g");
    sched_shape_name(0.5, 1536, 0, buf, sizeof buf);
    CHECK_STR(buf, "0.5c-1536m");
    sched_shape_name(16, 65536, 0, buf, 6);
    CHECK_STR(buf, "16c-6"); /* truncated, terminated */
}

static void test_top(void)
{
    sched_shape_tally tally;
    sched_shape_tally_init(&tally);
    config_shape out[3];
    char names[3][SCHED_SHAPE_NAME_LEN];
    CHECK(sched_shape_tally_top(&tally, 3, "recent:", out, names) == 0);
    /* 5 of 2c-4g, 3 of 8c-32g-100g, 3 of 4c-8g, 1 of 1c-1g (interleaved). */
    static const struct {
        double cpu;
        int64_t memory, disk;
        int times;
    } asked[] = {
        {8, 32768, 100, 3}, {2, 4096, 0, 2}, {1, 1024, 0, 1}, {4, 8192, 0, 3}, {2, 4096, 0, 3}};
    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++)
        for (int k = 0; k < asked[i].times; k++)
            CHECK(sched_shape_tally_add(&tally, asked[i].cpu, asked[i].memory, asked[i].disk) == 0);
    size_t n = sched_shape_tally_top(&tally, 3, "recent:", out, names);
    CHECK(n == 3);
    CHECK_STR(out[0].name, "recent:2c-4g");
    CHECK(out[0].cpu == 2 && out[0].memory == 4096 && out[0].disk == 0 && out[0].min_hosts == 0);
    CHECK_STR(out[1].name, "recent:4c-8g"); /* 3 each: the smaller first */
    CHECK_STR(out[2].name, "recent:8c-32g-100g");
    CHECK(out[2].disk == 100);
    CHECK(out[0].name == names[0]);
    /* Fewer distinct shapes than asked for: all of them. */
    config_shape many[8];
    char many_names[8][SCHED_SHAPE_NAME_LEN];
    CHECK(sched_shape_tally_top(&tally, 8, "r:", many, many_names) == 4);
    CHECK_STR(many[3].name, "r:1c-1g");
    sched_shape_tally_close(&tally);
    sched_shape_tally_close(&tally); /* twice: nothing left */
}

static void test_spares_fit(void)
{
    sched_headroom_count fits = {.vms = 9, .hosts = 3};
    CHECK(sched_headroom_spares_fit(&fits, 3, true));
    CHECK(!sched_headroom_spares_fit(&fits, 4, true));
    CHECK(sched_headroom_spares_fit(&fits, 4, false));
    CHECK(!sched_headroom_spares_fit(&fits, 10, false));
}

int main(void)
{
    test_names();
    test_top();
    test_spares_fit();
    return test_summary();
}
