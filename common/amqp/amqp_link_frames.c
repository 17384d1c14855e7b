/* amqp_link_frames: publishing with confirms, and the frame reader that
 * settles them and assembles deliveries (amqp_link_internal.h). */
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
#include "hash.h"
#include "log.h"
#include "secret_file.h"

/* ---- confirms ---- */

uint64_t amqp_link_route_hash(const void *exchange, size_t exchange_len, const void *key,
                              size_t key_len)
{
    uint64_t h = hash_fnv1a(HASH_FNV1A_BASIS, exchange, exchange_len);
    h = hash_fnv1a(h, "", 1); /* the NUL between them */
    return hash_fnv1a(h, key, key_len);
}

/* A basic.return names the returned message by its exchange and routing
 * key, not by its sequence number: it is the oldest unconfirmed publish to
 * that exchange and key not returned yet (returns come in publish order, and
 * routability depends on nothing else). Returns whether one matched. */
static bool match_return(amqp_link *link, const amqp_basic_return_t *m)
{
    uint64_t route = amqp_link_route_hash(m->exchange.bytes, m->exchange.len, m->routing_key.bytes,
                                          m->routing_key.len);
    for (size_t i = 0; i < link->n_pending; i++) {
        if (!link->pending[i].returned && link->pending[i].route == route) {
            link->pending[i].returned = true;
            return true;
        }
    }
    return false;
}

static void settle(amqp_link *link, uint64_t seq, bool multiple, bool ack)
{
    /* A return matched to no publish by its route (match_return): RabbitMQ
     * sends a mandatory publish's basic.return right before the ack of that
     * publish, so that ack's tag (the highest it covers, when multiple) is
     * the returned publish, unless the broker coalesced the ack with later
     * publishes (why the route is matched first: with several publishes in
     * flight an ack of multiple once named another publish). */
    bool returned_here = link->return_seen;
    link->return_seen = false;
    size_t kept = 0;
    for (size_t i = 0; i < link->n_pending; i++) {
        pending_publish p = link->pending[i];
        bool covered = multiple ? p.seq <= seq : p.seq == seq;
        if (!covered) {
            link->pending[kept++] = p;
            continue;
        }
        if (returned_here && p.seq == seq)
            p.returned = true;
        if (p.returned)
            amqp_link_report(link, p.seq, false, link->return_reason);
        else
            amqp_link_report(link, p.seq, ack, ack ? "confirmed" : "nacked by the broker");
    }
    link->n_pending = kept;
}

int amqp_link_publish(amqp_link *link, const char *exchange, const char *routing_key,
                      const amqp_link_message *message, uint64_t *publish_tag_out, vf_error *err)
{
    if (amqp_link_require_connected(link, err) < 0)
        return -1;
    if (grow_array((void **)&link->pending, &link->cap_pending, link->n_pending + 1,
                   sizeof *link->pending) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }

    amqp_table_entry_t headers[4];
    int n = 0;
    if (message->attempt > 0) {
        headers[n].key = amqp_cstring_bytes(BROKER_HEADER_ATTEMPT);
        headers[n].value.kind = AMQP_FIELD_KIND_I64;
        headers[n].value.value.i64 = message->attempt;
        n++;
    }
    if (message->recheck) {
        headers[n].key = amqp_cstring_bytes(BROKER_HEADER_RECHECK);
        headers[n].value.kind = AMQP_FIELD_KIND_I64;
        headers[n].value.value.i64 = 1;
        n++;
    }
    if (message->error) {
        headers[n].key = amqp_cstring_bytes(BROKER_HEADER_ERROR);
        headers[n].value.kind = AMQP_FIELD_KIND_UTF8;
        headers[n].value.value.bytes = amqp_cstring_bytes(message->error);
        n++;
    }
    if (message->original_key) {
        headers[n].key = amqp_cstring_bytes(BROKER_HEADER_ROUTING_KEY);
        headers[n].value.kind = AMQP_FIELD_KIND_UTF8;
        headers[n].value.value.bytes = amqp_cstring_bytes(message->original_key);
        n++;
    }

    amqp_basic_properties_t props;
    memset(&props, 0, sizeof props);
    props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
    props.content_type =
        amqp_cstring_bytes(message->content_type ? message->content_type : "application/json");
    props.delivery_mode = AMQP_DELIVERY_PERSISTENT;
    if (message->message_id) {
        props._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
        props.message_id = amqp_cstring_bytes(message->message_id);
    }
    if (message->correlation_id) {
        props._flags |= AMQP_BASIC_CORRELATION_ID_FLAG;
        props.correlation_id = amqp_cstring_bytes(message->correlation_id);
    }
    if (message->reply_to) {
        props._flags |= AMQP_BASIC_REPLY_TO_FLAG;
        props.reply_to = amqp_cstring_bytes(message->reply_to);
    }
    /* Always our own login: the broker refuses any other, and consumers such
     * as the relay decide by it whom to believe. */
    if (link->user[0]) {
        props._flags |= AMQP_BASIC_USER_ID_FLAG;
        props.user_id = amqp_cstring_bytes(link->user);
    }
    if (n > 0) {
        props._flags |= AMQP_BASIC_HEADERS_FLAG;
        props.headers.num_entries = n;
        props.headers.entries = headers;
    }
    amqp_bytes_t body = {.len = message->body_len, .bytes = (void *)(uintptr_t)message->body};
    int status = amqp_basic_publish(link->conn, WORK_CHANNEL, amqp_cstring_bytes(exchange),
                                    amqp_cstring_bytes(routing_key), 1 /* mandatory */,
                                    0 /* immediate */, &props, body);
    if (status != AMQP_STATUS_OK) {
        vf_error_set(err, VF_EUNAVAILABLE, "publishing to %s with \"%s\": %s", exchange,
                     routing_key, amqp_error_string2(status));
        amqp_link_fail(link, "publish: %s", amqp_error_string2(status));
        return -1;
    }
    uint64_t seq = link->next_seq++;
    link->pending[link->n_pending++] =
        (pending_publish){.seq = seq,
                          .route = amqp_link_route_hash(exchange, strlen(exchange), routing_key,
                                                        strlen(routing_key))};
    if (publish_tag_out)
        *publish_tag_out = amqp_link_encode_tag(link, seq);
    return 0;
}

int amqp_link_dead_letter(amqp_link *link, const amqp_link_delivery *d, const char *why,
                          uint64_t *publish_tag_out, vf_error *err)
{
    amqp_link_message msg = {.body = d->body,
                             .body_len = d->body ? d->body_len : 0,
                             .content_type = d->content_type,
                             .message_id = d->message_id,
                             .correlation_id = d->correlation_id,
                             .reply_to = d->reply_to,
                             .error = why,
                             .original_key = d->routing_key};
    return amqp_link_publish(link, BROKER_DLX, d->routing_key ? d->routing_key : "", &msg,
                             publish_tag_out, err);
}

const char *amqp_link_user(const amqp_link *link)
{
    return link->user;
}

/* ---- reading frames ---- */

static int64_t header_integer(const amqp_field_value_t *v, bool *ok)
{
    *ok = true;
    switch (v->kind) {
    case AMQP_FIELD_KIND_I8:
        return v->value.i8;
    case AMQP_FIELD_KIND_U8:
        return v->value.u8;
    case AMQP_FIELD_KIND_I16:
        return v->value.i16;
    case AMQP_FIELD_KIND_U16:
        return v->value.u16;
    case AMQP_FIELD_KIND_I32:
        return v->value.i32;
    case AMQP_FIELD_KIND_U32:
        return v->value.u32;
    case AMQP_FIELD_KIND_I64:
        return v->value.i64;
    case AMQP_FIELD_KIND_U64:
        return v->value.u64 > INT64_MAX ? INT64_MAX : (int64_t)v->value.u64;
    default:
        *ok = false;
        return 0;
    }
}

static char *header_text(const amqp_field_value_t *v)
{
    if (v->kind != AMQP_FIELD_KIND_UTF8 && v->kind != AMQP_FIELD_KIND_BYTES)
        return NULL;
    return amqp_link_dup_bytes(v->value.bytes);
}

static bool key_is(amqp_bytes_t key, const char *name)
{
    size_t n = strlen(name);
    return key.len == n && memcmp(key.bytes, name, n) == 0;
}

/* The newest x-death entry (RabbitMQ puts it first): why the broker
 * dead-lettered the message, from where, and with which routing key, so a
 * redrive can send it back where it came from. Returns -1 on allocation failure. */
static int copy_death(amqp_link_delivery *d, const amqp_field_value_t *v)
{
    if (v->kind != AMQP_FIELD_KIND_ARRAY || v->value.array.num_entries < 1 ||
        v->value.array.entries[0].kind != AMQP_FIELD_KIND_TABLE)
        return 0;
    const amqp_table_t *t = &v->value.array.entries[0].value.table;
    for (int i = 0; i < t->num_entries; i++) {
        const amqp_table_entry_t *e = &t->entries[i];
        char **slot = NULL;
        const amqp_field_value_t *text = &e->value;
        if (key_is(e->key, "reason"))
            slot = &d->death_reason;
        else if (key_is(e->key, "queue"))
            slot = &d->death_queue;
        else if (key_is(e->key, "routing-keys") && e->value.kind == AMQP_FIELD_KIND_ARRAY &&
                 e->value.value.array.num_entries > 0) {
            slot = &d->death_key;
            text = &e->value.value.array.entries[0];
        }
        if (!slot || *slot)
            continue;
        if (text->kind != AMQP_FIELD_KIND_UTF8 && text->kind != AMQP_FIELD_KIND_BYTES)
            continue;
        if (!(*slot = header_text(text)))
            return -1;
    }
    return 0;
}

/* Copy the properties we use out of pool memory. Returns -1 on allocation failure. */
static int copy_properties(amqp_link_delivery *d, const amqp_basic_properties_t *p)
{
    if ((p->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG) &&
        !(d->content_type = amqp_link_dup_bytes(p->content_type)))
        return -1;
    if ((p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) &&
        !(d->message_id = amqp_link_dup_bytes(p->message_id)))
        return -1;
    if ((p->_flags & AMQP_BASIC_CORRELATION_ID_FLAG) &&
        !(d->correlation_id = amqp_link_dup_bytes(p->correlation_id)))
        return -1;
    if ((p->_flags & AMQP_BASIC_REPLY_TO_FLAG) && !(d->reply_to = amqp_link_dup_bytes(p->reply_to)))
        return -1;
    if ((p->_flags & AMQP_BASIC_USER_ID_FLAG) && !(d->user_id = amqp_link_dup_bytes(p->user_id)))
        return -1;
    if ((p->_flags & AMQP_BASIC_TIMESTAMP_FLAG) && p->timestamp <= INT64_MAX)
        d->timestamp = (int64_t)p->timestamp;
    if (!(p->_flags & AMQP_BASIC_HEADERS_FLAG))
        return 0;
    for (int i = 0; i < p->headers.num_entries; i++) {
        const amqp_table_entry_t *e = &p->headers.entries[i];
        if (key_is(e->key, BROKER_HEADER_ATTEMPT)) {
            bool ok;
            int64_t attempt = header_integer(&e->value, &ok);
            if (ok && attempt > 0)
                d->attempt = attempt;
        } else if (key_is(e->key, BROKER_HEADER_RECHECK)) {
            bool ok;
            d->recheck = header_integer(&e->value, &ok) == 1 && ok;
        } else if (key_is(e->key, BROKER_HEADER_ERROR) && !d->error) {
            d->error = header_text(&e->value);
        } else if (key_is(e->key, BROKER_HEADER_ROUTING_KEY) && !d->original_key) {
            d->original_key = header_text(&e->value);
        } else if (key_is(e->key, "x-death") && !d->death_reason && copy_death(d, &e->value) < 0) {
            return -1;
        }
    }
    return 0;
}

static int finish_content(amqp_link *link)
{
    if (link->content == CONTENT_DELIVERY && link->content_from_get) {
        amqp_link_delivery_close(&link->got);
        link->got = link->partial;
        memset(&link->partial, 0, sizeof link->partial);
        link->got_ready = true;
        link->content_from_get = false;
    } else if (link->content == CONTENT_DELIVERY) {
        ready_delivery *r = calloc(1, sizeof *r);
        if (!r)
            return -1;
        r->delivery = link->partial;
        memset(&link->partial, 0, sizeof link->partial);
        if (link->ready_tail)
            link->ready_tail->next = r;
        else
            link->ready_head = r;
        link->ready_tail = r;
    }
    link->content = CONTENT_NONE;
    return 0;
}

static int handle_method(amqp_link *link, const amqp_method_t *method, amqp_channel_t channel,
                         vf_error *err)
{
    switch (method->id) {
    case AMQP_BASIC_DELIVER_METHOD: {
        const amqp_basic_deliver_t *m = method->decoded;
        amqp_link_delivery *d = &link->partial;
        amqp_link_delivery_close(d);
        d->delivery_tag = amqp_link_encode_tag(link, m->delivery_tag);
        d->redelivered = m->redelivered;
        d->exchange = amqp_link_dup_bytes(m->exchange);
        d->routing_key = amqp_link_dup_bytes(m->routing_key);
        if (!d->exchange || !d->routing_key) {
            vf_error_set(err, VF_ENOMEM, "out of memory");
            amqp_link_fail(link, "out of memory");
            return -1;
        }
        link->content = CONTENT_DELIVERY;
        link->content_from_get = false;
        link->body_received = 0;
        return 0;
    }
    case AMQP_BASIC_RETURN_METHOD: {
        const amqp_basic_return_t *m = method->decoded;
        snprintf(link->return_reason, sizeof link->return_reason,
                 "returned by the broker: %u %.*s (exchange \"%.*s\", key \"%.*s\")", m->reply_code,
                 (int)m->reply_text.len, (const char *)m->reply_text.bytes, (int)m->exchange.len,
                 (const char *)m->exchange.bytes, (int)m->routing_key.len,
                 (const char *)m->routing_key.bytes);
        link->return_seen = !match_return(link, m);
        link->content = CONTENT_RETURN;
        link->body_received = 0;
        return 0;
    }
    case AMQP_BASIC_ACK_METHOD: {
        const amqp_basic_ack_t *m = method->decoded;
        settle(link, m->delivery_tag, m->multiple, true);
        return 0;
    }
    case AMQP_BASIC_NACK_METHOD: {
        const amqp_basic_nack_t *m = method->decoded;
        settle(link, m->delivery_tag, m->multiple, false);
        return 0;
    }
    case AMQP_BASIC_CANCEL_METHOD:
        /* The broker cancelled a consumer (queue deleted, node down): a fresh
         * connect redeclares the queue and consumes again. */
        vf_error_set(err, VF_EUNAVAILABLE, "the broker cancelled a consumer");
        amqp_link_fail(link, "the broker cancelled a consumer");
        return -1;
    case AMQP_CHANNEL_CLOSE_METHOD: {
        const amqp_channel_close_t *m = method->decoded;
        char why[200];
        snprintf(why, sizeof why, "broker closed channel %u: %u %.*s", channel, m->reply_code,
                 (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        link->close_code = m->reply_code;
        snprintf(link->close_text, sizeof link->close_text, "%.*s", (int)m->reply_text.len,
                 (const char *)m->reply_text.bytes);
        amqp_channel_close_ok_t ok = {0};
        (void)amqp_send_method(link->conn, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
        vf_error_set(err, VF_EUNAVAILABLE, "%s", why);
        amqp_link_fail(link, "%s", why);
        return -1;
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
        const amqp_connection_close_t *m = method->decoded;
        char why[200];
        snprintf(why, sizeof why, "broker closed the connection: %u %.*s", m->reply_code,
                 (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        link->close_code = m->reply_code;
        snprintf(link->close_text, sizeof link->close_text, "%.*s", (int)m->reply_text.len,
                 (const char *)m->reply_text.bytes);
        amqp_connection_close_ok_t ok = {0};
        (void)amqp_send_method(link->conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
        vf_error_set(err, VF_EUNAVAILABLE, "%s", why);
        amqp_link_fail(link, "%s", why);
        return -1;
    }
    default:
        /* cancel-ok and other replies queued behind an RPC: nothing to do. */
        log_debug("amqp: ignoring method 0x%08x on channel %u", (unsigned)method->id, channel);
        return 0;
    }
}

static int handle_header(amqp_link *link, const amqp_frame_t *frame, vf_error *err)
{
    if (link->content == CONTENT_NONE)
        return 0;
    uint64_t size = frame->payload.properties.body_size;
    if (link->content == CONTENT_DELIVERY) {
        amqp_link_delivery *d = &link->partial;
        d->body_size = size;
        int64_t max = link->config->amqp.max_message_bytes;
        if (copy_properties(d, frame->payload.properties.decoded) < 0) {
            vf_error_set(err, VF_ENOMEM, "out of memory");
            amqp_link_fail(link, "out of memory");
            return -1;
        }
        if (max > 0 && size > (uint64_t)max) {
            /* Read and discard the body frames; the caller rejects it. */
            d->too_large = true;
            log_warn("amqp: delivery of %llu bytes on \"%s\" exceeds amqp.max_message_bytes %lld",
                     (unsigned long long)size, d->routing_key, (long long)max);
        } else {
            d->body = malloc((size_t)size + 1);
            if (!d->body) {
                vf_error_set(err, VF_ENOMEM, "out of memory for a %llu-byte body",
                             (unsigned long long)size);
                amqp_link_fail(link, "out of memory");
                return -1;
            }
            d->body[0] = '\0';
        }
    } else {
        link->partial.body_size = size; /* a return: body read and dropped */
    }
    if (size == 0 && finish_content(link) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        amqp_link_fail(link, "out of memory");
        return -1;
    }
    return 0;
}

static int handle_body(amqp_link *link, const amqp_frame_t *frame, vf_error *err)
{
    if (link->content == CONTENT_NONE)
        return 0;
    amqp_link_delivery *d = &link->partial;
    amqp_bytes_t fragment = frame->payload.body_fragment;
    if (link->body_received + fragment.len > d->body_size) {
        vf_error_set(err, VF_EUNAVAILABLE, "broker sent more body than announced");
        amqp_link_fail(link, "protocol error: body longer than announced");
        return -1;
    }
    if (link->content == CONTENT_DELIVERY && d->body) {
        memcpy(d->body + link->body_received, fragment.bytes, fragment.len);
        d->body[link->body_received + fragment.len] = '\0';
        d->body_len = (size_t)(link->body_received + fragment.len);
    }
    link->body_received += fragment.len;
    if (link->body_received == d->body_size) {
        if (link->content == CONTENT_RETURN)
            amqp_link_delivery_close(d);
        if (finish_content(link) < 0) {
            vf_error_set(err, VF_ENOMEM, "out of memory");
            amqp_link_fail(link, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* Read and handle one frame, waiting until deadline (ms on the monotonic
 * clock, -1: forever). Returns 1 when a frame was handled, 0 on timeout, -1
 * when the link failed. */
int amqp_link_pump(amqp_link *link, int64_t deadline_ms, vf_error *err)
{
    if (amqp_link_require_connected(link, err) < 0)
        return -1;
    /* Everything we keep has been copied out: pool memory can go. */
    amqp_maybe_release_buffers(link->conn);
    struct timeval tv, *tvp = NULL;
    if (deadline_ms >= 0) {
        int64_t left = deadline_ms - amqp_link_now_ms();
        if (left < 0)
            left = 0;
        tv.tv_sec = left / 1000;
        tv.tv_usec = (left % 1000) * 1000;
        tvp = &tv;
    }
    amqp_frame_t frame;
    int status = amqp_simple_wait_frame_noblock(link->conn, &frame, tvp);
    if (status == AMQP_STATUS_TIMEOUT)
        return 0;
    if (status != AMQP_STATUS_OK) {
        vf_error_set(err, VF_EUNAVAILABLE, "reading from the broker: %s",
                     amqp_error_string2(status));
        amqp_link_fail(link, "%s", amqp_error_string2(status));
        return -1;
    }
    int rc = 0;
    switch (frame.frame_type) {
    case AMQP_FRAME_METHOD:
        rc = handle_method(link, &frame.payload.method, frame.channel, err);
        break;
    case AMQP_FRAME_HEADER:
        if (frame.channel == WORK_CHANNEL)
            rc = handle_header(link, &frame, err);
        break;
    case AMQP_FRAME_BODY:
        if (frame.channel == WORK_CHANNEL)
            rc = handle_body(link, &frame, err);
        break;
    default:
        break;
    }
    return rc < 0 ? -1 : 1;
}

int64_t amqp_link_deadline_after(int timeout_ms)
{
    return timeout_ms < 0 ? -1 : amqp_link_now_ms() + timeout_ms;
}

int amqp_link_wait_confirms(amqp_link *link, int timeout_ms, vf_error *err)
{
    int64_t deadline = amqp_link_deadline_after(timeout_ms);
    while (link->n_pending > 0) {
        int rc = amqp_link_pump(link, deadline, err);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            vf_error_set(err, VF_EUNAVAILABLE, "%zu publish%s still unconfirmed after %d ms",
                         link->n_pending, link->n_pending == 1 ? "" : "es", timeout_ms);
            return -1;
        }
    }
    return 0;
}

int amqp_link_next(amqp_link *link, amqp_link_delivery *out, int timeout_ms, vf_error *err)
{
    memset(out, 0, sizeof *out);
    int64_t deadline = amqp_link_deadline_after(timeout_ms);
    for (;;) {
        if (link->ready_head) {
            ready_delivery *r = link->ready_head;
            link->ready_head = r->next;
            if (!link->ready_head)
                link->ready_tail = NULL;
            *out = r->delivery;
            free(r);
            return 1;
        }
        int rc = amqp_link_pump(link, deadline, err);
        if (rc <= 0)
            return rc;
    }
}
