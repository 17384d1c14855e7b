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
#include "reservations.h"
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
    /* The record holds the scheduler section alone. Its keys checked
     * against another section's (preemption_grace_s > inventory.refresh_s)
     * passed the worker's own check when it decided; here they meet the
     * smallest refresh, not the default one. */
    json_t *doc = json_loads(r->config_body, 0, NULL);
    if (json_is_object(doc) && !json_object_get(doc, "inventory"))
        json_object_set_new(doc, "inventory", json_pack("{s:i}", "refresh_s", 1));
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    const char *body = text ? text : r->config_body;
    r->config = config_load_string(body, strlen(body), "recorded configuration", err);
    free(text);
    return r->config ? 0 : -1;
}

/* ---- the holds ---- */

/* A list of reservations with their rows' ids. */
typedef struct held_list {
    sched_reservation *res;
    int64_t *ids;
    size_t n, cap, cap_ids;
} held_list;

/* A row of the decision's millisecond whose task has a history event then:
 * its place in the batch's order. */
typedef struct step {
    sched_reservation res;
    int64_t id;
    int64_t event; /* the task's first event of the millisecond */
    bool ends;     /* released then (else created then) */
} step;

typedef struct rebuild {
    const ctl_record *r;
    /* The engine's snapshot fetch, as store text: the worker's view and,
     * at the latest, its reservation clock. */
    char view_at[STORE_TIME_SIZE];
    /* Its own rows of the decision's millisecond are the decision's, not
     * what it was made over; older ones (a preempted placement's vmid, kept
     * held while the task is decided again) were held like any other. */
    const char *task_id;
    held_list sure;
    /* Of the decision's own millisecond: rows created then and rows created
     * before but released then (a preemption's victims, or a release beside
     * it). Those whose task has a history event then are put in the batch's
     * order (`steps`); the others stay in `created` (in id order: those in
     * force taken as a prefix) and `released` (any of them). */
    held_list created, released;
    step *steps;
    size_t n_steps, cap_steps;
    bool failed;
} rebuild;

/* What `row` held for the decision (reservations_row_hold, the worker's
 * rule), as the row stood then: its end, its VM's binding and the end of its
 * custom resources at or after the decision not yet happened (an end in the
 * decision's own millisecond is sorted out later). False: it held nothing. */
static bool as_held(const rebuild *b, const store_reservation *row, sched_reservation *res)
{
    const char *at = b->r->decided_at;
    store_reservation then = *row;
    if (then.released_at && strcmp(then.released_at, at) >= 0)
        then.released_at = NULL;
    if (then.bound_at && strcmp(then.bound_at, at) >= 0)
        then.bound_at = NULL;
    if (then.resources_ended_at && strcmp(then.resources_ended_at, at) >= 0)
        then.resources_ended_at = NULL;
    return reservations_row_hold(&then, b->r->hosts, b->view_at, b->view_at, res);
}

static int add(held_list *list, const sched_reservation *res, int64_t id)
{
    if (grow_array((void **)&list->res, &list->cap, list->n + 1, sizeof *list->res) < 0 ||
        grow_array((void **)&list->ids, &list->cap_ids, list->n + 1, sizeof *list->ids) < 0)
        return -1;
    list->res[list->n] = *res;
    list->ids[list->n++] = id;
    return 0;
}

static int sort_row(const store_reservation *row, void *ctx)
{
    rebuild *b = ctx;
    if (strcmp(row->task_id, b->task_id) == 0 && strcmp(row->created_at, b->r->decided_at) == 0)
        return 0;
    sched_reservation res;
    if (!as_held(b, row, &res))
        return 0;
    /* Expired by the engine's clock: the engine had let it go. */
    if (res.expires > 0 && res.expires <= b->r->p.clock_ms / 1000)
        return 0;
    held_list *to = strcmp(row->created_at, b->r->decided_at) == 0 ? &b->created
                    : row->released_at && strcmp(row->released_at, b->r->decided_at) == 0
                        ? &b->released
                        : &b->sure;
    if (add(to, &res, row->id) < 0) {
        b->failed = true;
        return 1;
    }
    return 0;
}

/* Move the rows of `list` whose task has a history event at the decision's
 * millisecond to b->steps. A batch writes its tasks' events in the order it
 * decides them, a preemption's ends (the victims' "preempted") before the
 * preemptor's own: the event ids order what the millisecond cannot, where
 * the rows' ids do not (a batch's claims are recorded by fit at its end, or
 * on PostgreSQL in a transaction of their own, in no decision order). */
static int to_steps(store *s, rebuild *b, held_list *list, bool ends, vf_error *err)
{
    size_t kept = 0;
    for (size_t i = 0; i < list->n; i++) {
        int64_t event = 0;
        int found =
            store_task_event_first_at(s, list->res[i].task_id, b->r->decided_at, &event, err);
        if (found < 0)
            return -1;
        if (!found) {
            list->res[kept] = list->res[i];
            list->ids[kept++] = list->ids[i];
            continue;
        }
        if (grow_array((void **)&b->steps, &b->cap_steps, b->n_steps + 1, sizeof *b->steps) < 0) {
            vf_error_set(err, VF_ENOMEM, "out of memory rebuilding the holds of task %s",
                         b->task_id);
            return -1;
        }
        b->steps[b->n_steps++] =
            (step){.res = list->res[i], .id = list->ids[i], .event = event, .ends = ends};
    }
    list->n = kept;
    return 0;
}

static int by_event(const void *x, const void *y)
{
    const step *a = x, *b = y;
    if (a->event != b->event)
        return a->event < b->event ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Whether step i was in force after the first `done` steps of the batch's
 * order had happened (every one of them: SIZE_MAX). */
static bool step_in_force(const step *st, size_t i, size_t done)
{
    return done == SIZE_MAX || (st->ends ? i >= done : i < done);
}

/* How the decision's millisecond is sorted out: the steps of the batch's
 * order done before it, how many of the other created rows (a prefix) and
 * which of the other released ones (a bit mask). */
typedef struct choice {
    size_t done;
    size_t prefix;
    long mask;
} choice;

/* Whether some prefix of the created rows and subset of the released ones
 * make `want` with `base`. */
static bool choose_unordered(const rebuild *b, uint64_t base, uint64_t want, choice *c)
{
    if (b->released.n > CTL_RECORD_MAX_AMBIGUOUS)
        return false;
    uint64_t released[CTL_RECORD_MAX_AMBIGUOUS];
    for (size_t i = 0; i < b->released.n; i++)
        released[i] = holds_reservation_digest(&b->released.res[i]);
    uint64_t created = base;
    for (size_t k = 0; k <= b->created.n; k++) {
        if (k > 0)
            created += holds_reservation_digest(&b->created.res[k - 1]);
        for (long m = 0; m < (1L << b->released.n); m++) {
            uint64_t sum = created;
            for (size_t i = 0; i < b->released.n; i++)
                if (m & (1L << i))
                    sum += released[i];
            if (sum == want) {
                c->prefix = k;
                c->mask = m;
                return true;
            }
        }
    }
    return false;
}

/* Which of the decision's millisecond's rows make the recorded digest with
 * the sure ones: the point in the batch's order where the decision was
 * made, then the rows out of that order. False when nothing does (then all
 * of them count). */
static bool choose_ambiguous(const rebuild *b, uint64_t base, uint64_t want, choice *c)
{
    uint64_t ordered = 0;
    for (size_t i = 0; i < b->n_steps; i++)
        if (b->steps[i].ends)
            ordered += holds_reservation_digest(&b->steps[i].res);
    for (size_t done = 0; done <= b->n_steps; done++) {
        if (done > 0) {
            const step *st = &b->steps[done - 1];
            uint64_t one = holds_reservation_digest(&st->res);
            ordered = st->ends ? ordered - one : ordered + one;
        }
        if (choose_unordered(b, base + ordered, want, c)) {
            c->done = done;
            return true;
        }
    }
    return false;
}

static int rebuild_holds(store *s, const char *task_id, ctl_record *r, vf_error *err)
{
    rebuild b = {.r = r, .task_id = task_id};
    if (r->p.clock_ms <= 0 || store_format_time(r->p.clock_ms, b.view_at) < 0)
        snprintf(b.view_at, sizeof b.view_at, "%s", r->decided_at);
    int rc = store_reservations_around(s, r->decided_at, b.view_at, sort_row, &b, err);
    if (rc == 0 && b.failed) {
        vf_error_set(err, VF_ENOMEM, "out of memory rebuilding the holds of task %s", task_id);
        rc = -1;
    }
    r->ambiguous = b.created.n + b.released.n;
    if (rc == 0 && (to_steps(s, &b, &b.created, false, err) < 0 ||
                    to_steps(s, &b, &b.released, true, err) < 0))
        rc = -1;
    if (b.n_steps)
        qsort(b.steps, b.n_steps, sizeof *b.steps, by_event);
    uint64_t base = 0;
    for (size_t i = 0; i < b.sure.n; i++)
        base += holds_reservation_digest(&b.sure.res[i]);
    choice c = {.done = SIZE_MAX, .prefix = b.created.n, .mask = -1};
    r->holds_exact = rc == 0 && choose_ambiguous(&b, base, r->p.holds, &c);
    for (size_t i = 0; rc == 0 && i < b.n_steps; i++)
        if (step_in_force(&b.steps[i], i, c.done))
            rc = add(&b.sure, &b.steps[i].res, b.steps[i].id);
    for (size_t i = 0; rc == 0 && i < c.prefix; i++)
        rc = add(&b.sure, &b.created.res[i], b.created.ids[i]);
    for (size_t i = 0; rc == 0 && i < b.released.n; i++)
        if (c.mask & (1L << i))
            rc = add(&b.sure, &b.released.res[i], b.released.ids[i]);
    if (rc < 0 && err->code == VF_OK)
        vf_error_set(err, VF_ENOMEM, "out of memory rebuilding the holds of task %s", task_id);
    r->holds_digest = 0;
    for (size_t i = 0; i < b.sure.n; i++)
        r->holds_digest += holds_reservation_digest(&b.sure.res[i]);
    r->holds = b.sure.res;
    r->hold_ids = b.sure.ids;
    r->n_holds = b.sure.n;
    free(b.created.res);
    free(b.created.ids);
    free(b.released.res);
    free(b.released.ids);
    free(b.steps);
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
