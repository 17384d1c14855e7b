#include "amqp_link.h"
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

#include "clock.h"
#include "grow.h"
#include "log.h"
#include "secret_file.h"

/* ---- small helpers ---- */

char *amqp_link_dup_bytes(amqp_bytes_t bytes)
{
    char *s = malloc(bytes.len + 1);
    if (!s)
        return NULL;
    if (bytes.len)
        memcpy(s, bytes.bytes, bytes.len);
    s[bytes.len] = '\0';
    return s;
}

uint64_t amqp_link_encode_tag(const amqp_link *link, uint64_t seq)
{
    return ((uint64_t)link->generation << GENERATION_SHIFT) | (seq & SEQ_MASK);
}

/* The broker's tag for a caller's tag, or 0 when it belongs to another connection. */
static uint64_t decode_tag(const amqp_link *link, uint64_t tag)
{
    if (!link->connected || (tag >> GENERATION_SHIFT) != link->generation)
        return 0;
    return tag & SEQ_MASK;
}

int64_t amqp_link_now_ms(void)
{
    return clock_mono_ms();
}

void amqp_link_delivery_close(amqp_link_delivery *d)
{
    if (!d)
        return;
    free(d->exchange);
    free(d->routing_key);
    free(d->content_type);
    free(d->message_id);
    free(d->correlation_id);
    free(d->reply_to);
    free(d->user_id);
    free(d->error);
    free(d->original_key);
    free(d->death_reason);
    free(d->death_queue);
    free(d->death_key);
    free(d->body);
    memset(d, 0, sizeof *d);
}

void amqp_link_report(amqp_link *link, uint64_t seq, bool ok, const char *reason)
{
    uint64_t tag = amqp_link_encode_tag(link, seq);
    if (!ok)
        log_warn("amqp: publish %llu failed: %s", (unsigned long long)seq, reason);
    if (link->on_confirm)
        link->on_confirm(tag, ok, reason, link->confirm_user);
}

/* ---- failure and teardown ---- */

static void drop_state(amqp_link *link, const char *why)
{
    for (size_t i = 0; i < link->n_pending; i++)
        amqp_link_report(link, link->pending[i].seq, false, why);
    link->n_pending = 0;
    link->return_seen = false;
    amqp_link_delivery_close(&link->partial);
    amqp_link_delivery_close(&link->got);
    link->got_ready = false;
    link->content_from_get = false;
    link->content = CONTENT_NONE;
    while (link->ready_head) {
        ready_delivery *r = link->ready_head;
        link->ready_head = r->next;
        amqp_link_delivery_close(&r->delivery);
        free(r);
    }
    link->ready_tail = NULL;
}

/* The connection is unusable: report, forget, close the socket so the broker
 * requeues our unacked deliveries at once. */
void amqp_link_fail(amqp_link *link, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (link->connected)
        log_warn("amqp: connection to %s lost: %s", link->peer, why);
    link->connected = false;
    drop_state(link, "connection lost before the broker confirmed");
    if (link->conn) {
        amqp_destroy_connection(link->conn);
        link->conn = NULL;
    }
    link->probe_open = false;
}

int amqp_link_require_connected(const amqp_link *link, vf_error *err)
{
    if (link->connected)
        return 0;
    vf_error_set(err, VF_EUNAVAILABLE, "not connected to the broker");
    return -1;
}

/* ---- construction ---- */

static char *read_password(const char *path, vf_error *err)
{
    char buf[SECRET_FILE_MAX];
    vf_error inner;
    vf_error_init(&inner);
    if (secret_file_read("amqp.password_file", path, buf, sizeof buf, &inner) < 0) {
        vf_error_set(err, VF_ECONFIG, "amqp.password_file %s", inner.text);
        return NULL;
    }
    char *password = strdup(buf);
    explicit_bzero(buf, sizeof buf);
    if (!password)
        vf_error_set(err, VF_ENOMEM, "out of memory");
    return password;
}

amqp_link *amqp_link_new(const vf_config *config, const char *client_name, vf_error *err)
{
    if (!config || config->amqp.n_urls == 0) {
        vf_error_set(err, VF_ECONFIG, "amqp.urls: at least one URL is needed");
        return NULL;
    }
    amqp_link *link = calloc(1, sizeof *link);
    if (!link) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    link->config = config;
    snprintf(link->client_name, sizeof link->client_name, "%s",
             client_name ? client_name : "virtflow");
    snprintf(link->peer, sizeof link->peer, "(not connected)");
    if (config->amqp.password_file) {
        link->password = read_password(config->amqp.password_file, err);
        if (!link->password) {
            free(link);
            return NULL;
        }
    }
    return link;
}

void amqp_link_close(amqp_link *link)
{
    if (!link)
        return;
    if (link->conn && link->connected) {
        /* Polite close so the broker logs a clean shutdown; errors here only
         * mean the connection was already going away. */
        (void)amqp_channel_close(link->conn, WORK_CHANNEL, AMQP_REPLY_SUCCESS);
        (void)amqp_connection_close(link->conn, AMQP_REPLY_SUCCESS);
        log_info("amqp: closed connection to %s", link->peer);
    }
    link->connected = false;
    drop_state(link, "link closed before the broker confirmed");
    if (link->conn) {
        amqp_destroy_connection(link->conn);
        link->conn = NULL;
    }
    link->probe_open = false;
}

void amqp_link_free(amqp_link *link)
{
    if (!link)
        return;
    amqp_link_close(link);
    for (size_t i = 0; i < link->n_queues; i++)
        free(link->queues[i]);
    free(link->queues);
    free(link->pending);
    if (link->password) {
        explicit_bzero(link->password, strlen(link->password));
        free(link->password);
    }
    free(link);
}

void amqp_link_set_confirm_callback(amqp_link *link, amqp_link_confirm_fn fn, void *user)
{
    link->on_confirm = fn;
    link->confirm_user = user;
}

void amqp_link_confirm_record(uint64_t publish_tag, bool ok, const char *reason, void *user)
{
    (void)publish_tag;
    amqp_link_confirm *confirm = user;
    confirm->done = true;
    confirm->ok = ok;
    snprintf(confirm->reason, sizeof confirm->reason, "%s", reason ? reason : "");
}

void amqp_link_confirm_reset(amqp_link_confirm *confirm)
{
    confirm->done = confirm->ok = false;
    confirm->reason[0] = '\0';
}

bool amqp_link_is_connected(const amqp_link *link)
{
    return link && link->connected;
}

int amqp_link_ready(amqp_link *link, int64_t *used_us, vf_error *err)
{
    int64_t now_us = clock_mono_us();
    int heartbeat_s = link->config->amqp.heartbeat_s;
    if (link->connected && heartbeat_s > 0 && now_us - *used_us > (int64_t)heartbeat_s * 1000000) {
        log_debug("amqp: link idle for more than amqp.heartbeat_s; reconnecting");
        amqp_link_close(link);
    }
    if (link->connected)
        return 0;
    if (amqp_link_connect(link, err) < 0)
        return -1;
    *used_us = now_us;
    return 0;
}

void amqp_link_keepalive(amqp_link *link)
{
    if (!link || !link->connected || !link->conn)
        return;
    int heartbeat_ms = amqp_get_heartbeat(link->conn) * 1000;
    int64_t now = amqp_link_now_ms();
    if (heartbeat_ms <= 0 || now - link->keepalive_ms < heartbeat_ms / 2)
        return;
    amqp_frame_t frame = {.frame_type = AMQP_FRAME_HEARTBEAT, .channel = 0};
    int status = amqp_send_frame(link->conn, &frame);
    if (status != AMQP_STATUS_OK)
        log_debug("amqp: heartbeat to %s: %s (the next call meets it)", link->peer,
                  amqp_error_string2(status));
    link->keepalive_ms = now;
}

size_t amqp_link_unconfirmed(const amqp_link *link)
{
    return link->n_pending;
}

/* ---- connecting ---- */

static const char *vhost_of(const struct amqp_connection_info *info)
{
    /* "amqp://host/" parses to an empty vhost; docs/contracts.md's default URL means "/". */
    return (info->vhost && info->vhost[0]) ? info->vhost : "/";
}

int amqp_link_redact_url(const char *url, char *buf, size_t size)
{
    char *copy = strdup(url ? url : "");
    struct amqp_connection_info info;
    int rc = -1;
    if (copy && amqp_parse_url(copy, &info) == AMQP_STATUS_OK) {
        snprintf(buf, size, "%s://%s@%s:%d/%s", info.ssl ? "amqps" : "amqp", info.user, info.host,
                 info.port, vhost_of(&info));
        rc = 0;
    } else {
        snprintf(buf, size, "(unparsable URL)");
    }
    if (copy) {
        explicit_bzero(copy, strlen(copy));
        free(copy);
    }
    return rc;
}

static int status_ok(int status, const char *what, vf_error *err)
{
    if (status == AMQP_STATUS_OK)
        return 0;
    vf_error_set(err, VF_EUNAVAILABLE, "%s: %s", what, amqp_error_string2(status));
    return -1;
}

static int open_socket(amqp_link *link, const struct amqp_connection_info *info, vf_error *err)
{
    amqp_socket_t *socket =
        info->ssl ? amqp_ssl_socket_new(link->conn) : amqp_tcp_socket_new(link->conn);
    if (!socket) {
        vf_error_set(err, VF_ENOMEM, "cannot create a socket");
        return -1;
    }
    if (info->ssl) {
        bool verify = link->config->amqp.tls_verify;
        if (!verify)
            log_warn("amqp: TLS CERTIFICATE VERIFICATION IS DISABLED (amqp.tls_verify: false) for "
                     "%s: anyone on the path can read and forge broker traffic",
                     link->peer);
        amqp_ssl_socket_set_verify_peer(socket, verify);
        amqp_ssl_socket_set_verify_hostname(socket, verify);
        /* rabbitmq-c 0.11 loads no trust anchors by itself: without ca_file,
         * use OpenSSL's default bundle (honouring $SSL_CERT_FILE). */
        const char *ca = link->config->amqp.ca_file;
        if (!ca) {
            ca = getenv(X509_get_default_cert_file_env());
            if (!ca || !ca[0])
                ca = X509_get_default_cert_file();
        }
        if (verify && amqp_ssl_socket_set_cacert(socket, ca) != AMQP_STATUS_OK) {
            vf_error_set(err, VF_ECONFIG, "cannot load CA certificates from %s", ca);
            return -1;
        }
    }
    struct timeval tv = {.tv_sec = CONNECT_TIMEOUT_S};
    return status_ok(amqp_socket_open_noblock(socket, info->host, info->port, &tv), "connect", err);
}

int amqp_link_start_consumer(amqp_link *link, const char *queue, vf_error *err)
{
    /* Our own consumer tag: stable and readable in the management UI. */
    char tag[BROKER_NAME_MAX + 160];
    snprintf(tag, sizeof tag, "%s/%s", link->client_name, queue);
    amqp_basic_consume(link->conn, WORK_CHANNEL, amqp_cstring_bytes(queue), amqp_cstring_bytes(tag),
                       0 /* no_local */, 0 /* no_ack */, 0 /* exclusive */, amqp_empty_table);
    char what[160];
    snprintf(what, sizeof what, "consuming %s", queue);
    return amqp_topology_check_reply(amqp_get_rpc_reply(link->conn), what, err);
}

static int connect_one(amqp_link *link, const char *url, size_t index, vf_error *err)
{
    int rc = -1;
    char *copy = strdup(url);
    if (!copy) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    struct amqp_connection_info info;
    if (amqp_parse_url(copy, &info) != AMQP_STATUS_OK) {
        /* The URL itself is never printed: it may hold a password. */
        vf_error_set(err, VF_ECONFIG, "amqp.urls[%zu]: not an amqp:// or amqps:// URL", index);
        goto out;
    }
    snprintf(link->peer, sizeof link->peer, "%s://%s@%s:%d/%s", info.ssl ? "amqps" : "amqp",
             info.user, info.host, info.port, vhost_of(&info));
    snprintf(link->user, sizeof link->user, "%s", info.user);
    log_info("amqp: connecting to %s", link->peer);

    link->conn = amqp_new_connection();
    if (!link->conn) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        goto out;
    }
    if (open_socket(link, &info, err) < 0)
        goto out;
    struct timeval rpc_timeout = {.tv_sec = RPC_TIMEOUT_S};
    (void)amqp_set_handshake_timeout(link->conn, &rpc_timeout);
    (void)amqp_set_rpc_timeout(link->conn, &rpc_timeout);

    amqp_table_entry_t property = {.key = amqp_cstring_bytes("connection_name"),
                                   .value = {.kind = AMQP_FIELD_KIND_UTF8,
                                             .value.bytes = amqp_cstring_bytes(link->client_name)}};
    amqp_table_t properties = {.num_entries = 1, .entries = &property};
    const char *password = link->password ? link->password : info.password;
    int heartbeat = link->config->amqp.heartbeat_s > 0 ? link->config->amqp.heartbeat_s : 0;
    if (amqp_topology_check_reply(
            amqp_login_with_properties(link->conn, vhost_of(&info), 0, FRAME_MAX, heartbeat,
                                       &properties, AMQP_SASL_METHOD_PLAIN, info.user, password),
            "login", err) < 0)
        goto out;
    amqp_channel_open(link->conn, WORK_CHANNEL);
    if (amqp_topology_check_reply(amqp_get_rpc_reply(link->conn), "opening channel", err) < 0)
        goto out;
    amqp_confirm_select(link->conn, WORK_CHANNEL);
    if (amqp_topology_check_reply(amqp_get_rpc_reply(link->conn), "confirm.select", err) < 0)
        goto out;
    int prefetch = link->config->amqp.prefetch;
    if (prefetch < 1 || prefetch > 65535)
        prefetch = 200;
    amqp_basic_qos(link->conn, WORK_CHANNEL, 0, (uint16_t)prefetch, 0);
    if (amqp_topology_check_reply(amqp_get_rpc_reply(link->conn), "basic.qos", err) < 0)
        goto out;
    if (!link->read_only && amqp_topology_declare(link->conn, WORK_CHANNEL, link->config, err) < 0)
        goto out;

    /* From here on tags belong to this connection. */
    link->generation = (uint16_t)(link->generation + 1);
    if (link->generation == 0)
        link->generation = 1;
    link->next_seq = 1;
    link->connected = true;
    for (size_t i = 0; i < link->n_queues; i++) {
        if (amqp_link_start_consumer(link, link->queues[i], err) < 0) {
            link->connected = false;
            goto out;
        }
    }
    log_info("amqp: connected to %s as %s (prefetch %d, heartbeat %d s)", link->peer,
             link->client_name, prefetch, heartbeat);
    rc = 0;
out:
    if (rc < 0 && link->conn) {
        amqp_destroy_connection(link->conn);
        link->conn = NULL;
    }
    explicit_bzero(copy, strlen(url));
    free(copy);
    return rc;
}

uint16_t amqp_link_broker_close(const amqp_link *link, const char **text)
{
    if (text)
        *text = link->close_text;
    return link->close_code;
}

int amqp_link_connect(amqp_link *link, vf_error *err)
{
    amqp_link_close(link);
    link->close_code = 0;
    link->close_text[0] = '\0';
    const vf_config *config = link->config;
    vf_error last;
    vf_error_init(&last);
    char last_peer[sizeof link->peer] = "";
    for (size_t i = 0; i < config->amqp.n_urls; i++) {
        vf_error one;
        vf_error_init(&one);
        if (connect_one(link, config->amqp.urls[i], i, &one) == 0)
            return 0;
        log_warn("amqp: %s: %s", link->peer, one.text);
        last = one;
        snprintf(last_peer, sizeof last_peer, "%s", link->peer);
        snprintf(link->peer, sizeof link->peer, "(not connected)");
    }
    if (last.code == VF_ECONFIG) /* reached, but not usable as configured */
        vf_error_set(err, VF_ECONFIG, "%s: %s", last_peer[0] ? last_peer : "amqp.urls", last.text);
    else
        vf_error_set(err, VF_EUNAVAILABLE, "no broker reachable (%zu URL%s tried), last: %s",
                     config->amqp.n_urls, config->amqp.n_urls == 1 ? "" : "s", last.text);
    return -1;
}

void amqp_link_set_read_only(amqp_link *link)
{
    link->read_only = true;
}

/* ---- consuming ---- */

int amqp_link_consume(amqp_link *link, const char *queue, vf_error *err)
{
    if (amqp_link_require_connected(link, err) < 0)
        return -1;
    for (size_t i = 0; i < link->n_queues; i++) {
        if (strcmp(link->queues[i], queue) == 0)
            return 0;
    }
    if (grow_array((void **)&link->queues, &link->cap_queues, link->n_queues + 1,
                   sizeof *link->queues) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    char *name = strdup(queue);
    if (!name) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    if (amqp_link_start_consumer(link, queue, err) < 0) {
        free(name);
        amqp_link_fail(link, "cannot consume %s", queue);
        return -1;
    }
    link->queues[link->n_queues++] = name;
    return 0;
}

int amqp_link_cancel(amqp_link *link, vf_error *err)
{
    int rc = 0;
    for (size_t i = 0; i < link->n_queues; i++) {
        if (link->connected) {
            char tag[BROKER_NAME_MAX + 160];
            snprintf(tag, sizeof tag, "%s/%s", link->client_name, link->queues[i]);
            amqp_basic_cancel(link->conn, WORK_CHANNEL, amqp_cstring_bytes(tag));
            if (amqp_topology_check_reply(amqp_get_rpc_reply(link->conn), "basic.cancel", err) <
                0) {
                amqp_link_fail(link, "cancelling the consumer of %s failed", link->queues[i]);
                rc = -1;
            }
        }
        free(link->queues[i]);
    }
    link->n_queues = 0;
    return rc;
}

static int ack_or_reject(amqp_link *link, uint64_t delivery_tag, bool multiple, bool ack,
                         bool requeue, vf_error *err)
{
    if (amqp_link_require_connected(link, err) < 0)
        return -1;
    uint64_t tag = decode_tag(link, delivery_tag);
    if (tag == 0) {
        log_warn("amqp: %s of delivery %llu from an earlier connection ignored; the broker "
                 "redelivers it",
                 ack ? "ack" : "reject", (unsigned long long)(delivery_tag & SEQ_MASK));
        return 0;
    }
    int status = ack ? amqp_basic_ack(link->conn, WORK_CHANNEL, tag, multiple)
                     : amqp_basic_reject(link->conn, WORK_CHANNEL, tag, requeue);
    if (status != AMQP_STATUS_OK) {
        vf_error_set(err, VF_EUNAVAILABLE, "%s: %s", ack ? "basic.ack" : "basic.reject",
                     amqp_error_string2(status));
        amqp_link_fail(link, "%s: %s", ack ? "basic.ack" : "basic.reject",
                       amqp_error_string2(status));
        return -1;
    }
    return 0;
}

int amqp_link_ack(amqp_link *link, uint64_t delivery_tag, bool multiple, vf_error *err)
{
    return ack_or_reject(link, delivery_tag, multiple, true, false, err);
}

int amqp_link_reject(amqp_link *link, uint64_t delivery_tag, bool requeue, vf_error *err)
{
    return ack_or_reject(link, delivery_tag, false, false, requeue, err);
}
