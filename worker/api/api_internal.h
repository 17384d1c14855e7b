/* What api.c shares with the route files beside it. */
#ifndef VF_API_INTERNAL_H
#define VF_API_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

#include "amqp_link.h"
#include "api.h"
#include "api_broker.h"
#include "api_idempotency.h"
#include "api_intake.h"
#include "api_keys.h"
#include "api_metrics.h"
#include "api_publish.h"
#include "api_sweep.h"
#include "engine.h"
#include "inventory.h"
#include "inventory_refresher.h"
#include "request.h"
#include "result_cache.h"
#include "store.h"
#include "store_tasks.h"

struct api {
    const vf_config *config;
    store *store;
    api_broker *broker;       /* the one reconnect schedule of every link (api_broker.h) */
    api_publisher *publisher; /* task.release's link and confirms (api_publish.h) */
    api_metrics *metrics;
    api_key_ring *keys;           /* NULL: no api.keys_file, every route open */
    api_idempotency *idempotency; /* Idempotency-Key task ids (api_idempotency.h) */
    api_sweep *sweep;             /* NULL: api.requeue_after_s 0 */
    api_intake *intake;           /* task submissions (api_intake.h) */
    result_cache *results;        /* GET /result's answers; the HTTP thread's alone */
    /* GET /v1/hosts: the inventory, refreshed by its own thread
     * (inventory_refresher.h, as the worker's); NULL when the configuration
     * has none that works. */
    inventory *inventory;
    inventory_refresher *refresher;
    /* The never-fits check (api_fits.c): an engine over the snapshot it holds. */
    sched_engine *fits;
    inventory_view fits_view;
};

/* With scheduler.unfit_requests: fail, whether no host of the inventory
 * could ever hold `req` (never_fits.h), with `why` (the CLI's words) for the
 * 422. False without an inventory or a snapshot yet: the worker decides.
 * The HTTP thread's. api_fits_free drops the engine and the snapshot. */
bool api_never_fits(api *a, const sched_request *req, char *why, size_t size);
void api_fits_free(api *a);

/* Accept a task.schedule request: check the body (415, 413, 400 with the
 * worker's own message), take its task id (the body's, one derived from
 * `idempotency_key`, `submitter` and the caller's key's `key_digest`
 * (NULL: no keys) as api_idempotency.h says, or a new one) into task_id, and hand
 * it to the intake (api_intake.h), which records it as queued (history:
 * via virtflow-api, the submitter's key name when not NULL) and publishes
 * it with a confirm, in groups. A task id already recorded with the same
 * body is accepted again (published again while still queued); with
 * another body it is 409.
 *
 * Not `blocking`: the first call returns 1 with resp->wait_ms set (the
 * request waits, no thread held; every waiting place taken: 503 with
 * Retry-After), and the call that follows the intake's wake answers.
 * `blocking`: the call waits for the outcome (for a caller that goes on
 * with the task, the admission webhook). Returns 0 accepted (resp
 * untouched, task_id set), -1 answered with a problem (resp set), 1
 * waiting. */
int api_submit(api *a, const httpd_request *req, const char *submitter,
               const unsigned char *key_digest, const char *idempotency_key, bool blocking,
               char task_id[REQUEST_TASK_ID_LEN], httpd_response *resp);

/* A kind of request the submission routes take: what the task is
 * recorded as, where it is published, and the worker's own check. */
typedef struct api_request_kind {
    const char *kind;        /* the task row's kind: "schedule", "spare" */
    const char *routing_key; /* NULL: task.schedule's, by the body's priority */
    bool body_names_task;    /* the body carries its task_id (given it when absent) */
    /* The worker's check of the body: 0 with task_id set to the body's own
     * ("" when none), or -1 with err (the 400's detail). */
    int (*check)(const vf_config *config, const json_t *body, char task_id[REQUEST_TASK_ID_LEN],
                 vf_error *err);
    /* NULL, or whether a checked body can never fit the API's copy of the
     * inventory, with why (the 422's detail). */
    bool (*never_fits)(api *a, const json_t *body, char *why, size_t size);
} api_request_kind;

/* The request's body as a JSON object (owned), parsed as the worker parses
 * messages; NULL after answering 413 (too large), 415 (not
 * application/json) or 400 (not JSON, duplicate keys, not an object). */
json_t *api_json_body(const httpd_request *req, httpd_response *resp);

/* An Idempotency-Key header: 1 to 255 printable ASCII characters. */
bool api_idempotency_key_is_valid(const char *key);

/* The task id an Idempotency-Key from this key holder stands for: the
 * current secret's, or an earlier secret's when a task is recorded under it
 * (a rotation in progress). What POST /v1/tasks records the task under, and
 * what GET /v1/tasks?idempotency_key= finds it by. */
void api_idempotent_task_id(api *a, const char *submitter, const unsigned char *digest,
                            const char *key, char task_id[REQUEST_TASK_ID_LEN]);

/* task.schedule (POST /schedule, POST /v1/tasks, the admission webhook). */
extern const api_request_kind api_request_schedule;

/* api_submit for a request of `kind`: the same steps, answers and rules;
 * a kind whose body has no task_id takes its id from the Idempotency-Key
 * or a new one, and travels with it as message_id only. */
int api_submit_kind(api *a, const api_request_kind *kind, const httpd_request *req,
                    const char *submitter, const unsigned char *key_digest,
                    const char *idempotency_key, bool blocking, char task_id[REQUEST_TASK_ID_LEN],
                    httpd_response *resp);

/* POST /schedule: api_submit, then the prototype's {"task_id": ...}. */
void api_schedule(api *a, const httpd_request *req, const char *submitter, httpd_response *resp);

/* Start the inventory thread (api.inventory NULL, a warning logged, when the
 * configuration names no inventory that works). 0, or -1 with err. */
int api_hosts_start(api *a, vf_error *err) __attribute__((warn_unused_result));

/* Stop the thread and free the inventory; safe when never started. */
void api_hosts_stop(api *a);

/* GET /v1/deliveries (api_deliveries.c); the caller has the read scope. */
void api_deliveries(api *a, const httpd_request *req, httpd_response *resp);

/* GET /v1/dead-letters (api_dead_letters.c); the caller has the read scope. */
void api_dead_letters(api *a, const httpd_request *req, httpd_response *resp);

/* GET /v1/hosts. */
void api_hosts(api *a, const httpd_request *req, httpd_response *resp);

/* Who is asking: the scopes of the key presented (every scope when the api
 * has no keys), and its name (NULL without keys). */
typedef struct api_caller {
    int scopes;       /* API_SCOPE_* */
    bool presented;   /* an Authorization header came */
    const char *name; /* the key's name, or NULL */
    /* The key's SHA-256 (api_keys_check_digest), or NULL without keys. */
    const unsigned char *digest;
} api_caller;

/* Whether the caller has every scope in `needed`; if not, answers 401
 * (no key, or not one of the file's: with WWW-Authenticate) or 403 (a key
 * without that scope) and returns false. */
bool api_allow(const api_caller *caller, int needed, httpd_response *resp);

/* GET /result/{task_id} of a spare task (api_spare.c): the prototype's
 * status (processing; completed once `ready` or `released`; failed, with
 * error and reason), the task's `state`, `upgrade_id` and each spare's
 * progress (`spares`, task_view_spares_json), read now: the spares move on
 * without the task row changing, so this answer is never cached. Owned,
 * or NULL with err. */
json_t *api_spare_result_json(store *s, const store_task *task, vf_error *err);

/* 1 to 128 of request_task_id_chars. */
bool api_task_id_is_valid(const char *id);

/* POST /v1/admission/proxmoxmachine (api_admission.c): the CAPPX mutating
 * admission webhook; the caller has the submit scope already. */
void api_admission(api *a, const httpd_request *req, const api_caller *caller,
                   httpd_response *resp);

/* The task of a route's path into *task (store_task_clear it): 0, or -1
 * answered (404 for an id that is not valid or not recorded, 503/500 when
 * the store fails, logged with `what`). */
int api_find_task(api *a, const char *task_id, store_task *task, const char *what,
                  httpd_response *resp);

/* GET /result/{task_id}; `task_id` is the path's last segment. */
void api_result(api *a, const char *task_id, httpd_response *resp);

/* The prototype's answer for a recorded task: {"status":"processing"},
 * {"status":"completed","result":{"name","ip",...}} or
 * {"status":"failed","error":...}, with virtflow's own fields (task_id,
 * state, reason, vmid, pool, score, attempts) beside them. Owned; NULL on
 * out of memory. */
json_t *api_result_json(const store_task *task);

/* Connect the broker link if it is down (or idle past amqp.heartbeat_s, so
 * probably closed by the broker). 0, or -1 with err. */
int api_link_ready(api *a, vf_error *err);

/* Publish `body` on `routing_key` with message_id `message_id` (`task_id`
 * names the task in log lines) and wait for the broker's confirm,
 * reconnecting once if the link was down or broke. Returns 0 confirmed, or
 * -1 with err: VF_EUNAVAILABLE when the broker is unreachable, refused the
 * message (nack, returned) or did not confirm in time. For task.release
 * (api_release.c; virtflow-api publishes no spare requests); task.schedule
 * goes through the intake, whose groups are rows recorded, published and
 * taken back together: a release records nothing and comes one at a time.
 * It waits on the server's thread (up to 5 s for a confirm). */
int api_publish_to(api *a, const char *routing_key, const char *message_id, const char *task_id,
                   const char *body, vf_error *err) __attribute__((warn_unused_result));

/* POST /v1/tasks/{task_id}/release (api_release.c): `id` is the task id
 * from the path; the caller has the release scope already. */
void api_release(api *a, const httpd_request *req, const api_caller *caller, const char *id,
                 httpd_response *resp);

/* The release path the route and the admission webhook share
 * (api_release.c). How many reservations task `id` holds that a release
 * would end: live ones (not released, not bound, not expired by the
 * reservation clock) and bound ones whose custom resources still count
 * (the VM exists: docs/guarantees.md "The ledger"); -1 with err (the
 * store). */
int api_release_live(api *a, const char *id, vf_error *err) __attribute__((warn_unused_result));
/* Of those, the live placements alone (no VM seen yet): what a machine
 * created again may reuse. -1 with err. */
int api_release_placements(api *a, const char *id, vf_error *err)
    __attribute__((warn_unused_result));
/* Publish task `id`'s task.release (the worker ends what it holds; a
 * repeat is harmless), logging it for `by` (NULL: nobody named). Returns 0
 * confirmed, -1 with err (api_publish_to's, or VF_ENOMEM). */
int api_release_send(api *a, const char *id, const char *by, vf_error *err)
    __attribute__((warn_unused_result));

/* Reply 200 with `value` as JSON; takes the reference. */
void api_reply_json(httpd_response *resp, int status, json_t *value);

#endif
