/* ctl_record: see ctl_record.h. */
#include "ctl_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "grow.h"
#include "holds.h"
#include "host_json.h"
#include "ids.h"
#include "store_inventory.h"

void ctl_record_close(ctl_record *r)
{
    hostset_free(r->hosts);
    free(r->config_body);
    config_free(r->config);
    free(r->holds);
    free(r->hold_ids);
    memset(r, 0, sizeof *r);
}

/* The snapshot the record names, or (not recorded, or pruned) the newest
 * recorded before the decision, which a replay can only approximate with. */
typedef struct nearest {
    const char *before;
    int64_t id;
    char at[STORE_TIME_SIZE];
} nearest;

static int keep_nearest(const store_inventory_snapshot *snapshot, void *ctx)
{
    nearest *n = ctx;
    if (strcmp(snapshot->recorded_at, n->before) > 0)
        return 1;
    n->id = snapshot->id;
    snprintf(n->at, sizeof n->at, "%s", snapshot->recorded_at);
    return 0;
}

static int read_snapshot(store *s, ctl_record *r, vf_error *err)
{
    char *text = NULL, *at = NULL;
    int found = r->p.snapshot_id > 0
                    ? store_inventory_snapshot_get(s, r->p.snapshot_id, &text, &at, err)
                    : 0;
    if (found < 0)
        return -1;
    r->snapshot_exact = found == 1;
    r->snapshot_id = r->p.snapshot_id;
    if (!found) {
        nearest n = {.before = r->decided_at, .id = -1};
        if (store_inventory_snapshots(s, r->decided_at, keep_nearest, &n, err) < 0)
            return -1;
        if (n.id < 0) {
            vf_error_set(err, VF_EINVAL, "no inventory snapshot recorded at or before %s",
                         r->decided_at);
            return -1;
        }
        r->snapshot_id = n.id;
        if (store_inventory_snapshot_get(s, n.id, &text, &at, err) != 1)
            return -1;
    }
    snprintf(r->snapshot_at, sizeof r->snapshot_at, "%s", at);
    json_error_t json_err;
    json_t *doc = json_loads(text, 0, &json_err);
    free(text);
    free(at);
    if (!doc) {
        vf_error_set(err, VF_EINVAL, "inventory snapshot %lld: %s", (long long)r->snapshot_id,
                     json_err.text);
        return -1;
    }
    r->hosts = host_json_inventory(doc, err);
    json_decref(doc);
    return r->hosts ? 0 : -1;
}

static int read_config(store *s, ctl_record *r, vf_error *err)
{
    char *at = NULL;
    int found = r->p.config_id > 0
                    ? store_engine_config_get(s, r->p.config_id, &r->config_body, &at, err)
                    : 0;
    free(at);
    if (found <= 0)
        return found;
    r->config =
        config_load_string(r->config_body, strlen(r->config_body), "recorded configuration", err);
    return r->config ? 0 : -1;
}

/* ---- the holds ---- */

typedef struct rebuild {
    const ctl_record *r;
    const char *task_id; /* its own rows are the decision's, not what it was made over */
    sched_reservation *sure, *maybe;
    int64_t *sure_ids, *maybe_ids;
    size_t n_sure, cap_sure, n_maybe, cap_maybe, cap_sure_ids, cap_maybe_ids;
    bool failed;
} rebuild;

/* A row as the engine held it at the decision (reservations.c's hold(),
 * judged at that time: not yet released, so still preemptible if it had a
 * priority). */
static void as_held(const store_reservation *row, sched_reservation *res)
{
    memset(res, 0, sizeof *res);
    snprintf(res->task_id, sizeof res->task_id, "%s", row->task_id);
    snprintf(res->node, sizeof res->node, "%s", row->node);
    res->cpu = row->cpu;
    res->memory = row->memory;
    res->disk = row->disk;
    res->vmid = row->vmid > 0 ? (uint32_t)row->vmid : 0;
    if (row->request) {
        json_t *request = json_loads(row->request, 0, NULL);
        vf_error ignored;
        vf_error_init(&ignored);
        if (resource_amounts_parse(json_object_get(request, "resources"), "resources",
                                   &res->resources, &ignored) < 0)
            memset(&res->resources, 0, sizeof res->resources);
        json_decref(request);
    }
    int64_t ms = 0;
    res->expires = ids_parse_time_ms(row->expires_at, &ms) < 0 ? 0 : sched_hold_expiry_s(ms);
    res->has_priority = row->has_priority;
    res->priority = row->priority;
    (void)ids_parse_time_ms(row->created_at, &res->created);
}

static int add(sched_reservation **list, int64_t **ids, size_t *n, size_t *cap, size_t *cap_ids,
               const sched_reservation *res, int64_t id)
{
    if (grow_array((void **)list, cap, *n + 1, sizeof **list) < 0 ||
        grow_array((void **)ids, cap_ids, *n + 1, sizeof **ids) < 0)
        return -1;
    (*list)[*n] = *res;
    (*ids)[(*n)++] = id;
    return 0;
}

static int sort_row(const store_reservation *row, void *ctx)
{
    rebuild *b = ctx;
    if (strcmp(row->task_id, b->task_id) == 0)
        return 0;
    sched_reservation res;
    as_held(row, &res);
    /* Expired by the engine's clock: the engine had let it go. */
    if (res.expires > 0 && res.expires <= b->r->p.clock_ms / 1000)
        return 0;
    bool ambiguous = strcmp(row->created_at, b->r->decided_at) == 0 ||
                     (row->released_at && strcmp(row->released_at, b->r->decided_at) == 0);
    int rc = ambiguous ? add(&b->maybe, &b->maybe_ids, &b->n_maybe, &b->cap_maybe,
                             &b->cap_maybe_ids, &res, row->id)
                       : add(&b->sure, &b->sure_ids, &b->n_sure, &b->cap_sure, &b->cap_sure_ids,
                             &res, row->id);
    if (rc < 0) {
        b->failed = true;
        return 1;
    }
    return 0;
}

/* Which of the ambiguous rows make the recorded digest with the sure ones:
 * a bit mask, or -1 when no subset does (then all of them are taken). */
static long choose_ambiguous(const rebuild *b, uint64_t base, uint64_t want)
{
    if (b->n_maybe > CTL_RECORD_MAX_AMBIGUOUS)
        return -1;
    uint64_t digests[CTL_RECORD_MAX_AMBIGUOUS];
    for (size_t i = 0; i < b->n_maybe; i++)
        digests[i] = holds_reservation_digest(&b->maybe[i]);
    for (long mask = 0; mask < (1L << b->n_maybe); mask++) {
        uint64_t sum = base;
        for (size_t i = 0; i < b->n_maybe; i++)
            if (mask & (1L << i))
                sum += digests[i];
        if (sum == want)
            return mask;
    }
    return -1;
}

static int rebuild_holds(store *s, const char *task_id, ctl_record *r, vf_error *err)
{
    rebuild b = {.r = r, .task_id = task_id};
    int rc = store_reservations_around(s, r->decided_at, sort_row, &b, err);
    if (rc == 0 && b.failed) {
        vf_error_set(err, VF_ENOMEM, "out of memory rebuilding the holds of task %s", task_id);
        rc = -1;
    }
    uint64_t base = 0;
    for (size_t i = 0; i < b.n_sure; i++)
        base += holds_reservation_digest(&b.sure[i]);
    long mask = choose_ambiguous(&b, base, r->p.holds);
    r->holds_exact = mask >= 0;
    r->ambiguous = b.n_maybe;
    r->holds_digest = base;
    for (size_t i = 0; rc == 0 && i < b.n_maybe; i++) {
        if (mask >= 0 && !(mask & (1L << i)))
            continue;
        r->holds_digest += holds_reservation_digest(&b.maybe[i]);
        if (add(&b.sure, &b.sure_ids, &b.n_sure, &b.cap_sure, &b.cap_sure_ids, &b.maybe[i],
                b.maybe_ids[i]) < 0) {
            vf_error_set(err, VF_ENOMEM, "out of memory rebuilding the holds of task %s", task_id);
            rc = -1;
        }
    }
    r->holds = b.sure;
    r->hold_ids = b.sure_ids;
    r->n_holds = b.n_sure;
    free(b.maybe);
    free(b.maybe_ids);
    return rc;
}

int ctl_record_read(store *s, const char *task_id, ctl_record *r, vf_error *err)
{
    memset(r, 0, sizeof *r);
    if (store_provenance_get(s, task_id, &r->p, err) < 0)
        return -1;
    if (!r->p.present)
        return 0;
    if (store_format_time(r->p.decided_ms, r->decided_at) < 0) {
        vf_error_set(err, VF_EINVAL, "task %s: unreadable decision time", task_id);
        return -1;
    }
    if (read_snapshot(s, r, err) < 0 || read_config(s, r, err) < 0 ||
        rebuild_holds(s, task_id, r, err) < 0)
        return -1;
    return 1;
}
