/* never_fits: see never_fits.h. The hosts are narrowed one inventory
 * constraint at a time, in the engine's filter order, so the first
 * constraint that leaves no host is the one the message names. */
#include "never_fits.h"

#include <stdio.h>
#include <string.h>

#include "pattern.h"
#include "plugins.h"

/* The inventory's pools in name order, "a, b, c" (cut short with ", ..."
 * when long): each round prints the least name after the last one printed,
 * so nothing is allocated and only what fits is ever looked for. */
static void list_pools(const hostset *hosts, char *out, size_t size)
{
    static const char more[] = ", ...";
    size_t used = 0;
    const char *last = NULL;
    out[0] = '\0';
    for (size_t printed = 0; printed < hosts->n_pools; printed++) {
        const char *next = NULL;
        for (size_t i = 0; i < hosts->n_pools; i++) {
            const char *name = hosts->pools[i];
            if ((!last || strcmp(name, last) > 0) && (!next || strcmp(name, next) < 0))
                next = name;
        }
        int n = snprintf(out + used, size - used, "%s%s", printed ? ", " : "", next);
        if (n < 0 || (size_t)n >= size - used) {
            if (size > sizeof more)
                memcpy(out + size - sizeof more, more, sizeof more);
            return;
        }
        used += (size_t)n;
        last = next;
    }
}

/* The inventory filters that are on for the request, read once. */
typedef struct rules {
    const sched_params *params;
    bool pool_on, need_dedicated, keep_dedicated, named, slots_on, cpu_on, memory_on;
    bool traits_on, resources_on;
    bool spread_on; /* a hard spread: hosts without its key are out */
    pattern *regex; /* owned; NULL: no node regex (or NodeRegex off) */
} rules;

/* The largest capacities among the hosts that pass every inventory
 * constraint but capacity. */
typedef struct largest {
    const host *by_cpu;
    double cpu; /* vCPUs */
    const host *by_memory;
    double memory; /* MiB */
    size_t with_slots;
} largest;

/* How many hosts each constraint, in filter order, left; and what the
 * survivors offer. */
typedef struct narrowed {
    size_t in_pool, of_kind, of_name, of_regex, of_traits, of_label;
    /* The first resource no host of the traits asked has enough of in
     * total, the most any has of it, and which. */
    int short_resource;
    int64_t most_of_short;
    const host *by_short;
    bool resources_ok;
    largest big;
    bool could; /* some host could hold the request (or the regex cannot tell) */
} narrowed;

/* The rules for `req`. False when the node regex does not compile. */
static bool rules_of(const sched_engine *engine, const sched_request *req, const hostset *hosts,
                     rules *r)
{
    const sched_params *params = sched_engine_params(engine);
    bool dedicated_on = sched_engine_filter_on(engine, SCHED_FILTER_DEDICATED);
    *r = (rules){
        .params = params,
        .pool_on = sched_engine_filter_on(engine, SCHED_FILTER_POOL),
        .need_dedicated = dedicated_on && req->dedicated,
        .keep_dedicated = dedicated_on && !req->dedicated && params->dedicated_exclusive,
        .named = req->node_name[0] && sched_engine_filter_on(engine, SCHED_FILTER_NODE_NAME),
        .slots_on = sched_engine_filter_on(engine, SCHED_FILTER_VM_SLOTS),
        .cpu_on = sched_engine_filter_on(engine, SCHED_FILTER_CPU),
        .memory_on = sched_engine_filter_on(engine, SCHED_FILTER_MEMORY),
        .traits_on = (req->required_traits.n || req->forbidden_traits.n) &&
                     sched_engine_filter_on(engine, SCHED_FILTER_TRAITS),
        .resources_on = req->resources.n && sched_engine_filter_on(engine, SCHED_FILTER_RESOURCES),
        .spread_on = req->spread.key[0] && !req->spread.soft &&
                     sched_engine_filter_on(engine, SCHED_FILTER_TOPOLOGY_SPREAD),
    };
    if (!req->node_regex[0] || !sched_engine_filter_on(engine, SCHED_FILTER_NODE_REGEX))
        return true;
    vf_error err;
    vf_error_init(&err);
    r->regex = pattern_new_mode(req->node_regex,
                                params->regex_search ? PATTERN_SEARCH : PATTERN_WHOLE, &err);
    if (!r->regex)
        return false;
    pattern_set_budget(r->regex, (unsigned long long)hosts->n_hosts * 256 + PATTERN_MATCH_LIMIT);
    return true;
}

/* Host `h` has too little of a custom resource: remember the most of the
 * first resource it lacks. */
static void note_short(narrowed *n, const sched_request *req, const host *h)
{
    for (size_t r = 0; r < req->resources.n; r++) {
        int64_t has = host_traits_amount(h->traits, req->resources.items[r].name);
        if (has >= req->resources.items[r].amount)
            continue;
        if (n->short_resource < 0)
            n->short_resource = (int)r;
        if ((int)r == n->short_resource && (!n->by_short || has > n->most_of_short)) {
            n->most_of_short = has;
            n->by_short = h;
        }
        return;
    }
}

/* Whether `h`, empty, passes the constraints that name, pool and kind
 * decide (counting it into `n` as it passes each). -1: the regex cannot
 * tell (too costly), which counts as could. */
static int passes_inventory(const rules *r, const sched_request *req, const host *h, narrowed *n)
{
    if (r->pool_on && strcmp(h->pool, req->pool) != 0)
        return 0;
    n->in_pool++;
    if ((r->need_dedicated && !h->dedicated) || (r->keep_dedicated && h->dedicated))
        return 0;
    n->of_kind++;
    if (r->named && strcmp(h->name, req->node_name) != 0)
        return 0;
    n->of_name++;
    if (r->regex) {
        pattern_result m = pattern_match(r->regex, h->name, strlen(h->name));
        if (m == PATTERN_NO_MATCH)
            return 0;
        if (m == PATTERN_TOO_COSTLY)
            return -1;
    }
    n->of_regex++;
    if (r->traits_on && sched_traits_reason(h, req) != SCHED_REASON_NONE)
        return 0;
    n->of_traits++;
    if (r->spread_on && !host_traits_label(h->traits, req->spread.key))
        return 0;
    n->of_label++;
    if (r->resources_on && !n->resources_ok) {
        static const int64_t none_held[RESOURCES_MAX] = {0};
        if (!sched_resources_fit(h, none_held, &req->resources)) {
            note_short(n, req, h);
            return 0;
        }
        n->resources_ok = true;
    }
    return 1;
}

/* Whether `h`, empty, holds the request's slots, vCPUs and MiB; its
 * capacities go into n->big. */
static bool holds_empty(const rules *r, const sched_request *req, const host *h, narrowed *n)
{
    double cpu = sched_cpu_capacity(r->params, h);
    double memory = sched_memory_capacity(r->params, h);
    largest *big = &n->big;
    if (!big->by_cpu || cpu > big->cpu) {
        big->by_cpu = h;
        big->cpu = cpu;
    }
    if (!big->by_memory || memory > big->memory) {
        big->by_memory = h;
        big->memory = memory;
    }
    big->with_slots += h->max_vms >= 1;
    return (!r->slots_on || h->max_vms >= 1) &&
           (!r->cpu_on || (double)req->cpu <= cpu + SCHED_FIT_EPSILON) &&
           (!r->memory_on || (double)req->memory <= memory + SCHED_FIT_EPSILON);
}

/* Narrow the hosts one constraint at a time until one could hold the
 * request. */
static void narrow(const rules *r, const sched_request *req, const hostset *hosts, narrowed *n)
{
    *n = (narrowed){.short_resource = -1, .resources_ok = !r->resources_on};
    for (size_t i = 0; i < hosts->n_hosts && !n->could; i++) {
        const host *h = &hosts->hosts[i];
        int passes = passes_inventory(r, req, h, n);
        if (passes < 0)
            n->could = true; /* cannot tell: not never */
        else if (passes > 0)
            n->could = holds_empty(r, req, h, n);
    }
}

/* The message when a constraint of the inventory's (not capacity) left no
 * host; false when every one left some. */
static bool explain_inventory(const rules *r, const sched_request *req, const hostset *hosts,
                              const narrowed *n, const char *pool, char *why, size_t size)
{
    if (n->in_pool == 0) {
        char pools[256];
        list_pools(hosts, pools, sizeof pools);
        snprintf(why, size, "no host is in pool \"%s\"; the inventory's pools: %s", req->pool,
                 pools);
    } else if (n->of_kind == 0) {
        snprintf(why, size,
                 r->need_dedicated ? "no host of %s is dedicated"
                                   : "every host of %s is dedicated (scheduler.dedicated_exclusive "
                                     "keeps shared requests off them)",
                 pool);
    } else if (n->of_name == 0) {
        snprintf(why, size, "no host of %s is named \"%s\"", pool, req->node_name);
    } else if (n->of_regex == 0) {
        snprintf(why, size, "%s \"%s\" matches no host of %s", ANNOTATION_NODE_REGEX,
                 req->node_regex, pool);
    } else if (n->of_traits == 0) {
        snprintf(why, size,
                 "no host of %s has the traits asked (%u required, %u forbidden; the first "
                 "required: %s)",
                 pool, (unsigned)req->required_traits.n, (unsigned)req->forbidden_traits.n,
                 req->required_traits.n ? req->required_traits.names[0] : "none");
    } else if (n->of_label == 0) {
        snprintf(why, size, "no host of %s has the label %s its spread is over", pool,
                 req->spread.key);
    } else {
        return false;
    }
    return true;
}

/* The message when the survivors' room is what is short. */
static void explain_capacity(const rules *r, const sched_request *req, const narrowed *n,
                             const char *pool, char *why, size_t size)
{
    const largest *big = &n->big;
    if (!n->resources_ok) {
        const resource_amount *want =
            &req->resources.items[n->short_resource < 0 ? 0 : n->short_resource];
        if (n->by_short)
            snprintf(why, size, "asks for %lld %s; the most any host of %s has is %lld (%s)",
                     (long long)want->amount, want->name, pool, (long long)n->most_of_short,
                     n->by_short->name);
        else
            snprintf(why, size, "asks for %lld %s; no host of %s has it", (long long)want->amount,
                     want->name, pool);
    } else if (r->slots_on && big->with_slots == 0) {
        snprintf(why, size, "no host of %s takes a VM (max_vms 0)", pool);
    } else if (r->cpu_on && (double)req->cpu > big->cpu + SCHED_FIT_EPSILON) {
        snprintf(why, size,
                 "asks for %d vCPUs; the most any host of %s holds empty is %.0f (%s, after "
                 "scheduler.reserve and overcommit)",
                 (int)req->cpu, pool, big->cpu, big->by_cpu->name);
    } else if (r->memory_on && (double)req->memory > big->memory + SCHED_FIT_EPSILON) {
        snprintf(why, size,
                 "asks for %lld MiB; the most any host of %s holds empty is %.0f MiB (%s, after "
                 "scheduler.reserve and overcommit)",
                 (long long)req->memory, pool, big->memory, big->by_memory->name);
    } else {
        snprintf(why, size,
                 "asks for %d vCPUs and %lld MiB together; no host of %s holds both empty (most "
                 "vCPUs: %s, %.0f; most memory: %s, %.0f MiB)",
                 (int)req->cpu, (long long)req->memory, pool, big->by_cpu->name, big->cpu,
                 big->by_memory->name, big->memory);
    }
}

/* A hard spread with min_domains over fewer domains than that: the least
 * domain counts as 0, so each domain takes at most max_skew members, and a
 * count above domains x max_skew never fits (whatever its group holds
 * already, which only lowers the bound). Counts the domains of the hosts
 * that pass the inventory's constraints. */
static bool spread_never(const rules *r, const sched_request *req, const hostset *hosts,
                         const char *pool, char *why, size_t size)
{
    const sched_spread *sp = &req->spread;
    if (!r->spread_on || sp->min_domains <= 1 || req->count <= sp->max_skew)
        return false;
    const char *seen[REQUEST_MAX_DOMAINS];
    size_t n_seen = 0;
    for (size_t i = 0; i < hosts->n_hosts && n_seen < (size_t)sp->min_domains; i++) {
        narrowed ignored = {.resources_ok = true};
        if (passes_inventory(r, req, &hosts->hosts[i], &ignored) != 1)
            continue;
        const char *value = host_traits_label(hosts->hosts[i].traits, sp->key);
        size_t k = 0;
        while (k < n_seen && strcmp(seen[k], value) != 0)
            k++;
        if (k == n_seen)
            seen[n_seen++] = value;
    }
    if (n_seen >= (size_t)sp->min_domains || (int64_t)req->count <= (int64_t)n_seen * sp->max_skew)
        return false;
    int used = snprintf(why, size,
                        "%d VMs spread over %s (max_skew %d, min_domains %d): %s has %zu %s "
                        "domain(s) (",
                        (int)req->count, sp->key, (int)sp->max_skew, (int)sp->min_domains, pool,
                        n_seen, sp->key);
    for (size_t k = 0; k < n_seen && k < 4 && used > 0 && (size_t)used < size; k++)
        used += snprintf(why + used, size - (size_t)used, "%s%s", k ? ", " : "", seen[k]);
    if (used > 0 && (size_t)used < size)
        snprintf(why + used, size - (size_t)used, "%s), so at most %lld fit",
                 n_seen > 4 ? ", ..." : "", (long long)n_seen * sp->max_skew);
    return true;
}

bool sched_never_fits(const sched_engine *engine, const sched_request *req, char *why, size_t size)
{
    const hostset *hosts = sched_engine_snapshot(engine);
    if (!hosts || hosts->n_hosts == 0 || size == 0)
        return false;
    rules r;
    if (!rules_of(engine, req, hosts, &r))
        return false;
    narrowed n;
    narrow(&r, req, hosts, &n);
    char pool[HOST_POOL_LEN + 16];
    if (r.pool_on)
        snprintf(pool, sizeof pool, "pool \"%s\"", req->pool);
    else
        snprintf(pool, sizeof pool, "the inventory");
    bool never = !n.could || spread_never(&r, req, hosts, pool, why, size);
    pattern_free(r.regex);
    if (!never || n.could)
        return never;
    if (!explain_inventory(&r, req, hosts, &n, pool, why, size))
        explain_capacity(&r, req, &n, pool, why, size);
    return true;
}
