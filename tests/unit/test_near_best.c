/* near_best: a task's pick among the near-best hosts is its own (a hash of
 * its id, or of the worker's), stays within the score loss allowed, spreads
 * different keys over the near-best, and the engine makes it only when asked
 * (near_best_width, near_best_worker). */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "near_best.h"
#include "sched_fixture.h"
#include "testlib.h"

static const char *const names[] = {"bm-000", "bm-001", "bm-002", "bm-003",
                                    "bm-004", "bm-005", "bm-006", "bm-007"};

static const char *name_of(size_t i, const void *ctx)
{
    (void)ctx;
    return names[i];
}

static const char *name_from(size_t i, const void *ctx)
{
    return ((const char *const *)ctx)[i];
}

static size_t pick(const double *scores, size_t n, size_t best, const char *key, size_t width,
                   double max_loss)
{
    return near_best_pick(scores, n, best, name_of, NULL, key, width, max_loss);
}

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
    CHECK(pick(scores, 3, 1, "task-1", 1, 5) == 1);
    CHECK(pick(scores, 3, 1, "", 4, 5) == 1);
    CHECK(pick(scores, 3, 1, NULL, 4, 5) == 1);
    CHECK(pick(scores, 1, 0, "task-1", 4, 5) == 0);
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
        size_t got = pick(scores, 7, 3, id, 3, 5.0);
        CHECKF(got < 7, "pick %zu", got);
        if (got < 7)
            seen[got]++;
        CHECK(pick(scores, 7, 3, id, 3, 5.0) == got); /* the same task, the same host */
    }
    CHECKF(seen[3] > 0 && seen[4] > 0 && seen[5] > 0, "spread %d %d %d", seen[3], seen[4], seen[5]);
    CHECKF(seen[0] == 0 && seen[1] == 0 && seen[2] == 0 && seen[6] == 0,
           "outside the near-best: %d %d %d %d", seen[0], seen[1], seen[2], seen[6]);
    /* No loss allowed: only the best (and hosts equal to it). */
    CHECK(pick(scores, 7, 3, "tsk-1", 3, 0) == 3);
    double tied[] = {70, 70, 60};
    int first = 0, second = 0;
    for (int i = 0; i < 100; i++) {
        snprintf(id, sizeof id, "t%d", i);
        size_t got = pick(tied, 3, 0, id, 4, 0);
        first += got == 0;
        second += got == 1;
    }
    CHECKF(first > 0 && second > 0 && first + second == 100, "ties: %d %d", first, second);
}

/* By worker (width 0): every host within the loss is a candidate, and one
 * key keeps to one host while it stays within the loss; different keys
 * mostly take different hosts. */
static size_t best_index(const double *scores, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (scores[i] > scores[best])
            best = i;
    return best;
}

static void test_by_worker(void)
{
    double even[8] = {80, 80, 80, 80, 80, 80, 80, 80};
    size_t a = pick(even, 8, best_index(even, 8), "worker-a", 0, 5);
    CHECK(pick(even, 8, best_index(even, 8), "worker-a", 0, 5) == a);
    even[a] = 76; /* filled a little: still within 5 points */
    CHECK(pick(even, 8, best_index(even, 8), "worker-a", 0, 5) == a);
    even[a] = 74; /* beyond: the worker moves on */
    size_t next = pick(even, 8, best_index(even, 8), "worker-a", 0, 5);
    CHECK(next != a && next < 8);
    even[a] = 80;
    int distinct = 0;
    bool taken[8] = {false};
    char key[32];
    for (int w = 0; w < 8; w++) {
        snprintf(key, sizeof key, "host-%d:%d:w%d", w, 1000 + w, w * 7);
        size_t got = pick(even, 8, best_index(even, 8), key, 0, 5);
        distinct += !taken[got];
        taken[got] = true;
    }
    CHECKF(distinct >= 4, "8 workers over 8 equal hosts took %d distinct hosts", distinct);
    /* Reordering the hosts does not change which host a key takes. */
    double scores[3] = {70, 70, 70};
    const char *order1[] = {"x", "y", "z"}, *order2[] = {"z", "x", "y"};
    size_t p1 = near_best_pick(scores, 3, 0, name_from, order1, "k", 0, 5);
    size_t p2 = near_best_pick(scores, 3, 0, name_from, order2, "k", 0, 5);
    CHECK_STR(order1[p1], order2[p2]);
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
    test_by_worker();
    test_engine_picks_by_task();
    return test_summary();
}
