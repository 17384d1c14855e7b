/* bench_amqp_ceiling: the broker's own ceiling for the worker's pattern.
 *
 *   VF_AMQP_URL=amqp://guest:guest@127.0.0.1:5672/ bench_amqp_ceiling [N] [prefetch]
 * [classic|quorum]
 *
 * Pre-publishes N persistent, confirmed requests to virtflow.task.schedule,
 * then consumes them: for each delivery one persistent, mandatory event is
 * published to `virtflow` with key event.task.completed, and deliveries are
 * acked only once their events are confirmed. Confirms are batched over what
 * the prefetch window hands out at once (one wait, one multiple-ack per batch),
 * which is how the worker can amortise fsyncs. No SQLite, no scheduling: this is
 * the upper bound the broker allows, printed in messages per second.
 *
 * With VF_RABBITMQCTL set (a rabbitmqctl command prefix) the run uses a fresh
 * vhost and deletes it; otherwise it uses the URL's vhost, which should hold no
 * other messages in virtflow.task.schedule (the events stay in virtflow.relay). */
#include "amqp_link.h"
#include "broker_names.h"
#include "config.h"
#include "log.h"
#include "benchlib.h"

#include <amqp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct counts {
    size_t ok;
    size_t failed;
} counts;

static void on_confirm(uint64_t tag, bool ok, const char *reason, void *user)
{
    (void)tag;
    (void)reason;
    counts *c = user;
    if (ok)
        c->ok++;
    else
        c->failed++;
}

static int run_ctl(const char *ctl, const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s >/dev/null 2>&1", ctl, args);
    return system(cmd);
}

int main(int argc, char **argv)
{
    const char *base = getenv("VF_AMQP_URL");
    if (!base || !base[0]) {
        fprintf(stderr, "usage: VF_AMQP_URL=amqp://... %s [N] [prefetch] [classic|quorum]\n",
                argv[0]);
        return 2;
    }
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    int prefetch = argc > 2 ? atoi(argv[2]) : 200;
    bool quorum = argc > 3 && strcmp(argv[3], "quorum") == 0;
    if (n <= 0 || prefetch <= 0 || prefetch > 65535) {
        fprintf(stderr, "N and prefetch must be positive\n");
        return 2;
    }
    vf_log_set_program("bench_amqp_ceiling");
    vf_log_set_level(VF_LOG_WARN);

    char url[512], vhost[64] = "";
    snprintf(url, sizeof url, "%s", base);
    const char *ctl = getenv("VF_RABBITMQCTL");
    if (ctl && ctl[0]) {
        char *copy = strdup(base);
        struct amqp_connection_info info;
        if (!copy || amqp_parse_url(copy, &info) != AMQP_STATUS_OK) {
            fprintf(stderr, "VF_AMQP_URL is not an AMQP URL\n");
            free(copy);
            return 1;
        }
        snprintf(vhost, sizeof vhost, "vfbench-%ld", (long)getpid());
        char args[256];
        snprintf(args, sizeof args, "add_vhost %s", vhost);
        int rc = run_ctl(ctl, args);
        snprintf(args, sizeof args, "set_permissions -p %s %s '.*' '.*' '.*'", vhost, info.user);
        rc |= run_ctl(ctl, args);
        snprintf(url, sizeof url, "amqp://%s:%s@%s:%d/%s", info.user, info.password, info.host,
                 info.port, vhost);
        free(copy);
        if (rc != 0) {
            fprintf(stderr, "rabbitmqctl failed\n");
            return 1;
        }
    }

    int status = 1;
    char *urls[] = {url};
    int delays[] = {5};
    vf_config config;
    memset(&config, 0, sizeof config);
    config.amqp.urls = urls;
    config.amqp.n_urls = 1;
    config.amqp.queue_type = quorum ? CONFIG_QUEUE_QUORUM : CONFIG_QUEUE_CLASSIC;
    config.amqp.prefetch = prefetch;
    config.amqp.heartbeat_s = 20;
    config.amqp.max_message_bytes = 1048576;
    config.amqp.tls_verify = true;
    config.retry.delays_s = delays;
    config.retry.n_delays = 1;

    counts confirmed = {0};
    vf_error err;
    vf_error_init(&err);
    amqp_link *link = amqp_link_new(&config, "bench_amqp_ceiling", &err);
    if (!link || amqp_link_connect(link, &err) < 0) {
        fprintf(stderr, "connect: %s\n", err.text);
        goto out;
    }
    amqp_link_set_confirm_callback(link, on_confirm, &confirmed);

    const char body[] = "{\"requested_cpu\":4,\"requested_memory\":8192,\"requested_disk\":40}";
    const char event[] = "{\"id\":\"evt_bench\",\"type\":\"task.completed\",\"data\":{\"task_id\":"
                         "\"bench\",\"status\":\"completed\",\"vmid\":120,\"score\":87.5}}";
    double t0 = bench_now_s();
    for (long i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "bench-%ld", i);
        amqp_link_message m = {.body = body, .body_len = sizeof body - 1, .message_id = id};
        if (amqp_link_publish(link, BROKER_EXCHANGE, BROKER_KEY_SCHEDULE, &m, NULL, &err) < 0)
            goto fail;
        if ((i + 1) % 1000 == 0 && amqp_link_wait_confirms(link, 60000, &err) < 0)
            goto fail;
    }
    if (amqp_link_wait_confirms(link, 60000, &err) < 0)
        goto fail;
    double t1 = bench_now_s();
    printf("pre-published %ld persistent confirmed requests: %.0f msg/s\n", n, n / (t1 - t0));

    if (amqp_link_consume(link, BROKER_SCHEDULE_QUEUE, &err) < 0)
        goto fail;
    confirmed = (counts){0};
    long done = 0, batches = 0;
    amqp_link_delivery *batch = calloc((size_t)prefetch, sizeof *batch);
    if (!batch)
        goto fail;
    t0 = bench_now_s();
    while (done < n) {
        int got = 0;
        /* Wait for one, then take whatever else the window already holds. */
        int rc = amqp_link_next(link, &batch[got], 10000, &err);
        while (rc == 1) {
            got++;
            if (got == prefetch)
                break;
            rc = amqp_link_next(link, &batch[got], 0, &err);
        }
        if (rc < 0 || got == 0) {
            if (got == 0 && rc == 0)
                vf_error_set(&err, VF_EUNAVAILABLE, "no delivery for 10 s after %ld", done);
            for (int i = 0; i < got; i++)
                amqp_link_delivery_close(&batch[i]);
            free(batch);
            goto fail;
        }
        size_t failed_before = confirmed.failed;
        for (int i = 0; i < got && rc >= 0; i++) {
            amqp_link_message m = {
                .body = event, .body_len = sizeof event - 1, .message_id = batch[i].message_id};
            rc = amqp_link_publish(link, BROKER_EXCHANGE, "event.task.completed", &m, NULL, &err);
        }
        if (rc >= 0)
            rc = amqp_link_wait_confirms(link, 60000, &err);
        if (rc >= 0) {
            /* Acked only after every event of the batch is confirmed. */
            if (confirmed.failed != failed_before)
                rc = amqp_link_reject(link, batch[got - 1].delivery_tag, true, &err);
            else
                rc = amqp_link_ack(link, batch[got - 1].delivery_tag, true, &err);
        }
        for (int i = 0; i < got; i++)
            amqp_link_delivery_close(&batch[i]);
        if (rc < 0) {
            free(batch);
            goto fail;
        }
        done += got;
        batches++;
    }
    t1 = bench_now_s();
    free(batch);
    printf("consume -> confirmed event -> ack: %ld messages in %.2f s = %.0f msg/s "
           "(prefetch %d, %s queues, mean batch %.1f, %zu events failed)\n",
           done, t1 - t0, done / (t1 - t0), prefetch, quorum ? "quorum" : "classic",
           (double)done / (double)batches, confirmed.failed);
    status = 0;
    goto out;
fail:
    fprintf(stderr, "bench failed: %s\n", err.text);
out:
    amqp_link_free(link);
    if (vhost[0]) {
        char args[256];
        snprintf(args, sizeof args, "delete_vhost %s", vhost);
        (void)run_ctl(ctl, args);
    }
    return status;
}
