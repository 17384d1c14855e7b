#include "task_group.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_reservations.h"

typedef struct counting {
    task_group *g;
    task_handler *h;
} counting;

static int count_member(const store_group_member *m, void *ctx)
{
    counting *c = ctx;
    const host *node = m->node ? hostset_find(c->h->hosts, m->node) : NULL;
    if (!node)
        return 0; /* a host the snapshot lacks holds no one a decision could meet */
    /* Ended because an inventory showed its VM: a member while the VM is
     * there, in this snapshot. */
    if (!m->held &&
        !(m->vmid > 0 && sched_engine_shows_guest(c->h->engine, (uint32_t)m->vmid, m->node)))
        return 0;
    c->g->members[node - c->h->hosts->hosts]++;
    c->g->n_members++;
    return 0;
}

static void count_pending(const char *node, void *ctx)
{
    counting *c = ctx;
    const host *on = hostset_find(c->h->hosts, node);
    if (!on)
        return;
    c->g->members[on - c->h->hosts->hosts]++;
    c->g->n_members++;
}

int task_group_read(task_group *g, task_handler *h, const sched_request *req, vf_error *err)
{
    memset(g, 0, sizeof *g);
    g->n_hosts = h->hosts->n_hosts;
    g->members = calloc(g->n_hosts ? g->n_hosts : 1, sizeof *g->members);
    if (!g->members) {
        vf_error_set(err, VF_ENOMEM, "out of memory reading group %s", req->group);
        return -1;
    }
    char now[STORE_TIME_SIZE];
    if (store_reservation_clock(h->store, now, err) < 0)
        return -1;
    counting c = {g, h};
    if (store_group_read(h->store, req->group, now, &g->row, count_member, &c, err) < 0)
        return -1;
    /* Members this batch placed before, claimed with its commit. */
    if (h->book)
        reservation_book_pending_members(h->book, req->group, count_pending, &c);
    return 0;
}

void task_group_close(task_group *g)
{
    if (!g)
        return;
    free(g->members);
    g->members = NULL;
}

bool task_group_mismatch(const task_group *g, const sched_request *req, char *why, size_t size)
{
    if (g->n_members == 0)
        return false;
    const char *policy = sched_group_policy_name(req->group_policy);
    if (strcmp(g->row.policy, policy) == 0 && g->row.max_per_host == req->group_max_per_host)
        return false;
    snprintf(why, size,
             "group %s: policy %s, max_per_host %lld given, but its %u members were placed "
             "under policy %s, max_per_host %lld (0: none)",
             req->group, policy, (long long)req->group_max_per_host, g->n_members, g->row.policy,
             (long long)g->row.max_per_host);
    return true;
}

int task_group_claim(const task_group *g, task_handler *h, const sched_request *req, const char *at,
                     vf_error *err)
{
    return store_group_claim(h->store, req->group, sched_group_policy_name(req->group_policy),
                             req->group_max_per_host, g->row.generation, at, err);
}
