/* service_recheck: when room grows, send the tasks waiting for it in a delay
 * tier again at once (service_internal.h), instead of leaving them to wait
 * out their tier while a released or expired hold, or a bigger inventory,
 * could place them now. */
#include "service_internal.h"

#include <string.h>

#include "store_tasks.h"
#include "queue_order.h"

/* One round of rechecks at most this often, so that a storm of releases is
 * not a storm of decisions: retry.recheck_on_room tasks a second at most. */
#define RECHECK_INTERVAL_MS 1000

void service_room_changed(service *svc)
{
    double cpu = 0, memory = 0;
    sched_engine_room(svc->engine, &cpu, &memory);
    if (cpu > svc->room_cpu || memory > svc->room_memory)
        svc->recheck_pending = true;
    svc->room_cpu = cpu;
    svc->room_memory = memory;
}

typedef struct resend {
    service *svc;
    size_t sent;
    vf_error *err;
    bool failed;
} resend;

static int resend_one(const store_task *task, void *ctx)
{
    resend *r = ctx;
    if (!task->request)
        return 0;
    /* The worker's own publish (trusted): the handler decides it once more
     * and, still without room, records nothing and spends no attempt. */
    amqp_link_message msg = {.body = task->request,
                             .body_len = strlen(task->request),
                             .message_id = task->id,
                             .attempt = task->attempts,
                             .recheck = true};
    const char *key = queue_order_text_routing_key(msg.body, msg.body_len, r->svc->config);
    if (service_publish_tracked(r->svc->publisher, AMQP_TOPOLOGY_EXCHANGE, key, &msg, PUB_RECHECK,
                                0, NULL, r->err) < 0) {
        r->failed = true;
        return 1;
    }
    r->sent++;
    r->svc->recheck_sent = true;
    return 0;
}

bool service_recheck_refused(service *svc)
{
    const char *text = NULL;
    bool sent = svc->recheck_sent;
    svc->recheck_sent = false; /* per connection */
    if (!sent || svc->recheck_refused ||
        amqp_link_broker_close(svc->link, &text) != AMQP_ACCESS_REFUSED || !text ||
        (!strstr(text, "'" AMQP_TOPOLOGY_KEY_SCHEDULE "'") &&
         !strstr(text, "'" AMQP_TOPOLOGY_KEY_SCHEDULE_PRIORITY "'")))
        return false;
    svc->recheck_refused = true;
    svc->recheck_pending = false;
    log_warn("retry.recheck_on_room: the broker refused the worker's recheck publish (403 %s); "
             "rechecks are off until the worker restarts, waiting tasks wait out their tier: "
             "grant the worker's user topic write permission on exchange %s for routing key %s "
             "(write pattern ^(event\\..+|task\\.schedule)$, docs/upgrading.md), or set "
             "retry.recheck_on_room: 0",
             text, AMQP_TOPOLOGY_EXCHANGE, AMQP_TOPOLOGY_KEY_SCHEDULE);
    return true;
}

int service_recheck_waiting(service *svc, vf_error *err)
{
    int limit = svc->config->retry.recheck_on_room;
    if (!svc->recheck_pending || limit <= 0 || svc->recheck_refused)
        return 0;
    int64_t now = clock_mono_us() / 1000;
    if (svc->recheck_at_ms && now - svc->recheck_at_ms < RECHECK_INTERVAL_MS)
        return 0; /* still pending: the next round after the interval */
    svc->recheck_pending = false;
    svc->recheck_at_ms = now;
    resend r = {svc, 0, err, false};
    vf_error store_err;
    vf_error_init(&store_err);
    if (store_tasks_waiting(svc->store, "schedule", limit, resend_one, &r, &store_err) < 0) {
        /* Only a hint: the tasks still wait out their tier. */
        log_warn("recheck of waiting tasks skipped: %s", store_err.text);
        return 0;
    }
    if (r.failed)
        return -1;
    if (r.sent)
        log_info("room grew: %zu waiting tasks sent again at once (retry.recheck_on_room)", r.sent);
    return 0;
}
