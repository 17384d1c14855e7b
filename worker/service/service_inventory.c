/* service_inventory: the inventory refresh thread and following its
 * snapshots (service_internal.h). */
#include "service_internal.h"

/* ---- inventory ---- */

struct inventory_refresher {
    inventory *source; /* borrowed */
    pthread_t thread;
    pthread_mutex_t lock;
    stopper stop;
    atomic_int refresh_s; /* inventory.refresh_s, as last reloaded */
    bool fetch_now;       /* under lock: a reload asks for a fetch before the interval ends */
};

static void *refresh_loop(void *arg)
{
    inventory_refresher *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stop.stop) {
        /* Until the interval ends, or a reload asks for a fetch now
         * (stopper_wake), or a stop. */
        int64_t until_ms = clock_mono_ms() + (int64_t)atomic_load(&r->refresh_s) * 1000;
        while (!r->fetch_now && !r->stop.stop && clock_mono_ms() < until_ms)
            (void)stopper_wait_once(&r->stop, until_ms - clock_mono_ms());
        if (r->stop.stop)
            break;
        r->fetch_now = false;
        pthread_mutex_unlock(&r->lock);
        vf_error err;
        vf_error_init(&err);
        (void)inventory_refresh(r->source, &err); /* logs its own failures */
        /* Parsing a large inventory churns through megabytes that this
         * thread's arena would otherwise keep resident between refreshes. */
        malloc_trim(0);
        pthread_mutex_lock(&r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

inventory_refresher *service_inventory_refresher_start(inventory *source, int refresh_s,
                                                       vf_error *err)
{
    inventory_refresher *r = calloc(1, sizeof *r);
    if (!r) {
        vf_error_set(err, VF_ENOMEM, "out of memory starting the inventory refresh thread");
        return NULL;
    }
    r->source = source;
    atomic_init(&r->refresh_s, refresh_s);
    pthread_mutex_init(&r->lock, NULL);
    if (stopper_init(&r->stop, &r->lock) < 0) {
        vf_error_set(err, VF_EINTERNAL, "cannot make the refresh thread's stopper");
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
    }
    if (pthread_create(&r->thread, NULL, refresh_loop, r) != 0) {
        vf_error_set(err, VF_EINTERNAL, "cannot start the inventory refresh thread");
        stopper_close(&r->stop);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
    }
    return r;
}

void service_inventory_refresher_fetch_now(inventory_refresher *r, int refresh_s)
{
    atomic_store(&r->refresh_s, refresh_s);
    pthread_mutex_lock(&r->lock);
    r->fetch_now = true;
    stopper_wake(&r->stop);
    pthread_mutex_unlock(&r->lock);
}

void service_inventory_refresher_stop(inventory_refresher *r)
{
    if (!r)
        return;
    stopper_stop(&r->stop);
    pthread_join(r->thread, NULL);
    stopper_close(&r->stop);
    pthread_mutex_destroy(&r->lock);
    free(r);
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

/* Past inventory.max_age_s the snapshot no longer describes the hosts well
 * enough to place on: placements stop (tasks retry, then end exhausted)
 * until a refresh succeeds. Says so once when it starts and when it ends. */
static void check_max_age(service *svc, const inventory_view *view)
{
    int max_age_s = svc->config->inventory.max_age_s;
    bool too_old = view->hosts && view->age_s > max_age_s;
    bool was_too_old = svc->inventory_too_old;
    if (too_old) {
        snprintf(svc->note, sizeof svc->note,
                 "inventory is %.0f s old, older than inventory.max_age_s (%d s): no placement "
                 "until a refresh succeeds; last error: %.160s",
                 view->age_s, max_age_s, view->error[0] ? view->error : "none");
        if (!was_too_old)
            log_warn("%s", svc->note);
    } else if (was_too_old && view->hosts) {
        log_info("inventory: fresh again; placements resume");
    }
    svc->inventory_too_old = too_old;
    svc->placeable = too_old ? NULL : view->hosts;
}

/* Switch the engine to the newest snapshot if there is one; collect the
 * reservations whose VMs the inventory now shows. */
int service_follow_inventory(service *svc, materialised *gone, vf_error *err)
{
    inventory_view next;
    inventory_acquire(svc->inventory, &next);
    inventory_view_describe(&next, svc->note, sizeof svc->note);
    if (!next.hosts || next.hosts == svc->view.hosts) {
        check_max_age(svc, &next);
        inventory_release(&next);
        return 0;
    }
    /* Timed: the consumer waits while the engine switches (index rebuilt,
     * reservations re-applied), which shows in the latency tail at 10,000 hosts. */
    int64_t switch_start_us = clock_mono_us();
    if (sched_engine_set_hosts(svc->engine, next.hosts, note_materialised, gone, err) < 0) {
        inventory_release(&next);
        return -1;
    }
    double switch_ms = (double)(clock_mono_us() - switch_start_us) / 1000.0;
    /* Refreshes happen every few seconds: say so only when the picture changes. */
    if (!svc->view.hosts || svc->view.hosts->n_hosts != next.hosts->n_hosts)
        log_info("inventory: deciding over %zu hosts%s%s", next.hosts->n_hosts,
                 svc->note[0] ? "; " : "", svc->note);
    else
        log_debug("inventory: new snapshot of %zu hosts, switched to in %.2f ms",
                  next.hosts->n_hosts, switch_ms);
    inventory_release(&svc->view);
    svc->view = next;
    svc->view_fetched_ms = clock_wall_ms() - (int64_t)(next.age_s * 1000);
    check_max_age(svc, &svc->view);
    return 0;
}

int service_record_snapshot(service *svc, const char *fetched, vf_error *err)
{
    svc->snapshot_pending[0] = '\0';
    if (!svc->view.hosts)
        return 0;
    /* inventory.record_every_s bounds what the table costs: a source whose
     * figures move at every fetch (allocations, measured usage) would
     * otherwise add a snapshot (3 MB at 10,000 hosts) each refresh_s. The
     * first one is recorded at once. */
    int every_s = reload_current(&svc->reload)->inventory.record_every_s;
    if (every_s == 0 || (svc->snapshot_hash[0] &&
                         clock_mono_ms() - svc->snapshot_recorded_ms < (int64_t)every_s * 1000))
        return 0;
    /* Hashed from the hostset at every new fetch; the document (hundreds of
     * ms at 10,000 hosts) is written only when the content changed. */
    char hash[STORE_INVENTORY_HASH_SIZE];
    if (host_json_content_hash(svc->view.hosts, hash) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory hashing an inventory snapshot");
        return -1;
    }
    if (strcmp(hash, svc->snapshot_hash) == 0)
        return 0;
    json_t *doc = host_json_from_hostset(svc->view.hosts);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!text) {
        vf_error_set(err, VF_ENOMEM, "out of memory writing an inventory snapshot");
        return -1;
    }
    int rc = store_inventory_snapshot_record(svc->store, hash, fetched, text, err);
    if (rc > 0)
        log_debug("inventory: recorded a snapshot of %zu hosts (%zu bytes)",
                  svc->view.hosts->n_hosts, strlen(text));
    if (rc >= 0)
        snprintf(svc->snapshot_pending, sizeof svc->snapshot_pending, "%s", hash);
    free(text);
    return rc < 0 ? -1 : 0;
}
