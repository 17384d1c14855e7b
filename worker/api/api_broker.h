/* api_broker: virtflow-api's one reconnect schedule. The API keeps a broker
 * link per thread that publishes (the intake's, the server thread's for
 * releases and /readyz, the requeue sweep's), but they reach one broker:
 * while it is down, a request must not make a connection attempt of its own
 * (thousands a second under load), nor a warning line of its own.
 *
 * Every link connects through api_broker_ready. After a failed attempt the
 * next one is due after a capped, jittered backoff (backoff.h: a ceiling of
 * 0.5 s doubling to 10 s; the wait is drawn from its upper half, so never at
 * once) shared by all of them; until then a link that is down fails at
 * once, and only one attempt is in flight at a time. Requests refused
 * meanwhile are counted (api_broker_refused) and said in one warning at most
 * every 10 s: "broker unreachable (...): N requests refused in the last M s;
 * next connect attempt in X s". The first success resets the schedule and
 * says how long the outage lasted and what it refused. Thread-safe. */
#ifndef VF_API_BROKER_H
#define VF_API_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "amqp_link.h"
#include "amqp_refusals.h"
#include "clock.h"
#include "vf_error.h"

typedef struct api_broker api_broker;

api_broker *api_broker_new(void) __attribute__((warn_unused_result));
void api_broker_free(api_broker *b); /* NULL is a no-op */

/* The clock the schedule reads (monotonic ms); a test's when set. */
void api_broker_set_clock(api_broker *b, int64_t (*mono_ms)(void *context), void *context);

/* amqp_link_ready under the schedule: a connected link as amqp_link_ready
 * keeps it (reconnecting one idle past the heartbeat counts as an attempt);
 * one that needs connecting connects only when an attempt is due and no
 * other link is attempting, else fails at once with VF_EUNAVAILABLE "the
 * broker is unreachable: <last error>; next connect attempt in N s".
 * Returns 0, or -1 with err. */
int api_broker_ready(api_broker *b, amqp_link *link, int64_t *used_us, vf_error *err)
    __attribute__((warn_unused_result));

/* Whether the last connect attempt failed (the broker is taken for down
 * until one succeeds): a publish that fails then is not worth a second try
 * nor a log line of its own. */
bool api_broker_down(api_broker *b);

/* `n` requests refused because the broker is down (503 to their clients):
 * counted into the rate-limited warning. */
void api_broker_refused(api_broker *b, size_t n);

/* Publish paths the broker refuses (amqp_refusals.h): a broker whose
 * permissions predate a routing key (task.release, task.schedule.priority
 * from older definitions) closes the channel at each such publish. After a
 * publish failed on `link`: when the broker closed it refusing a path, note
 * it, warn once, and return true (do not try that path again: a second try
 * is refused too). */
bool api_broker_note_refusal(api_broker *b, const amqp_link *link);

/* Whether publishing `key` on exchange virtflow is refused: the request is
 * then answered 503 at once, with api_broker_refusal's words, unpublished. */
bool api_broker_refuses(api_broker *b, const char *key);

/* The answer to a request whose routing key the broker refuses, into
 * out[size]. */
void api_broker_refusal(const char *key, char *out, size_t size);

#endif
