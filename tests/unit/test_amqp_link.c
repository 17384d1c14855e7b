/* amqp_link and amqp_topology against a real RabbitMQ broker.
 *
 * VF_AMQP_URL names the broker (skipped, exit 77, when unset). When
 * VF_RABBITMQCTL holds a rabbitmqctl command prefix, the run gets its own
 * vhost (deleted at the end) and the forced-reconnect case runs; otherwise the
 * URL's vhost is used and the virtflow.* names are deleted first. */
#include "amqp_link.h"
#include "amqp_link_admin.h"
#include "broker_names.h"
#include "clock.h"
#include "testlib.h"

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 10000 /* generous bound for anything the broker does at once */

static char test_url[512];
static char vhost[64];
static const char *rabbitmqctl;
static char user[64] = "guest", password[64] = "guest", host[128] = "127.0.0.1";
static int port = 5672;

/* ---- fixture helpers ---- */

typedef struct outcome {
    uint64_t tag;
    bool ok;
    char reason[256];
} outcome;

typedef struct recorder {
    outcome items[256];
    size_t n;
} recorder;

static void record(uint64_t tag, bool ok, const char *reason, void *user_data)
{
    recorder *r = user_data;
    if (r->n < sizeof r->items / sizeof r->items[0]) {
        r->items[r->n].tag = tag;
        r->items[r->n].ok = ok;
        snprintf(r->items[r->n].reason, sizeof r->items[r->n].reason, "%s", reason);
        r->n++;
    }
}

static const outcome *find_outcome(const recorder *r, uint64_t tag)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->items[i].tag == tag)
            return &r->items[i];
    }
    return NULL;
}

static int delays[] = {1, 5};

static vf_config *make_config(const char *const *urls, size_t n_urls)
{
    vf_config *c = calloc(1, sizeof *c);
    c->amqp.urls = calloc(n_urls, sizeof *c->amqp.urls);
    for (size_t i = 0; i < n_urls; i++)
        c->amqp.urls[i] = strdup(urls[i]);
    c->amqp.n_urls = n_urls;
    c->amqp.queue_type = CONFIG_QUEUE_CLASSIC;
    c->amqp.prefetch = 50;
    c->amqp.heartbeat_s = 10;
    c->amqp.max_message_bytes = 1048576;
    c->amqp.tls_verify = true;
    c->retry.delays_s = delays;
    c->retry.n_delays = sizeof delays / sizeof delays[0];
    return c;
}

static vf_config *default_config(void)
{
    const char *urls[] = {test_url};
    return make_config(urls, 1);
}

static void free_config(vf_config *c)
{
    for (size_t i = 0; i < c->amqp.n_urls; i++)
        free(c->amqp.urls[i]);
    free(c->amqp.urls);
    free(c->amqp.password_file);
    free(c);
}

static amqp_link *connected_link(const vf_config *c, recorder *r)
{
    vf_error err;
    vf_error_init(&err);
    amqp_link *link = amqp_link_new(c, "test_amqp_link", &err);
    CHECKF(link != NULL, "%s", err.text);
    if (!link)
        return NULL;
    if (r)
        amqp_link_set_confirm_callback(link, record, r);
    int rc = amqp_link_connect(link, &err);
    CHECKF(rc == 0, "connect: %s", err.text);
    if (rc < 0) {
        amqp_link_free(link);
        return NULL;
    }
    return link;
}

static int run_ctl(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s >/dev/null 2>&1", rabbitmqctl, args);
    return system(cmd);
}

/* Delete every virtflow name in the test vhost with a plain rabbitmq-c connection. */
static void delete_topology(void)
{
    amqp_connection_state_t conn = amqp_new_connection();
    amqp_socket_t *socket = amqp_tcp_socket_new(conn);
    if (amqp_socket_open(socket, host, port) != AMQP_STATUS_OK ||
        amqp_login(conn, vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, user, password).reply_type !=
            AMQP_RESPONSE_NORMAL) {
        fprintf(stderr, "cannot connect to clean up the broker\n");
        amqp_destroy_connection(conn);
        return;
    }
    const char *queues[] = {BROKER_SCHEDULE_QUEUE, BROKER_PRIORITY_QUEUE, BROKER_SPARE_QUEUE,
                            BROKER_RELAY_QUEUE,    BROKER_DEAD_QUEUE,     "virtflow.retry.1s",
                            "virtflow.retry.5s"};
    const char *exchanges[] = {BROKER_EXCHANGE, BROKER_DLX, "virtflow.retry.1s",
                               "virtflow.retry.5s"};
    amqp_channel_open(conn, 1);
    for (size_t i = 0; i < sizeof queues / sizeof queues[0]; i++)
        amqp_queue_delete(conn, 1, amqp_cstring_bytes(queues[i]), 0, 0);
    for (size_t i = 0; i < sizeof exchanges / sizeof exchanges[0]; i++)
        amqp_exchange_delete(conn, 1, amqp_cstring_bytes(exchanges[i]), 0);
    amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(conn);
}

static int publish(amqp_link *link, const char *exchange, const char *key, const char *id,
                   int64_t attempt, uint64_t *tag)
{
    vf_error err;
    vf_error_init(&err);
    char body[128];
    snprintf(body, sizeof body, "{\"task_id\":\"%s\"}", id);
    amqp_link_message m = {
        .body = body, .body_len = strlen(body), .message_id = id, .attempt = attempt};
    int rc = amqp_link_publish(link, exchange, key, &m, tag, &err);
    CHECKF(rc == 0, "publish %s: %s", id, err.text);
    return rc;
}

static int wait_confirms(amqp_link *link)
{
    vf_error err;
    vf_error_init(&err);
    int rc = amqp_link_wait_confirms(link, WAIT_MS, &err);
    CHECKF(rc == 0, "wait_confirms: %s", err.text);
    return rc;
}

/* Read deliveries until the one with message_id `id` (acking the others).
 * Returns 1 with *out filled (not acked), 0 when it did not come. */
static int next_with_id(amqp_link *link, const char *id, amqp_link_delivery *out, int timeout_ms)
{
    vf_error err;
    vf_error_init(&err);
    int64_t start_ms = clock_mono_ms();
    for (;;) {
        int64_t spent = clock_mono_ms() - start_ms;
        if (spent >= timeout_ms)
            return 0;
        int rc = amqp_link_next(link, out, (int)(timeout_ms - spent), &err);
        if (rc <= 0) {
            CHECKF(rc == 0, "next: %s", err.text);
            return 0;
        }
        if (out->message_id && strcmp(out->message_id, id) == 0)
            return 1;
        CHECK(amqp_link_ack(link, out->delivery_tag, false, NULL) == 0);
        amqp_link_delivery_close(out);
    }
}

/* ---- cases ---- */

static void test_redact_url(void)
{
    char buf[256];
    const char *text = buf;
    CHECK(amqp_link_redact_url("amqp://alice:s3cret@broker.example:5671/prod", buf, sizeof buf) ==
          0);
    CHECK_STR(text, "amqp://alice@broker.example:5671/prod");
    CHECK(amqp_link_redact_url("amqps://bob:pw@h/", buf, sizeof buf) == 0);
    CHECK_STR(text, "amqps://bob@h:5671//");
    CHECK(amqp_link_redact_url("http://nope", buf, sizeof buf) < 0);
}

static void test_retry_names(void)
{
    char buf[BROKER_NAME_MAX];
    const char *text = buf;
    CHECK(broker_names_retry(30, buf, sizeof buf) == 0);
    CHECK_STR(text, "virtflow.retry.30s");
    CHECK(broker_names_retry(0, buf, sizeof buf) < 0);
    CHECK(broker_names_retry(5, buf, 8) < 0);
}

static void test_topology_twice(void)
{
    vf_config *c = default_config();
    amqp_link *a = connected_link(c, NULL);
    amqp_link *b = connected_link(c, NULL);
    vf_error err;
    vf_error_init(&err);
    if (a) {
        CHECKF(amqp_link_connect(a, &err) == 0, "reconnect: %s", err.text);
        uint32_t messages = 99, consumers = 99;
        CHECK(amqp_link_queue_depth(a, BROKER_DEAD_QUEUE, &messages, &consumers, &err) == 0);
        CHECK(consumers == 0);
        vf_error_init(&err);
        CHECK(amqp_link_queue_depth(a, "virtflow.no.such.queue", &messages, &consumers, &err) < 0);
        CHECK(err.code == VF_EINVAL);
        /* The side channel's 404 left the link usable. */
        CHECK(amqp_link_is_connected(a));
        CHECK(amqp_link_queue_depth(a, BROKER_RELAY_QUEUE, &messages, &consumers, NULL) == 0);
    }
    amqp_link_free(a);
    amqp_link_free(b);
    free_config(c);
}

static void test_confirm_and_return(void)
{
    vf_config *c = default_config();
    recorder r = {0};
    amqp_link *link = connected_link(c, &r);
    if (!link)
        goto out;
    uint64_t t1 = 0, t2 = 0, t3 = 0;
    publish(link, BROKER_EXCHANGE, "event.test.one", "evt-1", 0, &t1);
    publish(link, BROKER_EXCHANGE, "no.such.binding", "lost-1", 0, &t2);
    publish(link, BROKER_EXCHANGE, "event.test.two", "evt-2", 0, &t3);
    CHECK(amqp_link_unconfirmed(link) == 3);
    CHECK(t1 != t2 && t2 != t3);
    wait_confirms(link);
    CHECK(amqp_link_unconfirmed(link) == 0);
    CHECK(r.n == 3);
    const outcome *o1 = find_outcome(&r, t1), *o2 = find_outcome(&r, t2),
                  *o3 = find_outcome(&r, t3);
    CHECK(o1 && o1->ok);
    CHECK(o2 && !o2->ok);
    if (o2)
        CHECK_CONTAINS(o2->reason, "NO_ROUTE");
    CHECK(o3 && o3->ok);

    /* A burst with unroutable publishes among routable ones: the broker may
     * confirm several publishes with one ack (multiple), so each return is
     * matched to its publish by exchange and routing key, not by the ack
     * that follows it. Exactly the unroutable ones are reported returned. */
    enum { BURST = 120 };
    uint64_t tags[BURST];
    bool lost[BURST];
    size_t before = r.n;
    for (int i = 0; i < BURST; i++) {
        char key[48], id[32];
        lost[i] = i % 13 == 5;
        snprintf(key, sizeof key, lost[i] ? "no.such.binding.%d" : "event.test.burst", i);
        snprintf(id, sizeof id, "burst-%d", i);
        publish(link, BROKER_EXCHANGE, key, id, 0, &tags[i]);
    }
    wait_confirms(link);
    CHECK(r.n == before + BURST);
    int wrong = 0;
    for (int i = 0; i < BURST; i++) {
        const outcome *o = find_outcome(&r, tags[i]);
        if (!o || o->ok == lost[i])
            wrong++;
    }
    CHECKF(wrong == 0, "%d of %d publishes in a burst reported wrongly", wrong, (int)BURST);

    /* A publish to an exchange that does not exist closes the channel: the
     * link reports it and reconnects cleanly. */
    vf_error err;
    vf_error_init(&err);
    uint64_t t4 = 0;
    publish(link, "virtflow.no.such.exchange", "x", "lost-2", 0, &t4);
    CHECK(amqp_link_wait_confirms(link, WAIT_MS, &err) < 0);
    CHECK_CONTAINS(err.text, "404");
    CHECK(!amqp_link_is_connected(link));
    const outcome *o4 = find_outcome(&r, t4);
    CHECK(o4 && !o4->ok);
    vf_error_init(&err);
    CHECK(amqp_link_publish(link, BROKER_EXCHANGE, "event.x",
                            &(amqp_link_message){.body = "{}", .body_len = 2}, NULL, &err) < 0);
    CHECK(err.code == VF_EUNAVAILABLE);
    vf_error_init(&err);
    CHECKF(amqp_link_connect(link, &err) == 0, "%s", err.text);
    publish(link, BROKER_EXCHANGE, "event.test.three", "evt-3", 0, &t4);
    wait_confirms(link);
    o4 = find_outcome(&r, t4);
    CHECK(o4 && o4->ok);

    /* Drain the relay queue so later cases start clean. */
    CHECK(amqp_link_consume(link, BROKER_RELAY_QUEUE, NULL) == 0);
    amqp_link_delivery d;
    CHECK(next_with_id(link, "evt-3", &d, WAIT_MS) == 1);
    CHECK(amqp_link_ack(link, d.delivery_tag, false, NULL) == 0);
    amqp_link_delivery_close(&d);
out:
    amqp_link_free(link);
    free_config(c);
}

static void test_consume_ack_and_properties(void)
{
    vf_config *c = default_config();
    recorder r = {0};
    amqp_link *link = connected_link(c, &r);
    if (!link)
        goto out;
    vf_error err;
    vf_error_init(&err);
    amqp_link_message m = {.body = "{\"requested_cpu\":4}",
                           .body_len = 19,
                           .message_id = "task-props",
                           .correlation_id = "corr-7",
                           .reply_to = "client.replies",
                           .attempt = 3,
                           .error = "boom",
                           .original_key = "task.schedule"};
    CHECK(amqp_link_publish(link, BROKER_EXCHANGE, BROKER_KEY_SCHEDULE, &m, NULL, &err) == 0);
    wait_confirms(link);
    CHECK(r.n == 1 && r.items[0].ok);
    CHECKF(amqp_link_consume(link, BROKER_SCHEDULE_QUEUE, &err) == 0, "%s", err.text);
    amqp_link_delivery d;
    if (next_with_id(link, "task-props", &d, WAIT_MS) == 1) {
        CHECK_STR((char *)d.body, "{\"requested_cpu\":4}");
        CHECK(d.body_len == 19);
        CHECK_STR(d.routing_key, "task.schedule");
        CHECK_STR(d.exchange, "virtflow");
        CHECK_STR(d.content_type, "application/json");
        CHECK_STR(d.correlation_id, "corr-7");
        CHECK_STR(d.reply_to, "client.replies");
        CHECK(d.attempt == 3);
        CHECK_STR(d.error, "boom");
        CHECK_STR(d.original_key, "task.schedule");
        /* Every publish says who published it: the login user, which the
         * broker checked against the connection. */
        CHECK(amqp_link_user(link)[0] != '\0');
        CHECK_STR(d.user_id, amqp_link_user(link));
        CHECK(!d.redelivered && !d.too_large);
        CHECK(amqp_link_ack(link, d.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&d);
    } else {
        CHECK(!"published message was not delivered");
    }
    /* Acked means gone: nothing comes back within a second. */
    CHECK(amqp_link_next(link, &d, 1000, &err) == 0);
    uint32_t messages = 99, consumers = 0;
    CHECK(amqp_link_queue_depth(link, BROKER_SCHEDULE_QUEUE, &messages, &consumers, &err) == 0);
    CHECK(messages == 0 && consumers == 1);

    /* Graceful stop: after cancel no new delivery arrives. */
    CHECK(amqp_link_cancel(link, &err) == 0);
    publish(link, BROKER_EXCHANGE, BROKER_KEY_SCHEDULE, "after-cancel", 0, NULL);
    wait_confirms(link);
    CHECK(amqp_link_next(link, &d, 1000, &err) == 0);
    CHECK(amqp_link_queue_depth(link, BROKER_SCHEDULE_QUEUE, &messages, &consumers, &err) == 0);
    CHECK(messages == 1 && consumers == 0);
    CHECK(amqp_link_consume(link, BROKER_SCHEDULE_QUEUE, &err) == 0);
    if (next_with_id(link, "after-cancel", &d, WAIT_MS) == 1) {
        CHECK(amqp_link_ack(link, d.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&d);
    } else {
        CHECK(!"message published after cancel was lost");
    }
out:
    amqp_link_free(link);
    free_config(c);
}

static void test_reject_goes_to_dead(void)
{
    vf_config *c = default_config();
    amqp_link *link = connected_link(c, NULL);
    if (!link)
        goto out;
    vf_error err;
    vf_error_init(&err);
    publish(link, BROKER_EXCHANGE, BROKER_KEY_SPARE_PREPARE, "doomed-1", 0, NULL);
    wait_confirms(link);
    CHECK(amqp_link_consume(link, BROKER_SPARE_QUEUE, &err) == 0);
    amqp_link_delivery d;
    if (next_with_id(link, "doomed-1", &d, WAIT_MS) == 1) {
        CHECK(amqp_link_reject(link, d.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&d);
    } else {
        CHECK(!"spare message not delivered");
    }
    CHECK(amqp_link_consume(link, BROKER_DEAD_QUEUE, &err) == 0);
    if (next_with_id(link, "doomed-1", &d, WAIT_MS) == 1) {
        /* The original key survives dead-lettering: redrive can use it. */
        CHECK_STR(d.routing_key, "spare.prepare");
        CHECK(amqp_link_ack(link, d.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&d);
    } else {
        CHECK(!"rejected message did not reach virtflow.dead");
    }
out:
    amqp_link_free(link);
    free_config(c);
}

static void test_retry_tier_returns_to_own_queue(void)
{
    vf_config *c = default_config();
    amqp_link *link = connected_link(c, NULL);
    if (!link)
        goto out;
    vf_error err;
    vf_error_init(&err);
    char tier[BROKER_NAME_MAX];
    CHECK(broker_names_retry(1, tier, sizeof tier) == 0);
    /* Into the 1 s tier with the ORIGINAL routing key of each message. */
    recorder r = {0};
    amqp_link_set_confirm_callback(link, record, &r);
    publish(link, tier, BROKER_KEY_SCHEDULE, "retry-schedule", 2, NULL);
    publish(link, tier, BROKER_KEY_SPARE_RELEASE, "retry-spare", 4, NULL);
    publish(link, tier, BROKER_KEY_SCHEDULE_PRIORITY, "retry-lane", 3, NULL);
    wait_confirms(link);
    CHECK(r.n == 3 && r.items[0].ok && r.items[1].ok && r.items[2].ok);
    CHECK(amqp_link_consume(link, BROKER_SCHEDULE_QUEUE, &err) == 0);
    amqp_link_delivery d;
    if (next_with_id(link, "retry-schedule", &d, 20000) == 1) {
        CHECK_STR(d.routing_key, "task.schedule");
        CHECK_STR(d.exchange, "virtflow");
        CHECK(d.attempt == 2);
        CHECK(amqp_link_ack(link, d.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&d);
    } else {
        CHECK(!"retried task.schedule message did not come back to virtflow.task.schedule");
    }
    CHECK(amqp_link_cancel(link, &err) == 0);
    CHECK(amqp_link_consume(link, BROKER_SPARE_QUEUE, &err) == 0);
    if (next_with_id(link, "retry-spare", &d, 20000) == 1) {
        CHECK_STR(d.routing_key, "spare.release");
        CHECK(d.attempt == 4);
        CHECK(amqp_link_ack(link, d.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&d);
    } else {
        CHECK(!"retried spare.release message did not come back to virtflow.spare");
    }
    /* A retried lane task comes back to the lane, not to the normal queue. */
    CHECK(amqp_link_cancel(link, &err) == 0);
    CHECK(amqp_link_consume(link, BROKER_PRIORITY_QUEUE, &err) == 0);
    if (next_with_id(link, "retry-lane", &d, 20000) == 1) {
        CHECK_STR(d.routing_key, "task.schedule.priority");
        CHECK(d.attempt == 3);
        CHECK(amqp_link_ack(link, d.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&d);
    } else {
        CHECK(!"retried task.schedule.priority message did not come back to the priority lane");
    }
out:
    amqp_link_free(link);
    free_config(c);
}

static void test_prefetch_window(void)
{
    vf_config *c = default_config();
    c->amqp.prefetch = 3;
    amqp_link *link = connected_link(c, NULL);
    if (!link)
        goto out;
    vf_error err;
    vf_error_init(&err);
    char id[32];
    for (int i = 0; i < 10; i++) {
        snprintf(id, sizeof id, "pf-%d", i);
        publish(link, BROKER_EXCHANGE, BROKER_KEY_SCHEDULE, id, 0, NULL);
    }
    wait_confirms(link);
    CHECK(amqp_link_consume(link, BROKER_SCHEDULE_QUEUE, &err) == 0);
    amqp_link_delivery d[10];
    int got = 0;
    while (got < 10 && amqp_link_next(link, &d[got], 1500, &err) == 1)
        got++;
    CHECKF(got == 3, "%d deliveries unacked with prefetch 3", got);
    if (got > 0) {
        /* One multiple-ack opens the window again. */
        CHECK(amqp_link_ack(link, d[got - 1].delivery_tag, true, &err) == 0);
        for (int i = 0; i < got; i++)
            amqp_link_delivery_close(&d[i]);
    }
    int total = got;
    amqp_link_delivery one;
    while (total < 10 && amqp_link_next(link, &one, WAIT_MS, &err) == 1) {
        CHECK(amqp_link_ack(link, one.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&one);
        total++;
    }
    CHECK(total == 10);
out:
    amqp_link_free(link);
    free_config(c);
}

static void test_too_large_body(void)
{
    vf_config *c = default_config();
    amqp_link *link = connected_link(c, NULL);
    if (!link)
        goto out;
    vf_error err;
    vf_error_init(&err);
    size_t big_len = 2 * 1024 * 1024;
    char *big = malloc(big_len);
    memset(big, 'x', big_len);
    amqp_link_message m = {.body = big, .body_len = big_len, .message_id = "huge"};
    CHECK(amqp_link_publish(link, BROKER_EXCHANGE, BROKER_KEY_SCHEDULE, &m, NULL, &err) == 0);
    free(big);
    publish(link, BROKER_EXCHANGE, BROKER_KEY_SCHEDULE, "small-after-huge", 0, NULL);
    wait_confirms(link);
    CHECK(amqp_link_consume(link, BROKER_SCHEDULE_QUEUE, &err) == 0);
    amqp_link_delivery d;
    if (next_with_id(link, "huge", &d, WAIT_MS) == 1) {
        CHECK(d.too_large);
        CHECK(d.body == NULL && d.body_len == 0);
        CHECK(d.body_size == big_len);
        CHECK(amqp_link_reject(link, d.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&d);
    } else {
        CHECK(!"2 MB message not delivered");
    }
    /* The stream stayed in step: the next message is whole. */
    if (next_with_id(link, "small-after-huge", &d, WAIT_MS) == 1) {
        CHECK(!d.too_large);
        CHECK_STR((char *)d.body, "{\"task_id\":\"small-after-huge\"}");
        CHECK(amqp_link_ack(link, d.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&d);
    } else {
        CHECK(!"message after the oversized one not delivered");
    }
    CHECK(amqp_link_is_connected(link));
out:
    amqp_link_free(link);
    free_config(c);
}

static void test_url_failover_and_password(void)
{
    /* A dead port first, then the good broker. */
    const char *urls[] = {"amqp://guest:not-this-one@127.0.0.1:1/", test_url};
    vf_config *c = make_config(urls, 2);
    recorder r = {0};
    amqp_link *link = connected_link(c, &r);
    if (link) {
        uint64_t tag = 0;
        publish(link, BROKER_EXCHANGE, "event.failover", "evt-failover", 0, &tag);
        wait_confirms(link);
        const outcome *o = find_outcome(&r, tag);
        CHECK(o && o->ok);
    }
    amqp_link_free(link);
    free_config(c);

    /* Nothing reachable: an error that names no password. */
    const char *dead[] = {"amqp://guest:s3cret-pw@127.0.0.1:1/",
                          "amqp://guest:s3cret-pw@127.0.0.1:2/"};
    c = make_config(dead, 2);
    vf_error err;
    vf_error_init(&err);
    link = amqp_link_new(c, "test", &err);
    CHECK(link != NULL);
    if (link) {
        CHECK(amqp_link_connect(link, &err) < 0);
        CHECK(err.code == VF_EUNAVAILABLE);
        CHECK(strstr(err.text, "s3cret-pw") == NULL);
        CHECK_CONTAINS(err.text, "2 URLs");
        CHECK(!amqp_link_is_connected(link));
    }
    amqp_link_free(link);
    free_config(c);

    /* password_file overrides a wrong password in the URL. */
    char path[] = "/tmp/vf-amqp-password-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        FILE *f = fdopen(fd, "w");
        fprintf(f, "%s\n", password);
        fclose(f);
        char wrong[512];
        snprintf(wrong, sizeof wrong, "amqp://%s:wrong@%s:%d/%s", user, host, port, vhost);
        const char *one[] = {wrong};
        c = make_config(one, 1);
        c->amqp.password_file = strdup(path);
        link = connected_link(c, NULL);
        amqp_link_free(link);
        free_config(c);
        unlink(path);
    }
}

static void test_reconnect_after_forced_close(void)
{
    if (!rabbitmqctl) {
        printf("skipped forced-close case: VF_RABBITMQCTL not set\n");
        return;
    }
    vf_config *c = default_config();
    amqp_link *link = connected_link(c, NULL);
    if (!link)
        goto out;
    vf_error err;
    vf_error_init(&err);
    CHECK(amqp_link_consume(link, BROKER_SCHEDULE_QUEUE, &err) == 0);
    publish(link, BROKER_EXCHANGE, BROKER_KEY_SCHEDULE, "survivor", 0, NULL);
    wait_confirms(link);
    amqp_link_delivery first;
    int have = next_with_id(link, "survivor", &first, WAIT_MS);
    CHECK(have == 1);

    char args[256];
    snprintf(args, sizeof args, "close_all_connections --vhost %s 'test: forced close'", vhost);
    CHECK(run_ctl(args) == 0);
    amqp_link_delivery d;
    vf_error_init(&err);
    CHECK(amqp_link_next(link, &d, WAIT_MS, &err) < 0);
    CHECK(!amqp_link_is_connected(link));
    CHECK_CONTAINS(err.text, "CONNECTION_FORCED");

    vf_error_init(&err);
    CHECKF(amqp_link_connect(link, &err) == 0, "%s", err.text);
    /* The consumer came back by itself and the unacked message is redelivered. */
    if (next_with_id(link, "survivor", &d, WAIT_MS) == 1) {
        CHECK(d.redelivered);
        if (have == 1) {
            /* The old tag must not ack anything on the new channel. */
            CHECK(amqp_link_ack(link, first.delivery_tag, false, &err) == 0);
            CHECK(first.delivery_tag != d.delivery_tag);
        }
        CHECK(amqp_link_ack(link, d.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&d);
    } else {
        CHECK(!"consumer not restored after reconnect");
    }
    CHECK(amqp_link_is_connected(link));
    if (have == 1)
        amqp_link_delivery_close(&first);
out:
    amqp_link_free(link);
    free_config(c);
}

static void test_quorum_declare(void)
{
    /* Queue types cannot change in place: start from an empty vhost. */
    delete_topology();
    vf_config *c = default_config();
    c->amqp.queue_type = CONFIG_QUEUE_QUORUM;
    c->amqp.single_active_consumer = true;
    recorder r = {0};
    amqp_link *link = connected_link(c, &r);
    if (link) {
        CHECK(amqp_link_connect(link, NULL) == 0);
        uint64_t tag = 0;
        publish(link, BROKER_EXCHANGE, BROKER_KEY_SCHEDULE, "quorum-1", 0, &tag);
        wait_confirms(link);
        const outcome *o = find_outcome(&r, tag);
        CHECK(o && o->ok);
    }
    amqp_link_free(link);
    /* A program configured differently cannot declare over it. */
    c->amqp.queue_type = CONFIG_QUEUE_CLASSIC;
    vf_error err;
    vf_error_init(&err);
    link = amqp_link_new(c, "test", &err);
    if (link) {
        /* Not "unreachable": what differs and the fix (issue 36 item 2). */
        CHECK(amqp_link_connect(link, &err) < 0);
        CHECK(err.code == VF_ECONFIG);
        CHECK_CONTAINS(err.text, "queue virtflow.task.schedule exists on the broker as a quorum "
                                 "queue, and this configuration declares it classic");
        CHECK_CONTAINS(err.text, "set amqp.queue_type: quorum");
    }
    amqp_link_free(link);
    free_config(c);
    delete_topology();
}

/* A read-only link (virtflowctl stats) declares nothing: a queue nobody
 * declared stays missing, and asking for it keeps the link up. */
static void test_read_only_declares_nothing(void)
{
    delete_topology();
    vf_config *c = default_config();
    vf_error err;
    vf_error_init(&err);
    amqp_link *link = amqp_link_new(c, "test-reader", &err);
    CHECK(link != NULL);
    if (link) {
        amqp_link_set_read_only(link);
        CHECK(amqp_link_connect(link, &err) == 0);
        uint32_t messages = 0;
        CHECK(amqp_link_queue_depth(link, BROKER_SCHEDULE_QUEUE, &messages, NULL, &err) < 0);
        CHECK(err.code == VF_EINVAL);
        CHECK_CONTAINS(err.text, "does not exist");
        CHECK(amqp_link_is_connected(link));
    }
    amqp_link_free(link);
    free_config(c);
}

/* virtflow.dead is declared bounded; one an older virtflow declared without
 * the bounds (406 on redeclare) is used as it is, and the link still works. */
static void test_dead_queue_bounds(void)
{
    delete_topology();
    /* What an older virtflow declared: x-queue-type only. */
    amqp_connection_state_t conn = amqp_new_connection();
    amqp_socket_t *socket = amqp_tcp_socket_new(conn);
    bool declared = false;
    if (amqp_socket_open(socket, host, port) == AMQP_STATUS_OK &&
        amqp_login(conn, vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, user, password).reply_type ==
            AMQP_RESPONSE_NORMAL) {
        amqp_channel_open(conn, 1);
        amqp_table_entry_t type = {
            .key = amqp_cstring_bytes("x-queue-type"),
            .value = {.kind = AMQP_FIELD_KIND_UTF8, .value.bytes = amqp_cstring_bytes("classic")}};
        amqp_table_t args = {.num_entries = 1, .entries = &type};
        amqp_queue_declare(conn, 1, amqp_cstring_bytes(BROKER_DEAD_QUEUE), 0, 1, 0, 0, args);
        declared = amqp_get_rpc_reply(conn).reply_type == AMQP_RESPONSE_NORMAL;
        amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
    }
    amqp_destroy_connection(conn);
    CHECK(declared);

    vf_config *c = default_config();
    recorder r = {0};
    amqp_link *link = connected_link(c, &r);
    if (link) {
        /* The work channel is untouched: publishing and confirms work. */
        uint64_t tag = 0;
        publish(link, BROKER_EXCHANGE, "event.test.dead", "dead-bounds-1", 0, &tag);
        wait_confirms(link);
        const outcome *o = find_outcome(&r, tag);
        CHECK(o && o->ok);
        uint32_t messages = 0, consumers = 0;
        CHECK(amqp_link_queue_depth(link, BROKER_DEAD_QUEUE, &messages, &consumers, NULL) == 0);
    }
    amqp_link_free(link);

    /* Declared anew, it carries the bounds. */
    delete_topology();
    link = connected_link(c, NULL);
    amqp_link_free(link);
    if (rabbitmqctl) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s list_queues -p %s -q name arguments 2>/dev/null", rabbitmqctl,
                 vhost);
        FILE *out = popen(cmd, "r");
        char line[1024];
        bool bounded = false;
        while (out && fgets(line, sizeof line, out))
            if (strstr(line, BROKER_DEAD_QUEUE) && strstr(line, "x-max-length") &&
                strstr(line, "100000") && strstr(line, "x-message-ttl") &&
                strstr(line, "1209600000") && strstr(line, "drop-head"))
                bounded = true;
        if (out)
            pclose(out);
        CHECK(bounded);
    }
    free_config(c);
    delete_topology();
}

/* ---- setup ---- */

/* A reply queue gets what is published to the default exchange with its
 * name as the key (how the worker answers reply_to), and dies with the link. */
static void test_reply_queue(void)
{
    vf_config *c = default_config();
    recorder r = {0};
    amqp_link *link = connected_link(c, &r);
    if (!link)
        goto out;
    vf_error err;
    vf_error_init(&err);
    char name[256];
    CHECKF(amqp_link_reply_queue(link, name, sizeof name, &err) == 0, "%s", err.text);
    CHECK(strncmp(name, "amq.gen-", 8) == 0);
    char tiny[4];
    publish(link, "", name, "reply-1", 0, NULL);
    wait_confirms(link);
    CHECK(r.n == 1 && r.items[0].ok);
    amqp_link_delivery d;
    if (next_with_id(link, "reply-1", &d, WAIT_MS) == 1) {
        CHECK_STR(d.routing_key, name);
        CHECK(amqp_link_ack(link, d.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&d);
    } else {
        CHECK(!"reply not delivered to the reply queue");
    }
    /* A name that does not fit is refused, not truncated. */
    vf_error_init(&err);
    CHECK(amqp_link_reply_queue(link, tiny, sizeof tiny, &err) < 0 && err.code == VF_EINVAL);
    amqp_link_free(link);
    link = connected_link(c, &r);
    if (!link)
        goto out;
    /* Exclusive + auto-delete: the first connection's queue is gone. */
    vf_error_init(&err);
    CHECK(amqp_link_queue_depth(link, name, NULL, NULL, &err) < 0 && err.code == VF_EINVAL);
out:
    amqp_link_free(link);
    free_config(c);
}

/* basic.get walks a queue without consuming it: unsettled messages are not
 * handed out twice, a requeue puts them back, an ack removes them; a broker
 * dead letter carries its x-death reason, queue and key. */
static void test_get_and_x_death(void)
{
    vf_config *c = default_config();
    amqp_link *link = connected_link(c, NULL);
    if (!link)
        goto out;
    vf_error err;
    vf_error_init(&err);
    /* Empty the parking lot left by earlier cases. */
    amqp_link_delivery d;
    uint32_t remaining = 0;
    while (amqp_link_get(link, BROKER_DEAD_QUEUE, &d, NULL, &err) == 1) {
        CHECK(amqp_link_ack(link, d.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&d);
    }
    amqp_link_message parked = {.body = "{}",
                                .body_len = 2,
                                .message_id = "parked-1",
                                .error = "not JSON",
                                .original_key = "task.schedule"};
    CHECK(amqp_link_publish(link, BROKER_DLX, "task.schedule", &parked, NULL, &err) == 0);
    publish(link, BROKER_EXCHANGE, BROKER_KEY_SPARE_PREPARE, "rejected-1", 0, NULL);
    wait_confirms(link);
    CHECK(amqp_link_consume(link, BROKER_SPARE_QUEUE, &err) == 0);
    if (next_with_id(link, "rejected-1", &d, WAIT_MS) == 1) {
        CHECK(amqp_link_reject(link, d.delivery_tag, false, &err) == 0);
        amqp_link_delivery_close(&d);
    }
    /* Both are in virtflow.dead once a passive declare counts them. */
    uint32_t depth = 0;
    for (int i = 0; i < 100 && depth < 2; i++) {
        CHECK(amqp_link_queue_depth(link, BROKER_DEAD_QUEUE, &depth, NULL, &err) == 0);
        if (depth < 2)
            usleep(50000);
    }
    CHECK(depth == 2);

    amqp_link_delivery first, second, third;
    CHECK(amqp_link_get(link, BROKER_DEAD_QUEUE, &first, &remaining, &err) == 1);
    CHECK(remaining == 1);
    CHECK_STR(first.message_id, "parked-1");
    CHECK_STR(first.error, "not JSON");
    CHECK_STR(first.original_key, "task.schedule");
    CHECK(first.death_reason == NULL);
    CHECK_STR((char *)first.body, "{}");
    CHECK(amqp_link_get(link, BROKER_DEAD_QUEUE, &second, &remaining, &err) == 1);
    CHECK(remaining == 0);
    CHECK_STR(second.message_id, "rejected-1");
    CHECK_STR(second.death_reason, "rejected");
    CHECK_STR(second.death_queue, BROKER_SPARE_QUEUE);
    CHECK_STR(second.death_key, "spare.prepare");
    CHECK(amqp_link_get(link, BROKER_DEAD_QUEUE, &third, NULL, &err) == 0);
    /* Requeue one, ack the other: only the requeued one is there to get. */
    CHECK(amqp_link_reject(link, first.delivery_tag, true, &err) == 0);
    CHECK(amqp_link_ack(link, second.delivery_tag, false, &err) == 0);
    CHECK(amqp_link_get(link, BROKER_DEAD_QUEUE, &third, NULL, &err) == 1);
    CHECK_STR(third.message_id, "parked-1");
    CHECK(third.redelivered);
    CHECK(amqp_link_ack(link, third.delivery_tag, false, &err) == 0);
    amqp_link_delivery_close(&first);
    amqp_link_delivery_close(&second);
    amqp_link_delivery_close(&third);
    /* A missing queue is VF_EINVAL. */
    vf_error_init(&err);
    CHECK(amqp_link_get(link, "virtflow.no-such-queue", &d, NULL, &err) < 0);
    CHECK(err.code == VF_EINVAL);
out:
    amqp_link_free(link);
    free_config(c);
}

static int setup_vhost(const char *base_url)
{
    char *copy = strdup(base_url);
    struct amqp_connection_info info;
    if (amqp_parse_url(copy, &info) != AMQP_STATUS_OK) {
        fprintf(stderr, "VF_AMQP_URL is not an AMQP URL\n");
        free(copy);
        return -1;
    }
    snprintf(user, sizeof user, "%s", info.user);
    snprintf(password, sizeof password, "%s", info.password);
    snprintf(host, sizeof host, "%s", info.host);
    port = info.port;
    snprintf(vhost, sizeof vhost, "%s", info.vhost && info.vhost[0] ? info.vhost : "/");
    free(copy);
    if (rabbitmqctl) {
        snprintf(vhost, sizeof vhost, "vftest-amqp-%ld-%ld", (long)getpid(), (long)time(NULL));
        char args[256];
        snprintf(args, sizeof args, "add_vhost %s", vhost);
        if (run_ctl(args) != 0) {
            fprintf(stderr, "rabbitmqctl add_vhost failed\n");
            return -1;
        }
        snprintf(args, sizeof args, "set_permissions -p %s %s '.*' '.*' '.*'", vhost, user);
        if (run_ctl(args) != 0) {
            fprintf(stderr, "rabbitmqctl set_permissions failed\n");
            return -1;
        }
    }
    /* "/" is percent-encoded in a URL path. */
    snprintf(test_url, sizeof test_url, "amqp://%s:%s@%s:%d/%s", user, password, host, port,
             strcmp(vhost, "/") == 0 ? "%2f" : vhost);
    if (!rabbitmqctl)
        delete_topology();
    return 0;
}

int main(void)
{
    const char *base = getenv("VF_AMQP_URL");
    if (!base || !base[0]) {
        printf("skipped: VF_AMQP_URL not set\n");
        return 77;
    }
    rabbitmqctl = getenv("VF_RABBITMQCTL");
    if (rabbitmqctl && !rabbitmqctl[0])
        rabbitmqctl = NULL;
    vf_log_set_program("test_amqp_link");
    if (setup_vhost(base) < 0)
        return 1;

    test_redact_url();
    test_retry_names();
    test_topology_twice();
    test_confirm_and_return();
    test_consume_ack_and_properties();
    test_reject_goes_to_dead();
    test_retry_tier_returns_to_own_queue();
    test_prefetch_window();
    test_too_large_body();
    test_url_failover_and_password();
    test_reconnect_after_forced_close();
    test_reply_queue();
    test_get_and_x_death();
    test_quorum_declare();
    test_read_only_declares_nothing();
    test_dead_queue_bounds();

    if (rabbitmqctl) {
        char args[256];
        snprintf(args, sizeof args, "delete_vhost %s", vhost);
        if (run_ctl(args) != 0)
            fprintf(stderr, "warning: could not delete vhost %s\n", vhost);
    }
    return test_summary();
}
