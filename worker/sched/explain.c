/* The decision as the JSON result object a task records and virtflowctl
 * prints (docs/contracts.md: status, node, vmid, score, or error and reason). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

static json_t *rounded(double value)
{
    /* Two decimals read well and keep results stable across platforms. */
    return json_real(round(value * 100.0) / 100.0);
}

json_t *sched_decision_to_json(const sched_decision *decision, const hostset *hosts)
{
    json_t *obj = json_object();
    if (!obj)
        return NULL;
    if (decision->placed) {
        json_object_set_new_nocheck(obj, "status", json_string_nocheck("completed"));
        json_t *node = json_object();
        json_object_set_new_nocheck(node, "name", json_string(decision->node->name));
        json_object_set_new_nocheck(node, "ip", json_string(decision->node->ip));
        json_object_set_new_nocheck(node, "pool", json_string(decision->node->pool));
        json_object_set_new_nocheck(obj, "node", node);
        json_object_set_new_nocheck(obj, "vmid", json_integer(decision->vmid));
        json_object_set_new_nocheck(obj, "score", rounded(decision->score));
        json_t *parts = json_object();
        for (size_t i = 0; i < decision->n_parts; i++) {
            json_t *part = json_object();
            json_object_set_new_nocheck(part, "score", rounded(decision->parts[i].score));
            json_object_set_new_nocheck(part, "weight", json_real(decision->parts[i].weight));
            json_object_set_new_nocheck(parts, decision->parts[i].plugin, part);
        }
        json_object_set_new_nocheck(obj, "scores", parts);
    } else {
        json_object_set_new_nocheck(obj, "status", json_string_nocheck("failed"));
        json_object_set_new_nocheck(obj, "reason", json_string_nocheck("unschedulable"));
        json_object_set_new_nocheck(obj, "error", json_string(decision->message));
    }
    json_object_set_new_nocheck(obj, "feasible", json_integer((json_int_t)decision->n_feasible));
    json_object_set_new_nocheck(obj, "hosts", json_integer((json_int_t)decision->n_hosts));
    json_object_set_new_nocheck(obj, "explanation", json_string(decision->message));
    if (!decision->placed && decision->host_reasons) {
        json_t *rejections = json_object();
        char words[LABEL_KEY_LEN + 32];
        for (size_t i = 0; i < hosts->n_hosts && i < decision->n_hosts; i++) {
            sched_reason r = (sched_reason)decision->host_reasons[i];
            if (r != SCHED_REASON_NONE)
                json_object_set_new(
                    rejections, hosts->hosts[i].name,
                    json_string(sched_decision_reason_text(decision, r, words, sizeof words)));
        }
        json_object_set_new_nocheck(obj, "rejections", rejections);
    }
    return obj;
}

void sched_rejections_sample(json_t *result, size_t max_hosts)
{
    json_t *rejections = json_object_get(result, "rejections");
    if (!json_is_object(rejections))
        return;
    json_t *counts = json_object();
    json_t *kept = json_object();
    const char *host;
    json_t *why;
    /* First pass: the counts, and the first host of each reason, so the
     * sample shows every reason even when one dominates. */
    json_object_foreach(rejections, host, why)
    {
        const char *reason = json_is_string(why) ? json_string_value(why) : "other";
        json_t *count = json_object_get(counts, reason);
        if (count) {
            json_integer_set(count, json_integer_value(count) + 1);
            continue;
        }
        json_object_set_new(counts, reason, json_integer(1));
        if (json_object_size(kept) < max_hosts)
            json_object_set(kept, host, why);
    }
    /* Second pass: fill up in host order. */
    json_object_foreach(rejections, host, why)
    {
        if (json_object_size(kept) >= max_hosts)
            break;
        if (!json_object_get(kept, host))
            json_object_set(kept, host, why);
    }
    /* In host order, as the full list reads. */
    json_t *sample = json_object();
    json_object_foreach(rejections, host, why)
    {
        if (json_object_get(kept, host))
            json_object_set(sample, host, why);
    }
    size_t omitted = json_object_size(rejections) - json_object_size(sample);
    json_decref(kept);
    json_object_set_new(result, "rejection_counts", counts);
    json_object_set_new(result, "rejections", sample);
    if (omitted > 0)
        json_object_set_new(result, "rejections_omitted", json_integer((json_int_t)omitted));
}

/* A lazily decided failure's sample, as sched_rejections_sample would make
 * it from every host's reason: the reasons in the order they first appear
 * in host order (each one's first host), the first host of each kept (up to
 * max_hosts), filled up with the first hosts in order (every host was
 * rejected), listed in host order. */
static int sample_lazily(const sched_engine *engine, const sched_request *req,
                         const sched_decision *decision, json_t *result, size_t max_hosts)
{
    const hostset *hosts = engine->hosts;
    size_t first[SCHED_REASON_COUNT];
    int order[SCHED_REASON_COUNT], n_reasons = 0;
    for (int r = 1; r < SCHED_REASON_COUNT; r++) {
        if (!decision->reason_counts[r])
            continue;
        first[r] = engine_first_with_reason(engine, req, (sched_reason)r);
        int at = n_reasons++;
        while (at > 0 && first[order[at - 1]] > first[r]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = r;
    }
    size_t *picked = calloc(max_hosts ? max_hosts : 1, sizeof *picked);
    json_t *counts = json_object(), *sample = json_object();
    int rc = -1;
    if (!picked || !counts || !sample)
        goto out;
    size_t n = 0;
    for (int k = 0; k < n_reasons; k++) {
        int r = order[k];
        json_object_set_new(counts, sched_reason_text((sched_reason)r),
                            json_integer((json_int_t)decision->reason_counts[r]));
        if (n < max_hosts && first[r] < hosts->n_hosts)
            picked[n++] = first[r];
    }
    for (size_t i = 0; n < max_hosts && i < hosts->n_hosts; i++) {
        bool already = false;
        for (size_t k = 0; k < n && !already; k++)
            already = picked[k] == i;
        if (!already)
            picked[n++] = i;
    }
    /* In host order, as the full list reads. */
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0 && picked[b - 1] > picked[b]; b--) {
            size_t t = picked[b];
            picked[b] = picked[b - 1];
            picked[b - 1] = t;
        }
    for (size_t k = 0; k < n; k++) {
        sched_reason r = sched_decision_host_reason(engine, req, decision, picked[k]);
        json_object_set_new(sample, hosts->hosts[picked[k]].name,
                            json_string(sched_reason_text(r)));
    }
    /* In the order sched_rejections_sample leaves them: "rejections" where
     * sched_decision_to_json put the full list, then the counts. */
    json_object_set_new(result, "rejections", sample);
    json_object_set_new(result, "rejection_counts", counts);
    counts = sample = NULL;
    if (hosts->n_hosts > n)
        json_object_set_new(result, "rejections_omitted",
                            json_integer((json_int_t)(hosts->n_hosts - n)));
    rc = 0;
out:
    free(picked);
    json_decref(counts);
    json_decref(sample);
    return rc;
}

int sched_rejections_add(const sched_engine *engine, const sched_request *req,
                         const sched_decision *decision, json_t *result, size_t max_hosts)
{
    if (decision->placed || !engine->hosts)
        return 0;
    if (engine_decided_lazily(engine, decision))
        return sample_lazily(engine, req, decision, result, max_hosts);
    if (!json_object_get(result, "rejections"))
        return 0;
    sched_rejections_sample(result, max_hosts);
    return 0;
}
