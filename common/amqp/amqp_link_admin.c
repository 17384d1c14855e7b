/* amqp_link_admin: the calls only virtflowctl makes (queue depth, a reply
 * queue, basic.get), on the link's connection (amqp_link_admin.h). */
#include "amqp_link_admin.h"
#include "amqp_link_internal.h"

#include <amqp.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <errno.h>
#include <stdarg.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grow.h"
#include "log.h"
#include "secret_file.h"

/* ---- queue depth ---- */

int amqp_link_queue_depth(amqp_link *link, const char *queue, uint32_t *messages,
                          uint32_t *consumers, vf_error *err)
{
    if (amqp_link_require_connected(link, err) < 0)
        return -1;
    if (!link->probe_open) {
        amqp_channel_open(link->conn, PROBE_CHANNEL);
        if (amqp_topology_check_reply(amqp_get_rpc_reply(link->conn), "opening a channel", err) <
            0) {
            amqp_link_fail(link, "cannot open a side channel");
            return -1;
        }
        link->probe_open = true;
    }
    amqp_queue_declare_ok_t *ok =
        amqp_queue_declare(link->conn, PROBE_CHANNEL, amqp_cstring_bytes(queue), 1 /* passive */, 0,
                           0, 0, amqp_empty_table);
    amqp_rpc_reply_t reply = amqp_get_rpc_reply(link->conn);
    if (reply.reply_type == AMQP_RESPONSE_NORMAL && ok) {
        if (messages)
            *messages = ok->message_count;
        if (consumers)
            *consumers = ok->consumer_count;
        return 0;
    }
    if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
        reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const amqp_channel_close_t *m = reply.reply.decoded;
        bool missing = m->reply_code == AMQP_NOT_FOUND;
        /* Only the side channel is gone: acknowledge and carry on. */
        amqp_channel_close_ok_t close_ok = {0};
        link->probe_open = false;
        if (amqp_send_method(link->conn, PROBE_CHANNEL, AMQP_CHANNEL_CLOSE_OK_METHOD, &close_ok) !=
            AMQP_STATUS_OK) {
            amqp_link_fail(link, "cannot acknowledge a channel close");
        }
        if (missing) {
            vf_error_set(err, VF_EINVAL, "queue %s does not exist", queue);
            return -1;
        }
    }
    char what[160];
    snprintf(what, sizeof what, "inspecting queue %s", queue);
    if (amqp_topology_check_reply(reply, what, err) == 0)
        vf_error_set(err, VF_EINTERNAL, "%s: empty reply", what);
    if (link->connected && reply.reply_type != AMQP_RESPONSE_SERVER_EXCEPTION)
        amqp_link_fail(link, "%s failed", what);
    if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
        reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD)
        amqp_link_fail(link, "broker closed the connection");
    return -1;
}

/* ---- reply queue and basic.get ---- */

int amqp_link_reply_queue(amqp_link *link, char *name, size_t size, vf_error *err)
{
    if (amqp_link_require_connected(link, err) < 0)
        return -1;
    amqp_queue_declare_ok_t *ok = amqp_queue_declare(
        link->conn, WORK_CHANNEL, amqp_empty_bytes, 0 /* passive */, 0 /* durable */,
        1 /* exclusive */, 1 /* auto_delete */, amqp_empty_table);
    if (amqp_topology_check_reply(amqp_get_rpc_reply(link->conn), "declaring a reply queue", err) <
        0) {
        amqp_link_fail(link, "cannot declare a reply queue");
        return -1;
    }
    if (!ok || ok->queue.len == 0 || ok->queue.len >= size) {
        vf_error_set(err, VF_EINVAL, "reply queue name does not fit in %zu bytes", size);
        return -1;
    }
    memcpy(name, ok->queue.bytes, ok->queue.len);
    name[ok->queue.len] = '\0';
    if (amqp_link_start_consumer(link, name, err) < 0) {
        amqp_link_fail(link, "cannot consume the reply queue");
        return -1;
    }
    return 0;
}

int amqp_link_bind(amqp_link *link, const char *queue, const char *exchange, const char *key,
                   vf_error *err)
{
    if (amqp_link_require_connected(link, err) < 0)
        return -1;
    amqp_queue_bind(link->conn, WORK_CHANNEL, amqp_cstring_bytes(queue),
                    amqp_cstring_bytes(exchange), amqp_cstring_bytes(key), amqp_empty_table);
    char what[160];
    snprintf(what, sizeof what, "binding queue %s to %s with \"%s\"", queue, exchange, key);
    if (amqp_topology_check_reply(amqp_get_rpc_reply(link->conn), what, err) < 0) {
        amqp_link_fail(link, "cannot bind a queue");
        return -1;
    }
    return 0;
}

int amqp_link_get(amqp_link *link, const char *queue, amqp_link_delivery *out, uint32_t *remaining,
                  vf_error *err)
{
    memset(out, 0, sizeof *out);
    if (amqp_link_require_connected(link, err) < 0)
        return -1;
    amqp_rpc_reply_t reply =
        amqp_basic_get(link->conn, WORK_CHANNEL, amqp_cstring_bytes(queue), 0 /* no_ack */);
    if (reply.reply_type == AMQP_RESPONSE_NORMAL && reply.reply.id == AMQP_BASIC_GET_EMPTY_METHOD)
        return 0;
    if (reply.reply_type != AMQP_RESPONSE_NORMAL || reply.reply.id != AMQP_BASIC_GET_OK_METHOD) {
        bool missing =
            reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
            reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD &&
            ((const amqp_channel_close_t *)reply.reply.decoded)->reply_code == AMQP_NOT_FOUND;
        char what[160];
        snprintf(what, sizeof what, "basic.get from %s", queue);
        if (missing)
            vf_error_set(err, VF_EINVAL, "queue %s does not exist", queue);
        else if (amqp_topology_check_reply(reply, what, err) == 0)
            vf_error_set(err, VF_EINTERNAL, "%s: unexpected reply", what);
        amqp_link_fail(link, "%s failed", what);
        return -1;
    }
    const amqp_basic_get_ok_t *m = reply.reply.decoded;
    amqp_link_delivery *d = &link->partial;
    amqp_link_delivery_close(d);
    d->delivery_tag = amqp_link_encode_tag(link, m->delivery_tag);
    d->redelivered = m->redelivered;
    d->exchange = amqp_link_dup_bytes(m->exchange);
    d->routing_key = amqp_link_dup_bytes(m->routing_key);
    if (remaining)
        *remaining = m->message_count;
    if (!d->exchange || !d->routing_key) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        amqp_link_fail(link, "out of memory");
        return -1;
    }
    link->content = CONTENT_DELIVERY;
    link->content_from_get = true;
    link->body_received = 0;
    link->got_ready = false;
    int64_t deadline = amqp_link_deadline_after(RPC_TIMEOUT_S * 1000);
    while (!link->got_ready) {
        int rc = amqp_link_pump(link, deadline, err);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            vf_error_set(err, VF_EUNAVAILABLE, "basic.get from %s: message body never came", queue);
            amqp_link_fail(link, "basic.get timed out");
            return -1;
        }
    }
    *out = link->got;
    memset(&link->got, 0, sizeof link->got);
    link->got_ready = false;
    return 1;
}
