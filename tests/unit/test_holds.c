/* holds on its own: a hold keeps its names and figures, its vmid stays
 * reserved while it lives, the earliest expiry follows what is added and
 * what is recomputed, and dropping keeps the others in order, shows each
 * dropped hold before it goes, and frees the vmid. */
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

int main(void)
{
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
