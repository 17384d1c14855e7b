/* config_diff: which keys differ between two configs, and whether the worker
 * or the relay reloads each (what SIGHUP logs, common/config/reload.h). */
#include "config.h"
#include "testlib.h"

#include <stdio.h>
#include <string.h>

typedef struct seen {
    char keys[16][96];
    bool reloads[16];
    size_t n;
} seen;

static void note(const char *key, bool reloads, void *user)
{
    seen *s = user;
    if (s->n < 16) {
        snprintf(s->keys[s->n], sizeof s->keys[s->n], "%s", key);
        s->reloads[s->n++] = reloads;
    }
}

static vf_config *load(const char *text)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *c = config_load_string(text, strlen(text), "test.yaml", &err);
    CHECKF(c != NULL, "%s", err.text);
    return c;
}

/* Keys that differ between a and b for `program`, "key:1" (reloads) or "key:0", joined by ' '. */
static void diff_text(const char *a, const char *b, unsigned program, char *out, size_t size)
{
    vf_config *x = load(a), *y = load(b);
    seen s = {0};
    out[0] = '\0';
    if (x && y) {
        size_t n = config_diff(x, y, program, note, &s);
        CHECKF(n == s.n, "config_diff returned %zu, reported %zu", n, s.n);
        for (size_t i = 0; i < s.n; i++) {
            size_t used = strlen(out);
            snprintf(out + used, size - used, "%s%s:%d", i ? " " : "", s.keys[i], s.reloads[i]);
        }
    }
    config_free(x);
    config_free(y);
}

#define RECEIVER(url)                                                                              \
    "relay:\n  receivers:\n    - name: r\n      url: " url "\n      secret_env: WHSEC\n"

int main(void)
{
    char got[1024];

    diff_text("amqp: {prefetch: 10}\n", "amqp: {prefetch: 10}\n", CONFIG_RELOADS_WORKER, got,
              sizeof got);
    CHECK_STR(got, "");

    /* The worker reloads the scheduler, not the broker settings. */
    diff_text("scheduler: {strategy: spread}\namqp: {prefetch: 10}\n",
              "scheduler: {strategy: pack}\namqp: {prefetch: 20}\n", CONFIG_RELOADS_WORKER, got,
              sizeof got);
    CHECK_STR(got, "amqp.prefetch:0 scheduler.strategy:1");

    /* A nested section inherits; reservation_ttl_s opts out. */
    diff_text("scheduler: {overcommit: {cpu: 2}, reservation_ttl_s: 60}\n",
              "scheduler: {overcommit: {cpu: 3}, reservation_ttl_s: 61}\n", CONFIG_RELOADS_WORKER,
              got, sizeof got);
    CHECK_STR(got, "scheduler.overcommit.cpu:1 scheduler.reservation_ttl_s:0");

    /* The relay does not reload the scheduler (it does not use it). */
    diff_text("scheduler: {strategy: spread}\n", "scheduler: {strategy: pack}\n",
              CONFIG_RELOADS_RELAY, got, sizeof got);
    CHECK_STR(got, "scheduler.strategy:0");

    /* Plugins compare by kind and content. */
    diff_text("scheduler: {plugins: {scores: {Balanced: {weight: 1}}}}\n",
              "scheduler: {plugins: {scores: {Balanced: {weight: 2}}}}\n", CONFIG_RELOADS_WORKER,
              got, sizeof got);
    CHECK_STR(got, "scheduler.plugins.scores:1");
    diff_text("scheduler: {plugins: {filters: {PoolFilter: {enable: false}}}}\n",
              "scheduler: {plugins: {filters: {PoolFilter: {enable: false}}}}\n",
              CONFIG_RELOADS_WORKER, got, sizeof got);
    CHECK_STR(got, "");

    /* Profiles: the same ones are no change; another strategy, plugin or name
     * needs a restart (each profile's engine is built at start-up). */
    diff_text("scheduler: {profiles: {gpu: {strategy: pack, plugins: {scores: {Balanced: "
              "{weight: 2}}}}}}\n",
              "scheduler: {profiles: {gpu: {strategy: pack, plugins: {scores: {Balanced: "
              "{weight: 2}}}}}}\n",
              CONFIG_RELOADS_WORKER, got, sizeof got);
    CHECK_STR(got, "");
    diff_text("scheduler: {profiles: {gpu: {strategy: pack}}}\n",
              "scheduler: {profiles: {gpu: {strategy: spread}}}\n", CONFIG_RELOADS_WORKER, got,
              sizeof got);
    CHECK_STR(got, "scheduler.profiles:0");
    diff_text("scheduler: {profiles: {gpu: {plugins: {scores: {Balanced: {weight: 1}}}}}}\n",
              "scheduler: {profiles: {gpu: {plugins: {scores: {Balanced: {weight: 3}}}}}}\n",
              CONFIG_RELOADS_WORKER, got, sizeof got);
    CHECK_STR(got, "scheduler.profiles:0");
    diff_text("scheduler: {profiles: {gpu: {}}}\n", "scheduler: {profiles: {nvme: {}}}\n",
              CONFIG_RELOADS_WORKER, got, sizeof got);
    CHECK_STR(got, "scheduler.profiles:0");

    /* Receivers: one key for the whole list; the relay reloads it. */
    diff_text(RECEIVER("http://127.0.0.1:1/a"), RECEIVER("http://127.0.0.1:1/a"),
              CONFIG_RELOADS_RELAY, got, sizeof got);
    CHECK_STR(got, "");
    diff_text(RECEIVER("http://127.0.0.1:1/a"), RECEIVER("http://127.0.0.1:1/b"),
              CONFIG_RELOADS_RELAY, got, sizeof got);
    CHECK_STR(got, "relay.receivers:1");
    diff_text(RECEIVER("http://127.0.0.1:1/a"),
              RECEIVER("http://127.0.0.1:1/a") "      headers: {X-A: b}\n", CONFIG_RELOADS_RELAY,
              got, sizeof got);
    CHECK_STR(got, "relay.receivers:1");

    /* log.level: both; log.format: neither; durations and clusters compare. */
    diff_text("log: {level: info, format: text}\nstore: {retention: 30d}\n",
              "log: {level: debug, format: json}\nstore: {retention: 7d}\n", CONFIG_RELOADS_RELAY,
              got, sizeof got);
    CHECK_STR(got, "store.retention:0 log.level:1 log.format:0");
    diff_text("spare: {clusters: {a: {api_url: \"https://k:6443\", token_file: t}}}\n",
              "spare: {clusters: {a: {api_url: \"https://k:6444\", token_file: t}}}\n",
              CONFIG_RELOADS_WORKER, got, sizeof got);
    CHECK_STR(got, "spare.clusters:0");
    /* worker.headroom_shapes: restart-only, compared shape by shape. */
    diff_text("worker: {headroom_shapes: {s: {cpu: 2, memory_mib: 4096}}}\n",
              "worker: {headroom_shapes: {s: {cpu: 2, memory_mib: 4096}}}\n", CONFIG_RELOADS_WORKER,
              got, sizeof got);
    CHECK_STR(got, "");
    diff_text("worker: {headroom_shapes: {s: {cpu: 2, memory_mib: 4096}}}\n",
              "worker: {headroom_shapes: {s: {cpu: 2, memory_mib: 4096, min_hosts: 2}}}\n",
              CONFIG_RELOADS_WORKER, got, sizeof got);
    CHECK_STR(got, "worker.headroom_shapes:0");

    return test_summary();
}
