/* api_broker: see api_broker.h. */
#include "api_broker.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "backoff.h"
#include "broker_names.h"
#include "log.h"

#define RETRY_BASE_S 0.5
#define RETRY_CAP_S 10.0
/* The refused requests are said at most this often. */
#define WARN_INTERVAL_MS 10000

struct api_broker {
    amqp_refusals *refusals; /* thread-safe on its own */
    pthread_mutex_t lock;
    backoff retry;
    clock_seam clock;
    bool down;             /* the last attempt failed */
    bool attempting;       /* a link is connecting now */
    int64_t next_ms;       /* monotonic: when the next attempt is due */
    int64_t down_since_ms; /* monotonic: the first failed attempt of this outage */
    char why[VF_ERROR_TEXT];
    size_t refused;       /* since the last warning */
    size_t refused_total; /* this outage */
    int64_t warned_ms;    /* monotonic: the last warning; 0 none in this outage */
};

api_broker *api_broker_new(void)
{
    api_broker *b = calloc(1, sizeof *b);
    if (!b || !(b->refusals = amqp_refusals_new())) {
        free(b);
        return NULL;
    }
    pthread_mutex_init(&b->lock, NULL);
    backoff_init(&b->retry, RETRY_BASE_S, RETRY_CAP_S);
    return b;
}

void api_broker_free(api_broker *b)
{
    if (!b)
        return;
    pthread_mutex_destroy(&b->lock);
    amqp_refusals_free(b->refusals);
    free(b);
}

void api_broker_set_clock(api_broker *b, int64_t (*mono_ms)(void *context), void *context)
{
    b->clock = (clock_seam){mono_ms, mono_ms ? context : NULL};
}

/* Under lock: say what was refused since the last warning, at most every
 * WARN_INTERVAL_MS (and once more, `always`, when the outage ends). */
static void warn_refused(api_broker *b, int64_t now, bool always)
{
    if (b->refused == 0 || (!always && b->warned_ms && now - b->warned_ms < WARN_INTERVAL_MS))
        return;
    int64_t since = b->warned_ms ? b->warned_ms : b->down_since_ms;
    int64_t next = b->next_ms > now ? b->next_ms - now : 0;
    log_warn("broker unreachable (%s): %zu requests refused in the last %.0f s; next connect "
             "attempt in %.1f s",
             b->why, b->refused, (double)(now - since) / 1e3, (double)next / 1e3);
    b->refused = 0;
    b->warned_ms = now;
}

static void attempted(api_broker *b, int64_t now, const vf_error *failed)
{
    pthread_mutex_lock(&b->lock);
    b->attempting = false;
    if (failed) {
        if (!b->down) {
            b->down_since_ms = now;
            b->refused_total = 0;
            b->warned_ms = 0;
        }
        b->down = true;
        snprintf(b->why, sizeof b->why, "%s", failed->text);
        /* Half the ceiling, then jitter over the other half: full jitter
         * alone could make the next attempt due at once after a failure. */
        double ceiling = backoff_ceiling(&b->retry);
        double wait_s = ceiling / 2 + backoff_next(&b->retry) / 2;
        b->next_ms = now + (int64_t)(wait_s * 1000.0);
    } else if (b->down) {
        warn_refused(b, now, true);
        log_info("broker reachable again after %.1f s; %zu requests were refused meanwhile",
                 (double)(now - b->down_since_ms) / 1e3, b->refused_total);
        b->down = false;
        backoff_reset(&b->retry);
    }
    pthread_mutex_unlock(&b->lock);
}

int api_broker_ready(api_broker *b, amqp_link *link, int64_t *used_us, vf_error *err)
{
    if (amqp_link_is_connected(link)) {
        /* One idle past the heartbeat is reconnected: an attempt too. */
        int rc = amqp_link_ready(link, used_us, err);
        if (rc < 0)
            attempted(b, clock_seam_mono_ms(&b->clock), err);
        return rc;
    }
    int64_t now = clock_seam_mono_ms(&b->clock);
    pthread_mutex_lock(&b->lock);
    bool may = !b->attempting && (!b->down || now >= b->next_ms);
    if (may)
        b->attempting = true;
    int64_t next = b->next_ms > now ? b->next_ms - now : 0;
    if (!may)
        vf_error_set(err, VF_EUNAVAILABLE,
                     "the broker is unreachable: %s; next connect attempt in %.1f s",
                     b->down ? b->why : "another connection is being made", (double)next / 1e3);
    pthread_mutex_unlock(&b->lock);
    if (!may)
        return -1;
    int rc = amqp_link_ready(link, used_us, err);
    attempted(b, clock_seam_mono_ms(&b->clock), rc < 0 ? err : NULL);
    return rc;
}

bool api_broker_down(api_broker *b)
{
    pthread_mutex_lock(&b->lock);
    bool down = b->down;
    pthread_mutex_unlock(&b->lock);
    return down;
}

void api_broker_refused(api_broker *b, size_t n)
{
    pthread_mutex_lock(&b->lock);
    b->refused += n;
    b->refused_total += n;
    warn_refused(b, clock_seam_mono_ms(&b->clock), false);
    pthread_mutex_unlock(&b->lock);
}

void api_broker_refusal(const char *key, char *out, size_t size)
{
    snprintf(out, size,
             "the broker refuses virtflow-api's user routing key %s on exchange %s (a broker "
             "set up from older definitions: docs/upgrading.md); not published",
             key, BROKER_EXCHANGE);
}

bool api_broker_note_refusal(api_broker *b, const amqp_link *link)
{
    char exchange[AMQP_REFUSALS_NAME], key[AMQP_REFUSALS_NAME];
    if (!amqp_refusals_note(b->refusals, link, exchange, key))
        return false;
    const char *text = NULL;
    amqp_link_broker_close(link, &text);
    log_warn("broker: the broker refuses virtflow-api's publish of %s%s on exchange %s (403 %s): "
             "such requests are answered 503 without trying again, until virtflow-api restarts. "
             "Grant its user topic write permission for it (virtflow-client's pattern in "
             "deploy/rabbitmq/definitions.json: docs/upgrading.md)",
             key[0] ? "routing key " : "anything", key, exchange[0] ? exchange : "(default)",
             text ? text : "");
    return true;
}

bool api_broker_refuses(api_broker *b, const char *key)
{
    return amqp_refusals_blocks(b->refusals, BROKER_EXCHANGE, key);
}
