/* near_best: a task's pick among the near-best hosts is its own (a hash of
 * its id), stays within the score loss allowed, spreads different tasks over
 * the near-best, and the engine makes it only when asked (near_best_width). */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "near_best.h"
#include "sched_fixture.h"
#include "testlib.h"

static void test_hash_is_fnv1a(void)
{
    /* FNV-1a 64 reference values: the pick must not change between versions. */
    CHECK(near_best_hash("") == 14695981039346656037ULL);
    CHECK(near_best_hash("a") == 0xaf63dc4c8601ec8cULL);
    CHECK(near_best_hash("foobar") == 0x85944171f73967e8ULL);
}

static void test_off_and_degenerate(void)
{
    double scores[] = {50, 80, 79};
    CHECK(near_best_pick(scores, 3, 1, "task-1", 1, 5) == 1);
    CHECK(near_best_pick(scores, 3, 1, "task-1", 0, 5) == 1);
    CHECK(near_best_pick(scores, 3, 1, "", 4, 5) == 1);
    CHECK(near_best_pick(scores, 3, 1, NULL, 4, 5) == 1);
    CHECK(near_best_pick(scores, 1, 0, "task-1", 4, 5) == 0);
}

static void test_bounded_loss_and_width(void)
{
    /* Best 95.5 at index 3; within 5 points: 94 (4), 91 (5), 90.5 (6);
     * width 3 keeps the three highest of those four. */
    double scores[] = {90, 89, 80, 95.5, 94, 91, 90.5};
    int seen[7] = {0};
    char id[32];
    for (int i = 0; i < 400; i++) {
        snprintf(id, sizeof id, "tsk-%d", i);
        size_t pick = near_best_pick(scores, 7, 3, id, 3, 5.0);
        CHECKF(pick < 7, "pick %zu", pick);
        if (pick < 7)
            seen[pick]++;
        CHECK(near_best_pick(scores, 7, 3, id, 3, 5.0) == pick); /* the same task, the same host */
    }
    CHECKF(seen[3] > 0 && seen[4] > 0 && seen[5] > 0, "spread %d %d %d", seen[3], seen[4], seen[5]);
    CHECKF(seen[0] == 0 && seen[1] == 0 && seen[2] == 0 && seen[6] == 0,
           "outside the near-best: %d %d %d %d", seen[0], seen[1], seen[2], seen[6]);
    /* No loss allowed: only the best (and hosts equal to it). */
    CHECK(near_best_pick(scores, 7, 3, "tsk-1", 3, 0) == 3);
    double tied[] = {70, 70, 60};
    int first = 0, second = 0;
    for (int i = 0; i < 100; i++) {
        snprintf(id, sizeof id, "t%d", i);
        size_t pick = near_best_pick(tied, 3, 0, id, 4, 0);
        first += pick == 0;
        second += pick == 1;
    }
    CHECKF(first > 0 && second > 0 && first + second == 100, "ties: %d %d", first, second);
}

/* The engine: off by default (the lowest name wins a tie), on with
 * near_best_width, deterministic for a task id whatever engine decides. */
static void test_engine_picks_by_task(void)
{
    host hosts[6];
    char name[8];
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "h%d", i);
        hosts[i] = fixture_host(name); /* all equal */
    }
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    for (int i = 0; i < 6; i++)
        CHECK(hostset_add(set, &hosts[i], &err) == 0);
    CHECK(hostset_finish(set, &err) == 0);
    sched_params off, on;
    fixture_params(&off);
    fixture_params(&on);
    on.near_best_width = 4;
    on.near_best_max_loss = 5;
    sched_engine *plain = sched_engine_new(&off, &err);
    sched_engine *spread = sched_engine_new(&on, &err);
    sched_engine *again = sched_engine_new(&on, &err);
    CHECK(plain && spread && again);
    if (!plain || !spread || !again)
        goto out;
    CHECK(sched_engine_set_hosts(plain, set, NULL, NULL, &err) == 0);
    CHECK(sched_engine_set_hosts(spread, set, NULL, NULL, &err) == 0);
    CHECK(sched_engine_set_hosts(again, set, NULL, NULL, &err) == 0);
    int seen[6] = {0};
    sched_request req;
    for (int i = 0; i < 60; i++) {
        fixture_request(&req, 1, 512);
        snprintf(req.task_id, sizeof req.task_id, "task-%d", i);
        sched_decision a, b, c;
        CHECK(sched_engine_decide(plain, &req, &a, &err) == 0 && a.placed);
        CHECK(sched_engine_decide(spread, &req, &b, &err) == 0 && b.placed);
        CHECK(sched_engine_decide(again, &req, &c, &err) == 0 && c.placed);
        if (!a.placed || !b.placed || !c.placed)
            continue;
        CHECK_STR(a.node->name, "h0"); /* undecided ties go to the lowest name */
        CHECK_STR(b.node->name, c.node->name);
        seen[b.node->name[1] - '0']++;
        /* Nothing reserved: the engines see the same hosts at every step. */
    }
    int used = 0;
    for (int i = 0; i < 6; i++)
        used += seen[i] > 0;
    CHECKF(used == 4, "60 tasks over the 4 near-best of 6 equal hosts: %d used", used);
out:
    sched_engine_free(plain);
    sched_engine_free(spread);
    sched_engine_free(again);
    hostset_free(set);
}

int main(void)
{
    test_hash_is_fnv1a();
    test_off_and_degenerate();
    test_bounded_loss_and_width();
    test_engine_picks_by_task();
    return test_summary();
}
