/* api_intake: task submissions recorded and published in groups (see
 * api_intake.h). */
#include "api_intake.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp_link.h"
#include "broker_names.h"
#include "clock.h"
#include "log.h"
#include "job.h"
#include "stopper.h"
#include "store.h"
#include "store_config.h"
#include "store_tasks.h"
#include "task_conflict.h"
#include "task_intake.h"
#include "task_owner.h"

/* Submissions handled together at most: one transaction, one wait for
 * confirms. More wait for the next group. Two groups are in hand at once:
 * one waiting for its confirms while the next is recorded. */
#define INTAKE_GROUP 512

/* How long a group waits for the broker's confirms before its requests
 * are answered 503: a broker that blocks publishers (memory or disk alarm)
 * never confirms, and an HTTP client should hear so rather than hang. */
#define INTAKE_CONFIRM_TIMEOUT_MS 5000

/* The thread's idle wait: a stop is seen within it. */
#define INTAKE_IDLE_MS 1000

#define INTAKE_DETAIL_SIZE 320

typedef struct item {
    struct item *next;
    uint64_t ticket;
    char task_id[REQUEST_TASK_ID_LEN];
    char *text;
    json_t *body;
    char *submitter;
    bool idempotent;
    const char *kind;        /* the task's: "schedule" or "spare", a static string */
    const char *routing_key; /* a static string (amqp_topology.h) */
    /* The thread's, while the group is handled. */
    bool recorded;  /* its row was made by this group */
    bool exists;    /* a row of that id was there already */
    bool publish;   /* to be published in this group */
    bool republish; /* published again: the row was there, still queued */
    uint64_t tag;   /* its publish's tag; 0: not published (yet) */
    int confirmed;  /* 1 confirmed, -1 refused, 0 no outcome */
    /* The outcome, under the lock once done. */
    bool done, abandoned;
    int status; /* 0 accepted, or the HTTP status */
    char detail[INTAKE_DETAIL_SIZE];
} item;

struct api_intake {
    const vf_config *config;
    api_metrics *metrics;
    store *store;
    amqp_link *link;
    api_broker *broker; /* borrowed: the schedule `link` connects by */
    int64_t link_used_us;
    job job;                 /* the intake thread; job.lock guards what follows */
    stopper group_done;      /* woken when a group is finished (api_intake_await) */
    api_intake_wake_fn wake; /* under lock */
    void *wake_ctx;
    item *head, *tail; /* submitted, not yet taken by the thread */
    item *finished;    /* done, their outcome not yet taken */
    /* Two sets of INTAKE_GROUP slots, filled and emptied under lock: the
     * group being recorded and the group published, awaiting its
     * confirms (NULL-terminated when not full). */
    item **group[2];
    item **confirming; /* the thread's: the slots whose confirms are awaited */
};

static void item_free(item *it)
{
    if (!it)
        return;
    free(it->text);
    json_decref(it->body);
    free(it->submitter);
    free(it);
}

static void answer(item *it, int status, const char *detail)
{
    it->status = status;
    snprintf(it->detail, sizeof it->detail, "%.*s", (int)sizeof it->detail - 1,
             detail ? detail : "");
}

/* Whether a recorded task is the same request as it->body: a task of the
 * same kind with the same body (task_conflict.h, the worker's rule too). */
static bool same_request(const store_task *task, const item *it)
{
    return task->kind && strcmp(task->kind, it->kind) == 0 &&
           task_conflict_same_request(task->request, it->task_id, it->body);
}

/* Whether the recorded task was first submitted by someone else than this
 * key holder (task_owner.h): another key, or a broker user (a task that came
 * by the broker is no key's). The same body from another is no retry of
 * theirs: the id stays its first submitter's, who alone may release it.
 * Nothing to tell without keys, or when the history names no one. */
static bool from_another_submitter(api_intake *in, const item *it)
{
    if (!it->submitter)
        return false;
    task_owner owner;
    vf_error err;
    vf_error_init(&err);
    if (task_owner_read(in->store, it->task_id, &owner, &err) < 0)
        log_warn("task %s: reading its first submitter: %s", it->task_id, err.text);
    bool other = owner.key ? strcmp(owner.key, it->submitter) != 0 : owner.publisher != NULL;
    task_owner_clear(&owner);
    return other;
}

/* Another request under a recorded id: answered 409, and recorded as the
 * worker records one from the broker (history row and task.conflict, which
 * the workers' outbox sweep publishes), the task left as it was. */
static void refuse_conflict(api_intake *in, item *it, const store_task *existing,
                            bool other_submitter)
{
    task_conflict c = {.other_publisher = other_submitter,
                       .task_id = it->task_id,
                       .kind = existing->kind,
                       .via = "virtflow-api",
                       .submitter = it->submitter,
                       .request = it->body,
                       .now_ms = clock_wall_ms()};
    vf_error err;
    vf_error_init(&err);
    if (store_begin(in->store, &err) < 0 ||
        task_conflict_record(in->store, &c, NULL, NULL, NULL, &err) < 0 ||
        store_commit(in->store, &err) < 0) {
        (void)store_rollback(in->store, NULL);
        log_warn("task %s: a conflicting submission answered 409 but not recorded: %s", it->task_id,
                 err.text);
    } else {
        log_info("task %s: conflict: another request under a recorded task id%s%s; answered 409, "
                 "the task left as it was",
                 it->task_id, it->submitter ? " from key " : "",
                 it->submitter ? it->submitter : "");
    }
    char detail[INTAKE_DETAIL_SIZE];
    if (other_submitter)
        snprintf(detail, sizeof detail,
                 "task %s was first submitted by another key; use a new task_id", it->task_id);
    else
        snprintf(detail, sizeof detail,
                 it->idempotent
                     ? "task %s exists with another request: an Idempotency-Key stands for one "
                       "request; use a new key"
                     : "task %s exists with another request; use a new task_id",
                 it->task_id);
    answer(it, 409, detail);
}

static void store_failed(item **group, int n, const vf_error *err)
{
    log_error("submit: store: %s (%d requests answered 503)", err->text, n);
    /* The store's words name files and hosts: the log has them, not the client. */
    for (int i = 0; i < n; i++) {
        group[i]->publish = false; /* rolled back: nothing of the group is recorded */
        answer(group[i], err->code == VF_EUNAVAILABLE ? 503 : 500,
               "the store is unavailable; try again");
    }
}

/* Record the group's new tasks in one transaction. -1: every request of
 * the group is answered (the store failed). */
static int record(api_intake *in, item **group, int n)
{
    char now[STORE_TIME_SIZE];
    store_now(now);
    vf_error err;
    vf_error_init(&err);
    if (store_begin(in->store, &err) < 0) {
        store_failed(group, n, &err);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        item *it = group[i];
        int rc = task_intake_record_as(in->store, it->kind, it->task_id, it->text, "virtflow-api",
                                       it->submitter, now, &err);
        if (rc < 0) {
            (void)store_rollback(in->store, NULL);
            store_failed(group, n, &err);
            return -1;
        }
        it->recorded = rc == 1;
        it->exists = rc == 0;
        it->publish = it->recorded;
    }
    if (store_commit(in->store, &err) < 0) {
        store_failed(group, n, &err);
        return -1;
    }
    return 0;
}

/* A task id recorded already: the same request is accepted again
 * (published again while still queued: the first publish may have been
 * lost, and the worker decides a task id once however many copies come);
 * another request is 409. */
static void judge_existing(api_intake *in, item *it)
{
    store_task existing = {0};
    vf_error err;
    vf_error_init(&err);
    int found = store_task_get(in->store, it->task_id, &existing, &err);
    if (found != 0) {
        if (found > 0) /* recorded, then gone: taken back by a refused publish elsewhere */
            vf_error_set(&err, VF_EUNAVAILABLE, "task %s: recorded elsewhere, not readable",
                         it->task_id);
        log_error("task %s: submit: store: %s", it->task_id, err.text);
        answer(it, err.code == VF_EUNAVAILABLE ? 503 : 500, "the store is unavailable; try again");
    } else if (!same_request(&existing, it)) {
        refuse_conflict(in, it, &existing, false);
    } else if (from_another_submitter(in, it)) {
        refuse_conflict(in, it, &existing, true);
    } else if (strcmp(existing.status, "queued") == 0) {
        it->publish = it->republish = true;
    } else {
        answer(it, 0, NULL);
    }
    store_task_clear(&existing);
}

/* The link's confirm callback: the group's item with that tag. */
static void on_confirm(uint64_t tag, bool ok, const char *reason, void *user)
{
    api_intake *in = user;
    for (int i = 0; in->confirming && i < INTAKE_GROUP && in->confirming[i]; i++) {
        item *it = in->confirming[i];
        if (it->tag == tag) {
            it->confirmed = ok ? 1 : -1;
            if (!ok)
                snprintf(it->detail, sizeof it->detail, "%s", reason ? reason : "refused");
            return;
        }
    }
}

/* Publish every item to publish that has no outcome yet, without waiting
 * for their confirms (publish_wait). -1 with err when the link failed
 * (those without a confirm may be published again on a new connection). */
static int publish_send(api_intake *in, item **group, int n, vf_error *err)
{
    bool any = false;
    for (int i = 0; i < n && !any; i++)
        any = group[i]->publish && group[i]->confirmed == 0;
    if (!any)
        return 0; /* nothing to publish: no reason to connect */
    in->confirming = group;
    if (api_broker_ready(in->broker, in->link, &in->link_used_us, err) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        item *it = group[i];
        if (!it->publish || it->confirmed != 0)
            continue;
        if (api_broker_refuses(in->broker, it->routing_key)) {
            /* Published, it would close the channel under the whole group. */
            it->confirmed = -1;
            api_broker_refusal(it->routing_key, it->detail, sizeof it->detail);
            continue;
        }
        amqp_link_message msg = {
            .body = it->text, .body_len = strlen(it->text), .message_id = it->task_id};
        if (amqp_link_publish(in->link, BROKER_EXCHANGE, it->routing_key, &msg, &it->tag, err) < 0)
            return -1;
    }
    return 0;
}

/* Wait for the confirms of what publish_send sent. -1 with err on a
 * timeout or a failed link. */
static int publish_wait(api_intake *in, vf_error *err)
{
    if (amqp_link_wait_confirms(in->link, INTAKE_CONFIRM_TIMEOUT_MS, err) < 0) {
        /* Timed out (flow control) or broke: the next group starts afresh
         * rather than with confirms still owed on this connection. */
        amqp_link_close(in->link);
        return -1;
    }
    in->link_used_us = clock_mono_us(); /* a round trip: the broker heard from us */
    return 0;
}

static int publish_round(api_intake *in, item **group, int n, vf_error *err)
{
    if (publish_send(in, group, n, err) < 0)
        return -1;
    return publish_wait(in, err);
}

/* The broker refused: take the row back unless a worker has it already
 * (a publish reported lost may still have reached the queue). Whether
 * the row is gone. */
static bool withdraw(api_intake *in, const item *it)
{
    vf_error err;
    vf_error_init(&err);
    int rc = task_intake_withdraw(in->store, it->task_id, &err);
    if (rc < 0)
        log_error("task %s: could not withdraw the queued row after a refused publish: %s",
                  it->task_id, err.text);
    else if (rc == 1)
        log_info("task %s: publish unconfirmed but a worker has the task already; kept",
                 it->task_id);
    return rc == 0;
}

/* The row of `task_id` was taken back while `next`, recorded meanwhile,
 * holds submissions judged against it (the same request again, or
 * another under that id): they are answered 503 as the first was, and
 * not published (a publish would confirm a task the store no longer has). */
static void withdrawn_under(item **next, int n_next, const char *task_id)
{
    for (int i = 0; i < n_next; i++) {
        item *it = next[i];
        if (!it->exists || strcmp(it->task_id, task_id) != 0)
            continue;
        it->publish = it->republish = false;
        answer(it, 503, "the broker did not take the request under this task id; try again");
    }
}

/* The outcome of a group sent by publish_send (sent: what it returned,
 * err: its error): its confirms awaited, then each item answered. `next`
 * is the group recorded meanwhile, not yet published (see
 * withdrawn_under). */
static void settle(api_intake *in, item **group, int n, int sent, vf_error *err, item **next,
                   int n_next)
{
    in->confirming = group;
    int rc = sent < 0 ? -1 : publish_wait(in, err);
    bool down = rc < 0 && api_broker_down(in->broker); /* no second try, no line each */
    /* A path the broker refuses closed the channel: noted, the second try
     * publishes the others only. */
    bool refused = rc < 0 && !down && api_broker_note_refusal(in->broker, in->link);
    if (rc < 0 && !down) {
        /* An idle link may have been closed by the broker: one fresh
         * connection, one more try for what has no confirm. Publishing
         * twice is harmless: the worker knows the task id. */
        if (!refused)
            log_info("submit: publish failed (%s); reconnecting once", err->text);
        for (int i = 0; i < n; i++)
            if (group[i]->confirmed == -1 && !amqp_link_is_connected(in->link))
                group[i]->confirmed = 0; /* reported failed with the connection */
        vf_error_init(err);
        rc = publish_round(in, group, n, err);
    }
    for (int i = 0; i < n; i++) {
        item *it = group[i];
        if (!it->publish)
            continue;
        if (it->confirmed == 1) {
            log_info("task %s: queued and published%s%s%s", it->task_id,
                     it->republish ? " again" : "", it->submitter ? " for key " : "",
                     it->submitter ? it->submitter : "");
            api_metrics_submission(in->metrics, true);
            answer(it, 0, NULL);
            continue;
        }
        const char *why = it->confirmed == -1 && it->detail[0] ? it->detail
                          : rc < 0                             ? err->text
                                                               : "the broker did not confirm it";
        char detail[INTAKE_DETAIL_SIZE + VF_ERROR_TEXT + 64];
        snprintf(detail, sizeof detail, "the broker did not take the request: %.*s; try again",
                 INTAKE_DETAIL_SIZE - 64, why);
        if (down)
            api_broker_refused(in->broker, 1);
        else
            log_warn("task %s: not accepted: %s", it->task_id, why);
        if (!it->republish && withdraw(in, it))
            withdrawn_under(next, n_next, it->task_id);
        api_metrics_submission(in->metrics, false);
        answer(it, 503, detail);
    }
    in->confirming = NULL;
}

/* Record the group (new rows in one transaction) and judge the ids
 * recorded already. */
static void record_group(api_intake *in, item **group, int n)
{
    if (record(in, group, n) < 0)
        return;
    for (int i = 0; i < n; i++)
        if (group[i]->exists)
            judge_existing(in, group[i]);
}

/* Under lock: done items to the finished list (or freed, abandoned);
 * their tickets into `wake` (returns how many). */
static int finish_group(api_intake *in, item **group, int n, uint64_t *wake)
{
    int n_wake = 0;
    for (int i = 0; i < n; i++) {
        item *it = group[i];
        group[i] = NULL;
        if (it->abandoned) {
            item_free(it);
            continue;
        }
        it->done = true;
        it->next = in->finished;
        in->finished = it;
        wake[n_wake++] = it->ticket;
    }
    return n_wake;
}

/* Two groups in hand: each round records the submissions that have
 * arrived while the group published in the round before waits for its
 * confirms (the store's commit and the broker's confirms overlap), then
 * settles and answers that group, then publishes the one just recorded.
 * A submission is still answered only once recorded and confirmed, and
 * published only once recorded (a GET right after the answer finds it). */
static void intake_loop(job *j, void *ctx)
{
    (void)j;
    api_intake *in = ctx;
    uint64_t wake[INTAKE_GROUP];
    int current = 0;        /* in->group[current]: the slots recorded next */
    int n_confirming = 0;   /* in the other slots: sent, confirms awaited */
    int sent = 0;           /* publish_send's result for those */
    vf_error sent_err;      /* and its error */
    int64_t sent_us = 0;    /* when they were sent, monotonic µs */
    double recorded_ms = 0; /* how long they took to record */
    vf_error_init(&sent_err);
    pthread_mutex_lock(&in->job.lock);
    for (;;) {
        while (!in->head && !n_confirming && !in->job.stop.stop)
            (void)stopper_wait_once(&in->job.stop, INTAKE_IDLE_MS);
        if (!in->head && !n_confirming)
            break; /* stopping, and nothing left */
        item **group = in->group[current];
        int n = 0;
        while (in->head && n < INTAKE_GROUP) {
            item *it = in->head;
            in->head = it->next;
            it->next = NULL;
            group[n++] = it;
        }
        if (!in->head)
            in->tail = NULL;
        pthread_mutex_unlock(&in->job.lock);
        int64_t start_us = clock_mono_us();
        if (n > 0)
            record_group(in, group, n);
        int64_t recorded_us = clock_mono_us();
        if (n_confirming > 0) {
            item **other = in->group[!current];
            settle(in, other, n_confirming, sent, &sent_err, group, n);
            log_debug("intake: group of %d: recorded in %.2f ms, confirmed %.2f ms after its "
                      "publish (the next group of %d recorded meanwhile in %.2f ms)",
                      n_confirming, recorded_ms, (double)(clock_mono_us() - sent_us) / 1e3, n,
                      (double)(recorded_us - start_us) / 1e3);
            pthread_mutex_lock(&in->job.lock);
            int n_wake = finish_group(in, other, n_confirming, wake);
            stopper_wake(&in->group_done);
            /* Under the lock, so that api_intake_set_waker(NULL) returns
             * only once no wake can reach the server it names (httpd_wake
             * takes the server's lock, which is never held when it calls
             * us). */
            for (int i = 0; in->wake && i < n_wake; i++)
                in->wake(in->wake_ctx, wake[i]);
            pthread_mutex_unlock(&in->job.lock);
            n_confirming = 0;
        }
        if (n > 0) {
            recorded_ms = (double)(recorded_us - start_us) / 1e3;
            vf_error_init(&sent_err);
            sent = publish_send(in, group, n, &sent_err);
            sent_us = clock_mono_us();
            n_confirming = n;
            current = !current;
        }
        pthread_mutex_lock(&in->job.lock);
    }
    pthread_mutex_unlock(&in->job.lock);
}

static void intake_free(api_intake *in)
{
    amqp_link_free(in->link);
    store_close(in->store);
    free(in->group[0]);
    free(in->group[1]);
    free(in);
}

api_intake *api_intake_start(const vf_config *config, api_metrics *metrics, api_broker *broker,
                             vf_error *err)
{
    api_intake *in = calloc(1, sizeof *in);
    if (!in || !(in->group[0] = calloc(INTAKE_GROUP, sizeof *in->group[0])) ||
        !(in->group[1] = calloc(INTAKE_GROUP, sizeof *in->group[1]))) {
        if (in)
            free(in->group[0]);
        free(in);
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    in->config = config;
    in->metrics = metrics;
    in->broker = broker;
    if (!(in->store = store_config_open(config, STORE_READ_WRITE, err)) ||
        !(in->link = amqp_link_new(config, "virtflow-api-intake", err))) {
        intake_free(in);
        return NULL;
    }
    amqp_link_set_confirm_callback(in->link, on_confirm, in);
    if (job_init(&in->job, "intake", err) < 0) {
        intake_free(in);
        return NULL;
    }
    if (stopper_init(&in->group_done, &in->job.lock) < 0) {
        job_stop(&in->job);
        intake_free(in);
        vf_error_set(err, VF_EINTERNAL, "cannot make the intake's stopper");
        return NULL;
    }
    if (job_start(&in->job, intake_loop, in, err) < 0) {
        stopper_close(&in->group_done);
        job_stop(&in->job);
        intake_free(in);
        return NULL;
    }
    return in;
}

void api_intake_set_waker(api_intake *in, api_intake_wake_fn wake, void *ctx)
{
    pthread_mutex_lock(&in->job.lock);
    in->wake = wake;
    in->wake_ctx = ctx;
    pthread_mutex_unlock(&in->job.lock);
}

int api_intake_submit(api_intake *in, uint64_t ticket, const char *task_id, char *text,
                      json_t *body, const char *submitter, bool idempotent, const char *routing_key,
                      vf_error *err)
{
    return api_intake_submit_as(in, "schedule", ticket, task_id, text, body, submitter, idempotent,
                                routing_key, err);
}

int api_intake_submit_as(api_intake *in, const char *kind, uint64_t ticket, const char *task_id,
                         char *text, json_t *body, const char *submitter, bool idempotent,
                         const char *routing_key, vf_error *err)
{
    item *it = calloc(1, sizeof *it);
    if (!it || (submitter && !(it->submitter = strdup(submitter)))) {
        free(it);
        free(text);
        json_decref(body);
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    it->ticket = ticket;
    snprintf(it->task_id, sizeof it->task_id, "%s", task_id);
    it->text = text;
    it->body = body;
    it->idempotent = idempotent;
    it->kind = kind;
    it->routing_key = routing_key;
    pthread_mutex_lock(&in->job.lock);
    bool stopping = in->job.stop.stop;
    if (!stopping) {
        if (in->tail)
            in->tail->next = it;
        else
            in->head = it;
        in->tail = it;
        stopper_wake(&in->job.stop);
    }
    pthread_mutex_unlock(&in->job.lock);
    if (stopping) {
        item_free(it);
        vf_error_set(err, VF_EUNAVAILABLE, "virtflow-api is stopping");
        return -1;
    }
    return 0;
}

/* Under lock: unlink the finished item of `ticket`, NULL when none. */
static item *take_finished(api_intake *in, uint64_t ticket)
{
    for (item **p = &in->finished; *p; p = &(*p)->next) {
        if ((*p)->ticket == ticket) {
            item *it = *p;
            *p = it->next;
            return it;
        }
    }
    return NULL;
}

/* The outcome out of a taken item, which is freed. */
static void outcome(item *it, api_intake_outcome *out)
{
    out->status = it->status;
    snprintf(out->task_id, sizeof out->task_id, "%s", it->task_id);
    snprintf(out->detail, sizeof out->detail, "%s", it->detail);
    item_free(it);
}

int api_intake_take(api_intake *in, uint64_t ticket, api_intake_outcome *out)
{
    pthread_mutex_lock(&in->job.lock);
    item *it = take_finished(in, ticket);
    pthread_mutex_unlock(&in->job.lock);
    if (!it)
        return 0;
    outcome(it, out);
    return 1;
}

int api_intake_await(api_intake *in, uint64_t ticket, int timeout_ms, api_intake_outcome *out)
{
    int64_t until = clock_mono_ms() + timeout_ms;
    pthread_mutex_lock(&in->job.lock);
    item *it;
    int64_t left;
    while (!(it = take_finished(in, ticket)) && (left = until - clock_mono_ms()) > 0)
        (void)stopper_wait_once(&in->group_done, left);
    pthread_mutex_unlock(&in->job.lock);
    if (!it)
        return 0;
    outcome(it, out);
    return 1;
}

/* Under lock: the queued or handled item of `ticket`, NULL when none. */
static item *find_unfinished(api_intake *in, uint64_t ticket)
{
    for (item *it = in->head; it; it = it->next)
        if (it->ticket == ticket)
            return it;
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < INTAKE_GROUP && in->group[g][i]; i++)
            if (in->group[g][i]->ticket == ticket)
                return in->group[g][i];
    return NULL;
}

void api_intake_abandon(api_intake *in, uint64_t ticket)
{
    pthread_mutex_lock(&in->job.lock);
    item *it = take_finished(in, ticket);
    if (!it) {
        item *busy = find_unfinished(in, ticket);
        if (busy)
            busy->abandoned = true;
    }
    pthread_mutex_unlock(&in->job.lock);
    item_free(it);
}

void api_intake_stop(api_intake *in)
{
    if (!in)
        return;
    job_stop(&in->job);
    stopper_close(&in->group_done); /* borrowed the job's lock, gone too: no one waits */
    /* The thread handled everything queued before it saw the stop. */
    while (in->finished) {
        item *it = in->finished;
        in->finished = it->next;
        item_free(it);
    }
    intake_free(in);
}
