/* service_follower: following the inventory snapshots (service_follower.h). */
#include "service_follower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "grow.h"
#include "host_json.h"
#include "log.h"
#include "store_inventory.h"
#include "store_provenance.h"
#include "store_reservations.h"

struct service_follower {
    inventory *source;         /* borrowed */
    sched_engine *engine;      /* borrowed */
    store *store;              /* borrowed */
    const vf_config *config;   /* borrowed: inventory.max_age_s */
    clock_seam clock;          /* monotonic ms; a test's when set */
    inventory_view view;       /* the snapshot the engine decides over */
    int64_t view_fetched_ms;   /* the reservation clock: when `view` was fetched (Unix ms) */
    int64_t clock_recorded_ms; /* the last view_fetched_ms the store has */
    /* Inventory snapshots (store_inventory.h): the hash of the last content
     * this worker recorded or found recorded, and of the one being recorded
     * in the open transaction (kept once it commits). "": none yet. */
    char snapshot_hash[STORE_INVENTORY_HASH_SIZE];
    char snapshot_pending[STORE_INVENTORY_HASH_SIZE];
    char view_hash[STORE_INVENTORY_HASH_SIZE]; /* of view's content; "": not hashed yet */
    int64_t snapshot_recorded_ms;              /* monotonic: when snapshot_hash was recorded */
    /* Decision provenance (provenance.h): the row of snapshot_hash's content
     * (kept with it), of the pending one, and of the content decided over
     * now (-1: not recorded). record_decided: inventory.record_decided. */
    int64_t snapshot_id, snapshot_pending_id, view_snapshot_id;
    bool record_decided;
    /* `view.hosts`, or NULL while the snapshot is older than
     * inventory.max_age_s: then tasks retry as if there were no inventory. */
    const hostset *placeable;
    bool too_old; /* placements stopped by inventory.max_age_s */
    char note[VF_ERROR_TEXT + 64];
};

/* Reservations whose VMs the inventory now shows on their own hosts. */
typedef struct materialised_vm {
    int64_t vmid;
    char node[HOST_NAME_LEN];
} materialised_vm;

typedef struct materialised {
    materialised_vm *vms;
    size_t n, cap;
} materialised;

service_follower *service_follower_new(inventory *source, sched_engine *engine, store *store,
                                       const vf_config *config, vf_error *err)
{
    service_follower *f = calloc(1, sizeof *f);
    if (!f) {
        vf_error_set(err, VF_ENOMEM, "out of memory making the inventory follower");
        return NULL;
    }
    f->source = source;
    f->engine = engine;
    f->store = store;
    f->config = config;
    f->snapshot_id = f->snapshot_pending_id = f->view_snapshot_id = -1;
    f->record_decided = config->inventory.record_decided;
    return f;
}

void service_follower_set_clock(service_follower *f, int64_t (*mono_ms)(void *context),
                                void *context)
{
    f->clock = (clock_seam){mono_ms, mono_ms ? context : NULL};
}

void service_follower_free(service_follower *f)
{
    if (!f)
        return;
    inventory_release(&f->view);
    free(f);
}

const hostset *service_follower_placeable(const service_follower *f)
{
    return f->placeable;
}

int64_t service_follower_clock_ms(const service_follower *f)
{
    return f->view_fetched_ms;
}

int64_t service_follower_snapshot_id(const service_follower *f)
{
    return f->view_snapshot_id;
}

void service_follower_record_decided(service_follower *f, bool on)
{
    f->record_decided = on;
}

const char *service_follower_note(const service_follower *f)
{
    return f->note;
}

static void note_materialised(const sched_reservation *res, void *user)
{
    materialised *m = user;
    if (grow_array((void **)&m->vms, &m->cap, m->n + 1, sizeof *m->vms) == 0) {
        m->vms[m->n].vmid = res->vmid;
        snprintf(m->vms[m->n].node, sizeof m->vms[m->n].node, "%s", res->node);
        m->n++;
    }
}

/* Bound reservations whose VMs the snapshot no longer shows: their custom
 * resources stop counting (docs/guarantees.md "The ledger"). */
typedef struct vm_gone {
    int64_t id;
    char task_id[REQUEST_TASK_ID_LEN];
    char node[HOST_NAME_LEN];
} vm_gone;

typedef struct gone_vms {
    const hostset *hosts;
    const char *fetched; /* the snapshot's fetch time */
    vm_gone *vms;
    size_t n, cap;
    bool failed;
} gone_vms;

/* A VM is gone when a snapshot fetched after the one that bound it lists
 * its host online and its vmid nowhere: not as a guest of any host, not
 * among the ids in use. A host that is absent or not online may simply not
 * be listing its guests: nothing is concluded from it. */
static int note_gone_vm(const store_held_resources *r, void *arg)
{
    gone_vms *g = arg;
    const host *h = hostset_find(g->hosts, r->node);
    if (!r->bound_at || strcmp(r->bound_at, g->fetched) >= 0 || !h || h->status != HOST_ONLINE ||
        (r->vmid > 0 && hostset_vmid_used(g->hosts, (uint32_t)r->vmid)))
        return 0;
    if (grow_array((void **)&g->vms, &g->cap, g->n + 1, sizeof *g->vms) < 0) {
        g->failed = true;
        return 1;
    }
    vm_gone *vm = &g->vms[g->n++];
    vm->id = r->id;
    snprintf(vm->task_id, sizeof vm->task_id, "%s", r->task_id);
    snprintf(vm->node, sizeof vm->node, "%s", r->node);
    return 0;
}

/* In the sync's transaction: end the custom resources of the VMs the new
 * snapshot shows gone. Returns 0 or -1 with err. */
static int end_resources_of_gone(service_follower *f, const char *fetched, gone_vms *g,
                                 vf_error *err)
{
    g->hosts = f->view.hosts;
    g->fetched = fetched;
    if (!g->hosts)
        return 0;
    if (store_reservations_holding_resources(f->store, note_gone_vm, g, err) < 0)
        return -1;
    if (g->failed) {
        vf_error_set(err, VF_ENOMEM, "out of memory following VMs that hold custom resources");
        return -1;
    }
    for (size_t i = 0; i < g->n; i++)
        if (store_reservation_resources_end(f->store, g->vms[i].id, fetched, err) < 0)
            return -1;
    return 0;
}

/* Past inventory.max_age_s the snapshot no longer describes the hosts well
 * enough to place on: placements stop (tasks retry, then end exhausted)
 * until a refresh succeeds. Says so once when it starts and when it ends. */
static void check_max_age(service_follower *f, const inventory_view *view)
{
    int max_age_s = f->config->inventory.max_age_s;
    bool too_old = view->hosts && view->age_s > max_age_s;
    if (too_old) {
        snprintf(f->note, sizeof f->note,
                 "inventory is %.0f s old, older than inventory.max_age_s (%d s): no placement "
                 "until a refresh succeeds; last error: %.160s",
                 view->age_s, max_age_s, view->error[0] ? view->error : "none");
        if (!f->too_old)
            log_warn("%s", f->note);
    } else if (f->too_old && view->hosts) {
        log_info("inventory: fresh again; placements resume");
    }
    f->too_old = too_old;
    f->placeable = too_old ? NULL : view->hosts;
}

/* Switch the engine to the newest snapshot if there is one; collect the
 * reservations whose VMs the inventory now shows. */
static int follow(service_follower *f, materialised *gone, vf_error *err)
{
    inventory_view next;
    inventory_acquire(f->source, &next);
    inventory_view_describe(&next, f->note, sizeof f->note);
    if (!next.hosts || next.hosts == f->view.hosts) {
        if (next.hosts && next.fetch != f->view.fetch) {
            /* The same bytes fetched again: the same hosts, a later fetch.
             * The reservation clock moves with it, as with a new snapshot. */
            f->view.fetch = next.fetch;
            f->view.age_s = next.age_s;
            f->view_fetched_ms = clock_wall_ms() - (int64_t)(next.age_s * 1000);
        }
        check_max_age(f, &next);
        inventory_release(&next);
        return 0;
    }
    /* Timed: the consumer waits while the engine switches (index rebuilt,
     * reservations re-applied), which shows in the latency tail at 10,000 hosts. */
    int64_t switch_start_us = clock_mono_us();
    if (sched_engine_set_hosts(f->engine, next.hosts, note_materialised, gone, err) < 0) {
        inventory_release(&next);
        return -1;
    }
    double switch_ms = (double)(clock_mono_us() - switch_start_us) / 1000.0;
    /* Refreshes happen every few seconds: say so only when the picture changes. */
    if (!f->view.hosts || f->view.hosts->n_hosts != next.hosts->n_hosts)
        log_info("inventory: deciding over %zu hosts%s%s", next.hosts->n_hosts,
                 f->note[0] ? "; " : "", f->note);
    else
        log_debug("inventory: new snapshot of %zu hosts, switched to in %.2f ms",
                  next.hosts->n_hosts, switch_ms);
    inventory_release(&f->view);
    f->view = next;
    f->view_snapshot_id = -1; /* until a sync finds or records its content */
    f->view_hash[0] = '\0';
    f->view_fetched_ms = clock_wall_ms() - (int64_t)(next.age_s * 1000);
    check_max_age(f, &f->view);
    return 0;
}

int service_follower_start(service_follower *f, vf_error *err)
{
    materialised gone = {0};
    int rc = follow(f, &gone, err);
    free(gone.vms);
    return rc;
}

/* Inside the caller's transaction: record the view as an inventory snapshot
 * fetched at `fetched`, unless its content is the last one recorded (by this
 * worker, or by any on the store: the store compares with its newest row).
 * Sets snapshot_pending (and its row), which move to snapshot_hash after
 * the commit. Returns 0 or -1 with err set. */
static int record_snapshot(service_follower *f, int every_s, const char *fetched, vf_error *err)
{
    f->snapshot_pending[0] = '\0';
    f->snapshot_pending_id = -1;
    if (!f->view.hosts)
        return 0;
    /* inventory.record_every_s bounds what the table costs: a source whose
     * figures move at every fetch (allocations, measured usage) would
     * otherwise add a snapshot (3 MB at 10,000 hosts) each refresh_s. The
     * first one is recorded at once. inventory.record_decided records every
     * content decided over, so that a decision replays exactly. */
    bool throttled = every_s == 0 || (f->snapshot_hash[0] &&
                                      clock_seam_mono_ms(&f->clock) - f->snapshot_recorded_ms <
                                          (int64_t)every_s * 1000);
    if (throttled && !f->record_decided)
        return 0;
    /* Hashed from the hostset once per snapshot (the same bytes fetched
     * again keep it); the document (hundreds of ms at 10,000 hosts) is
     * written only when the content changed. */
    if (!f->view_hash[0] && host_json_content_hash(f->view.hosts, f->view_hash) < 0) {
        f->view_hash[0] = '\0';
        vf_error_set(err, VF_ENOMEM, "out of memory hashing an inventory snapshot");
        return -1;
    }
    const char *hash = f->view_hash;
    if (strcmp(hash, f->snapshot_hash) == 0) {
        f->view_snapshot_id = f->snapshot_id;
        return 0;
    }
    char *text = host_json_dump_hostset(f->view.hosts);
    if (!text) {
        vf_error_set(err, VF_ENOMEM, "out of memory writing an inventory snapshot");
        return -1;
    }
    int rc = store_inventory_snapshot_record(f->store, hash, fetched, text, err);
    if (rc > 0)
        log_debug("inventory: recorded a snapshot of %zu hosts (%zu bytes)", f->view.hosts->n_hosts,
                  strlen(text));
    free(text);
    if (rc >= 0 && store_inventory_snapshot_find(f->store, hash, &f->snapshot_pending_id, err) < 0)
        rc = -1;
    if (rc >= 0)
        snprintf(f->snapshot_pending, sizeof f->snapshot_pending, "%s", hash);
    return rc < 0 ? -1 : 0;
}

/* While the inventory is stale no new snapshot comes, so the clock stands
 * still and nothing expires. */
int service_follower_sync(service_follower *f, int record_every_s, bool *room_changed,
                          vf_error *err)
{
    *room_changed = false;
    materialised gone = {0};
    gone_vms vms_gone = {0};
    int rc = follow(f, &gone, err);
    if (rc == 0 && (gone.n || f->view_fetched_ms > f->clock_recorded_ms)) {
        size_t expired_held = sched_engine_expire(f->engine, f->view_fetched_ms / 1000);
        char now[STORE_TIME_SIZE], fetched[STORE_TIME_SIZE];
        store_now(now);
        store_format_time(f->view_fetched_ms, fetched);
        int expired = 0;
        rc = store_begin(f->store, err);
        for (size_t i = 0; rc == 0 && i < gone.n; i++)
            rc = store_reservation_release_vmid(f->store, gone.vms[i].vmid, gone.vms[i].node, now,
                                                fetched, err) < 0
                     ? -1
                     : 0;
        if (rc == 0)
            rc = store_inventory_fresh_set(f->store, fetched, err);
        if (rc == 0 && f->view_fetched_ms > f->clock_recorded_ms)
            rc = record_snapshot(f, record_every_s, fetched, err);
        if (rc == 0 && f->view_fetched_ms > f->clock_recorded_ms)
            rc = end_resources_of_gone(f, fetched, &vms_gone, err);
        if (rc == 0 && (expired = store_reservations_expire(f->store, fetched, err)) < 0)
            rc = -1;
        if (rc == 0)
            rc = store_commit(f->store, err);
        if (rc < 0) {
            vf_error ignored;
            vf_error_init(&ignored);
            (void)store_rollback(f->store, &ignored);
            /* The engine has dropped them already; the store keeps them until the
             * next round (or start) ends them again. Nothing is overcommitted. */
        } else {
            f->clock_recorded_ms = f->view_fetched_ms;
            if (f->snapshot_pending[0]) {
                memcpy(f->snapshot_hash, f->snapshot_pending, sizeof f->snapshot_hash);
                f->snapshot_id = f->view_snapshot_id = f->snapshot_pending_id;
                f->snapshot_recorded_ms = clock_seam_mono_ms(&f->clock);
            }
            *room_changed = true; /* a new snapshot, or holds ended */
            if (gone.n)
                log_info("reservations: %zu ended: the inventory now shows their VMs", gone.n);
            for (size_t i = 0; i < vms_gone.n; i++)
                sched_engine_end_resources(f->engine, vms_gone.vms[i].task_id,
                                           vms_gone.vms[i].node);
            if (vms_gone.n)
                log_info("reservations: the custom resources of %zu VMs ended: the inventory "
                         "fetched at %s no longer shows them",
                         vms_gone.n, fetched);
            if (expired > 0 || expired_held > 0)
                log_info("reservations: %zu expired unclaimed (scheduler.reservation_ttl_s, "
                         "judged against the inventory fetched at %s)",
                         expired_held > (size_t)expired ? expired_held : (size_t)expired, fetched);
        }
    }
    free(gone.vms);
    free(vms_gone.vms);
    return rc;
}
