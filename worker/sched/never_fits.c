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

/* The largest capacities among the hosts that pass every inventory
 * constraint but capacity. */
typedef struct largest {
    const host *by_cpu;
    double cpu; /* vCPUs */
    const host *by_memory;
    double memory; /* MiB */
    size_t with_slots;
} largest;

bool sched_never_fits(const sched_engine *engine, const sched_request *req, char *why, size_t size)
{
    const hostset *hosts = sched_engine_snapshot(engine);
    const sched_params *params = sched_engine_params(engine);
    if (!hosts || hosts->n_hosts == 0 || size == 0)
        return false;
    bool pool_on = sched_engine_filter_on(engine, SCHED_FILTER_POOL);
    bool dedicated_on = sched_engine_filter_on(engine, SCHED_FILTER_DEDICATED);
    bool need_dedicated = dedicated_on && req->dedicated;
    bool keep_dedicated = dedicated_on && !req->dedicated && params->dedicated_exclusive;
    bool named = req->node_name[0] && sched_engine_filter_on(engine, SCHED_FILTER_NODE_NAME);
    bool slots_on = sched_engine_filter_on(engine, SCHED_FILTER_VM_SLOTS);
    bool cpu_on = sched_engine_filter_on(engine, SCHED_FILTER_CPU);
    bool memory_on = sched_engine_filter_on(engine, SCHED_FILTER_MEMORY);
    pattern *regex = NULL;
    if (req->node_regex[0] && sched_engine_filter_on(engine, SCHED_FILTER_NODE_REGEX)) {
        vf_error err;
        vf_error_init(&err);
        regex = pattern_new_mode(req->node_regex,
                                 params->regex_search ? PATTERN_SEARCH : PATTERN_WHOLE, &err);
        if (!regex)
            return false;
        pattern_set_budget(regex, (unsigned long long)hosts->n_hosts * 256 + PATTERN_MATCH_LIMIT);
    }

    bool traits_on = (req->required_traits.n || req->forbidden_traits.n) &&
                     sched_engine_filter_on(engine, SCHED_FILTER_TRAITS);
    bool resources_on = req->resources.n && sched_engine_filter_on(engine, SCHED_FILTER_RESOURCES);
    size_t in_pool = 0, of_kind = 0, of_name = 0, of_regex = 0, of_traits = 0;
    /* The first resource no host of the traits asked has enough of in total. */
    int short_resource = -1;
    int64_t most_of_short = 0;
    const host *by_short = NULL;
    bool resources_ok = !resources_on;
    largest big = {0};
    bool could = false;
    for (size_t i = 0; i < hosts->n_hosts && !could; i++) {
        const host *h = &hosts->hosts[i];
        if (pool_on && strcmp(h->pool, req->pool) != 0)
            continue;
        in_pool++;
        if ((need_dedicated && !h->dedicated) || (keep_dedicated && h->dedicated))
            continue;
        of_kind++;
        if (named && strcmp(h->name, req->node_name) != 0)
            continue;
        of_name++;
        if (regex) {
            pattern_result m = pattern_match(regex, h->name, strlen(h->name));
            if (m == PATTERN_NO_MATCH)
                continue;
            if (m == PATTERN_TOO_COSTLY) {
                could = true; /* cannot tell: not never */
                break;
            }
        }
        of_regex++;
        if (traits_on && sched_traits_reason(h, req) != SCHED_REASON_NONE)
            continue;
        of_traits++;
        if (resources_on && !resources_ok) {
            static const int64_t none_held[RESOURCES_MAX] = {0};
            if (sched_resources_fit(h, none_held, &req->resources)) {
                resources_ok = true;
            } else {
                /* Remember the most of the first resource the host lacks. */
                for (size_t r = 0; r < req->resources.n; r++) {
                    int64_t has = host_traits_amount(h->traits, req->resources.items[r].name);
                    if (has >= req->resources.items[r].amount)
                        continue;
                    if (short_resource < 0)
                        short_resource = (int)r;
                    if ((int)r == short_resource && (!by_short || has > most_of_short)) {
                        most_of_short = has;
                        by_short = h;
                    }
                    break;
                }
                continue;
            }
        }
        double cpu = sched_cpu_capacity(params, h);
        double memory = sched_memory_capacity(params, h);
        if (!big.by_cpu || cpu > big.cpu) {
            big.by_cpu = h;
            big.cpu = cpu;
        }
        if (!big.by_memory || memory > big.memory) {
            big.by_memory = h;
            big.memory = memory;
        }
        big.with_slots += h->max_vms >= 1;
        could = (!slots_on || h->max_vms >= 1) &&
                (!cpu_on || (double)req->cpu <= cpu + SCHED_FIT_EPSILON) &&
                (!memory_on || (double)req->memory <= memory + SCHED_FIT_EPSILON);
    }
    pattern_free(regex);
    if (could)
        return false;

    char pool[HOST_POOL_LEN + 16];
    if (pool_on)
        snprintf(pool, sizeof pool, "pool \"%s\"", req->pool);
    else
        snprintf(pool, sizeof pool, "the inventory");
    if (in_pool == 0) {
        char pools[256];
        list_pools(hosts, pools, sizeof pools);
        snprintf(why, size, "no host is in pool \"%s\"; the inventory's pools: %s", req->pool,
                 pools);
    } else if (of_kind == 0) {
        snprintf(why, size,
                 need_dedicated ? "no host of %s is dedicated"
                                : "every host of %s is dedicated (scheduler.dedicated_exclusive "
                                  "keeps shared requests off them)",
                 pool);
    } else if (of_name == 0) {
        snprintf(why, size, "no host of %s is named \"%s\"", pool, req->node_name);
    } else if (of_regex == 0) {
        snprintf(why, size, "%s \"%s\" matches no host of %s", ANNOTATION_NODE_REGEX,
                 req->node_regex, pool);
    } else if (of_traits == 0) {
        snprintf(why, size,
                 "no host of %s has the traits asked (%u required, %u forbidden; the first "
                 "required: %s)",
                 pool, (unsigned)req->required_traits.n, (unsigned)req->forbidden_traits.n,
                 req->required_traits.n ? req->required_traits.names[0] : "none");
    } else if (!resources_ok) {
        const resource_amount *want =
            &req->resources.items[short_resource < 0 ? 0 : short_resource];
        if (by_short)
            snprintf(why, size, "asks for %lld %s; the most any host of %s has is %lld (%s)",
                     (long long)want->amount, want->name, pool, (long long)most_of_short,
                     by_short->name);
        else
            snprintf(why, size, "asks for %lld %s; no host of %s has it", (long long)want->amount,
                     want->name, pool);
    } else if (slots_on && big.with_slots == 0) {
        snprintf(why, size, "no host of %s takes a VM (max_vms 0)", pool);
    } else if (cpu_on && (double)req->cpu > big.cpu + SCHED_FIT_EPSILON) {
        snprintf(why, size,
                 "asks for %d vCPUs; the most any host of %s holds empty is %.0f (%s, after "
                 "scheduler.reserve and overcommit)",
                 (int)req->cpu, pool, big.cpu, big.by_cpu->name);
    } else if (memory_on && (double)req->memory > big.memory + SCHED_FIT_EPSILON) {
        snprintf(why, size,
                 "asks for %lld MiB; the most any host of %s holds empty is %.0f MiB (%s, after "
                 "scheduler.reserve and overcommit)",
                 (long long)req->memory, pool, big.memory, big.by_memory->name);
    } else {
        snprintf(why, size,
                 "asks for %d vCPUs and %lld MiB together; no host of %s holds both empty (most "
                 "vCPUs: %s, %.0f; most memory: %s, %.0f MiB)",
                 (int)req->cpu, (long long)req->memory, pool, big.by_cpu->name, big.cpu,
                 big.by_memory->name, big.memory);
    }
    return true;
}
