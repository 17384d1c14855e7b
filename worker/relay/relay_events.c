/* relay_events: the relay's operational events, outbox to broker (see
 * relay_events.h). */
#include "relay_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_names.h"
#include "clock.h"
#include "events.h"
#include "grow.h"
#include "ids.h"
#include "log.h"
#include "store_outbox.h"

typedef struct made_event {
    char id[IDS_LEN];
    char key[64];
    char *body;
} made_event;

typedef struct sent_event {
    uint64_t tag;
    char id[IDS_LEN];
    bool settled, ok;
} sent_event;

struct relay_events {
    made_event *made; /* this turn's, not yet written */
    size_t n_made, cap_made;
    sent_event *sent; /* published, confirms awaited */
    size_t n_sent, cap_sent;
    int64_t swept_ms; /* monotonic */
};

relay_events *relay_events_new(void)
{
    return calloc(1, sizeof(relay_events));
}

static void clear_list(made_event *list, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        free(list[i].body);
    *n = 0;
}

void relay_events_free(relay_events *ev)
{
    if (!ev)
        return;
    clear_list(ev->made, &ev->n_made);
    free(ev->made);
    free(ev->sent);
    free(ev);
}

void relay_events_add(relay_events *ev, event_type type, json_t *data)
{
    if (grow_array((void **)&ev->made, &ev->cap_made, ev->n_made + 1, sizeof *ev->made) < 0) {
        json_decref(data);
        log_error("out of memory making event %s", event_types_name(type));
        return;
    }
    made_event *made = &ev->made[ev->n_made];
    made->body = events_build(type, data, clock_wall_ms() / 1000, made->id, made->key);
    if (!made->body) {
        log_error("out of memory making event %s", event_types_name(type));
        return;
    }
    log_info("event %s: %s", made->id, event_types_name(type));
    ev->n_made++;
}

size_t relay_events_waiting(const relay_events *ev)
{
    return ev->n_made;
}

int relay_events_write(relay_events *ev, store *s, const char *now, vf_error *err)
{
    for (size_t i = 0; i < ev->n_made; i++)
        if (store_outbox_add(s, ev->made[i].id, ev->made[i].key, ev->made[i].body, now, err) < 0)
            return -1;
    return 0;
}

static bool is_sent(const relay_events *ev, const char *id)
{
    for (size_t i = 0; i < ev->n_sent; i++)
        if (strcmp(ev->sent[i].id, id) == 0)
            return true;
    return false;
}

/* One event on the broker, its confirm awaited. A link that is down or
 * breaks leaves it in the outbox for the sweep. */
static void publish_one(relay_events *ev, amqp_link *link, const char *id, const char *key,
                        const char *body)
{
    if (!amqp_link_is_connected(link) ||
        grow_array((void **)&ev->sent, &ev->cap_sent, ev->n_sent + 1, sizeof *ev->sent) < 0)
        return;
    amqp_link_message msg = {.body = body, .body_len = strlen(body), .message_id = id};
    uint64_t tag = 0;
    vf_error err;
    vf_error_init(&err);
    if (amqp_link_publish(link, BROKER_EXCHANGE, key, &msg, &tag, &err) < 0) {
        log_warn("event %s: %s (published again from the outbox)", id, err.text);
        return;
    }
    sent_event *sent = &ev->sent[ev->n_sent++];
    memset(sent, 0, sizeof *sent);
    sent->tag = tag;
    snprintf(sent->id, sizeof sent->id, "%s", id);
}

void relay_events_publish(relay_events *ev, amqp_link *link)
{
    for (size_t i = 0; i < ev->n_made; i++)
        publish_one(ev, link, ev->made[i].id, ev->made[i].key, ev->made[i].body);
    clear_list(ev->made, &ev->n_made);
}

void relay_events_drop(relay_events *ev)
{
    clear_list(ev->made, &ev->n_made);
}

bool relay_events_confirmed(relay_events *ev, uint64_t tag, bool ok)
{
    for (size_t i = 0; i < ev->n_sent; i++) {
        if (ev->sent[i].tag == tag && !ev->sent[i].settled) {
            ev->sent[i].settled = true;
            ev->sent[i].ok = ok;
            return true;
        }
    }
    return false;
}

void relay_events_link_reset(relay_events *ev)
{
    ev->n_sent = 0;
}

void relay_events_settle(relay_events *ev, store *s)
{
    size_t kept = 0;
    char now[STORE_TIME_SIZE];
    store_now(now);
    for (size_t i = 0; i < ev->n_sent; i++) {
        sent_event *sent = &ev->sent[i];
        if (!sent->settled) {
            ev->sent[kept++] = *sent;
            continue;
        }
        vf_error err;
        vf_error_init(&err);
        if (sent->ok && store_outbox_mark_confirmed(s, sent->id, now, &err) < 0)
            log_warn("event %s: published, not marked so: %s (it may go out twice)", sent->id,
                     err.text);
    }
    ev->n_sent = kept;
}

typedef struct sweep_ctx {
    relay_events *ev;
    amqp_link *link;
} sweep_ctx;

static int sweep_one(const store_outbox_event *event, void *user)
{
    sweep_ctx *c = user;
    /* Only the relay's own: the worker's are its outbox sweep's, when the
     * store is shared. */
    if ((strncmp(event->routing_key, "event.receiver.", 15) == 0 ||
         strncmp(event->routing_key, "event.delivery.", 15) == 0) &&
        !is_sent(c->ev, event->id))
        publish_one(c->ev, c->link, event->id, event->routing_key, event->body);
    return 0;
}

void relay_events_sweep(relay_events *ev, store *s, amqp_link *link)
{
    int64_t now = clock_mono_us() / 1000;
    if (!amqp_link_is_connected(link) ||
        (ev->swept_ms && now - ev->swept_ms < RELAY_EVENTS_SWEEP_MS))
        return;
    ev->swept_ms = now;
    char before[STORE_TIME_SIZE];
    if (store_format_time(clock_wall_ms() - RELAY_EVENTS_SWEEP_MS, before) < 0)
        return;
    sweep_ctx c = {ev, link};
    vf_error err;
    vf_error_init(&err);
    if (store_outbox_pending(s, before, 100, sweep_one, &c, &err) < 0)
        log_warn("outbox: %s (swept again later)", err.text);
}
