#include "amqp_link.h"

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

#include "log.h"
#include "secret_file.h"

#define WORK_CHANNEL 1
#define PROBE_CHANNEL 2 /* passive declares: a 404 there closes only that channel */
#define FRAME_MAX 131072
#define CONNECT_TIMEOUT_S 10
#define RPC_TIMEOUT_S 30
#define GENERATION_SHIFT 48
#define SEQ_MASK ((UINT64_C(1) << GENERATION_SHIFT) - 1)

typedef struct pending_publish {
    uint64_t seq;  /* broker sequence number on the current channel */
    bool returned; /* a basic.return was matched to it */
} pending_publish;

typedef struct ready_delivery {
    amqp_link_delivery delivery;
    struct ready_delivery *next;
} ready_delivery;

typedef enum { CONTENT_NONE, CONTENT_DELIVERY, CONTENT_RETURN } content_kind;

struct amqp_link {
    const vf_config *config;
    char client_name[128];
    char *password; /* from amqp.password_file, or NULL */

    amqp_connection_state_t conn; /* NULL while disconnected */
    bool connected;
    bool probe_open;
    uint16_t generation; /* bumped at each successful connect; never 0 once connected */
    uint64_t next_seq;   /* sequence number the broker gives the next publish */
    char peer[256];      /* redacted URL of the current broker */
    char user[256];      /* login user of the current broker: every publish's user_id */

    pending_publish *pending; /* ascending seq */
    size_t n_pending, cap_pending;
    bool return_seen; /* a basic.return waits for its ack */
    char return_reason[256];
    amqp_link_confirm_fn on_confirm;
    void *confirm_user;

    char **queues; /* consumed queues, restarted at each connect */
    size_t n_queues;

    /* The content (header + body frames) being read after a deliver or return. */
    content_kind content;
    bool content_from_get; /* the content answers our basic.get, not a consumer */
    amqp_link_delivery partial;
    amqp_link_delivery got; /* the finished basic.get message, while got_ready */
    bool got_ready;
    uint64_t body_received; /* bytes */

    ready_delivery *ready_head, *ready_tail;
};

/* ---- small helpers ---- */

static char *dup_bytes(amqp_bytes_t bytes)
{
    char *s = malloc(bytes.len + 1);
    if (!s)
        return NULL;
    if (bytes.len)
        memcpy(s, bytes.bytes, bytes.len);
    s[bytes.len] = '\0';
    return s;
}

static uint64_t encode_tag(const amqp_link *link, uint64_t seq)
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

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

static void report(amqp_link *link, uint64_t seq, bool ok, const char *reason)
{
    uint64_t tag = encode_tag(link, seq);
    if (!ok)
        log_warn("amqp: publish %llu failed: %s", (unsigned long long)seq, reason);
    if (link->on_confirm)
        link->on_confirm(tag, ok, reason, link->confirm_user);
}

/* ---- failure and teardown ---- */

static void drop_state(amqp_link *link, const char *why)
{
    for (size_t i = 0; i < link->n_pending; i++)
        report(link, link->pending[i].seq, false, why);
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
static void link_fail(amqp_link *link, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void link_fail(amqp_link *link, const char *fmt, ...)
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

static int require_connected(const amqp_link *link, vf_error *err)
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

bool amqp_link_is_connected(const amqp_link *link)
{
    return link && link->connected;
}

size_t amqp_link_unconfirmed(const amqp_link *link)
{
    return link->n_pending;
}

/* ---- connecting ---- */

static const char *vhost_of(const struct amqp_connection_info *info)
{
    /* "amqp://host/" parses to an empty vhost; DESIGN's default URL means "/". */
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

static int start_consumer(amqp_link *link, const char *queue, vf_error *err)
{
    /* Our own consumer tag: stable and readable in the management UI. */
    char tag[AMQP_TOPOLOGY_NAME_MAX + 160];
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
    if (amqp_topology_declare(link->conn, WORK_CHANNEL, link->config, err) < 0)
        goto out;

    /* From here on tags belong to this connection. */
    link->generation = (uint16_t)(link->generation + 1);
    if (link->generation == 0)
        link->generation = 1;
    link->next_seq = 1;
    link->connected = true;
    for (size_t i = 0; i < link->n_queues; i++) {
        if (start_consumer(link, link->queues[i], err) < 0) {
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

int amqp_link_connect(amqp_link *link, vf_error *err)
{
    amqp_link_close(link);
    const vf_config *config = link->config;
    vf_error last;
    vf_error_init(&last);
    for (size_t i = 0; i < config->amqp.n_urls; i++) {
        vf_error one;
        vf_error_init(&one);
        if (connect_one(link, config->amqp.urls[i], i, &one) == 0)
            return 0;
        log_warn("amqp: %s: %s", link->peer, one.text);
        last = one;
        snprintf(link->peer, sizeof link->peer, "(not connected)");
    }
    vf_error_set(err, last.code == VF_ECONFIG ? VF_ECONFIG : VF_EUNAVAILABLE,
                 "no broker reachable (%zu URL%s tried), last: %s", config->amqp.n_urls,
                 config->amqp.n_urls == 1 ? "" : "s", last.text);
    return -1;
}

/* ---- confirms ---- */

static void settle(amqp_link *link, uint64_t seq, bool multiple, bool ack)
{
    /* RabbitMQ sends a mandatory publish's basic.return right before the ack
     * of that same publish, and since it confirms an unroutable message while
     * handling its publish, that ack's tag (the highest it covers, when
     * multiple) is the returned publish. */
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
            report(link, p.seq, false, link->return_reason);
        else
            report(link, p.seq, ack, ack ? "confirmed" : "nacked by the broker");
    }
    link->n_pending = kept;
}

int amqp_link_publish(amqp_link *link, const char *exchange, const char *routing_key,
                      const amqp_link_message *message, uint64_t *publish_tag_out, vf_error *err)
{
    if (require_connected(link, err) < 0)
        return -1;
    if (link->n_pending == link->cap_pending) {
        size_t cap = link->cap_pending ? link->cap_pending * 2 : 64;
        pending_publish *grown = realloc(link->pending, cap * sizeof *grown);
        if (!grown) {
            vf_error_set(err, VF_ENOMEM, "out of memory");
            return -1;
        }
        link->pending = grown;
        link->cap_pending = cap;
    }

    amqp_table_entry_t headers[3];
    int n = 0;
    if (message->attempt > 0) {
        headers[n].key = amqp_cstring_bytes(AMQP_TOPOLOGY_HEADER_ATTEMPT);
        headers[n].value.kind = AMQP_FIELD_KIND_I64;
        headers[n].value.value.i64 = message->attempt;
        n++;
    }
    if (message->error) {
        headers[n].key = amqp_cstring_bytes(AMQP_TOPOLOGY_HEADER_ERROR);
        headers[n].value.kind = AMQP_FIELD_KIND_UTF8;
        headers[n].value.value.bytes = amqp_cstring_bytes(message->error);
        n++;
    }
    if (message->original_key) {
        headers[n].key = amqp_cstring_bytes(AMQP_TOPOLOGY_HEADER_ROUTING_KEY);
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
        link_fail(link, "publish: %s", amqp_error_string2(status));
        return -1;
    }
    uint64_t seq = link->next_seq++;
    link->pending[link->n_pending++] = (pending_publish){.seq = seq};
    if (publish_tag_out)
        *publish_tag_out = encode_tag(link, seq);
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
    return amqp_link_publish(link, AMQP_TOPOLOGY_DLX, d->routing_key ? d->routing_key : "", &msg,
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
    return dup_bytes(v->value.bytes);
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
        !(d->content_type = dup_bytes(p->content_type)))
        return -1;
    if ((p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) && !(d->message_id = dup_bytes(p->message_id)))
        return -1;
    if ((p->_flags & AMQP_BASIC_CORRELATION_ID_FLAG) &&
        !(d->correlation_id = dup_bytes(p->correlation_id)))
        return -1;
    if ((p->_flags & AMQP_BASIC_REPLY_TO_FLAG) && !(d->reply_to = dup_bytes(p->reply_to)))
        return -1;
    if ((p->_flags & AMQP_BASIC_USER_ID_FLAG) && !(d->user_id = dup_bytes(p->user_id)))
        return -1;
    if ((p->_flags & AMQP_BASIC_TIMESTAMP_FLAG) && p->timestamp <= INT64_MAX)
        d->timestamp = (int64_t)p->timestamp;
    if (!(p->_flags & AMQP_BASIC_HEADERS_FLAG))
        return 0;
    for (int i = 0; i < p->headers.num_entries; i++) {
        const amqp_table_entry_t *e = &p->headers.entries[i];
        if (key_is(e->key, AMQP_TOPOLOGY_HEADER_ATTEMPT)) {
            bool ok;
            int64_t attempt = header_integer(&e->value, &ok);
            if (ok && attempt > 0)
                d->attempt = attempt;
        } else if (key_is(e->key, AMQP_TOPOLOGY_HEADER_ERROR) && !d->error) {
            d->error = header_text(&e->value);
        } else if (key_is(e->key, AMQP_TOPOLOGY_HEADER_ROUTING_KEY) && !d->original_key) {
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
        d->delivery_tag = encode_tag(link, m->delivery_tag);
        d->redelivered = m->redelivered;
        d->exchange = dup_bytes(m->exchange);
        d->routing_key = dup_bytes(m->routing_key);
        if (!d->exchange || !d->routing_key) {
            vf_error_set(err, VF_ENOMEM, "out of memory");
            link_fail(link, "out of memory");
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
        link->return_seen = true;
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
        link_fail(link, "the broker cancelled a consumer");
        return -1;
    case AMQP_CHANNEL_CLOSE_METHOD: {
        const amqp_channel_close_t *m = method->decoded;
        char why[200];
        snprintf(why, sizeof why, "broker closed channel %u: %u %.*s", channel, m->reply_code,
                 (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        amqp_channel_close_ok_t ok = {0};
        (void)amqp_send_method(link->conn, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
        vf_error_set(err, VF_EUNAVAILABLE, "%s", why);
        link_fail(link, "%s", why);
        return -1;
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
        const amqp_connection_close_t *m = method->decoded;
        char why[200];
        snprintf(why, sizeof why, "broker closed the connection: %u %.*s", m->reply_code,
                 (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        amqp_connection_close_ok_t ok = {0};
        (void)amqp_send_method(link->conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
        vf_error_set(err, VF_EUNAVAILABLE, "%s", why);
        link_fail(link, "%s", why);
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
            link_fail(link, "out of memory");
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
                link_fail(link, "out of memory");
                return -1;
            }
            d->body[0] = '\0';
        }
    } else {
        link->partial.body_size = size; /* a return: body read and dropped */
    }
    if (size == 0 && finish_content(link) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        link_fail(link, "out of memory");
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
        link_fail(link, "protocol error: body longer than announced");
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
            link_fail(link, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* Read and handle one frame, waiting until deadline (ms on the monotonic
 * clock, -1: forever). Returns 1 when a frame was handled, 0 on timeout, -1
 * when the link failed. */
static int pump(amqp_link *link, int64_t deadline_ms, vf_error *err)
{
    if (require_connected(link, err) < 0)
        return -1;
    /* Everything we keep has been copied out: pool memory can go. */
    amqp_maybe_release_buffers(link->conn);
    struct timeval tv, *tvp = NULL;
    if (deadline_ms >= 0) {
        int64_t left = deadline_ms - now_ms();
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
        link_fail(link, "%s", amqp_error_string2(status));
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

static int64_t deadline_after(int timeout_ms)
{
    return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

int amqp_link_wait_confirms(amqp_link *link, int timeout_ms, vf_error *err)
{
    int64_t deadline = deadline_after(timeout_ms);
    while (link->n_pending > 0) {
        int rc = pump(link, deadline, err);
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
    int64_t deadline = deadline_after(timeout_ms);
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
        int rc = pump(link, deadline, err);
        if (rc <= 0)
            return rc;
    }
}

/* ---- consuming ---- */

int amqp_link_consume(amqp_link *link, const char *queue, vf_error *err)
{
    if (require_connected(link, err) < 0)
        return -1;
    for (size_t i = 0; i < link->n_queues; i++) {
        if (strcmp(link->queues[i], queue) == 0)
            return 0;
    }
    char **grown = realloc(link->queues, (link->n_queues + 1) * sizeof *grown);
    if (!grown) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    link->queues = grown;
    char *name = strdup(queue);
    if (!name) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    if (start_consumer(link, queue, err) < 0) {
        free(name);
        link_fail(link, "cannot consume %s", queue);
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
            char tag[AMQP_TOPOLOGY_NAME_MAX + 160];
            snprintf(tag, sizeof tag, "%s/%s", link->client_name, link->queues[i]);
            amqp_basic_cancel(link->conn, WORK_CHANNEL, amqp_cstring_bytes(tag));
            if (amqp_topology_check_reply(amqp_get_rpc_reply(link->conn), "basic.cancel", err) <
                0) {
                link_fail(link, "cancelling the consumer of %s failed", link->queues[i]);
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
    if (require_connected(link, err) < 0)
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
        link_fail(link, "%s: %s", ack ? "basic.ack" : "basic.reject", amqp_error_string2(status));
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

/* ---- queue depth ---- */

int amqp_link_queue_depth(amqp_link *link, const char *queue, uint32_t *messages,
                          uint32_t *consumers, vf_error *err)
{
    if (require_connected(link, err) < 0)
        return -1;
    if (!link->probe_open) {
        amqp_channel_open(link->conn, PROBE_CHANNEL);
        if (amqp_topology_check_reply(amqp_get_rpc_reply(link->conn), "opening a channel", err) <
            0) {
            link_fail(link, "cannot open a side channel");
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
            link_fail(link, "cannot acknowledge a channel close");
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
        link_fail(link, "%s failed", what);
    if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
        reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD)
        link_fail(link, "broker closed the connection");
    return -1;
}

/* ---- reply queue and basic.get ---- */

int amqp_link_reply_queue(amqp_link *link, char *name, size_t size, vf_error *err)
{
    if (require_connected(link, err) < 0)
        return -1;
    amqp_queue_declare_ok_t *ok = amqp_queue_declare(
        link->conn, WORK_CHANNEL, amqp_empty_bytes, 0 /* passive */, 0 /* durable */,
        1 /* exclusive */, 1 /* auto_delete */, amqp_empty_table);
    if (amqp_topology_check_reply(amqp_get_rpc_reply(link->conn), "declaring a reply queue", err) <
        0) {
        link_fail(link, "cannot declare a reply queue");
        return -1;
    }
    if (!ok || ok->queue.len == 0 || ok->queue.len >= size) {
        vf_error_set(err, VF_EINVAL, "reply queue name does not fit in %zu bytes", size);
        return -1;
    }
    memcpy(name, ok->queue.bytes, ok->queue.len);
    name[ok->queue.len] = '\0';
    if (start_consumer(link, name, err) < 0) {
        link_fail(link, "cannot consume the reply queue");
        return -1;
    }
    return 0;
}

int amqp_link_bind(amqp_link *link, const char *queue, const char *exchange, const char *key,
                   vf_error *err)
{
    if (require_connected(link, err) < 0)
        return -1;
    amqp_queue_bind(link->conn, WORK_CHANNEL, amqp_cstring_bytes(queue),
                    amqp_cstring_bytes(exchange), amqp_cstring_bytes(key), amqp_empty_table);
    char what[160];
    snprintf(what, sizeof what, "binding queue %s to %s with \"%s\"", queue, exchange, key);
    if (amqp_topology_check_reply(amqp_get_rpc_reply(link->conn), what, err) < 0) {
        link_fail(link, "cannot bind a queue");
        return -1;
    }
    return 0;
}

int amqp_link_get(amqp_link *link, const char *queue, amqp_link_delivery *out, uint32_t *remaining,
                  vf_error *err)
{
    memset(out, 0, sizeof *out);
    if (require_connected(link, err) < 0)
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
        link_fail(link, "%s failed", what);
        return -1;
    }
    const amqp_basic_get_ok_t *m = reply.reply.decoded;
    amqp_link_delivery *d = &link->partial;
    amqp_link_delivery_close(d);
    d->delivery_tag = encode_tag(link, m->delivery_tag);
    d->redelivered = m->redelivered;
    d->exchange = dup_bytes(m->exchange);
    d->routing_key = dup_bytes(m->routing_key);
    if (remaining)
        *remaining = m->message_count;
    if (!d->exchange || !d->routing_key) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        link_fail(link, "out of memory");
        return -1;
    }
    link->content = CONTENT_DELIVERY;
    link->content_from_get = true;
    link->body_received = 0;
    link->got_ready = false;
    int64_t deadline = deadline_after(RPC_TIMEOUT_S * 1000);
    while (!link->got_ready) {
        int rc = pump(link, deadline, err);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            vf_error_set(err, VF_EUNAVAILABLE, "basic.get from %s: message body never came", queue);
            link_fail(link, "basic.get timed out");
            return -1;
        }
    }
    *out = link->got;
    memset(&link->got, 0, sizeof link->got);
    link->got_ready = false;
    return 1;
}
