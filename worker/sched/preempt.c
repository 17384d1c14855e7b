/* preempt: see preempt.h. The capacity arithmetic mirrors the filters in
 * plugins.h term for term (the same figures, the same order, the same
 * epsilon), so a host this module finds room on is one the engine's next
 * decision, after the victims are released, accepts. */
#include "preempt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "holds.h"
#include "plugins.h"

void sched_preemption_close(sched_preemption *p)
{
    if (!p)
        return;
    free(p->victims);
    memset(p, 0, sizeof *p);
}

bool sched_preempt_allowed(const sched_request *req, const vf_config *config)
{
    const char *name = req->priority_class[0] ? req->priority_class : NULL;
    if (!name && !req->has_priority)
        name = config->scheduler.default_priority_class;
    if (!name)
        return false;
    const config_priority_class *pc = config_priority_class_named(config, name);
    return pc && pc->preemption == CONFIG_PREEMPT_LOWER;
}

/* A hold that may be taken, with what ordering needs copied beside it. */
typedef struct candidate {
    int32_t host_index;
    int32_t priority;
    int64_t created; /* Unix ms */
    size_t hold_index;
} candidate;

/* The order victims are taken in on one host: lowest priority, then
 * oldest (the longer a hold has waited for its VM past the grace, the
 * likelier its client gave up), then the earlier hold (a total order: the
 * choice is the same on every worker with the same picture). */
static inline int by_eviction(const candidate *a, const candidate *b)
{
    if (a->priority != b->priority)
        return a->priority < b->priority ? -1 : 1;
    if (a->created != b->created)
        return a->created < b->created ? -1 : 1;
    if (a->hold_index != b->hold_index)
        return a->hold_index < b->hold_index ? -1 : 1;
    return 0;
}

static int by_eviction_qsort(const void *a, const void *b)
{
    return by_eviction(a, b);
}

/* One host's candidates into eviction order: a host holds a few dozen, for
 * which an insertion sort costs a fraction of qsort's (which copies through
 * a buffer and calls the comparison through a pointer). */
static void sort_for_eviction(candidate *c, size_t n)
{
    if (n > 64) {
        qsort(c, n, sizeof *c, by_eviction_qsort);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        candidate x = c[i];
        size_t j = i;
        for (; j > 0 && by_eviction(&x, &c[j - 1]) < 0; j--)
            c[j] = c[j - 1];
        c[j] = x;
    }
}

static bool capacity_reason(uint8_t reason)
{
    return reason == SCHED_REASON_VM_SLOTS || reason == SCHED_REASON_CPU ||
           reason == SCHED_REASON_MEMORY || reason == SCHED_REASON_DISK;
}

/* The capacity filters of plugins.h that are on, read once per choice. */
typedef struct fit_rule {
    const sched_params *params;
    const sched_request *req;
    bool slots, cpu, memory, disk;
    /* Custom resources (Resources filter): victims' are not counted as
     * freed, so only a host with them left now can take the request. */
    const sched_engine *engine;
    bool resources;
} fit_rule;

static fit_rule fit_rule_of(const sched_engine *engine, const sched_request *req)
{
    fit_rule r = {sched_engine_params(engine),
                  req,
                  sched_engine_filter_on(engine, SCHED_FILTER_VM_SLOTS),
                  sched_engine_filter_on(engine, SCHED_FILTER_CPU),
                  sched_engine_filter_on(engine, SCHED_FILTER_MEMORY),
                  sched_engine_filter_on(engine, SCHED_FILTER_DISK) && req->disk != 0,
                  engine,
                  sched_engine_filter_on(engine, SCHED_FILTER_RESOURCES) && req->resources.n};
    return r;
}

/* Those filters, over `h` carrying `load`. */
static bool fits(const fit_rule *r, const host *h, const sched_host_load *load)
{
    if (r->slots && !(h->current_vms + load->vms < h->max_vms))
        return false;
    if (r->cpu && !(h->allocated_cpu + load->cpu + r->req->cpu <=
                    sched_cpu_capacity(r->params, h) + SCHED_FIT_EPSILON))
        return false;
    if (r->memory &&
        !((double)h->allocated_memory + (double)load->memory + (double)r->req->memory <=
          sched_memory_capacity(r->params, h) + SCHED_FIT_EPSILON))
        return false;
    if (r->disk && !(h->storage - load->disk >= r->req->disk))
        return false;
    if (r->resources) {
        size_t index = (size_t)(h - sched_engine_snapshot(r->engine)->hosts);
        for (size_t i = 0; i < r->req->resources.n; i++)
            if (sched_engine_resource_free(r->engine, index, r->req->resources.items[i].name) <
                r->req->resources.items[i].amount)
                return false;
    }
    return true;
}

/* How many slots the host lacks for one more guest (0: none). */
static int64_t h_slots_over(const host *h, const sched_host_load *load)
{
    int64_t over = (int64_t)h->current_vms + load->vms - h->max_vms + 1;
    return over > 0 ? over : 0;
}

static void add_hold(sched_host_load *load, const hold *h, int sign)
{
    load->cpu += sign * h->cpu;
    load->memory += sign * h->memory;
    load->disk += sign * h->disk;
    load->vms += sign;
}

/* What makes a hold one the request may take. */
typedef struct eligible {
    int32_t priority;       /* the request's: a victim's is strictly lower */
    int64_t not_after_ms;   /* a victim was placed no later (the grace) */
    const uint8_t *reasons; /* a victim's host was refused for capacity alone */
    size_t n_hosts;
} eligible;

/* A hold the request may take: preemptible, of a lower priority, placed
 * before the grace, on a host of the snapshot refused for capacity alone. */
static bool is_candidate(const hold *h, const eligible *e)
{
    return h->preemptible && h->priority < e->priority && h->created <= e->not_after_ms &&
           h->host_index >= 0 && (size_t)h->host_index < e->n_hosts &&
           capacity_reason(e->reasons[h->host_index]);
}

/* How one host's victim set compares: fewer, then lower top priority,
 * then older (the newest victim as old as possible). */
typedef struct verdict {
    size_t n;
    int32_t max_priority;
    int64_t newest; /* Unix ms */
} verdict;

static bool better(const verdict *a, const verdict *b)
{
    if (a->n != b->n)
        return a->n < b->n;
    if (a->max_priority != b->max_priority)
        return a->max_priority < b->max_priority;
    return a->newest < b->newest;
}

/* Add victim `c` to verdict `v`. */
static void count_victim(verdict *v, const candidate *c)
{
    if (v->n == 0 || c->priority > v->max_priority)
        v->max_priority = c->priority;
    if (v->n == 0 || c->created > v->newest)
        v->newest = c->created;
    v->n++;
}

/* One host's candidates c[0..n) (in eviction order), taken away all at
 * once from `load`, leave room: which must go? Give back the most
 * important first (the last in eviction order); what cannot come back is
 * a victim (kube-scheduler's reprieve). */
static verdict by_reprieve(const fit_rule *rule, const host *hst, const holds *set,
                           sched_host_load load, const candidate *c, size_t n, bool *victim)
{
    verdict v = {0, 0, 0};
    for (size_t k = n; k-- > 0;) {
        const hold *h = &set->held[c[k].hold_index];
        add_hold(&load, h, +1);
        if (fits(rule, hst, &load))
            continue;
        add_hold(&load, h, -1);
        victim[k] = true;
        count_victim(&v, &c[k]);
    }
    return v;
}

/* The same host, aiming at the fewest victims: from `load` as it is,
 * take the candidates that cover most of what is short first (a
 * reprieve gives back the lower-priority small ones and may leave one
 * large hold that alone would do), until the request fits; then give back,
 * the most important first, whatever is not needed after all. `useful`
 * and `order` are scratch of n entries. */
static verdict by_size(const fit_rule *rule, const host *hst, const holds *set,
                       sched_host_load load, const candidate *c, size_t n, bool *victim,
                       double *useful, size_t *order)
{
    const sched_request *req = rule->req;
    double need_slots = (double)(h_slots_over(hst, &load));
    double need_cpu =
        rule->cpu ? hst->allocated_cpu + load.cpu + req->cpu - sched_cpu_capacity(rule->params, hst)
                  : 0;
    double need_memory = rule->memory
                             ? (double)hst->allocated_memory + (double)load.memory +
                                   (double)req->memory - sched_memory_capacity(rule->params, hst)
                             : 0;
    double need_disk = rule->disk ? (double)(req->disk - (hst->storage - load.disk)) : 0;
    for (size_t k = 0; k < n; k++) {
        const hold *h = &set->held[c[k].hold_index];
        double u = 0;
        if (rule->slots && need_slots > 0)
            u += 1.0 / need_slots;
        if (need_cpu > 0)
            u += (h->cpu < need_cpu ? h->cpu : need_cpu) / need_cpu;
        if (need_memory > 0)
            u += ((double)h->memory < need_memory ? (double)h->memory : need_memory) / need_memory;
        if (need_disk > 0)
            u += ((double)h->disk < need_disk ? (double)h->disk : need_disk) / need_disk;
        useful[k] = u;
        /* Most useful first; among equals, eviction order (a stable sort). */
        size_t j = k;
        for (; j > 0 && useful[order[j - 1]] < u; j--)
            order[j] = order[j - 1];
        order[j] = k;
    }
    verdict v = {0, 0, 0};
    for (size_t i = 0; i < n && !fits(rule, hst, &load); i++) {
        add_hold(&load, &set->held[c[order[i]].hold_index], -1);
        victim[order[i]] = true;
    }
    for (size_t k = n; k-- > 0;) {
        if (!victim[k])
            continue;
        const hold *h = &set->held[c[k].hold_index];
        add_hold(&load, h, +1);
        if (fits(rule, hst, &load)) {
            victim[k] = false;
            continue;
        }
        add_hold(&load, h, -1);
        count_victim(&v, &c[k]);
    }
    return v;
}

int sched_preempt_choose(const sched_engine *engine, const sched_request *req, int32_t priority,
                         int64_t not_after_ms, const sched_decision *decision,
                         sched_preemption *out, vf_error *err)
{
    memset(out, 0, sizeof *out);
    const hostset *hosts = sched_engine_snapshot(engine);
    const holds *set = sched_engine_holds(engine);
    if (decision->placed || decision->n_feasible > 0 || !decision->host_reasons || !hosts)
        return 0;
    eligible e = {priority, not_after_ms, decision->host_reasons, hosts->n_hosts};
    /* Grouped by host with a counting sort (linear: at 10,000 full hosts
     * there are hundreds of thousands of candidates); each host's few are
     * then sorted into eviction order only when taking them all would make
     * room. */
    int rc = -1;
    candidate *cands = NULL;
    bool *victim = NULL, *alt = NULL;
    double *useful = NULL;
    size_t *order = NULL;
    size_t *start = calloc(hosts->n_hosts + 1, sizeof *start);
    if (!start)
        goto nomem;
    for (size_t i = 0; i < set->n_held; i++)
        if (is_candidate(&set->held[i], &e))
            start[set->held[i].host_index + 1]++;
    for (size_t i = 0; i < hosts->n_hosts; i++)
        start[i + 1] += start[i];
    size_t n = start[hosts->n_hosts];
    if (n == 0) {
        rc = 0;
        goto out;
    }
    cands = malloc(n * sizeof *cands);
    victim = calloc(n, sizeof *victim);
    alt = malloc(n * sizeof *alt);
    useful = malloc(n * sizeof *useful);
    order = malloc(n * sizeof *order);
    if (!cands || !victim || !alt || !useful || !order)
        goto nomem;
    for (size_t i = 0; i < set->n_held; i++) {
        const hold *h = &set->held[i];
        if (is_candidate(h, &e))
            cands[start[h->host_index]++] = (candidate){h->host_index, h->priority, h->created, i};
    }
    /* start[i] is now the end of host i's group (the start of host i + 1's). */

    fit_rule rule = fit_rule_of(engine, req);
    bool have_best = false;
    size_t best_from = 0, best_to = 0;
    verdict best = {0, 0, 0};
    for (size_t from = 0; from < n;) {
        size_t hi = (size_t)cands[from].host_index;
        size_t to = start[hi];
        const host *hst = &hosts->hosts[hi];
        sched_host_load load = *sched_engine_host_load(engine, hi);
        for (size_t k = from; k < to; k++)
            add_hold(&load, &set->held[cands[k].hold_index], -1);
        out->hosts_examined++;
        if (fits(&rule, hst, &load)) {
            sort_for_eviction(cands + from, to - from);
            sched_host_load before = *sched_engine_host_load(engine, hi);
            size_t m = to - from;
            verdict v = by_reprieve(&rule, hst, set, load, cands + from, m, victim + from);
            /* The kube-style set is the lowest in priority, not always the
             * smallest: try for fewer victims when there were several. */
            if (v.n > 1) {
                memset(alt, 0, m * sizeof *alt);
                verdict fewer =
                    by_size(&rule, hst, set, before, cands + from, m, alt, useful, order);
                if (fewer.n > 0 && better(&fewer, &v)) {
                    v = fewer;
                    memcpy(victim + from, alt, m * sizeof *alt);
                }
            }
            /* v.n is 0 only when the host fits without taking anything: a
             * picture the decision did not see; nothing to preempt there. */
            if (v.n > 0 && (!have_best || better(&v, &best))) {
                have_best = true;
                best = v;
                best_from = from;
                best_to = to;
            }
        }
        from = to;
    }
    if (have_best) {
        out->victims = calloc(best.n, sizeof *out->victims);
        if (!out->victims)
            goto nomem;
        for (size_t k = best_from; k < best_to; k++) {
            if (!victim[k])
                continue;
            const hold *h = &set->held[cands[k].hold_index];
            sched_victim *v = &out->victims[out->n_victims++];
            snprintf(v->task_id, sizeof v->task_id, "%s", hold_task(h));
            v->priority = h->priority;
            v->created = h->created;
            v->vmid = h->vmid;
            v->expires = h->expires;
            v->cpu = h->cpu;
            v->memory = h->memory;
            v->disk = h->disk;
        }
        out->found = true;
        out->host_index = (size_t)cands[best_from].host_index;
        out->node = &hosts->hosts[out->host_index];
        out->max_priority = best.max_priority;
    }
    rc = 0;
    goto out;
nomem:
    vf_error_set(err, VF_ENOMEM, "out of memory choosing reservations to preempt");
out:
    free(cands);
    free(victim);
    free(alt);
    free(useful);
    free(order);
    free(start);
    if (rc < 0) {
        size_t examined = out->hosts_examined;
        sched_preemption_close(out);
        out->hosts_examined = examined;
    }
    return rc;
}
