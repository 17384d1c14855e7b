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
    return store_group_read(h->store, req->group, now, &g->row, count_member, &c, err);
}

void task_group_close(task_group *g)
{
    if (!g)
        return;
    free(g->members);
    g->members = NULL;
}

/* The request's spread as the store records it (key "" when none). */
static store_group_spread spread_of(const sched_request *req)
{
    store_group_spread s = {.max_skew = req->spread.max_skew,
                            .min_domains = req->spread.soft ? 0 : req->spread.min_domains};
    snprintf(s.key, sizeof s.key, "%s", req->spread.key);
    snprintf(s.when, sizeof s.when, "%s", sched_spread_when_name(req->spread.soft));
    return s;
}

/* "none" or "rack, max_skew 1, do_not_schedule, min_domains 3". */
static void spread_words(const store_group_spread *s, char *out, size_t size)
{
    if (!s->key[0])
        snprintf(out, size, "none");
    else
        snprintf(out, size, "%s, max_skew %lld, %s, min_domains %lld", s->key,
                 (long long)s->max_skew, s->when, (long long)s->min_domains);
}

bool task_group_mismatch(const task_group *g, const sched_request *req, char *why, size_t size)
{
    if (g->n_members == 0)
        return false;
    const char *policy = sched_group_policy_name(req->group_policy);
    store_group_spread asked = spread_of(req);
    const store_group_spread *had = &g->row.spread;
    bool same_spread =
        strcmp(asked.key, had->key) == 0 &&
        (!asked.key[0] || (asked.max_skew == had->max_skew && strcmp(asked.when, had->when) == 0 &&
                           asked.min_domains == had->min_domains));
    if (strcmp(g->row.policy, policy) == 0 && g->row.max_per_host == req->group_max_per_host &&
        same_spread)
        return false;
    char asked_words[128] = "", had_words[128] = "";
    if (asked.key[0] || had->key[0]) {
        spread_words(&asked, asked_words, sizeof asked_words);
        spread_words(had, had_words, sizeof had_words);
    }
    snprintf(why, size,
             "group %s: policy %s, max_per_host %lld%s%s given, but its %u members were placed "
             "under policy %s, max_per_host %lld (0: none)%s%s",
             req->group, policy[0] ? policy : "(none)", (long long)req->group_max_per_host,
             asked_words[0] ? ", spread " : "", asked_words, g->n_members,
             g->row.policy[0] ? g->row.policy : "(none)", (long long)g->row.max_per_host,
             had_words[0] ? ", spread " : "", had_words);
    return true;
}

int task_group_claim(const task_group *g, task_handler *h, const sched_request *req, const char *at,
                     vf_error *err)
{
    store_group_spread spread = spread_of(req);
    return store_group_claim(h->store, req->group, sched_group_policy_name(req->group_policy),
                             req->group_max_per_host, &spread, g->row.generation, at, err);
}
