/* holds on its own: a hold keeps its names and figures, its vmid stays
 * reserved while it lives, the earliest expiry follows what is added and
 * what is recomputed, and dropping keeps the others in order, shows each
 * dropped hold before it goes, and frees the vmid. Dropping by task id (the
 * index) drops exactly that task's holds, however many, among thousands,
 * and stays right across drops by predicate, which move the others. */
#include <string.h>

#include "holds.h"
#include "testlib.h"

static sched_reservation reservation(const char *task, const char *node, uint32_t vmid,
                                     int64_t expires)
{
    sched_reservation r;
    memset(&r, 0, sizeof r);
    snprintf(r.task_id, sizeof r.task_id, "%s", task);
    snprintf(r.node, sizeof r.node, "%s", node);
    r.cpu = 2;
    r.memory = 2048;
    r.disk = 20;
    r.vmid = vmid;
    r.expires = expires;
    return r;
}

static bool on_node(const hold *h, const void *node)
{
    return strcmp(hold_node(h), node) == 0;
}

static bool expired(const hold *h, const void *now)
{
    return h->expires > 0 && h->expires <= *(const int64_t *)now;
}

typedef struct seen {
    int n;
    char tasks[4][32];
    bool vmid_still_reserved;
    const holds *set;
} seen;

static void note(const hold *h, void *user)
{
    seen *s = user;
    if (s->n < 4)
        snprintf(s->tasks[s->n], sizeof s->tasks[0], "%s", hold_task(h));
    s->n++;
    s->vmid_still_reserved = h->vmid && vmidset_has(&s->set->reserved_vmids, h->vmid);
}

/* Holds of task k in the set, counted by a scan (the model the index must
 * agree with). */
static size_t scan_count(const holds *set, const char *task)
{
    size_t n = 0;
    for (size_t i = 0; i < set->n_held; i++)
        n += strcmp(hold_task(&set->held[i]), task) == 0;
    return n;
}

static bool on_odd_node(const hold *h, const void *unused)
{
    (void)unused;
    size_t len = strlen(hold_node(h));
    return len && (hold_node(h)[len - 1] - '0') % 2 == 1;
}

/* 3,000 tasks of 1..3 holds each (spares), dropped by task id in a
 * scrambled order, with a drop by predicate in the middle. */
static void drop_by_task(void)
{
    enum { TASKS = 3000 };
    static size_t expected[TASKS];
    holds set;
    holds_init(&set);
    vf_error err;
    vf_error_init(&err);
    uint32_t vmid = 100;
    for (size_t k = 0; k < TASKS; k++) {
        char task[32], node[32];
        snprintf(task, sizeof task, "task-%zu", k);
        expected[k] = 1 + k % 3;
        for (size_t j = 0; j < expected[k]; j++) {
            snprintf(node, sizeof node, "bm-%zu", (k + j) % 10);
            sched_reservation r = reservation(task, node, vmid++, 0);
            CHECK(holds_add(&set, &r, &err) != NULL);
        }
    }
    CHECK(holds_drop_task(&set, "no-such-task", NULL, NULL) == 0);
    size_t left = set.n_held;
    uint64_t state = 12345;
    bool dropped_where = false;
    for (size_t step = 0; step < TASKS; step++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t k = (size_t)(state >> 33) % TASKS;
        char task[32];
        snprintf(task, sizeof task, "task-%zu", k);
        seen s = {.set = &set};
        size_t n = holds_drop_task(&set, task, note, &s);
        CHECKF(n == expected[k], "%s: dropped %zu, expected %zu", task, n, expected[k]);
        CHECK(s.n == (int)n);
        CHECK(scan_count(&set, task) == 0);
        left -= n;
        expected[k] = 0;
        if (step == TASKS / 2 && !dropped_where) {
            dropped_where = true;
            left -= holds_drop_where(&set, on_odd_node, NULL, NULL, NULL);
            for (size_t j = 0; j < TASKS; j++) {
                char other[32];
                snprintf(other, sizeof other, "task-%zu", j);
                expected[j] = scan_count(&set, other);
            }
        }
    }
    CHECK(set.n_held == left);
    CHECK(set.reserved_vmids.count == left);
    for (size_t k = 0; k < TASKS; k++) {
        char task[32];
        snprintf(task, sizeof task, "task-%zu", k);
        size_t n = holds_drop_task(&set, task, NULL, NULL);
        CHECKF(n == expected[k], "%s: dropped %zu, expected %zu", task, n, expected[k]);
    }
    CHECK(set.n_held == 0 && set.reserved_vmids.count == 0);
    holds_close(&set);
}

/* The digest (a decision's record, provenance.h): the same set gives the
 * same digest whatever the order it was built in, and whatever was added
 * and dropped on the way; each field a decision depends on changes it; an
 * empty set is 0. */
static void digest(void)
{
    holds a, b;
    holds_init(&a);
    holds_init(&b);
    vf_error err;
    vf_error_init(&err);
    sched_reservation r1 = reservation("t-1", "bm-001", 101, 500);
    sched_reservation r2 = reservation("t-2", "bm-002", 102, 600);
    sched_reservation r3 = reservation("t-3", "bm-001", 103, 700);
    CHECK(holds_add(&a, &r1, &err) && holds_add(&a, &r2, &err));
    CHECK(holds_add(&b, &r3, &err) && holds_add(&b, &r2, &err) && holds_add(&b, &r1, &err));
    CHECK(a.digest != b.digest);
    CHECK(holds_drop_task(&b, "t-3", NULL, NULL) == 1);
    CHECK(a.digest == b.digest);
    CHECK(a.digest == holds_reservation_digest(&r1) + holds_reservation_digest(&r2));
    /* Each field counts: node, vCPUs, MiB, GiB, vmid, expiry, priority, kind,
     * custom resources. */
    sched_reservation v = r1;
    uint64_t base = holds_reservation_digest(&r1);
    snprintf(v.node, sizeof v.node, "bm-009");
    CHECK(holds_reservation_digest(&v) != base);
    v = r1, v.cpu = 2.5;
    CHECK(holds_reservation_digest(&v) != base);
    v = r1, v.memory++;
    CHECK(holds_reservation_digest(&v) != base);
    v = r1, v.disk++;
    CHECK(holds_reservation_digest(&v) != base);
    v = r1, v.vmid++;
    CHECK(holds_reservation_digest(&v) != base);
    v = r1, v.expires++;
    CHECK(holds_reservation_digest(&v) != base);
    v = r1, v.has_priority = true, v.priority = 5;
    uint64_t ranked = holds_reservation_digest(&v);
    CHECK(ranked != base);
    v.priority = 6;
    CHECK(holds_reservation_digest(&v) != ranked);
    v = r1, v.created = 12345; /* preemption's tie-break only: not in it */
    CHECK(holds_reservation_digest(&v) == base);
    /* The hold's kind, and its custom resources (as the store keeps them:
     * in any order, names in any case, amounts of 0 left out). */
    v = r1, v.kind = SCHED_HOLD_VMID_ONLY;
    CHECK(holds_reservation_digest(&v) != base);
    v = r1, v.kind = SCHED_HOLD_RESOURCES_ONLY;
    CHECK(holds_reservation_digest(&v) != base);
    v = r1, v.resources.n = 2;
    snprintf(v.resources.items[0].name, sizeof v.resources.items[0].name, "GPU");
    v.resources.items[0].amount = 2;
    snprintf(v.resources.items[1].name, sizeof v.resources.items[1].name, "fpga");
    v.resources.items[1].amount = 0;
    uint64_t gpus = holds_reservation_digest(&v);
    CHECK(gpus != base);
    sched_reservation w = r1;
    w.resources.n = 1;
    snprintf(w.resources.items[0].name, sizeof w.resources.items[0].name, "gpu");
    w.resources.items[0].amount = 2;
    CHECK(holds_reservation_digest(&w) == gpus);
    w.resources.items[0].amount = 1;
    CHECK(holds_reservation_digest(&w) != gpus);
    /* A hold found unpreemptible (a victim never answered): the set's digest
     * is that of what it holds now. */
    holds c;
    holds_init(&c);
    v = r1, v.has_priority = true, v.priority = 5;
    hold *held = holds_add(&c, &v, &err);
    CHECK(held && c.digest == ranked);
    if (held)
        holds_unpreemptible(&c, held);
    CHECK(c.digest == base);
    CHECK(holds_drop_task(&c, "t-1", NULL, NULL) == 1 && c.digest == 0);
    holds_close(&c);
    /* Two identical holds do not cancel each other. */
    CHECK(holds_add(&a, &r1, &err) != NULL);
    CHECK(a.digest == 2 * base + holds_reservation_digest(&r2));
    int64_t now = 550;
    CHECK(holds_drop_where(&a, expired, &now, NULL, NULL) == 2);
    CHECK(a.digest == holds_reservation_digest(&r2));
    holds_close(&a);
    CHECK(a.digest == 0);
    holds_close(&b);
}

int main(void)
{
    drop_by_task();
    digest();

    holds set;
    holds_init(&set);
    vf_error err;
    vf_error_init(&err);
    sched_reservation r = reservation("t-1", "bm-001", 101, 500);
    hold *h = holds_add(&set, &r, &err);
    CHECK(h != NULL);
    if (h) {
        CHECK_STR(hold_task(h), "t-1");
        CHECK_STR(hold_node(h), "bm-001");
        CHECK(h->host_index == -1);
        sched_reservation back;
        hold_to_reservation(h, &back);
        CHECK(memcmp(&back, &r, sizeof r) == 0);
    }
    r = reservation("t-2", "bm-002", 0, 0); /* no vmid, never expires */
    CHECK(holds_add(&set, &r, &err) != NULL);
    r = reservation("t-3", "bm-001", 103, 300);
    CHECK(holds_add(&set, &r, &err) != NULL);
    r = reservation("t-4", "bm-003", 104, 900);
    CHECK(holds_add(&set, &r, &err) != NULL);
    CHECK(set.n_held == 4);
    CHECK(set.earliest_expiry == 300);
    CHECK(vmidset_has(&set.reserved_vmids, 101) && vmidset_has(&set.reserved_vmids, 103));
    CHECK(!vmidset_has(&set.reserved_vmids, 0));

    seen s = {.set = &set};
    CHECK(holds_drop_where(&set, on_node, "bm-001", note, &s) == 2);
    CHECK(s.n == 2);
    CHECK_STR(s.tasks[0], "t-1");
    CHECK_STR(s.tasks[1], "t-3");
    CHECK(s.vmid_still_reserved); /* on_drop runs before the vmid is freed */
    CHECK(!vmidset_has(&set.reserved_vmids, 101) && !vmidset_has(&set.reserved_vmids, 103));
    CHECK(set.n_held == 2);
    CHECK_STR(hold_task(&set.held[0]), "t-2");
    CHECK_STR(hold_task(&set.held[1]), "t-4");
    CHECK(set.earliest_expiry == 300); /* left as it was */
    holds_recompute_expiry(&set);
    CHECK(set.earliest_expiry == 900);

    int64_t now = 1000;
    CHECK(holds_drop_where(&set, expired, &now, NULL, NULL) == 1);
    CHECK(set.n_held == 1);
    holds_recompute_expiry(&set);
    CHECK(set.earliest_expiry == 0); /* t-2 never expires */

    holds_close(&set);
    CHECK(set.n_held == 0 && set.held == NULL);
    holds_close(&set); /* closed twice: nothing left to free */
    return test_summary();
}
