/* suggest: see suggest.h. The arithmetic mirrors the capacity filters in
 * plugins.h exactly (the same committed figures and the same epsilon), so a
 * suggestion is as minimal as the filters are strict. */
#include "suggest.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "plugins.h"

typedef sched_room room;

static room room_of(const sched_engine *engine, const host *h, size_t i)
{
    return sched_host_room(sched_engine_params(engine), h, sched_engine_host_load(engine, i));
}

/* The largest whole amount that fits in `left` (what the filters allow). */
static int64_t whole_fit(double left)
{
    double f = floor(left + SCHED_FIT_EPSILON);
    return f > 0 ? (int64_t)f : 0;
}

/* The smallest whole amount to free so that `want` fits in `left`. */
static int64_t whole_shortfall(double want, double left)
{
    double need = want - left;
    return need > SCHED_FIT_EPSILON ? (int64_t)ceil(need - SCHED_FIT_EPSILON) : 0;
}

/* The change on a host a capacity filter rejected (or that passed them
 * all, when the decision placed elsewhere): what to free, and what it takes. */
typedef struct change {
    int64_t free_cpu, free_memory, free_disk, free_slots; /* to free; 0: none */
    bool fits;                                            /* a smaller request fits */
    int64_t fit_cpu, fit_memory, fit_disk;                /* that request */
} change;

/* Which capacity filters apply to the request. */
typedef struct filters {
    bool slots, cpu, memory, disk;
} filters;

static filters filters_of(const sched_engine *engine, const sched_request *req)
{
    filters f = {sched_engine_filter_on(engine, SCHED_FILTER_VM_SLOTS),
                 sched_engine_filter_on(engine, SCHED_FILTER_CPU),
                 sched_engine_filter_on(engine, SCHED_FILTER_MEMORY),
                 sched_engine_filter_on(engine, SCHED_FILTER_DISK) && req->disk != 0};
    return f;
}

static change change_on(const sched_engine *engine, const filters *on, const sched_request *req,
                        const host *h, size_t i)
{
    room r = room_of(engine, h, i);
    bool slots_on = on->slots, cpu_on = on->cpu, memory_on = on->memory, disk_on = on->disk;
    change c = {0};
    c.free_cpu = cpu_on ? whole_shortfall(req->cpu, r.cpu) : 0;
    c.free_memory = memory_on ? whole_shortfall((double)req->memory, r.memory) : 0;
    c.free_disk = disk_on && r.disk < req->disk ? req->disk - r.disk : 0;
    c.free_slots = slots_on && r.slots < 1 ? 1 - (int64_t)r.slots : 0;
    /* A smaller request needs a slot and at least 1 vCPU and 1 MiB. */
    int64_t fit_cpu = cpu_on ? whole_fit(r.cpu) : req->cpu;
    int64_t fit_memory = memory_on ? whole_fit(r.memory) : req->memory;
    int64_t fit_disk = disk_on ? (r.disk > 0 ? r.disk : 0) : req->disk;
    c.fits = !c.free_slots && fit_cpu >= 1 && fit_memory >= 1;
    c.fit_cpu = fit_cpu < req->cpu ? fit_cpu : req->cpu;
    c.fit_memory = fit_memory < req->memory ? fit_memory : req->memory;
    c.fit_disk = fit_disk < req->disk ? fit_disk : req->disk;
    return c;
}

/* The change relative to the request: the smaller, the sooner listed. */
static double change_cost(const change *c, const sched_request *req)
{
    return (double)c->free_cpu / (req->cpu > 0 ? req->cpu : 1) +
           (double)c->free_memory / (double)(req->memory > 0 ? req->memory : 1) +
           (double)c->free_disk / (double)(req->disk > 0 ? req->disk : 1) + (double)c->free_slots;
}

static json_t *change_json(const change *c)
{
    json_t *entry = json_object();
    json_t *release = json_object();
    if (c->free_cpu)
        json_object_set_new(release, "cpu", json_integer(c->free_cpu));
    if (c->free_memory)
        json_object_set_new(release, "memory_mib", json_integer(c->free_memory));
    if (c->free_disk)
        json_object_set_new(release, "disk_gib", json_integer(c->free_disk));
    if (c->free_slots)
        json_object_set_new(release, "vm_slots", json_integer(c->free_slots));
    json_object_set_new(entry, "free", release);
    if (c->fits)
        json_object_set_new(entry, "fits",
                            json_pack("{s:I, s:I, s:I}", "cpu", (json_int_t)c->fit_cpu,
                                      "memory_mib", (json_int_t)c->fit_memory, "disk_gib",
                                      (json_int_t)c->fit_disk));
    return entry;
}

/* A host kept for the list: the `max` cheapest capacity changes, then the
 * first hosts held by a constraint. */
typedef struct pick {
    size_t index;
    double cost;
} pick;

/* Whether a comes before b: the cheaper, then the lower index. */
static bool cheaper(const pick *a, const pick *b)
{
    return a->cost < b->cost || (a->cost == b->cost && a->index < b->index);
}

/* Insert into `best` (sorted by cost, then index; at most `max`), whatever
 * order the hosts come in. */
static void keep_cheapest(pick *best, size_t *n, size_t max, pick p)
{
    if (*n == max && (max == 0 || !cheaper(&p, &best[max - 1])))
        return;
    size_t at = *n < max ? (*n)++ : max - 1;
    while (at > 0 && cheaper(&p, &best[at - 1])) {
        best[at] = best[at - 1];
        at--;
    }
    best[at] = p;
}

/* Traits and custom resources: what the host lacks, in words ("needs trait
 * CUSTOM_GPU", "needs 2 more gpu (1 of 4 left)"). */
static json_t *traits_constraint(const sched_engine *engine, const sched_request *req,
                                 sched_reason reason, const host *h, size_t i)
{
    char detail[160] = "";
    const char *kind = reason == SCHED_REASON_RESOURCES ? "resources" : "traits";
    if (reason == SCHED_REASON_TRAIT_MISSING) {
        for (size_t t = 0; t < req->required_traits.n && !detail[0]; t++)
            if (!host_traits_has(h->traits, req->required_traits.names[t]))
                snprintf(detail, sizeof detail, "needs trait %s", req->required_traits.names[t]);
    } else if (reason == SCHED_REASON_TRAIT_FORBIDDEN) {
        for (size_t t = 0; t < req->forbidden_traits.n && !detail[0]; t++)
            if (host_traits_has(h->traits, req->forbidden_traits.names[t]))
                snprintf(detail, sizeof detail, "carries forbidden trait %s",
                         req->forbidden_traits.names[t]);
    } else {
        for (size_t r = 0; r < req->resources.n && !detail[0]; r++) {
            const resource_amount *want = &req->resources.items[r];
            int64_t left = sched_engine_resource_free(engine, i, want->name);
            if (left >= want->amount)
                continue;
            int64_t total = host_traits_amount(h->traits, want->name);
            if (total == 0)
                snprintf(detail, sizeof detail, "needs %lld %s; the host has none",
                         (long long)want->amount, want->name);
            else
                snprintf(detail, sizeof detail, "needs %lld more %s (%lld of %lld left)",
                         (long long)(want->amount - left), want->name, (long long)left,
                         (long long)total);
        }
    }
    return json_pack("{s:s, s:s}", "constraint", kind, "detail", detail);
}

/* The spread in the way on host `i`: its domain holds too many of the
 * request's group already, and which domains at the minimum lack room (what
 * would let the spread go on), or the host carries no label of the key. */
static json_t *spread_constraint(const sched_engine *engine, const sched_request *req,
                                 sched_reason reason, size_t i)
{
    const spread_view *v = sched_engine_spread(engine);
    char detail[512];
    if (!v || reason == SCHED_REASON_SPREAD_LABEL || v->domain_of[i] == SPREAD_NO_DOMAIN) {
        snprintf(detail, sizeof detail, "the host has no %s label", req->spread.key);
        return json_pack("{s:s, s:s}", "constraint", "spread", "detail", detail);
    }
    uint32_t d = v->domain_of[i];
    json_t *out = json_pack("{s:s, s:s}", "constraint", "spread", "domain", v->names[d]);
    if (v->n_eligible < (uint32_t)req->spread.min_domains) {
        snprintf(detail, sizeof detail,
                 "%s %s holds %u; with %u %s domain(s) of min_domains %d the least counts as 0 "
                 "(max_skew %d): more %s domains, or a smaller min_domains",
                 v->key, v->names[d], v->count[d], v->n_eligible, v->key,
                 (int)req->spread.min_domains, (int)req->spread.max_skew, v->key);
        json_object_set_new(out, "detail", json_string(detail));
        return out;
    }
    uint32_t short_of[8];
    size_t n = spread_short_domains(v, short_of, 8);
    json_t *lacking = json_array();
    for (size_t k = 0; k < n && k < 8; k++)
        json_array_append_new(lacking, json_string(v->names[short_of[k]]));
    snprintf(detail, sizeof detail, "%s %s holds %u, %u more than the least (max_skew %d)%s%s",
             v->key, v->names[d], v->count[d], v->count[d] - v->min, (int)req->spread.max_skew,
             n ? ": room is needed in " : "", n ? v->key : "");
    size_t used = strlen(detail);
    for (size_t k = 0; k < n && k < 3 && used < sizeof detail; k++)
        used += (size_t)snprintf(detail + used, sizeof detail - used, "%s%s", k ? ", " : " ",
                                 v->names[short_of[k]]);
    json_object_set_new(out, "detail", json_string(detail));
    json_object_set_new(out, "lacks_room", lacking);
    return out;
}

/* The constraint that rejected a host, or NULL for a capacity reason. */
static json_t *constraint_of(const sched_engine *engine, const sched_request *req,
                             sched_reason reason, const host *h, size_t i)
{
    switch (reason) {
    case SCHED_REASON_SPREAD:
    case SCHED_REASON_SPREAD_LABEL:
        return spread_constraint(engine, req, reason, i);
    case SCHED_REASON_TRAIT_MISSING:
    case SCHED_REASON_TRAIT_FORBIDDEN:
    case SCHED_REASON_RESOURCES:
        return traits_constraint(engine, req, reason, h, i);
    case SCHED_REASON_POOL:
        return json_pack("{s:s, s:s}", "constraint", "pool", "pool", h->pool);
    case SCHED_REASON_NOT_DEDICATED:
        return json_pack("{s:s, s:s}", "constraint", "dedicated", "detail",
                         "the request asks for a dedicated host; this one is shared");
    case SCHED_REASON_DEDICATED_HOST:
        return json_pack("{s:s, s:s}", "constraint", "dedicated", "detail",
                         "kept for dedicated requests (scheduler.dedicated_exclusive)");
    case SCHED_REASON_OFFLINE:
    case SCHED_REASON_MAINTENANCE:
    case SCHED_REASON_STATUS_UNKNOWN:
        return json_pack("{s:s, s:s}", "constraint", "status", "status",
                         host_status_name(h->status));
    case SCHED_REASON_NODE_REGEX:
        return json_pack("{s:s}", "constraint", "node regex");
    case SCHED_REASON_NODE_NAME:
        return json_pack("{s:s}", "constraint", "node name");
    case SCHED_REASON_ANTI_AFFINITY:
        return json_pack("{s:s}", "constraint", "anti-affinity");
    case SCHED_REASON_GROUP_AFFINITY:
    case SCHED_REASON_GROUP_ANTI_AFFINITY:
    case SCHED_REASON_GROUP_FULL:
        return json_pack("{s:s, s:s}", "constraint", "group", "detail", sched_reason_text(reason));
    default:
        return NULL;
    }
}

static bool is_constraint(sched_reason reason)
{
    return reason != SCHED_REASON_VM_SLOTS && reason != SCHED_REASON_CPU &&
           reason != SCHED_REASON_MEMORY && reason != SCHED_REASON_DISK;
}

static json_t *shape(const host *h, const room *r)
{
    return json_pack("{s:s, s:I, s:I, s:I}", "host", h->name, "cpu", (json_int_t)whole_fit(r->cpu),
                     "memory_mib", (json_int_t)whole_fit(r->memory), "disk_gib",
                     (json_int_t)(r->disk > 0 ? r->disk : 0));
}

/* Per pool, the hosts a request like this one could use (online, the
 * dedicated rule) with the most vCPUs and the most memory left. */
static json_t *pool_shapes(const sched_engine *engine, const sched_request *req,
                           const hostset *hosts)
{
    const sched_params *params = sched_engine_params(engine);
    size_t n_pools = hosts->n_pools;
    long *most_cpu = malloc((n_pools ? n_pools : 1) * sizeof *most_cpu);
    long *most_memory = malloc((n_pools ? n_pools : 1) * sizeof *most_memory);
    /* The figures of the hosts in most_cpu / most_memory, per pool. */
    struct {
        int64_t cpu_cpu, cpu_memory, memory_memory, memory_cpu;
    } *best = calloc(n_pools ? n_pools : 1, sizeof *best);
    json_t *pools = json_object();
    if (!most_cpu || !most_memory || !best)
        goto out;
    for (size_t p = 0; p < n_pools; p++)
        most_cpu[p] = most_memory[p] = -1;
    for (size_t i = 0; i < hosts->n_hosts; i++) {
        const host *h = &hosts->hosts[i];
        if (h->status != HOST_ONLINE || h->pool_id >= n_pools)
            continue;
        if (req->dedicated ? !h->dedicated : (h->dedicated && params->dedicated_exclusive))
            continue;
        room r = room_of(engine, h, i);
        int64_t cpu = whole_fit(r.cpu), memory = whole_fit(r.memory);
        if (r.slots < 1 || cpu < 1 || memory < 1)
            continue;
        size_t p = h->pool_id;
        if (most_cpu[p] < 0 || cpu > best[p].cpu_cpu ||
            (cpu == best[p].cpu_cpu && memory > best[p].cpu_memory)) {
            most_cpu[p] = (long)i;
            best[p].cpu_cpu = cpu;
            best[p].cpu_memory = memory;
        }
        if (most_memory[p] < 0 || memory > best[p].memory_memory ||
            (memory == best[p].memory_memory && cpu > best[p].memory_cpu)) {
            most_memory[p] = (long)i;
            best[p].memory_memory = memory;
            best[p].memory_cpu = cpu;
        }
    }
    for (size_t p = 0; p < n_pools; p++) {
        if (most_cpu[p] < 0)
            continue;
        const host *hc = &hosts->hosts[most_cpu[p]];
        const host *hm = &hosts->hosts[most_memory[p]];
        room rc = room_of(engine, hc, (size_t)most_cpu[p]);
        room rm = room_of(engine, hm, (size_t)most_memory[p]);
        json_object_set_new(
            pools, hosts->pools[p],
            json_pack("{s:o, s:o}", "most_cpu", shape(hc, &rc), "most_memory", shape(hm, &rm)));
    }
out:
    free(most_cpu);
    free(most_memory);
    free(best);
    return pools;
}

/* The host of a pool with the most room of one resource, then of the
 * other, then the lowest index, as pool_shapes picks it, from the index:
 * hosts best first by the most whole room any below can offer. */
typedef struct most_walk {
    const sched_engine *engine;
    const hostset *hosts;
    bool by_memory; /* the most memory first (most_memory), else vCPUs (most_cpu) */
    long best;      /* host index; -1: none yet */
    int64_t best_first, best_second;
} most_walk;

/* The most whole units a host below can offer: whole_fit of a room is at
 * most the largest request the filter passes, rounded down. */
static int64_t most_whole(double most)
{
    double f = floor(most + 1e-6 * (1.0 + fabs(most)));
    return f > 0 ? (int64_t)f : 0;
}

static double most_room_rank(const fitindex_span *span, void *ctx)
{
    most_walk *w = ctx;
    int64_t cpu = most_whole(span->max_cpu_room), memory = most_whole(span->max_memory_room);
    if (span->max_slots_left < 1 || cpu < 1 || memory < 1)
        return INFINITY;
    int64_t a = w->by_memory ? memory : cpu, b = w->by_memory ? cpu : memory;
    if (w->best >= 0 && (a < w->best_first ||
                         (a == w->best_first &&
                          (b < w->best_second || (b == w->best_second && span->first > w->best)))))
        return INFINITY;
    return -(double)a;
}

static void most_room_host(uint32_t i, void *ctx)
{
    most_walk *w = ctx;
    room r = room_of(w->engine, &w->hosts->hosts[i], i);
    int64_t cpu = whole_fit(r.cpu), memory = whole_fit(r.memory);
    if (r.slots < 1 || cpu < 1 || memory < 1)
        return;
    int64_t a = w->by_memory ? memory : cpu, b = w->by_memory ? cpu : memory;
    if (w->best < 0 || a > w->best_first || (a == w->best_first && b > w->best_second) ||
        (a == w->best_first && b == w->best_second && (long)i < w->best)) {
        w->best = i;
        w->best_first = a;
        w->best_second = b;
    }
}

/* Pool p's host with the most of one resource among the hosts a request
 * like this one could use (the dedicated rule: one group or both). */
static long most_in_pool(const sched_engine *engine, const sched_request *req, const hostset *hosts,
                         size_t p, bool by_memory)
{
    most_walk w = {engine, hosts, by_memory, -1, 0, 0};
    fitindex_walker walker = {most_room_rank, most_room_host, &w};
    bool shared_too = !req->dedicated, dedicated_too = req->dedicated;
    if (!req->dedicated && !sched_engine_params(engine)->dedicated_exclusive)
        dedicated_too = true;
    if (shared_too)
        fitindex_walk(engine->index, (int)p, false, &walker);
    if (dedicated_too)
        fitindex_walk(engine->index, (int)p, true, &walker);
    return w.best;
}

/* pool_shapes from the index. */
static json_t *pool_shapes_by_index(const sched_engine *engine, const sched_request *req,
                                    const hostset *hosts)
{
    json_t *pools = json_object();
    for (size_t p = 0; pools && p < hosts->n_pools; p++) {
        long most_cpu = most_in_pool(engine, req, hosts, p, false);
        if (most_cpu < 0)
            continue;
        long most_memory = most_in_pool(engine, req, hosts, p, true);
        const host *hc = &hosts->hosts[most_cpu];
        const host *hm = &hosts->hosts[most_memory];
        room rc = room_of(engine, hc, (size_t)most_cpu);
        room rm = room_of(engine, hm, (size_t)most_memory);
        json_object_set_new(
            pools, hosts->pools[p],
            json_pack("{s:o, s:o}", "most_cpu", shape(hc, &rc), "most_memory", shape(hm, &rm)));
    }
    return pools;
}

/* ---- from the index: a failure decided without per-host reasons ---- */

/* The cheapest changes among the hosts of the request's group, all of them
 * rejected for capacity (engine_decided_lazily), best first by a lower
 * bound of their change's cost: each resource's shortfall is a whole
 * number at least the request less the most any host below takes. */
typedef struct cheapest_walk {
    const sched_engine *engine;
    const filters *on;
    const sched_request *req;
    const hostset *hosts;
    pick *best;
    size_t n, max;
} cheapest_walk;

/* A whole shortfall no host below can beat: `most` is the most any takes. */
static double least_shortfall(double want, double most)
{
    double x = want - most - 1e-6 * (1.0 + fabs(want) + fabs(most));
    return x > 0 ? ceil(x) : 0;
}

static double least_cost(const fitindex_span *span, void *ctx)
{
    cheapest_walk *w = ctx;
    const sched_request *req = w->req;
    change c = {0};
    if (w->on->cpu)
        c.free_cpu = (int64_t)least_shortfall(req->cpu, span->max_cpu_room);
    if (w->on->memory)
        c.free_memory = (int64_t)least_shortfall((double)req->memory, span->max_memory_room);
    if (w->on->disk && span->max_disk_left < req->disk)
        c.free_disk = req->disk - span->max_disk_left;
    if (w->on->slots && span->max_slots_left < 1)
        c.free_slots = 1 - (int64_t)span->max_slots_left;
    double cost = change_cost(&c, req);
    if (w->n == w->max && w->max > 0) {
        const pick *last = &w->best[w->max - 1];
        if (cost > last->cost || (cost == last->cost && span->first > last->index))
            return INFINITY; /* nobody below gets in */
    }
    return w->max > 0 ? cost : INFINITY;
}

static void consider(uint32_t i, void *ctx)
{
    cheapest_walk *w = ctx;
    change c = change_on(w->engine, w->on, w->req, &w->hosts->hosts[i], i);
    keep_cheapest(w->best, &w->n, w->max, (pick){i, change_cost(&c, w->req)});
}

/* The first `max` hosts in index order that are not in `members` (sorted):
 * the j-th is j + p for the least p with members[p] - p > j. */
static size_t others_first(const uint32_t *members, size_t n_members, size_t n_hosts, size_t *out,
                           size_t max)
{
    size_t n = 0;
    for (size_t j = 0; n < max; j++) {
        size_t lo = 0, hi = n_members;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (members[mid] - mid > j)
                hi = mid;
            else
                lo = mid + 1;
        }
        if (j + lo >= n_hosts)
            break;
        out[n++] = j + lo;
    }
    return n;
}

/* ---- listing ---- */

typedef struct listing {
    pick *cheapest; /* max of them */
    size_t n_cheapest;
    size_t *blocked; /* max of them: held by a constraint, index order */
    size_t n_blocked;
    size_t rejected, max;
} listing;

/* From the decision's per-host reasons: numbers only over every host, JSON
 * later only for the few listed. */
static void list_by_reasons(const sched_engine *engine, const sched_request *req,
                            const sched_decision *decision, const filters *on, const hostset *hosts,
                            listing *l)
{
    size_t n = hosts->n_hosts < decision->n_hosts ? hosts->n_hosts : decision->n_hosts;
    for (size_t i = 0; decision->host_reasons && i < n; i++) {
        sched_reason reason = (sched_reason)decision->host_reasons[i];
        if (reason == SCHED_REASON_NONE)
            continue;
        l->rejected++;
        if (is_constraint(reason)) {
            if (l->n_blocked < l->max)
                l->blocked[l->n_blocked++] = i;
            continue;
        }
        change c = change_on(engine, on, req, &hosts->hosts[i], i);
        keep_cheapest(l->cheapest, &l->n_cheapest, l->max, (pick){i, change_cost(&c, req)});
    }
}

/* The same from the index: the request's group walked for the cheapest
 * changes, the first hosts outside it listed as blocked. */
static void list_by_index(const sched_engine *engine, const sched_request *req, const filters *on,
                          const hostset *hosts, listing *l)
{
    int pool = engine_pool_of(engine, req);
    size_t n_members = 0;
    const uint32_t *members = fitindex_members(engine->index, pool, req->dedicated, &n_members);
    l->rejected = hosts->n_hosts; /* placed nowhere: every host said no */
    cheapest_walk w = {engine, on, req, hosts, l->cheapest, 0, l->max};
    fitindex_walker walker = {least_cost, consider, &w};
    fitindex_walk(engine->index, pool, req->dedicated, &walker);
    l->n_cheapest = w.n;
    l->n_blocked = others_first(members, n_members, hosts->n_hosts, l->blocked, l->max);
}

static json_t *listed_json(const sched_engine *engine, const sched_request *req,
                           const sched_decision *decision, const filters *on, const hostset *hosts,
                           const listing *l, size_t *listed)
{
    json_t *list = json_object();
    char words[LABEL_KEY_LEN + 32];
    *listed = 0;
    for (size_t k = 0; k < l->n_cheapest && *listed < l->max; k++, (*listed)++) {
        size_t i = l->cheapest[k].index;
        change c = change_on(engine, on, req, &hosts->hosts[i], i);
        json_t *entry = change_json(&c);
        sched_reason reason = sched_decision_host_reason(engine, req, decision, i);
        json_object_set_new(
            entry, "reason",
            json_string(sched_decision_reason_text(decision, reason, words, sizeof words)));
        json_object_set_new(list, hosts->hosts[i].name, entry);
    }
    for (size_t k = 0; k < l->n_blocked && *listed < l->max; k++, (*listed)++) {
        size_t i = l->blocked[k];
        sched_reason reason = sched_decision_host_reason(engine, req, decision, i);
        json_t *entry = constraint_of(engine, req, reason, &hosts->hosts[i], i);
        json_object_set_new(
            entry, "reason",
            json_string(sched_decision_reason_text(decision, reason, words, sizeof words)));
        json_object_set_new(list, hosts->hosts[i].name, entry);
    }
    return list;
}

json_t *sched_suggest(const sched_engine *engine, const sched_request *req,
                      const sched_decision *decision, size_t max_hosts)
{
    const hostset *hosts = sched_engine_snapshot(engine);
    if (!hosts)
        return NULL;
    listing l = {calloc(max_hosts ? max_hosts : 1, sizeof *l.cheapest),
                 0,
                 calloc(max_hosts ? max_hosts : 1, sizeof *l.blocked),
                 0,
                 0,
                 max_hosts};
    json_t *out = json_object();
    if (!l.cheapest || !l.blocked || !out) {
        json_decref(out);
        out = NULL;
        goto done;
    }
    const filters on = filters_of(engine, req);
    bool lazily = engine_decided_lazily(engine, decision);
    if (lazily)
        list_by_index(engine, req, &on, hosts, &l);
    else
        list_by_reasons(engine, req, decision, &on, hosts, &l);
    size_t listed;
    json_object_set_new(out, "hosts", listed_json(engine, req, decision, &on, hosts, &l, &listed));
    if (l.rejected > listed)
        json_object_set_new(out, "hosts_omitted", json_integer((json_int_t)(l.rejected - listed)));
    json_object_set_new(out, "pools",
                        lazily ? pool_shapes_by_index(engine, req, hosts)
                               : pool_shapes(engine, req, hosts));
done:
    free(l.cheapest);
    free(l.blocked);
    return out;
}
