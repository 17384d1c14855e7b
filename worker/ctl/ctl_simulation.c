/* ctl_simulation: see ctl_simulation.h. */
#include "ctl_simulation.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "grow.h"
#include "host_json.h"
#include "ids.h"
#include "store_inventory.h"

/* `n` copies of node `like` in the snapshot document: empty of VMs (no
 * allocation, no guests), named "<like>.new1".. A snapshot without that host
 * gets none. Returns 0 or -1 (out of memory). */
static int add_copies(json_t *doc, const char *like, int n)
{
    json_t *nodes = json_object_get(doc, "nodes");
    const json_t *model = NULL;
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node)
    {
        const char *name = json_string_value(json_object_get(node, "name"));
        if (name && strcmp(name, like) == 0)
            model = node;
    }
    for (int k = 1; model && k <= n; k++) {
        json_t *copy = json_deep_copy(model);
        char name[HOST_NAME_LEN + 16];
        snprintf(name, sizeof name, "%.50s.new%d", like, k);
        if (!copy || json_object_set_new(copy, "name", json_string(name)) < 0 ||
            json_array_append_new(nodes, copy) < 0)
            return -1;
        static const char *const emptied[] = {"vmids", "usage_cpu", "usage_mem"};
        for (size_t e = 0; e < sizeof emptied / sizeof *emptied; e++)
            json_object_del(copy, emptied[e]);
        json_object_set_new(copy, "allocated_cpu", json_integer(0));
        json_object_set_new(copy, "allocated_memory", json_integer(0));
        json_object_set_new(copy, "current_vms", json_integer(0));
    }
    return 0;
}

/* Store time text (2026-11-22T01:02:03.123Z) to Unix ms; -1 if malformed. */
static int64_t time_ms(const char *text)
{
    int64_t ms = -1;
    return ids_parse_time_ms(text, &ms) < 0 ? -1 : ms;
}

static int parse_schedule(const json_t *body, ctl_step *st)
{
    vf_error err;
    vf_error_init(&err);
    return body ? sched_request_parse(body, &st->req, &err) : -1;
}

static int parse_spare_prepare(const json_t *body, ctl_step *st)
{
    vf_error err;
    vf_error_init(&err);
    return ctl_parse_spare_prepare(body, &st->req, &st->spare_count, &st->ready_timeout_s, &err);
}

static int collect_step(const store_history_step *h, void *ctx)
{
    ctl_simulation *sim = ctx;
    ctl_step st;
    memset(&st, 0, sizeof st);
    st.release = h->release;
    st.at_ms = time_ms(h->at);
    snprintf(st.task_id, sizeof st.task_id, "%s", h->task_id);
    if (!h->release) {
        if (h->spare && h->reason && strcmp(h->reason, "invalid") == 0) {
            /* Refused before placement (an unknown cluster, an upgrade that
             * already has spares): the worker held nothing for it. */
            sim->invalid++;
            return 0;
        }
        json_t *body = h->request ? json_loads(h->request, 0, NULL) : NULL;
        if (h->spare && body && !json_object_get(body, "count")) {
            /* A spare.release: its spares' holds end by release steps. */
            json_decref(body);
            return 0;
        }
        int parsed = h->spare ? parse_spare_prepare(body, &st) : parse_schedule(body, &st);
        json_decref(body);
        if (parsed < 0) {
            sim->invalid++;
            return 0;
        }
        snprintf(st.req.task_id, sizeof st.req.task_id, "%s", h->task_id);
    }
    if (grow_array((void **)&sim->steps, &sim->cap, sim->n + 1, sizeof *sim->steps) < 0) {
        ctl_error("out of memory reading the history");
        sim->failed = CTL_EXIT_UNAVAILABLE;
        return 1;
    }
    sim->steps[sim->n++] = st;
    return 0;
}

/* Replay the history up to (not including) `until_ms`; -1: all of it. */
static int advance(ctl_simulation *sim, int64_t until_ms)
{
    for (; sim->next < sim->n; sim->next++) {
        const ctl_step *st = &sim->steps[sim->next];
        if (until_ms >= 0 && st->at_ms >= until_ms)
            break;
        if (st->release) {
            replay_release(sim->r, st->task_id, st->at_ms);
            continue;
        }
        vf_error err;
        vf_error_init(&err);
        int rc = st->spare_count ? replay_decide_spares(sim->r, &st->req, st->spare_count,
                                                        st->ready_timeout_s, st->at_ms, &err)
                                 : replay_decide(sim->r, &st->req, st->at_ms, &err);
        if (rc < 0) {
            ctl_error("%s", err.text);
            return -1;
        }
    }
    return 0;
}

static int follow_snapshot(const store_inventory_snapshot *snapshot, void *ctx)
{
    ctl_simulation *sim = ctx;
    int64_t at = time_ms(snapshot->recorded_at);
    if (advance(sim, at) < 0) {
        sim->failed = CTL_EXIT_UNAVAILABLE;
        return 1;
    }
    json_error_t json_err;
    json_t *doc = json_loads(snapshot->hosts, 0, &json_err);
    vf_error err;
    vf_error_init(&err);
    if (doc && sim->added > 0 && add_copies(doc, sim->like, sim->added) < 0) {
        json_decref(doc);
        doc = NULL;
        snprintf(json_err.text, sizeof json_err.text, "out of memory adding hosts");
    }
    hostset *set = doc ? host_json_inventory(doc, &err) : NULL;
    json_decref(doc);
    if (!set || replay_inventory(sim->r, set, at, &err) < 0) {
        ctl_error("inventory snapshot %" PRId64 " (%s): %s", snapshot->id, snapshot->recorded_at,
                  doc ? err.text : json_err.text);
        hostset_free(set);
        sim->failed = CTL_EXIT_UNAVAILABLE;
        return 1;
    }
    /* The engines now decide over `set`: the previous one can go. */
    hostset_free(sim->current);
    sim->current = set;
    sim->snapshots++;
    return 0;
}

int ctl_simulation_history(ctl_simulation *sim, store *s, const char *since, vf_error *err)
{
    return store_history(s, since, collect_step, sim, err) < 0 || sim->failed ? -1 : 0;
}

int ctl_simulation_project(ctl_simulation *sim, int64_t until_ms)
{
    size_t n = sim->n;
    if (n == 0)
        return 0;
    int64_t first = sim->steps[0].at_ms, window = sim->steps[n - 1].at_ms - first + 1;
    for (int k = 1; window > 0 && first + (int64_t)k * window <= until_ms; k++)
        for (size_t i = 0; i < n; i++) {
            ctl_step st = sim->steps[i];
            st.at_ms += (int64_t)k * window;
            if (st.at_ms > until_ms)
                break;
            /* "<id>~k", the id cut to leave room for the suffix. */
            char suffix[16];
            size_t len = (size_t)snprintf(suffix, sizeof suffix, "~%d", k);
            size_t keep = sizeof st.task_id - 1 - len, at = strlen(st.task_id);
            memcpy(st.task_id + (at < keep ? at : keep), suffix, len + 1);
            memcpy(st.req.task_id, st.task_id, sizeof st.req.task_id);
            if (grow_array((void **)&sim->steps, &sim->cap, sim->n + 1, sizeof *sim->steps) < 0)
                return -1;
            sim->steps[sim->n++] = st;
            sim->projected++;
        }
    return 0;
}

int ctl_simulation_replay(ctl_simulation *sim, store *s, const char *since, vf_error *err)
{
    if (store_inventory_snapshots(s, since, follow_snapshot, sim, err) < 0)
        return -1;
    if (sim->failed || advance(sim, -1) < 0)
        return -1;
    return replay_finish(sim->r, sim->n ? sim->steps[sim->n - 1].at_ms : 0, err);
}

void ctl_simulation_rewind(ctl_simulation *sim)
{
    sim->next = 0;
    sim->snapshots = 0;
    sim->failed = 0;
    hostset_free(sim->current);
    sim->current = NULL;
}

void ctl_simulation_close(ctl_simulation *sim)
{
    hostset_free(sim->current);
    free(sim->steps);
    memset(sim, 0, sizeof *sim);
}
