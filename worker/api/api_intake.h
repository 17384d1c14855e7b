/* api_intake: task submissions recorded and published in groups.
 *
 * POST /schedule and POST /v1/tasks hand each checked request to the
 * intake and wait (a suspended connection: no thread each). The intake's
 * thread takes every submission that has arrived, records the new ones as
 * `queued` in one store transaction (one commit, one sync, for the whole
 * group), publishes them all on its own broker link and waits once for
 * all their confirms; then it wakes each request (httpd_wake) with its
 * outcome. While one group waits for its confirms, the next is recorded
 * (two groups in hand; each published only once recorded). A request
 * alone is a group of one, so nothing waits for a group to fill; under
 * load the groups grow by themselves.
 *
 * The rules are those of one submission at a time: a task id recorded
 * already with the same request is accepted again (published again while
 * still `queued`), with another request 409; a publish the broker does not
 * confirm takes the new row back (unless a worker has the task already)
 * and answers 503; a store that fails answers 503 (500 for other errors).
 *
 * Threads: submit, take and abandon from the HTTP server's thread; the
 * intake's own thread does the rest. */
#ifndef VF_API_INTAKE_H
#define VF_API_INTAKE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api_broker.h"
#include "api_metrics.h"
#include "config.h"
#include "request.h"
#include "vf_error.h"

typedef struct api_intake api_intake;

/* Wakes the request `ticket` (httpd_wake on the server). */
typedef void (*api_intake_wake_fn)(void *ctx, uint64_t ticket);

/* Open its own store handle and broker link (connected at first use,
 * through `broker`'s schedule: borrowed, outliving the intake) and start its
 * thread. NULL with err. */
api_intake *api_intake_start(const vf_config *config, api_metrics *metrics, api_broker *broker,
                             vf_error *err);

/* Where outcomes are announced (NULL: nowhere; requests then find their
 * outcome when their wait ends). Once it returns, the earlier waker is no
 * longer called. */
void api_intake_set_waker(api_intake *in, api_intake_wake_fn wake, void *ctx);

/* One submission, for the request `ticket`: task_id, its request `text` as
 * published (taken: freed by the intake) and parsed (`body`, reference
 * taken), the key name of the submitter (copied; NULL: none), whether the
 * id came from an Idempotency-Key (the 409's wording) and the routing key.
 * 0, or -1 with err (out of memory, or stopping: the request answers 503). */
int api_intake_submit(api_intake *in, uint64_t ticket, const char *task_id, char *text,
                      json_t *body, const char *submitter, bool idempotent, const char *routing_key,
                      vf_error *err) __attribute__((warn_unused_result));

/* api_intake_submit for a task of `kind` (a static string: "schedule", or
 * "spare" for spare.prepare and spare.release): recorded with that kind,
 * and a task id recorded already is the same request only when its kind
 * is the same too. */
int api_intake_submit_as(api_intake *in, const char *kind, uint64_t ticket, const char *task_id,
                         char *text, json_t *body, const char *submitter, bool idempotent,
                         const char *routing_key, vf_error *err)
    __attribute__((warn_unused_result));

/* What became of a submission. */
typedef struct api_intake_outcome {
    int status; /* 0 accepted; else the HTTP status to answer, with `detail` */
    char task_id[REQUEST_TASK_ID_LEN];
    char detail[320];
} api_intake_outcome;

/* The outcome of `ticket`'s submission once there is one: 1 with *out set
 * (the submission is then forgotten); 0 while it is still being handled. */
int api_intake_take(api_intake *in, uint64_t ticket, api_intake_outcome *out);

/* api_intake_take, waiting for the outcome up to timeout_ms: 1 with *out
 * set, 0 when it did not come in time (the submission is still handled:
 * api_intake_abandon it). */
int api_intake_await(api_intake *in, uint64_t ticket, int timeout_ms, api_intake_outcome *out);

/* How long a submission can take at most: a group's wait for confirms,
 * twice (a reconnection), and a margin for the store. */
#define API_INTAKE_MAX_MS 12000

/* The request gave up waiting (the server is stopping, or the wait ran
 * out): its submission is still handled, its outcome dropped. */
void api_intake_abandon(api_intake *in, uint64_t ticket);

/* Handle what was submitted before (its outcomes are dropped), stop the
 * thread, close; NULL is fine. */
void api_intake_stop(api_intake *in);

#endif
