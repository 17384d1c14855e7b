#include "spare_driver.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "events.h"
#include "grow.h"
#include "job.h"
#include "ids.h"
#include "json_util.h"
#include "request.h"
#include "leases.h"
#include "log.h"
#include "spare_kube.h"
#include "spare_provision.h"
#include "store.h"
#include "store_config.h"
#include "store_hosts.h"
#include "store_outbox.h"
#include "store_reservations.h"
#include "store_spares.h"
#include "store_tasks.h"

#define SCAN_INTERVAL_MS 500
#define SCAN_LIMIT 256
#define RETRY_CAP_S 60
/* How often spare.max_age is looked at: a whole-table scan, so not every tick. */
#define MAX_AGE_CHECK_MS 5000

struct spare_driver {
    const vf_config *config;
    char owner[STORE_OWNER_SIZE]; /* this worker, in the "spares" lease */
    int64_t epoch;                /* of the "spares" lease as last held; 0: not held yet */
    store *store;
    job job;         /* job.stop.stop is what the provisioners poll */
    char **released; /* task ids, owned; under job.lock */
    size_t n_released, cap_released;
};

typedef struct clock_now {
    int64_t ms;
    char text[STORE_TIME_SIZE];
} clock_now;

static void read_clock(clock_now *now)
{
    now->ms = clock_wall_ms();
    store_format_time(now->ms, now->text);
}

static void later(const clock_now *now, int64_t seconds, char out[STORE_TIME_SIZE])
{
    store_format_time(now->ms + seconds * 1000, out);
}

static void note_released(spare_driver *d, const char *task_id)
{
    pthread_mutex_lock(&d->job.lock);
    char *copy = NULL;
    if (grow_array((void **)&d->released, &d->cap_released, d->n_released + 1,
                   sizeof *d->released) == 0)
        copy = strdup(task_id);
    if (copy)
        d->released[d->n_released++] = copy;
    else {
        free(copy);
        /* The engine keeps the hold until it expires: capacity is only
         * under-used, never over-committed. */
        log_warn("task %s: out of memory telling the scheduler its reservations ended", task_id);
    }
    pthread_mutex_unlock(&d->job.lock);
}

void spare_driver_take_released(spare_driver *d, void (*fn)(const char *task_id, void *user),
                                void *user)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->job.lock);
    for (size_t i = 0; i < d->n_released; i++) {
        fn(d->released[i], user);
        free(d->released[i]);
    }
    d->n_released = 0;
    pthread_mutex_unlock(&d->job.lock);
}

/* ---- recording ---- */

static int history(spare_driver *d, const char *task_id, const clock_now *now, const char *status,
                   json_t *detail, vf_error *err)
{
    char *text = detail ? json_util_dump(detail) : NULL;
    json_decref(detail);
    int rc = store_task_event_add(d->store, task_id, now->text, status, text, err);
    free(text);
    return rc;
}

static int emit(spare_driver *d, const clock_now *now, event_type type, json_t *data,
                const char *cluster, vf_error *err)
{
    char id[IDS_LEN], key[64];
    if (cluster)
        json_object_set_new(data, "cluster", json_string(cluster));
    char *body = events_build(type, data, now->ms / 1000, id, key);
    if (!body) {
        vf_error_set(err, VF_ENOMEM, "out of memory building event %s", event_types_name(type));
        return -1;
    }
    int rc = store_outbox_add(d->store, id, key, body, now->text, err);
    free(body);
    return rc;
}

/* Add "scheduler" to a spare event's data when the prepare task's request
 * names a profile (annotation scheduler.qemu-scheduler/name), as task events
 * do: a missing or unreadable row just leaves it out. */
static json_t *with_scheduler(spare_driver *d, const char *task_id, json_t *data)
{
    store_task task = {0};
    vf_error ignored;
    vf_error_init(&ignored);
    if (data && store_task_get(d->store, task_id, &task, &ignored) == 0 && task.request) {
        json_t *request = json_loads(task.request, 0, NULL);
        const char *name = json_string_value(
            json_object_get(json_object_get(request, "annotations"), ANNOTATION_SCHEDULER_NAME));
        if (name && name[0])
            json_object_set_new(data, "scheduler", json_string(name));
        json_decref(request);
    }
    store_task_clear(&task);
    return data;
}

/* The task's status (and optionally reason, error, result) changed; the
 * rest of the row is kept. Returns 0, or -1. Fills *attempts when given. */
static int set_task_status(spare_driver *d, const char *task_id, const clock_now *now,
                           const char *status, const char *reason, const char *error,
                           json_t *result, int *attempts, vf_error *err)
{
    store_task task = {0};
    int found = store_task_get(d->store, task_id, &task, err);
    if (found != 0) {
        if (found == 1)
            vf_error_set(err, VF_EINTERNAL, "task %s is gone", task_id);
        return -1;
    }
    char *result_text = NULL;
    if (result) {
        json_object_set_new(result, "task_id", json_string(task_id));
        result_text = json_util_dump(result);
        json_decref(result);
    }
    store_task_fields fields = {.id = task_id,
                                .status = status,
                                .reason = reason,
                                .attempts = task.attempts,
                                .result = result_text ? result_text : task.result,
                                .error = error,
                                .vmid = -1,
                                .at = now->text};
    if (attempts)
        *attempts = task.attempts > 0 ? task.attempts : 1;
    int rc = store_task_update(d->store, &fields, err) == 0 ? 0 : -1;
    free(result_text);
    store_task_clear(&task);
    return rc;
}

static int get_status(spare_driver *d, const char *task_id, char *buf, size_t size, vf_error *err)
{
    store_task task = {0};
    int found = store_task_get(d->store, task_id, &task, err);
    if (found == 0)
        snprintf(buf, size, "%s", task.status);
    store_task_clear(&task);
    return found == 0 ? 0 : -1;
}

/* Owned copies of the spares of one task (listing rows are borrowed). */
typedef struct spare_copy {
    store_spare row;
    char *strings[13];
} spare_copy;

typedef struct spare_list {
    spare_copy *items;
    size_t n, cap;
    bool oom;
} spare_list;

static char *dup_or_null(const char *s, bool *oom)
{
    if (!s)
        return NULL;
    char *copy = strdup(s);
    if (!copy)
        *oom = true;
    return copy;
}

static int collect_spare(const store_spare *spare, void *user)
{
    spare_list *list = user;
    if (grow_array((void **)&list->items, &list->cap, list->n + 1, sizeof *list->items) < 0) {
        list->oom = true;
        return 1;
    }
    spare_copy *c = &list->items[list->n++];
    memset(c, 0, sizeof *c);
    c->row = *spare;
    const char **fields[] = {&c->row.task_id,      &c->row.upgrade_id,
                             &c->row.cluster,      &c->row.name,
                             &c->row.node,         &c->row.ip,
                             &c->row.state,        &c->row.next_at,
                             &c->row.ready_by,     &c->row.release_task_id,
                             &c->row.pipeline_url, &c->row.updated_at,
                             &c->row.created_at};
    for (size_t i = 0; i < 13; i++) {
        c->strings[i] = dup_or_null(*fields[i], &list->oom);
        *fields[i] = c->strings[i];
    }
    c->row.last_error = NULL; /* not needed by the decisions here */
    return 0;
}

static void spare_list_free(spare_list *list)
{
    for (size_t i = 0; i < list->n; i++)
        for (size_t k = 0; k < 13; k++)
            free(list->items[i].strings[k]);
    free(list->items);
    memset(list, 0, sizeof *list);
}

static int load_spares(spare_driver *d, store_spare_query query, const char *key, spare_list *list,
                       vf_error *err)
{
    memset(list, 0, sizeof *list);
    if (store_spare_list(d->store, query, key, 0, collect_spare, list, err) < 0)
        return -1;
    if (list->oom) {
        vf_error_set(err, VF_ENOMEM, "out of memory listing spares");
        return -1;
    }
    return 0;
}

static bool is(const store_spare *spare, const char *state)
{
    return strcmp(spare->state, state) == 0;
}

/* Change one spare; 1 when another thread changed it first (skip the step). */
static int change_spare(spare_driver *d, const store_spare *seen, store_spare *next,
                        const clock_now *now, vf_error *err)
{
    next->updated_at = now->text;
    return store_spare_update(d->store, next, seen->updated_at, err);
}

/* ---- prepare tasks ---- */

/* All spares ready: the task is ready. All created: waiting_ready. */
static int settle_prepare(spare_driver *d, const char *task_id, const clock_now *now, vf_error *err)
{
    char status[32];
    if (get_status(d, task_id, status, sizeof status, err) < 0)
        return -1;
    if (strcmp(status, "provisioning") != 0 && strcmp(status, "waiting_ready") != 0)
        return 0;
    spare_list list;
    if (load_spares(d, STORE_SPARES_OF_TASK, task_id, &list, err) < 0) {
        spare_list_free(&list);
        return -1;
    }
    size_t ready = 0, created = 0;
    for (size_t i = 0; i < list.n; i++) {
        ready += is(&list.items[i].row, "ready");
        created += is(&list.items[i].row, "ready") || is(&list.items[i].row, "waiting_ready");
    }
    int rc = 0;
    if (list.n > 0 && ready == list.n) {
        json_t *spares = json_array();
        for (size_t i = 0; i < list.n; i++) {
            const store_spare *s = &list.items[i].row;
            json_array_append_new(spares, json_pack("{s:s, s:s, s:s, s:I}", "name", s->name, "host",
                                                    s->node, "ip", s->ip ? s->ip : "", "vmid",
                                                    (json_int_t)s->vmid));
        }
        const store_spare *first = &list.items[0].row;
        int attempts = 1;
        rc = set_task_status(d, task_id, now, "ready", NULL, NULL,
                             json_pack("{s:s, s:s, s:O}", "status", "ready", "upgrade_id",
                                       first->upgrade_id, "spares", spares),
                             &attempts, err);
        if (rc == 0)
            rc = history(d, task_id, now, "ready", json_pack("{s:O}", "spares", spares), err);
        if (rc == 0)
            rc = emit(d, now, EVENT_SPARE_READY,
                      with_scheduler(d, task_id,
                                     json_pack("{s:s, s:s, s:s, s:O, s:i}", "task_id", task_id,
                                               "upgrade_id", first->upgrade_id, "status", "ready",
                                               "spares", spares, "attempts", attempts)),
                      first->cluster, err);
        json_decref(spares);
        if (rc == 0)
            log_info("task %s: all %zu spares of upgrade %s are ready", task_id, list.n,
                     first->upgrade_id);
    } else if (list.n > 0 && created == list.n && strcmp(status, "provisioning") == 0) {
        rc = set_task_status(d, task_id, now, "waiting_ready", NULL, NULL, NULL, NULL, err);
        if (rc == 0)
            rc = history(d, task_id, now, "waiting_ready",
                         json_pack("{s:i}", "spares", (int)list.n), err);
        const store_spare *first = &list.items[0].row;
        if (rc == 0)
            rc = emit(d, now, EVENT_SPARE_WAITING_READY,
                      json_pack("{s:s, s:s, s:s, s:i, s:s?}", "task_id", task_id, "upgrade_id",
                                first->upgrade_id, "status", "waiting_ready", "count", (int)list.n,
                                "ready_by", first->ready_by),
                      first->cluster, err);
    }
    spare_list_free(&list);
    return rc;
}

/* One spare failed at `step`: the task fails, its reservations end, spares
 * already created are destroyed (releasing without a release task). */
static int fail_prepare(spare_driver *d, const store_spare *failing, const char *step, bool created,
                        const char *error, const clock_now *now, vf_error *err)
{
    const char *task_id = failing->task_id;
    spare_list list;
    if (load_spares(d, STORE_SPARES_OF_TASK, task_id, &list, err) < 0) {
        spare_list_free(&list);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < list.n; i++) {
        const store_spare *s = &list.items[i].row;
        bool is_failing = s->id == failing->id;
        bool exists = is_failing ? created : (is(s, "waiting_ready") || is(s, "ready"));
        if (!is_failing && !is(s, "provisioning") && !exists)
            continue;
        if (!is_failing && is(s, "releasing"))
            continue;
        store_spare next = *s;
        next.state = exists ? "releasing" : "failed";
        next.attempts = 0;
        next.next_at = exists ? now->text : NULL;
        next.last_error = is_failing ? error : "another spare of the task failed";
        const store_spare *seen = is_failing ? failing : s;
        rc = change_spare(d, seen, &next, now, err) < 0 ? -1 : 0;
    }
    char message[VF_ERROR_TEXT + 160];
    snprintf(message, sizeof message, "spare %s (%s step): %s", failing->name, step, error);
    int attempts = 1;
    if (rc == 0)
        rc = set_task_status(d, task_id, now, "failed", "exhausted", message,
                             json_pack("{s:s, s:s, s:s, s:s, s:s}", "status", "failed", "reason",
                                       "exhausted", "error", message, "spare", failing->name,
                                       "step", step),
                             &attempts, err);
    if (rc == 0)
        rc = history(d, task_id, now, "failed",
                     json_pack("{s:s, s:s, s:s, s:s}", "reason", "exhausted", "error", message,
                               "spare", failing->name, "step", step),
                     err);
    if (rc == 0)
        rc = store_reservation_release_task(d->store, task_id, now->text, err) < 0 ? -1 : 0;
    if (rc == 0)
        rc = emit(
            d, now, EVENT_SPARE_FAILED,
            with_scheduler(d, task_id,
                           json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i}", "task_id", task_id,
                                     "upgrade_id", failing->upgrade_id, "status", "failed", "error",
                                     message, "reason", "exhausted", "spare", failing->name, "step",
                                     step, "attempts", attempts)),
            failing->cluster, err);
    spare_list_free(&list);
    return rc;
}

/* ---- release tasks ---- */

static int settle_release(spare_driver *d, const char *release_task_id, const clock_now *now,
                          vf_error *err)
{
    spare_list list;
    if (load_spares(d, STORE_SPARES_OF_RELEASE, release_task_id, &list, err) < 0) {
        spare_list_free(&list);
        return -1;
    }
    int rc = 0;
    size_t failed = 0;
    for (size_t i = 0; i < list.n; i++) {
        if (is(&list.items[i].row, "releasing"))
            goto out; /* not yet */
        failed += is(&list.items[i].row, "failed");
    }
    if (list.n == 0)
        goto out;
    json_t *names = json_array();
    json_t *prepares = json_object();
    const char *last_error = NULL;
    for (size_t i = 0; i < list.n; i++) {
        const store_spare *s = &list.items[i].row;
        if (is(s, "released"))
            json_array_append_new(names, json_string(s->name));
        else
            last_error = s->name;
        json_object_set_new(prepares, s->task_id, json_true());
    }
    const char *prepare_id;
    json_t *unused;
    json_object_foreach(prepares, prepare_id, unused)
    {
        char status[32] = "";
        if (rc == 0)
            rc = get_status(d, prepare_id, status, sizeof status, err);
        if (rc == 0 && strcmp(status, "releasing") == 0) {
            rc = set_task_status(d, prepare_id, now, "released", NULL, NULL, NULL, NULL, err);
            if (rc == 0)
                rc = history(d, prepare_id, now, "released",
                             json_pack("{s:s}", "release_task_id", release_task_id), err);
        }
        if (rc == 0)
            rc = store_reservation_release_task(d->store, prepare_id, now->text, err) < 0 ? -1 : 0;
    }
    const store_spare *first = &list.items[0].row;
    int attempts = 1;
    if (rc == 0 && failed == 0) {
        rc = set_task_status(d, release_task_id, now, "released", NULL, NULL,
                             json_pack("{s:s, s:s, s:O}", "status", "released", "upgrade_id",
                                       first->upgrade_id, "spares", names),
                             &attempts, err);
        if (rc == 0)
            rc = history(d, release_task_id, now, "released", json_pack("{s:O}", "spares", names),
                         err);
        if (rc == 0)
            rc = emit(d, now, EVENT_SPARE_RELEASED,
                      json_pack("{s:s, s:s, s:s, s:O}", "task_id", release_task_id, "upgrade_id",
                                first->upgrade_id, "status", "released", "spares", names),
                      first->cluster, err);
    } else if (rc == 0) {
        char message[256];
        snprintf(message, sizeof message,
                 "%zu of %zu spares could not be deprovisioned (e.g. %s); see the task history",
                 failed, list.n, last_error ? last_error : "?");
        rc = set_task_status(d, release_task_id, now, "failed", "exhausted", message,
                             json_pack("{s:s, s:s, s:s}", "status", "failed", "reason", "exhausted",
                                       "error", message),
                             &attempts, err);
        if (rc == 0)
            rc = history(d, release_task_id, now, "failed",
                         json_pack("{s:s, s:s}", "reason", "exhausted", "error", message), err);
        if (rc == 0)
            rc = emit(d, now, EVENT_SPARE_FAILED,
                      json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i}", "task_id", release_task_id,
                                "upgrade_id", first->upgrade_id, "status", "failed", "error",
                                message, "reason", "exhausted", "step", "destroy", "attempts",
                                attempts),
                      first->cluster, err);
    }
    json_decref(names);
    json_decref(prepares);
out:
    spare_list_free(&list);
    return rc;
}

/* ---- one step ---- */

static int retry_delay_s(int attempts)
{
    int delay = 1;
    for (int i = 1; i < attempts && delay < RETRY_CAP_S; i++)
        delay *= 2;
    return delay < RETRY_CAP_S ? delay : RETRY_CAP_S;
}

typedef struct step_outcome {
    bool ok;
    bool interrupted;
    spare_provision_result result;
    char error[VF_ERROR_TEXT];
    int ready;   /* waiting_ready: 1 ready */
    bool polled; /* provisioning with a gitlab pipeline pending: its status was asked */
    char pipeline_status[32]; /* polled: gitlab's answer; "" when the poll failed */
    int evicted;              /* releasing: pods evicted from the node */
    bool fenced;              /* the lease moved on before a call to the outside */
} step_outcome;

static bool pipeline_pending(const spare_driver *d, const store_spare *s)
{
    const char *type = d->config->spare.provisioner.type;
    return is(s, "provisioning") && s->pipeline_id > 0 && type &&
           (strcmp(type, "gitlab") == 0 || strcmp(type, "awx") == 0);
}

/* What is followed, in error texts: "gitlab pipeline" or "awx job";
 * `destroy` puts "destroy" between ("gitlab destroy pipeline"). */
static const char *pipeline_word(const spare_driver *d, bool destroy)
{
    const char *type = d->config->spare.provisioner.type;
    if (type && strcmp(type, "awx") == 0)
        return destroy ? "awx destroy job" : "awx job";
    return destroy ? "gitlab destroy pipeline" : "gitlab pipeline";
}

static int pipeline_poll_s(const spare_driver *d)
{
    int poll_s = d->config->spare.readiness.poll_s;
    return poll_s > 0 && poll_s < 10 ? poll_s : 10;
}

/* A destroy pipeline is waited for within the step, as a command
 * provisioner is (a spare being released has no later state to poll from;
 * a restart does the step again, and destroying twice is harmless).
 * Returns 0 on success, or -1 with err: VF_EUNAVAILABLE (failed, canceled,
 * skipped, or not done within provisioner.timeout_s: the step is retried),
 * VF_EINTERNAL when stopped. */
static int wait_destroy_pipeline(spare_driver *d, int64_t pipeline_id, vf_error *err)
{
    int64_t deadline = clock_mono_ms() + (int64_t)d->config->spare.provisioner.timeout_s * 1000;
    char status[32] = "", last[VF_ERROR_TEXT] = "not polled yet";
    for (;;) {
        vf_error poll_err;
        vf_error_init(&poll_err);
        if (spare_pipeline_status(d->config, pipeline_id, status, sizeof status, &poll_err) == 0) {
            if (strcmp(status, "success") == 0)
                return 0;
            if (strcmp(status, "failed") == 0 || strcmp(status, "canceled") == 0 ||
                strcmp(status, "skipped") == 0) {
                vf_error_set(err, VF_EUNAVAILABLE, "%s %lld %s", pipeline_word(d, true),
                             (long long)pipeline_id, status);
                return -1;
            }
            snprintf(last, sizeof last, "%s", status);
        } else {
            snprintf(last, sizeof last, "%s", poll_err.text);
        }
        if (clock_mono_ms() >= deadline) {
            vf_error_set(err, VF_EUNAVAILABLE, "%s %lld did not succeed within %d s (last: %s)",
                         pipeline_word(d, true), (long long)pipeline_id,
                         d->config->spare.provisioner.timeout_s, last);
            return -1;
        }
        /* A stop is not kept waiting. */
        if (job_sleep(&d->job, (int64_t)pipeline_poll_s(d) * 1000)) {
            vf_error_set(err, VF_EINTERNAL, "%s %lld: interrupted by shutdown",
                         pipeline_word(d, true), (long long)pipeline_id);
            return -1;
        }
    }
}

/* Before a call to the outside within a step started under `epoch`: whether
 * this worker still holds the "spares" lease at that epoch (leases.h). */
static bool still_holder(spare_driver *d, const store_spare *s, int64_t epoch)
{
    vf_error err;
    vf_error_init(&err);
    int held = lease_still_held(d->store, "spares", d->owner, epoch, &err);
    if (held < 0)
        log_warn("spare %s: %s; the step is done again", s->name, err.text);
    else if (held == 0)
        log_warn("spare %s: fenced: another worker took the spares lease over (this one held "
                 "epoch %lld); not calling the provisioner",
                 s->name, (long long)epoch);
    return held > 0;
}

/* The I/O of the step, outside any transaction, under lease epoch `epoch`. */
static void do_io(spare_driver *d, const store_spare *s, int64_t epoch, const clock_now *now,
                  step_outcome *o)
{
    memset(o, 0, sizeof *o);
    spare_target target = {s->name,   s->node, s->ip,      s->vmid,       s->cpu,
                           s->memory, s->disk, s->cluster, s->upgrade_id, NULL};
    if (pipeline_pending(d, s)) {
        vf_error err;
        vf_error_init(&err);
        o->polled = true;
        if (spare_pipeline_status(d->config, s->pipeline_id, o->pipeline_status,
                                  sizeof o->pipeline_status, &err) < 0)
            snprintf(o->error, sizeof o->error, "%s", err.text);
    } else if (is(s, "provisioning") || is(s, "releasing")) {
        vf_error err;
        vf_error_init(&err);
        const char *action = is(s, "provisioning") ? "create" : "destroy";
        char key[SPARE_IDEMPOTENCY_KEY_SIZE];
        spare_idempotency_key(s->task_id, s->name, s->created_at, action, key);
        target.idempotency_key = key;
        spare_kube_api api;
        /* The node leaves Kubernetes before its VM goes. */
        o->ok = true;
        if (is(s, "releasing"))
            o->ok = spare_kube_api_for(d->config, s->cluster, &api, &err) == 0 &&
                    spare_kube_release(d->config, &api, s->name, &d->job.stop.stop, &o->evicted,
                                       &err) == 0;
        /* Draining a node can take long: the lease may have moved on. */
        if (o->ok && is(s, "releasing") && !still_holder(d, s, epoch)) {
            o->fenced = true;
            return;
        }
        if (o->ok)
            o->ok = spare_provision_run(d->config, &target, action, &d->job.stop.stop, &o->result,
                                        &err) == 0;
        if (o->ok && is(s, "releasing") && o->result.pipeline_id > 0)
            o->ok = wait_destroy_pipeline(d, o->result.pipeline_id, &err) == 0;
        o->interrupted = !o->ok && err.code == VF_EINTERNAL && job_stopping(&d->job);
        snprintf(o->error, sizeof o->error, "%s", err.text);
    } else if (is(s, "waiting_ready")) {
        (void)now;
        o->ready = spare_readiness_check(d->config, s->cluster, s->name, o->error, sizeof o->error);
    }
}

/* A pending gitlab pipeline was polled: success makes the spare created
 * (waiting_ready); failed, canceled or skipped, or no success by the
 * deadline (provisioner.timeout_s from the trigger), fails it. */
static int record_pipeline(spare_driver *d, const store_spare *s, const step_outcome *o,
                           const clock_now *now, vf_error *err)
{
    store_spare next = *s;
    const char *status = o->pipeline_status;
    const char *url = s->pipeline_url ? s->pipeline_url : "";
    if (strcmp(status, "success") == 0) {
        char ready_by[STORE_TIME_SIZE];
        later(now, s->ready_timeout_s, ready_by);
        next.state = "waiting_ready";
        next.attempts = 0;
        next.next_at = now->text;
        next.ready_by = ready_by;
        next.last_error = NULL;
        int rc = change_spare(d, s, &next, now, err);
        if (rc == 0)
            rc = history(d, s->task_id, now, "provisioning",
                         json_pack("{s:s, s:s, s:s, s:I, s:s, s:s}", "spare", s->name, "step",
                                   "created", "host", s->node, "pipeline_id",
                                   (json_int_t)s->pipeline_id, "pipeline_status", status, "web_url",
                                   url),
                         err);
        if (rc == 0)
            rc = settle_prepare(d, s->task_id, now, err);
        log_info("task %s: spare %s created on %s (pipeline %lld succeeded)", s->task_id, s->name,
                 s->node, (long long)s->pipeline_id);
        return rc;
    }
    char why[VF_ERROR_TEXT + 256];
    bool finished_badly = strcmp(status, "failed") == 0 || strcmp(status, "canceled") == 0 ||
                          strcmp(status, "skipped") == 0;
    if (finished_badly) {
        snprintf(why, sizeof why, "%s %lld %s %.200s", pipeline_word(d, false),
                 (long long)s->pipeline_id, status, url);
        return fail_prepare(d, s, "provision", false, why, now, err);
    }
    const char *last = status[0] ? status : o->error;
    if (s->ready_by && strcmp(now->text, s->ready_by) >= 0) {
        snprintf(why, sizeof why, "%s %lld did not succeed within %d s (last: %s) %.200s",
                 pipeline_word(d, false), (long long)s->pipeline_id,
                 d->config->spare.provisioner.timeout_s, last, url);
        return fail_prepare(d, s, "provision", false, why, now, err);
    }
    char next_at[STORE_TIME_SIZE];
    later(now, pipeline_poll_s(d), next_at);
    next.next_at = next_at;
    char text[VF_ERROR_TEXT + 64];
    snprintf(text, sizeof text, "pipeline %s", last);
    next.last_error = text;
    return change_spare(d, s, &next, now, err);
}

/* A pipeline triggered: the spare is created only once it succeeds;
 * ready_by is the pipeline's deadline while provisioning. */
static int record_triggered(spare_driver *d, const store_spare *s, const step_outcome *o,
                            const clock_now *now, vf_error *err)
{
    store_spare next = *s;
    char next_at[STORE_TIME_SIZE], deadline[STORE_TIME_SIZE];
    later(now, d->config->spare.provisioner.timeout_s, deadline);
    later(now, pipeline_poll_s(d), next_at);
    next.attempts = 0;
    next.next_at = next_at;
    next.ready_by = deadline;
    next.pipeline_id = o->result.pipeline_id;
    next.pipeline_url = o->result.pipeline_url[0] ? o->result.pipeline_url : NULL;
    next.last_error = NULL;
    int rc = change_spare(d, s, &next, now, err);
    if (rc == 0)
        rc = history(d, s->task_id, now, "provisioning",
                     json_pack("{s:s, s:s, s:s, s:I, s:s?}", "spare", s->name, "step",
                               "pipeline triggered", "host", s->node, "pipeline_id",
                               (json_int_t)o->result.pipeline_id, "web_url",
                               o->result.pipeline_url[0] ? o->result.pipeline_url : NULL),
                     err);
    log_info("task %s: spare %s: gitlab pipeline %lld triggered", s->task_id, s->name,
             (long long)o->result.pipeline_id);
    return rc;
}

/* Created: now waiting until it is Ready (or ready_timeout_s). */
static int record_created(spare_driver *d, const store_spare *s, const step_outcome *o,
                          const clock_now *now, vf_error *err)
{
    store_spare next = *s;
    char ready_by[STORE_TIME_SIZE];
    later(now, s->ready_timeout_s, ready_by);
    next.state = "waiting_ready";
    next.attempts = 0;
    next.next_at = now->text;
    next.ready_by = ready_by;
    next.pipeline_id = o->result.pipeline_id;
    next.pipeline_url = o->result.pipeline_url[0] ? o->result.pipeline_url : NULL;
    next.last_error = NULL;
    int rc = change_spare(d, s, &next, now, err);
    if (rc == 0)
        rc =
            history(d, s->task_id, now, "provisioning",
                    json_pack("{s:s, s:s, s:s, s:I, s:s?}", "spare", s->name, "step", "created",
                              "host", s->node, "pipeline_id", (json_int_t)o->result.pipeline_id,
                              "web_url", o->result.pipeline_url[0] ? o->result.pipeline_url : NULL),
                    err);
    if (rc == 0)
        rc = settle_prepare(d, s->task_id, now, err);
    log_info("task %s: spare %s created on %s (vmid %lld)", s->task_id, s->name, s->node,
             (long long)s->vmid);
    return rc;
}

/* A create or destroy that failed: tried again after a delay, until
 * retry.max_attempts; then a create fails the prepare and a destroy leaves
 * the spare failed. */
static int record_failed_attempt(spare_driver *d, const store_spare *s, const step_outcome *o,
                                 const clock_now *now, vf_error *err)
{
    store_spare next = *s;
    int max_attempts = d->config->retry.max_attempts;
    const char *history_task = s->release_task_id ? s->release_task_id : s->task_id;
    bool creating = is(s, "provisioning");
    next.attempts = s->attempts + 1;
    next.last_error = o->error;
    log_warn("task %s: spare %s: %s attempt %d of %d failed: %s", s->task_id, s->name,
             creating ? "create" : "destroy", next.attempts, max_attempts, o->error);
    if (next.attempts >= max_attempts && creating) {
        char why[VF_ERROR_TEXT + 64];
        snprintf(why, sizeof why, "provisioner failed %d times; last: %s", next.attempts, o->error);
        return fail_prepare(d, s, "provision", false, why, now, err);
    }
    int rc;
    if (next.attempts >= max_attempts) {
        next.state = "failed";
        next.next_at = NULL;
        rc = change_spare(d, s, &next, now, err);
        if (rc == 0)
            rc = history(d, history_task, now, "releasing",
                         json_pack("{s:s, s:s, s:s, s:i}", "spare", s->name, "step",
                                   "destroy failed", "error", o->error, "attempts", next.attempts),
                         err);
        if (rc == 0 && s->release_task_id)
            rc = settle_release(d, s->release_task_id, now, err);
        return rc;
    }
    char next_at[STORE_TIME_SIZE];
    int delay = retry_delay_s(next.attempts);
    later(now, delay, next_at);
    next.next_at = next_at;
    rc = change_spare(d, s, &next, now, err);
    if (rc == 0)
        rc = history(d, history_task, now, s->state,
                     json_pack("{s:s, s:s, s:s, s:i, s:i}", "spare", s->name, "step",
                               creating ? "create" : "destroy", "error", o->error, "attempt",
                               next.attempts, "retry_in_s", delay),
                     err);
    return rc;
}

static int record_destroyed(spare_driver *d, const store_spare *s, const step_outcome *o,
                            const clock_now *now, vf_error *err)
{
    store_spare next = *s;
    const char *history_task = s->release_task_id ? s->release_task_id : s->task_id;
    next.state = "released";
    next.next_at = NULL;
    next.attempts = 0;
    next.last_error = NULL;
    int rc = change_spare(d, s, &next, now, err);
    if (rc == 0)
        rc = history(d, history_task, now, "releasing",
                     json_pack("{s:s, s:s, s:s, s:s, s:i}", "spare", s->name, "step", "destroyed",
                               "host", s->node, "kubernetes", d->config->spare.release_kubernetes,
                               "pods_evicted", o->evicted),
                     err);
    if (rc == 0 && s->release_task_id)
        rc = settle_release(d, s->release_task_id, now, err);
    log_info("task %s: spare %s destroyed", history_task, s->name);
    return rc;
}

/* Waiting until Ready: ready (the prepare may settle), not yet (polled
 * again), or past ready_by (the prepare fails). */
static int record_readiness(spare_driver *d, const store_spare *s, const step_outcome *o,
                            const clock_now *now, vf_error *err)
{
    store_spare next = *s;
    if (o->ready == 1) {
        next.state = "ready";
        next.next_at = NULL;
        next.last_error = NULL;
        int rc = change_spare(d, s, &next, now, err);
        if (rc == 0)
            rc = history(d, s->task_id, now, "waiting_ready",
                         json_pack("{s:s, s:s}", "spare", s->name, "step", "ready"), err);
        return rc == 0 ? settle_prepare(d, s->task_id, now, err) : rc;
    }
    if (s->ready_by && strcmp(now->text, s->ready_by) >= 0) {
        char why[VF_ERROR_TEXT + 64];
        snprintf(why, sizeof why, "not Ready within %d s (last: %s)", s->ready_timeout_s, o->error);
        return fail_prepare(d, s, "ready", true, why, now, err);
    }
    char next_at[STORE_TIME_SIZE];
    later(now, d->config->spare.readiness.poll_s, next_at);
    next.next_at = next_at;
    next.last_error = o->error;
    return change_spare(d, s, &next, now, err);
}

/* Record the step's outcome in one transaction: what it does to the
 * spare's row and its task's history. */
static int record_step(spare_driver *d, const store_spare *s, const step_outcome *o,
                       const clock_now *now, vf_error *err)
{
    if (o->polled)
        return record_pipeline(d, s, o, now, err);
    if (is(s, "provisioning") && o->ok)
        return o->result.pipeline_id > 0 ? record_triggered(d, s, o, now, err)
                                         : record_created(d, s, o, now, err);
    if ((is(s, "provisioning") || is(s, "releasing")) && !o->ok)
        return record_failed_attempt(d, s, o, now, err);
    if (is(s, "releasing"))
        return record_destroyed(d, s, o, now, err);
    if (is(s, "waiting_ready"))
        return record_readiness(d, s, o, now, err);
    return 0;
}

/* Several workers may share the store: only the holder of the "spares"
 * lease drives spares (leases.h): it takes or renews the lease before every
 * step, the worker renews it while the step runs, and a worker that dies
 * stops renewing, so another takes over. While nothing is due nobody needs
 * it. *epoch gets the lease's epoch, under which the step runs and records. */
static bool hold_lease(spare_driver *d, int64_t *epoch)
{
    vf_error err;
    vf_error_init(&err);
    int held = lease_hold(d->store, "spares", d->owner, epoch, &err);
    if (held < 0)
        log_warn("spares: %s; not driving spares until the lease is held", err.text);
    return held > 0;
}

/* Inside the step's transaction: 1 when this worker still holds the lease at
 * `epoch`, 0 (logged) when another took it over meanwhile, -1 with err. */
static int fence(spare_driver *d, const char *what, int64_t epoch, vf_error *err)
{
    int current = store_lease_fence(d->store, "spares", d->owner, epoch, err);
    if (current == 0)
        log_warn("%s: fenced: another worker took the spares lease over (this one held epoch "
                 "%lld) while the step ran; its outcome is not recorded",
                 what, (long long)epoch);
    return current;
}

static int step_one(const store_spare *spare, void *user)
{
    spare_driver *d = user;
    if (job_stopping(&d->job))
        return 1;
    if (!is(spare, "provisioning") && !is(spare, "waiting_ready") && !is(spare, "releasing"))
        return 0;
    clock_now now;
    step_outcome outcome;
    read_clock(&now);
    int64_t epoch = 0;
    if (!hold_lease(d, &epoch))
        return 1;
    if (epoch != d->epoch) {
        /* Newly taken (at start, or over from another worker): the spares
         * were listed before, perhaps before the last holder's records. */
        log_info("spares: this worker drives them (it holds the store's lease, epoch %lld)",
                 (long long)epoch);
        d->epoch = epoch;
        return 1;
    }
    do_io(d, spare, epoch, &now, &outcome);
    if (outcome.interrupted || outcome.fenced)
        return 1;
    read_clock(&now);
    vf_error err;
    vf_error_init(&err);
    if (store_begin(d->store, &err) < 0) {
        log_warn("spare %s: %s; the step is done again", spare->name, err.text);
        return 0;
    }
    int current = fence(d, spare->name, epoch, &err);
    int rc = current <= 0 ? -1 : record_step(d, spare, &outcome, &now, &err);
    if (rc == 0 && store_commit(d->store, &err) < 0)
        rc = -1;
    if (rc != 0) {
        vf_error ignored;
        (void)store_rollback(d->store, &ignored);
        if (current == 0)
            return 1; /* stop acting: the holder of the later epoch drives */
        if (rc < 0)
            log_warn("spare %s: recording a step failed: %s; it is done again", spare->name,
                     err.text);
        return 0;
    }
    /* After the commit: the reservations these tasks held are gone. */
    char status[32] = "";
    vf_error ignored;
    vf_error_init(&ignored);
    if (get_status(d, spare->task_id, status, sizeof status, &ignored) == 0 &&
        (strcmp(status, "failed") == 0 || strcmp(status, "released") == 0))
        note_released(d, spare->task_id);
    return 0;
}

/* ---- spare.max_age ---- */

static bool forgotten(const store_spare *s, const char *cutoff)
{
    return (is(s, "ready") || is(s, "waiting_ready")) && !s->release_task_id && s->created_at &&
           strcmp(s->created_at, cutoff) < 0;
}

/* Release by policy the spares of `upgrade_id` an upgrade forgot, as a
 * spare.release would: a release task of its own (id
 * "release:max_age:<upgrade>:<ms>") takes them, so the usual steps finish
 * it with spare.released. Inside the caller's transaction. */
static int release_forgotten(spare_driver *d, const spare_list *all, const char *upgrade_id,
                             const char *cutoff, const clock_now *now, vf_error *err)
{
    char task_id[160];
    snprintf(task_id, sizeof task_id, "release:max_age:%s:%lld", upgrade_id, (long long)now->ms);
    json_t *request = json_pack("{s:s, s:s, s:I}", "upgrade_id", upgrade_id, "policy", "max_age",
                                "max_age_s", (json_int_t)d->config->spare.max_age_s);
    char *request_text = json_util_dump(request);
    json_decref(request);
    store_task_fields fields = {.id = task_id,
                                .kind = "spare",
                                .status = "releasing",
                                .attempts = 1,
                                .request = request_text,
                                .vmid = -1,
                                .at = now->text};
    int rc = store_task_insert(d->store, &fields, err) < 0 ? -1 : 0;
    free(request_text);
    json_t *names = json_array();
    json_t *prepares = json_object();
    for (size_t i = 0; rc == 0 && i < all->n; i++) {
        const store_spare *s = &all->items[i].row;
        if (strcmp(s->upgrade_id, upgrade_id) != 0 || !forgotten(s, cutoff))
            continue;
        store_spare next = *s;
        next.state = "releasing";
        next.attempts = 0;
        next.next_at = now->text;
        next.release_task_id = task_id;
        next.last_error = NULL;
        rc = change_spare(d, s, &next, now, err) < 0 ? -1 : 0;
        json_array_append_new(names, json_string(s->name));
        json_object_set_new(prepares, s->task_id, json_true());
    }
    const char *prepare_id;
    json_t *unused;
    json_object_foreach(prepares, prepare_id, unused)
    {
        char status[32] = "";
        if (rc == 0)
            rc = get_status(d, prepare_id, status, sizeof status, err);
        if (rc == 0 && strcmp(status, "failed") != 0)
            rc = set_task_status(d, prepare_id, now, "releasing", NULL, NULL, NULL, NULL, err);
        if (rc == 0)
            rc = history(d, prepare_id, now, "releasing",
                         json_pack("{s:s, s:s}", "release_task_id", task_id, "policy", "max_age"),
                         err);
    }
    if (rc == 0)
        rc = history(d, task_id, now, "releasing",
                     json_pack("{s:s, s:I, s:O}", "policy", "max_age", "max_age_s",
                               (json_int_t)d->config->spare.max_age_s, "spares", names),
                     err);
    if (rc == 0)
        log_warn("upgrade %s: %zu spares older than spare.max_age (%lld s) were never released; "
                 "releasing them (task %s)",
                 upgrade_id, json_array_size(names), (long long)d->config->spare.max_age_s,
                 task_id);
    json_decref(names);
    json_decref(prepares);
    return rc;
}

static void expire_forgotten(spare_driver *d)
{
    clock_now now;
    read_clock(&now);
    char cutoff[STORE_TIME_SIZE];
    later(&now, -d->config->spare.max_age_s, cutoff);
    vf_error err;
    vf_error_init(&err);
    spare_list all;
    if (load_spares(d, STORE_SPARES_ALL, NULL, &all, &err) < 0) {
        log_warn("spares: %s; spare.max_age checked again later", err.text);
        spare_list_free(&all);
        return;
    }
    json_t *upgrades = json_object();
    for (size_t i = 0; i < all.n; i++)
        if (forgotten(&all.items[i].row, cutoff))
            json_object_set_new(upgrades, all.items[i].row.upgrade_id, json_true());
    const char *upgrade_id;
    json_t *unused;
    json_object_foreach(upgrades, upgrade_id, unused)
    {
        /* Only the lease holder acts, as for every other step. */
        int64_t epoch = 0;
        if (job_stopping(&d->job) || !hold_lease(d, &epoch))
            break;
        if (store_begin(d->store, &err) < 0) {
            log_warn("spares: %s; spare.max_age checked again later", err.text);
            break;
        }
        int current = fence(d, "spare.max_age", epoch, &err);
        if (current == 0) {
            vf_error ignored;
            (void)store_rollback(d->store, &ignored);
            break;
        }
        int rc = current < 0 ? -1 : release_forgotten(d, &all, upgrade_id, cutoff, &now, &err);
        if (rc == 0 && store_commit(d->store, &err) < 0)
            rc = -1;
        if (rc != 0) {
            vf_error ignored;
            (void)store_rollback(d->store, &ignored);
            log_warn("upgrade %s: releasing by spare.max_age failed: %s; tried again later",
                     upgrade_id, err.text);
        }
    }
    json_decref(upgrades);
    spare_list_free(&all);
}

static void drive(job *j, void *ctx)
{
    spare_driver *d = ctx;
    int64_t max_age_checked_ms = 0;
    while (!job_stopping(j)) {
        clock_now now;
        read_clock(&now);
        vf_error err;
        vf_error_init(&err);
        if (store_spare_list(d->store, STORE_SPARES_DUE, now.text, SCAN_LIMIT, step_one, d, &err) <
            0)
            log_warn("spares: %s", err.text);
        if (d->config->spare.max_age_s > 0 && now.ms - max_age_checked_ms >= MAX_AGE_CHECK_MS) {
            max_age_checked_ms = now.ms;
            expire_forgotten(d);
        }
        (void)job_sleep(j, SCAN_INTERVAL_MS); /* the loop reads the flag */
    }
}

spare_driver *spare_driver_start(const vf_config *config, const char *owner, vf_error *err)
{
    spare_driver *d = calloc(1, sizeof *d);
    if (!d) {
        vf_error_set(err, VF_ENOMEM, "out of memory starting the spare driver");
        return NULL;
    }
    d->config = config;
    snprintf(d->owner, sizeof d->owner, "%s", owner);
    if (job_init(&d->job, "spare driver", err) < 0) {
        spare_driver_stop(d);
        return NULL;
    }
    d->store = store_config_open(config, STORE_READ_WRITE, err);
    if (!d->store) {
        spare_driver_stop(d);
        return NULL;
    }
    if (job_start(&d->job, drive, d, err) < 0) {
        spare_driver_stop(d);
        return NULL;
    }
    return d;
}

void spare_driver_stop(spare_driver *d)
{
    if (!d)
        return;
    job_stop(&d->job);
    if (d->store) {
        vf_error ignored;
        vf_error_init(&ignored);
        (void)store_lease_release(d->store, "spares", d->owner, &ignored);
    }
    store_close(d->store);
    for (size_t i = 0; i < d->n_released; i++)
        free(d->released[i]);
    free(d->released);
    free(d);
}
