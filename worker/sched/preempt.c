/* preempt: see preempt.h. The capacity arithmetic mirrors the filters in
 * plugins.h term for term (the same figures, the same order, the same
 * epsilon), so a host this module finds room on is one the engine's next
 * decision, after the victims are released, accepts. */
#include "preempt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "grow.h"
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
    const char *task_id; /* the hold's */
} candidate;

/* The order victims are taken in on one host: lowest priority, then
 * oldest (the longer a hold has waited for its VM past the grace, the
 * likelier its client gave up), then by task id: a total order that does
 * not depend on the order the holds came in, so the choice is the same on
 * every worker with the same picture, and in a replay (explain --replay),
 * which rebuilds the holds of one millisecond (a batch's claims) in an order
 * of its own. */
static inline int by_eviction(const candidate *a, const candidate *b)
{
    if (a->priority != b->priority)
        return a->priority < b->priority ? -1 : 1;
    if (a->created != b->created)
        return a->created < b->created ? -1 : 1;
    int by_task = strcmp(a->task_id, b->task_id);
    if (by_task != 0)
        return by_task;
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

/* Whether host `index` has the custom resources asked for left now (a
 * victim's are not counted as freed). */
static bool resources_left(const fit_rule *r, size_t index)
{
    for (size_t i = 0; i < r->req->resources.n; i++)
        if (sched_engine_resource_free(r->engine, index, r->req->resources.items[i].name) <
            r->req->resources.items[i].amount)
            return false;
    return true;
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
    return !r->resources ||
           resources_left(r, (size_t)(h - sched_engine_snapshot(r->engine)->hosts));
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
    int32_t priority;     /* the request's: a victim's is strictly lower */
    int64_t not_after_ms; /* a victim was placed no later (the grace) */
} eligible;

/* A hold the request may take: preemptible, of a lower priority, placed
 * before the grace. The one test of which holds are candidates (the hosts
 * they stand on are the ones refused for capacity alone: list_prospects). */
static bool is_candidate(const hold *h, const eligible *e)
{
    return h->preemptible && h->priority < e->priority && h->created <= e->not_after_ms;
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

/* ---- finding the host without walking every hold ---- */

/* A host where preemption may free room, and the best verdict it could
 * give: no victim set there has fewer victims, a lower top priority or an
 * older newest victim (holds_host's summary of the host's preemptible
 * holds, a superset of its candidates: those past the grace). */
typedef struct prospect {
    size_t host;
    verdict best;
} prospect;

static bool same_verdict(const verdict *a, const verdict *b)
{
    return !better(a, b) && !better(b, a);
}

/* Whether prospect a is looked at before b: the better bound, then the
 * host first in name order (the order hosts win ties in). */
static bool sooner(const prospect *a, const prospect *b)
{
    return better(&a->best, &b->best) || (same_verdict(&a->best, &b->best) && a->host < b->host);
}

/* The victims a host needs at least for `need` of a resource short, each
 * freeing at most `most` (0 when nothing is short); SIZE_MAX when all of
 * them together (`all`) cannot cover it. */
static size_t at_least(double need, double most, double all)
{
    double margin = 1e-6 * (1.0 + fabs(need));
    if (need <= SCHED_FIT_EPSILON + margin)
        return 0;
    if (all + margin < need - SCHED_FIT_EPSILON || !(most > 0))
        return SIZE_MAX;
    return (size_t)ceil((need - SCHED_FIT_EPSILON - margin) / most);
}

/* Host i as a prospect for a request `e` allows: false when it holds no
 * candidate, or taking every preemptible hold there would not make room.
 * Reads the engine's packed figures (sched_hot): a pass over thousands of
 * hosts stays in cache. */
static bool prospect_of(const fit_rule *rule, const holds *set, size_t i, const eligible *e,
                        prospect *out)
{
    const hold_host *hh = holds_host(set, i);
    if (!hh || hh->preemptible == 0 || hh->least_priority >= e->priority ||
        hh->oldest > e->not_after_ms)
        return false;
    const sched_engine *engine = rule->engine;
    const sched_hot *h = &engine->hot[i];
    const sched_host_load *load = &engine->load[i];
    const sched_request *req = rule->req;
    if (rule->resources && !resources_left(rule, i))
        return false;
    size_t n = 1;
    if (rule->slots) {
        int64_t slots = (int64_t)h->current_vms + load->vms - h->max_vms + 1;
        if (slots > (int64_t)hh->preemptible)
            return false;
        n = slots > (int64_t)n ? (size_t)slots : n;
    }
    size_t need[3] = {0, 0, 0};
    if (rule->cpu)
        need[0] =
            at_least(sched_cpu_after(h, load, req->cpu) - h->cpu_capacity, hh->most_cpu, hh->cpu);
    if (rule->memory)
        need[1] = at_least(sched_memory_after(h, load, (double)req->memory) - h->memory_capacity,
                           (double)hh->most_memory, (double)hh->memory);
    if (rule->disk)
        need[2] = at_least((double)(req->disk - (h->storage - load->disk)), (double)hh->most_disk,
                           (double)hh->disk);
    for (int r = 0; r < 3; r++) {
        if (need[r] == SIZE_MAX)
            return false;
        n = need[r] > n ? need[r] : n;
    }
    *out = (prospect){i, {n, hh->least_priority, hh->oldest}};
    return true;
}

/* Whether host i was refused for capacity alone. */
static bool refused_for_capacity(const sched_decision *decision, size_t i)
{
    return decision->host_reasons ? capacity_reason(decision->host_reasons[i]) : true;
}

/* The prospects among the hosts refused for capacity alone: by the
 * decision's per-host reasons, or (a failure the index decided without
 * them) the request's (pool, dedication) group, all refused for capacity.
 * Returns how many, in `out` (room for every host). */
static size_t list_prospects(const sched_engine *engine, const fit_rule *rule,
                             const sched_decision *decision, const eligible *e, prospect *out)
{
    const holds *set = sched_engine_holds(engine);
    size_t n = 0, n_hosts = sched_engine_snapshot(engine)->n_hosts;
    if (decision->host_reasons) {
        for (size_t i = 0; i < n_hosts && i < decision->n_hosts; i++)
            if (refused_for_capacity(decision, i) && prospect_of(rule, set, i, e, &out[n]))
                n++;
        return n;
    }
    size_t n_members = 0;
    const uint32_t *members = fitindex_members(engine->index, engine_pool_of(engine, rule->req),
                                               rule->req->dedicated, &n_members);
    for (size_t k = 0; k < n_members; k++)
        if (prospect_of(rule, set, members[k], e, &out[n]))
            n++;
    return n;
}

/* The best choice so far: its host, verdict and victims. */
typedef struct choice {
    bool found;
    size_t host;
    verdict v;
    candidate *cands; /* the host's candidates, in eviction order */
    bool *victim;     /* per candidate */
    size_t n, cap;
} choice;

/* Scratch for one host's candidates (grown as hosts need). */
typedef struct scratch {
    candidate *cands;
    bool *victim, *alt;
    double *useful;
    size_t *order;
    size_t cap;
} scratch;

static int scratch_fit(scratch *sc, size_t n)
{
    if (n <= sc->cap)
        return 0;
    if (resize_array((void **)&sc->cands, n, sizeof *sc->cands) < 0 ||
        resize_array((void **)&sc->victim, n, sizeof *sc->victim) < 0 ||
        resize_array((void **)&sc->alt, n, sizeof *sc->alt) < 0 ||
        resize_array((void **)&sc->useful, n, sizeof *sc->useful) < 0 ||
        resize_array((void **)&sc->order, n, sizeof *sc->order) < 0)
        return -1;
    sc->cap = n;
    return 0;
}

/* Host hi's candidates into sc->cands; how many (-1: out of memory). */
static long gather(const holds *set, size_t hi, const eligible *e, scratch *sc)
{
    const hold_host *hh = holds_host(set, hi);
    size_t n = 0;
    for (uint32_t p = hh->head; p != HOLDS_NONE; p = set->held[p].next_on_host) {
        const hold *h = &set->held[p];
        if (!is_candidate(h, e))
            continue;
        if (scratch_fit(sc, n + 1) < 0)
            return -1;
        sc->cands[n++] = (candidate){h->host_index, h->priority, h->created, p, h->names};
    }
    return (long)n;
}

/* The victims on host hi (by_reprieve, then by_size when it took
 * several), kept in `best` when they beat it. Returns 0, or -1 when out of
 * memory. */
static int examine(const fit_rule *rule, const holds *set, size_t hi, const eligible *e,
                   scratch *sc, choice *best)
{
    long got = gather(set, hi, e, sc);
    if (got < 0)
        return -1;
    size_t m = (size_t)got;
    const host *hst = &sched_engine_snapshot(rule->engine)->hosts[hi];
    sched_host_load before = *sched_engine_host_load(rule->engine, hi);
    sched_host_load load = before;
    for (size_t k = 0; k < m; k++)
        add_hold(&load, &set->held[sc->cands[k].hold_index], -1);
    if (m == 0 || !fits(rule, hst, &load))
        return 0;
    sort_for_eviction(sc->cands, m);
    memset(sc->victim, 0, m * sizeof *sc->victim);
    verdict v = by_reprieve(rule, hst, set, load, sc->cands, m, sc->victim);
    /* The kube-style set is the lowest in priority, not always the
     * smallest: try for fewer victims when there were several. */
    if (v.n > 1) {
        memset(sc->alt, 0, m * sizeof *sc->alt);
        verdict fewer =
            by_size(rule, hst, set, before, sc->cands, m, sc->alt, sc->useful, sc->order);
        if (fewer.n > 0 && better(&fewer, &v)) {
            v = fewer;
            memcpy(sc->victim, sc->alt, m * sizeof *sc->alt);
        }
    }
    /* v.n is 0 only when the host fits without taking anything: a picture
     * the decision did not see; nothing to preempt there. */
    if (v.n == 0 ||
        (best->found && !better(&v, &best->v) && !(same_verdict(&v, &best->v) && hi < best->host)))
        return 0;
    if (m > best->cap) {
        if (resize_array((void **)&best->cands, m, sizeof *best->cands) < 0 ||
            resize_array((void **)&best->victim, m, sizeof *best->victim) < 0)
            return -1;
        best->cap = m;
    }
    memcpy(best->cands, sc->cands, m * sizeof *sc->cands);
    memcpy(best->victim, sc->victim, m * sizeof *sc->victim);
    *best = (choice){true, hi, v, best->cands, best->victim, m, best->cap};
    return 0;
}

/* Whether prospect p could still beat the best choice (or tie it on a
 * host sooner in name order). */
static bool could_win(const prospect *p, const choice *best)
{
    return !best->found || better(&p->best, &best->v) ||
           (same_verdict(&p->best, &best->v) && p->host < best->host);
}

/* The prospects best bound first, each host examined while its bound could
 * still win: the soonest is found by a pass, and after each examination
 * the prospects that cannot win any more are dropped (usually all at
 * once: a host's victims often reach its bound). `every`: examine all.
 * Returns 0, or -1 when out of memory. */
static int search(const fit_rule *rule, const holds *set, const eligible *e, prospect *list,
                  size_t n, bool every, choice *best, size_t *examined)
{
    scratch sc = {0};
    int rc = 0;
    while (rc == 0 && n > 0) {
        size_t soonest = 0;
        for (size_t k = 1; k < n; k++)
            if (sooner(&list[k], &list[soonest]))
                soonest = k;
        prospect top = list[soonest];
        list[soonest] = list[--n];
        (*examined)++;
        rc = examine(rule, set, top.host, e, &sc, best);
        size_t kept = 0;
        for (size_t k = 0; k < n; k++)
            if (every || could_win(&list[k], best))
                list[kept++] = list[k];
        n = kept;
    }
    free(sc.cands);
    free(sc.victim);
    free(sc.alt);
    free(sc.useful);
    free(sc.order);
    return rc;
}

/* The chosen host's victims into out. Returns 0, or -1 when out of memory. */
static int fill_victims(const sched_engine *engine, const holds *set, const choice *best,
                        sched_preemption *out)
{
    out->victims = calloc(best->v.n, sizeof *out->victims);
    if (!out->victims)
        return -1;
    for (size_t k = 0; k < best->n; k++) {
        if (!best->victim[k])
            continue;
        const hold *h = &set->held[best->cands[k].hold_index];
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
    out->host_index = best->host;
    out->node = &sched_engine_snapshot(engine)->hosts[best->host];
    out->max_priority = best->v.max_priority;
    return 0;
}

/* sched_preempt_choose; `every`: examine every prospect. */
static int choose(const sched_engine *engine, const sched_request *req, const eligible *e,
                  const sched_decision *decision, bool every, sched_preemption *out, vf_error *err)
{
    memset(out, 0, sizeof *out);
    const hostset *hosts = sched_engine_snapshot(engine);
    if (decision->placed || decision->n_feasible > 0 || !hosts ||
        (!decision->host_reasons && !engine_decided_lazily(engine, decision)))
        return 0;
    const holds *set = sched_engine_holds(engine);
    fit_rule rule = fit_rule_of(engine, req);
    choice best = {0};
    int rc = -1;
    prospect *prospects = malloc((hosts->n_hosts ? hosts->n_hosts : 1) * sizeof *prospects);
    if (!prospects)
        goto out;
    size_t n = list_prospects(engine, &rule, decision, e, prospects);
    if (search(&rule, set, e, prospects, n, every, &best, &out->hosts_examined) < 0)
        goto out;
    rc = best.found ? fill_victims(engine, set, &best, out) : 0;
out:
    free(prospects);
    free(best.cands);
    free(best.victim);
    if (rc < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory choosing reservations to preempt");
        size_t examined = out->hosts_examined;
        sched_preemption_close(out);
        out->hosts_examined = examined;
    }
    return rc;
}

int sched_preempt_choose(const sched_engine *engine, const sched_request *req, int32_t priority,
                         int64_t not_after_ms, const sched_decision *decision,
                         sched_preemption *out, vf_error *err)
{
    eligible e = {priority, not_after_ms};
    return choose(engine, req, &e, decision, false, out, err);
}

int sched_preempt_choose_every(const sched_engine *engine, const sched_request *req,
                               int32_t priority, int64_t not_after_ms,
                               const sched_decision *decision, sched_preemption *out, vf_error *err)
{
    eligible e = {priority, not_after_ms};
    return choose(engine, req, &e, decision, true, out, err);
}

int sched_preempt_end_victim(sched_engine *engine, const sched_victim *v, const char *node,
                             vf_error *err)
{
    (void)sched_engine_release(engine, v->task_id);
    if (!v->vmid || !v->expires)
        return 0;
    sched_reservation kept;
    memset(&kept, 0, sizeof kept);
    snprintf(kept.task_id, sizeof kept.task_id, "%s", v->task_id);
    snprintf(kept.node, sizeof kept.node, "%s", node);
    kept.vmid = v->vmid;
    kept.expires = v->expires;
    kept.kind = SCHED_HOLD_VMID_ONLY;
    return sched_engine_reserve(engine, &kept, err);
}
