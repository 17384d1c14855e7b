/* engine_spread: a request's topology spread in one decision (spread.h says
 * how skew is measured; engine_internal.h what each step does). The filter
 * is laid as marks before the pass, as a group's hard policy is, and the
 * score as a per-host array, as ServerGroup's is: the pass stays one loop,
 * and a request without a spread pays one test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "grow.h"

/* Whether host `i` passes the filters the inventory alone decides, those
 * engine_pass.c runs first (the same order and rules): what makes its
 * domain eligible, as a node passing a pod's node affinity does in
 * Kubernetes. Capacity never counts: a full domain still holds the
 * minimum down. */
static bool could_use(sched_engine *engine, const sched_request *req, const plan *pl, size_t i)
{
    const bool *on = engine->plugins.filter_on;
    const sched_hot *h = &engine->hot[i];
    const host *named = &engine->hosts->hosts[i];
    if (on[SCHED_FILTER_POOL] && !sched_pool_fits(h, pl->pool_id))
        return false;
    if (on[SCHED_FILTER_DEDICATED] &&
        (req->dedicated ? !h->dedicated : h->dedicated && engine->params.dedicated_exclusive))
        return false;
    if (on[SCHED_FILTER_STATUS] && h->status != HOST_ONLINE)
        return false;
    if (pl->node_named && !sched_node_name_fits(i, pl->node_index))
        return false;
    if (pl->node_regex && !sched_node_matches(pl->node_regex, &pl->node_match[i], named->name))
        return false;
    return !pl->traits_on || sched_traits_reason(named, req) == SCHED_REASON_NONE;
}

/* A soft spread's score per host into engine->spread_score. */
static int score_hosts(sched_engine *engine, vf_error *err)
{
    size_t n = engine->hosts->n_hosts;
    if (engine->spread_capacity < n) {
        if (resize_array((void **)&engine->spread_score, n, sizeof *engine->spread_score) < 0) {
            vf_error_set(err, VF_ENOMEM, "out of memory scoring a spread over %s",
                         engine->spread.key);
            return -1;
        }
        engine->spread_capacity = n;
    }
    for (size_t i = 0; i < n; i++)
        engine->spread_score[i] = spread_score(&engine->spread, engine->spread.domain_of[i]);
    return 0;
}

/* A hard spread's marks on the hosts nothing else marked. */
static void mark_hosts(sched_engine *engine)
{
    const spread_view *v = &engine->spread;
    for (size_t i = 0; i < engine->hosts->n_hosts; i++) {
        if (engine->reasons[i] != SCHED_REASON_NONE)
            continue;
        uint32_t d = v->domain_of[i];
        if (d == SPREAD_NO_DOMAIN)
            engine->reasons[i] = SCHED_REASON_SPREAD_LABEL;
        else if (!spread_fits(v->count[d], v->min, v->max_skew))
            engine->reasons[i] = SCHED_REASON_SPREAD;
    }
}

int engine_spread_prepare(sched_engine *engine, const sched_request *req, const plan *pl,
                          const uint32_t *members, vf_error *err)
{
    if (!engine_spread_applies(engine, req))
        return 0;
    spread_view *v = &engine->spread;
    if (spread_view_domains(v, engine->hosts, req->spread.key, err) < 0)
        return -1;
    for (size_t i = 0; i < engine->hosts->n_hosts; i++) {
        uint32_t d = v->domain_of[i];
        if (d != SPREAD_NO_DOMAIN && !v->eligible[d] && could_use(engine, req, pl, i))
            v->eligible[d] = true;
    }
    spread_view_count(v, members, req->spread.soft ? 1 : req->spread.min_domains,
                      req->spread.max_skew);
    if (req->spread.soft)
        return score_hosts(engine, err) < 0 ? -1 : 1;
    mark_hosts(engine);
    return 1;
}

/* "rack r3" or "racks r2, r3" for up to three domains, into buf. */
static void name_domains(const spread_view *v, const uint32_t *domains, size_t n, char *buf,
                         size_t size)
{
    int used = snprintf(buf, size, "%s", v->key);
    for (size_t k = 0; k < n && k < 3 && used > 0 && (size_t)used < size; k++)
        used +=
            snprintf(buf + used, size - (size_t)used, "%s%s", k ? ", " : " ", v->names[domains[k]]);
    if (n > 3 && used > 0 && (size_t)used < size)
        snprintf(buf + used, size - (size_t)used, " and %zu more", n - 3);
}

void engine_spread_explain(sched_engine *engine, const sched_request *req, sched_decision *out)
{
    spread_view *v = &engine->spread;
    if (!engine_spread_applies(engine, req) || req->spread.soft || v->hosts != engine->hosts ||
        !out->host_reasons)
        return;
    for (size_t i = 0; i < engine->hosts->n_hosts; i++) {
        uint8_t r = out->host_reasons[i];
        uint32_t d = v->domain_of[i];
        if (d != SPREAD_NO_DOMAIN && (r == SCHED_REASON_NONE || r == SCHED_REASON_SPREAD))
            v->has_room[d] = true;
    }
    if (out->placed || !out->reason_counts[SCHED_REASON_SPREAD])
        return;
    char names[160];
    size_t used = strlen(out->message);
    if (v->n_eligible < (uint32_t)req->spread.min_domains) {
        uint32_t all[3];
        size_t n = 0;
        for (uint32_t d = 0; d < v->n_domains && n < 3; d++)
            if (v->eligible[d])
                all[n++] = d;
        name_domains(v, all, v->n_eligible, names, sizeof names);
        snprintf(out->message + used, sizeof out->message - used,
                 " (%u domain%s of %s, min_domains %d: %s)", v->n_eligible,
                 v->n_eligible == 1 ? "" : "s", v->key, (int)req->spread.min_domains, names);
        return;
    }
    uint32_t short_of[3];
    size_t n = spread_short_domains(v, short_of, 3);
    if (n == 0)
        return;
    name_domains(v, short_of, n, names, sizeof names);
    snprintf(out->message + used, sizeof out->message - used, " (%s %s room)", names,
             n == 1 ? "lacks" : "lack");
}
