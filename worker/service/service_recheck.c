/* service_recheck: when room grows, send the tasks waiting for it in a delay
 * tier again at once (service_internal.h), instead of leaving them to wait
 * out their tier while a released or expired hold, or a bigger inventory,
 * could place them now. */
#include "service_recheck.h"

#include <stdlib.h>
#include <string.h>

#include "broker_names.h"
#include "clock.h"
#include "log.h"
#include "queue_order.h"
#include "store_tasks.h"

/* One round of rechecks at most this often, so that a storm of releases is
 * not a storm of decisions: retry.recheck_on_room tasks a second at most. */
#define RECHECK_INTERVAL_MS 1000

struct service_rechecker {
    const vf_config *config;      /* borrowed */
    sched_engine *engine;         /* borrowed */
    store *store;                 /* borrowed */
    amqp_link *link;              /* borrowed */
    service_publisher *publisher; /* borrowed */
    bool pending;                 /* room grew since the waiting tasks were last sent again */
    int64_t at_ms;                /* monotonic, of the last recheck round; 0: none yet */
    double room_cpu, room_memory; /* sched_engine_room at the last look */
    clock_seam clock;             /* monotonic ms; a test's when set */
};

void service_recheck_set_clock(service_rechecker *r, int64_t (*mono_ms)(void *context),
                               void *context)
{
    r->clock = (clock_seam){mono_ms, mono_ms ? context : NULL};
}

service_rechecker *service_recheck_new(const vf_config *config, sched_engine *engine, store *store,
                                       amqp_link *link, service_publisher *publisher, vf_error *err)
{
    service_rechecker *r = calloc(1, sizeof *r);
    if (!r) {
        vf_error_set(err, VF_ENOMEM, "out of memory making the rechecker");
        return NULL;
    }
    r->config = config;
    r->engine = engine;
    r->store = store;
    r->link = link;
    r->publisher = publisher;
    return r;
}

void service_recheck_free(service_rechecker *r)
{
    free(r);
}

void service_recheck_room_changed(service_rechecker *r)
{
    double cpu = 0, memory = 0;
    sched_engine_room(r->engine, &cpu, &memory);
    if (cpu > r->room_cpu || memory > r->room_memory)
        r->pending = true;
    r->room_cpu = cpu;
    r->room_memory = memory;
}

void service_recheck_room_returned(service_rechecker *r)
{
    r->pending = true;
}

bool service_recheck_due(const service_rechecker *r)
{
    return r->pending;
}

typedef struct resend {
    service_rechecker *rechecker;
    size_t sent;
    vf_error *err;
    bool failed;
} resend;

static int resend_one(const store_task *task, void *ctx)
{
    resend *rs = ctx;
    service_rechecker *r = rs->rechecker;
    if (!task->request)
        return 0;
    /* The worker's own publish (trusted): the handler decides it once more
     * and, still without room, records nothing and spends no attempt. */
    amqp_link_message msg = {.body = task->request,
                             .body_len = strlen(task->request),
                             .message_id = task->id,
                             .attempt = task->attempts,
                             .recheck = true};
    const char *key = queue_order_text_routing_key(msg.body, msg.body_len, r->config);
    int rc = service_publish_tracked(r->publisher, BROKER_EXCHANGE, key, &msg, PUB_RECHECK, 0, NULL,
                                     rs->err);
    if (rc < 0) {
        rs->failed = true;
        return 1;
    }
    rs->sent += rc == 0; /* 1: the broker refuses that key: the task waits out its tier */
    return 0;
}

int service_recheck_waiting(service_rechecker *r, vf_error *err)
{
    int limit = r->config->retry.recheck_on_room;
    if (!r->pending || limit <= 0)
        return 0;
    int64_t now = clock_seam_mono_ms(&r->clock);
    if (r->at_ms && now - r->at_ms < RECHECK_INTERVAL_MS)
        return 0; /* still pending: the next round after the interval */
    r->pending = false;
    r->at_ms = now;
    resend rs = {r, 0, err, false};
    vf_error store_err;
    vf_error_init(&store_err);
    if (store_tasks_waiting(r->store, "schedule", limit, resend_one, &rs, &store_err) < 0) {
        /* Only a hint: the tasks still wait out their tier. */
        log_warn("recheck of waiting tasks skipped: %s", store_err.text);
        return 0;
    }
    if (rs.failed)
        return -1;
    if (rs.sent)
        log_info("room grew: %zu waiting tasks sent again at once (retry.recheck_on_room)",
                 rs.sent);
    return 0;
}
