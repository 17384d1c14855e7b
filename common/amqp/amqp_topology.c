#include "amqp_topology.h"

#include <stdio.h>
#include <string.h>

#include "log.h"

typedef enum {
    QUEUE_CONSUMED, /* the work queues and the relay's queue */
    QUEUE_DEAD,     /* the parking lot */
    QUEUE_RETRY,    /* a delay tier */
} queue_role;

#define MAX_QUEUE_ARGS 4

/* The single source of queue arguments: two programs that disagree on one of
 * them make each other's declare fail with PRECONDITION_FAILED. `entries` must
 * have room for MAX_QUEUE_ARGS; the table borrows string constants only. */
static amqp_table_t queue_arguments(queue_role role, const vf_config *config, int delay_s,
                                    amqp_table_entry_t *entries)
{
    int n = 0;
    entries[n].key = amqp_cstring_bytes("x-queue-type");
    entries[n].value.kind = AMQP_FIELD_KIND_UTF8;
    entries[n].value.value.bytes =
        amqp_cstring_bytes(config->amqp.queue_type == CONFIG_QUEUE_CLASSIC ? "classic" : "quorum");
    n++;
    switch (role) {
    case QUEUE_CONSUMED:
        entries[n].key = amqp_cstring_bytes("x-dead-letter-exchange");
        entries[n].value.kind = AMQP_FIELD_KIND_UTF8;
        entries[n].value.value.bytes = amqp_cstring_bytes(BROKER_DLX);
        n++;
        if (config->amqp.single_active_consumer) {
            entries[n].key = amqp_cstring_bytes("x-single-active-consumer");
            entries[n].value.kind = AMQP_FIELD_KIND_BOOLEAN;
            entries[n].value.value.boolean = 1;
            n++;
        }
        break;
    case QUEUE_DEAD:
        entries[n].key = amqp_cstring_bytes("x-max-length");
        entries[n].value.kind = AMQP_FIELD_KIND_I64;
        entries[n].value.value.i64 = BROKER_DEAD_MAX_LENGTH;
        n++;
        entries[n].key = amqp_cstring_bytes("x-message-ttl");
        entries[n].value.kind = AMQP_FIELD_KIND_I64;
        entries[n].value.value.i64 = BROKER_DEAD_TTL_MS;
        n++;
        entries[n].key = amqp_cstring_bytes("x-overflow");
        entries[n].value.kind = AMQP_FIELD_KIND_UTF8;
        entries[n].value.value.bytes = amqp_cstring_bytes("drop-head");
        n++;
        break;
    case QUEUE_RETRY:
        entries[n].key = amqp_cstring_bytes("x-message-ttl");
        entries[n].value.kind = AMQP_FIELD_KIND_I64;
        entries[n].value.value.i64 = (int64_t)delay_s * 1000;
        n++;
        entries[n].key = amqp_cstring_bytes("x-dead-letter-exchange");
        entries[n].value.kind = AMQP_FIELD_KIND_UTF8;
        entries[n].value.value.bytes = amqp_cstring_bytes(BROKER_EXCHANGE);
        n++;
        break;
    }
    amqp_table_t table = {.num_entries = n, .entries = entries};
    return table;
}

int amqp_topology_check_reply(amqp_rpc_reply_t reply, const char *what, vf_error *err)
{
    switch (reply.reply_type) {
    case AMQP_RESPONSE_NORMAL:
        return 0;
    case AMQP_RESPONSE_NONE:
        vf_error_set(err, VF_EUNAVAILABLE, "%s: no reply from the broker", what);
        return -1;
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
        vf_error_set(err, VF_EUNAVAILABLE, "%s: %s", what, amqp_error_string2(reply.library_error));
        return -1;
    case AMQP_RESPONSE_SERVER_EXCEPTION:
        break;
    }
    if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const amqp_channel_close_t *m = reply.reply.decoded;
        vf_error_set(err, VF_EUNAVAILABLE, "%s: broker closed the channel: %u %.*s", what,
                     m->reply_code, (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    } else if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        const amqp_connection_close_t *m = reply.reply.decoded;
        vf_error_set(err, VF_EUNAVAILABLE, "%s: broker closed the connection: %u %.*s", what,
                     m->reply_code, (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    } else {
        vf_error_set(err, VF_EUNAVAILABLE, "%s: unexpected broker method 0x%08x", what,
                     (unsigned)reply.reply.id);
    }
    return -1;
}

static int declare_exchange(amqp_connection_state_t conn, amqp_channel_t channel, const char *name,
                            const char *type, vf_error *err)
{
    amqp_exchange_declare(conn, channel, amqp_cstring_bytes(name), amqp_cstring_bytes(type),
                          0 /* passive */, 1 /* durable */, 0 /* auto_delete */, 0 /* internal */,
                          amqp_empty_table);
    char what[128];
    snprintf(what, sizeof what, "declaring exchange %s", name);
    return amqp_topology_check_reply(amqp_get_rpc_reply(conn), what, err);
}

/* The first '...' of `text` after `after` into out (at most size - 1
 * bytes); false when there is none. */
static bool quoted_after(const char *text, size_t len, const char *after, char *out, size_t size)
{
    const char *end = text + len;
    const char *at = memmem(text, len, after, strlen(after));
    if (!at)
        return false;
    const char *open = memchr(at, '\'', (size_t)(end - at));
    const char *close = open ? memchr(open + 1, '\'', (size_t)(end - open - 1)) : NULL;
    if (!close || (size_t)(close - open - 1) >= size)
        return false;
    memcpy(out, open + 1, (size_t)(close - open - 1));
    out[close - open - 1] = '\0';
    return true;
}

/* A queue the broker has with other arguments than ours (406
 * "inequivalent arg 'ARG' for queue 'Q' ...: received 'OURS' but current is
 * 'THEIRS'"): what differs, both values and the fix, as VF_ECONFIG, since
 * no retry will change it. Returns false (err untouched) for another reply. */
static bool queue_mismatch(amqp_rpc_reply_t reply, const char *name, const vf_config *config,
                           vf_error *err)
{
    if (reply.reply_type != AMQP_RESPONSE_SERVER_EXCEPTION ||
        reply.reply.id != AMQP_CHANNEL_CLOSE_METHOD)
        return false;
    const amqp_channel_close_t *m = reply.reply.decoded;
    const char *text = m->reply_text.bytes;
    size_t len = m->reply_text.len;
    char arg[64], ours[64], theirs[64];
    if (m->reply_code != AMQP_PRECONDITION_FAILED ||
        !quoted_after(text, len, "inequivalent arg", arg, sizeof arg))
        return false;
    bool have_ours = quoted_after(text, len, "received", ours, sizeof ours);
    bool have_theirs = quoted_after(text, len, "current is", theirs, sizeof theirs);
    if (strcmp(arg, "x-queue-type") == 0) {
        const char *declared =
            config->amqp.queue_type == CONFIG_QUEUE_CLASSIC ? "classic" : "quorum";
        vf_error_set(err, VF_ECONFIG,
                     "queue %s exists on the broker as a %s queue, and this configuration "
                     "declares it %s (amqp.queue_type: %s): set amqp.queue_type: %s to use the "
                     "queues as they are, or move their messages away and delete them so they "
                     "are declared anew (docs/upgrading.md)",
                     name, have_theirs ? theirs : "different", declared, declared,
                     have_theirs ? theirs : "as the broker has it");
    } else {
        vf_error_set(err, VF_ECONFIG,
                     "queue %s exists on the broker with %s %s, and this version declares it "
                     "with %s: another version or a hand declared it; move its messages away "
                     "and delete it so it is declared anew (docs/upgrading.md)",
                     name, arg, have_theirs ? theirs : "(another value)",
                     have_ours ? ours : "another value");
    }
    return true;
}

static int declare_queue(amqp_connection_state_t conn, amqp_channel_t channel, const char *name,
                         const vf_config *config, amqp_table_t arguments, vf_error *err)
{
    amqp_queue_declare(conn, channel, amqp_cstring_bytes(name), 0 /* passive */, 1 /* durable */,
                       0 /* exclusive */, 0 /* auto_delete */, arguments);
    amqp_rpc_reply_t reply = amqp_get_rpc_reply(conn);
    if (queue_mismatch(reply, name, config, err))
        return -1;
    char what[128];
    snprintf(what, sizeof what, "declaring queue %s", name);
    return amqp_topology_check_reply(reply, what, err);
}

static int bind_queue(amqp_connection_state_t conn, amqp_channel_t channel, const char *queue,
                      const char *exchange, const char *key, vf_error *err)
{
    amqp_queue_bind(conn, channel, amqp_cstring_bytes(queue), amqp_cstring_bytes(exchange),
                    amqp_cstring_bytes(key), amqp_empty_table);
    char what[160];
    snprintf(what, sizeof what, "binding queue %s to %s with \"%s\"", queue, exchange, key);
    return amqp_topology_check_reply(amqp_get_rpc_reply(conn), what, err);
}

/* A channel of its own for virtflow.dead's declare: a refusal closes only
 * this channel, not the caller's. */
#define DEAD_DECLARE_CHANNEL 3

/* virtflow.dead with its bounds. A queue declared earlier without them (by an
 * older virtflow, or by hand) makes the broker answer 406 PRECONDITION_FAILED.
 * Refusing to start over it would stop every worker for a parking lot, and
 * deleting it would lose what is parked: so it is used as it is, with a
 * warning that says how to bound it in place (a policy) or anew. */
static int declare_dead_queue(amqp_connection_state_t conn, const vf_config *config,
                              amqp_table_entry_t *entries, vf_error *err)
{
    amqp_channel_open(conn, DEAD_DECLARE_CHANNEL);
    if (amqp_topology_check_reply(amqp_get_rpc_reply(conn), "opening a channel", err) < 0)
        return -1;
    amqp_queue_declare(conn, DEAD_DECLARE_CHANNEL, amqp_cstring_bytes(BROKER_DEAD_QUEUE),
                       0 /* passive */, 1 /* durable */, 0 /* exclusive */, 0 /* auto_delete */,
                       queue_arguments(QUEUE_DEAD, config, 0, entries));
    amqp_rpc_reply_t reply = amqp_get_rpc_reply(conn);
    if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
        reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD &&
        ((const amqp_channel_close_t *)reply.reply.decoded)->reply_code ==
            AMQP_PRECONDITION_FAILED) {
        const amqp_channel_close_t *m = reply.reply.decoded;
        log_warn("amqp: queue %s exists with other arguments than this version declares "
                 "(broker: %.*s); it is used as it is, without its bounds (x-max-length %d, "
                 "x-message-ttl %lld ms, x-overflow drop-head). Bound it in place with "
                 "rabbitmqctl set_policy virtflow-dead '^virtflow\\.dead$' "
                 "'{\"max-length\":%d,\"message-ttl\":%lld,\"overflow\":\"drop-head\"}' "
                 "--apply-to queues, or redrive it and delete it so it is declared anew "
                 "(docs/upgrading.md)",
                 BROKER_DEAD_QUEUE, (int)m->reply_text.len, (const char *)m->reply_text.bytes,
                 BROKER_DEAD_MAX_LENGTH, (long long)BROKER_DEAD_TTL_MS, BROKER_DEAD_MAX_LENGTH,
                 (long long)BROKER_DEAD_TTL_MS);
        amqp_channel_close_ok_t close_ok = {0};
        if (amqp_send_method(conn, DEAD_DECLARE_CHANNEL, AMQP_CHANNEL_CLOSE_OK_METHOD, &close_ok) !=
            AMQP_STATUS_OK) {
            vf_error_set(err, VF_EUNAVAILABLE, "declaring queue %s: lost the connection",
                         BROKER_DEAD_QUEUE);
            return -1;
        }
        return 0;
    }
    char what[128];
    snprintf(what, sizeof what, "declaring queue %s", BROKER_DEAD_QUEUE);
    if (amqp_topology_check_reply(reply, what, err) < 0)
        return -1;
    amqp_channel_close(conn, DEAD_DECLARE_CHANNEL, AMQP_REPLY_SUCCESS);
    return amqp_topology_check_reply(amqp_get_rpc_reply(conn), "closing a channel", err);
}

int amqp_topology_declare(amqp_connection_state_t conn, amqp_channel_t channel,
                          const vf_config *config, vf_error *err)
{
    amqp_table_entry_t entries[MAX_QUEUE_ARGS];

    if (declare_exchange(conn, channel, BROKER_EXCHANGE, "topic", err) < 0 ||
        declare_exchange(conn, channel, BROKER_DLX, "fanout", err) < 0)
        return -1;

    if (declare_dead_queue(conn, config, entries, err) < 0 ||
        bind_queue(conn, channel, BROKER_DEAD_QUEUE, BROKER_DLX, "", err) < 0)
        return -1;

    static const struct {
        const char *queue;
        const char *key;
    } bindings[] = {
        {BROKER_SCHEDULE_QUEUE, BROKER_KEY_SCHEDULE},
        {BROKER_PRIORITY_QUEUE, BROKER_KEY_SCHEDULE_PRIORITY},
        /* Behind the placements it may follow, on the same queue. */
        {BROKER_SCHEDULE_QUEUE, BROKER_KEY_TASK_RELEASE},
        {BROKER_SPARE_QUEUE, BROKER_KEY_SPARE_PREPARE},
        {BROKER_SPARE_QUEUE, BROKER_KEY_SPARE_RELEASE},
        {BROKER_RELAY_QUEUE, BROKER_KEY_EVENTS},
    };
    for (size_t i = 0; i < sizeof bindings / sizeof bindings[0]; i++) {
        if (declare_queue(conn, channel, bindings[i].queue, config,
                          queue_arguments(QUEUE_CONSUMED, config, 0, entries), err) < 0 ||
            bind_queue(conn, channel, bindings[i].queue, BROKER_EXCHANGE, bindings[i].key, err) < 0)
            return -1;
    }

    if (config->nats.url &&
        (declare_queue(conn, channel, BROKER_NATS_QUEUE, config,
                       queue_arguments(QUEUE_CONSUMED, config, 0, entries), err) < 0 ||
         bind_queue(conn, channel, BROKER_NATS_QUEUE, BROKER_EXCHANGE, BROKER_KEY_EVENTS, err) < 0))
        return -1;

    for (size_t i = 0; i < config->retry.n_delays; i++) {
        int delay_s = config->retry.delays_s[i];
        char name[BROKER_NAME_MAX];
        if (broker_names_retry(delay_s, name, sizeof name) < 0) {
            vf_error_set(err, VF_ECONFIG, "retry.delays_s[%zu]: %d is not a delay in seconds", i,
                         delay_s);
            return -1;
        }
        if (declare_exchange(conn, channel, name, "fanout", err) < 0 ||
            declare_queue(conn, channel, name, config,
                          queue_arguments(QUEUE_RETRY, config, delay_s, entries), err) < 0 ||
            bind_queue(conn, channel, name, name, "", err) < 0)
            return -1;
    }
    log_debug("amqp: topology declared (%zu retry tiers, %s queues)", config->retry.n_delays,
              config->amqp.queue_type == CONFIG_QUEUE_CLASSIC ? "classic" : "quorum");
    return 0;
}
