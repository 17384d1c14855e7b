/* api_broker: virtflow-api's one reconnect schedule (issue 34, item 9). A
 * "broker" here is a socket of the test's that takes each connection and
 * closes it at once (the login fails), counting them; the schedule's clock
 * is the test's. While the broker is down, links fail at once instead of
 * connecting, whichever link asks; the next attempt comes after the
 * backoff; the refused requests of an outage make one warning line per 10 s
 * with their count, and the first success says how long it lasted. */
#include "api_broker.h"
#include "config.h"
#include "log.h"
#include "testlib.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int64_t now_ms = 1000000;
static int listener = -1;
static int accepted;

static int64_t test_clock(void *context)
{
    (void)context;
    return now_ms;
}

static void *refuse_all(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0)
            return NULL;
        __atomic_add_fetch(&accepted, 1, __ATOMIC_SEQ_CST);
        close(fd);
    }
}

static int attempts(void)
{
    return __atomic_load_n(&accepted, __ATOMIC_SEQ_CST);
}

/* stderr, captured while `n` refusals are counted. */
static const char *refusals_logged(api_broker *b, size_t n)
{
    static char text[8192];
    char path[] = "/tmp/test_api_broker_XXXXXX";
    int fd = mkstemp(path);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    for (size_t i = 0; i < n; i++)
        api_broker_refused(b, 1);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t got = pread(fd, text, sizeof text - 1, 0);
    text[got > 0 ? got : 0] = '\0';
    close(fd);
    unlink(path);
    return text;
}

static int lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

int main(void)
{
    vf_log_set_level(VF_LOG_ERROR);
    listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof at;
    CHECK(bind(listener, (struct sockaddr *)&at, sizeof at) == 0 && listen(listener, 64) == 0 &&
          getsockname(listener, (struct sockaddr *)&at, &len) == 0);
    pthread_t thread;
    pthread_create(&thread, NULL, refuse_all, NULL);

    vf_config *config = config_defaults();
    char url[128];
    snprintf(url, sizeof url, "amqp://guest:guest@127.0.0.1:%d/", ntohs(at.sin_port));
    free(config->amqp.urls[0]);
    config->amqp.urls[0] = strdup(url);
    vf_error err;
    vf_error_init(&err);
    api_broker *b = api_broker_new();
    api_broker_set_clock(b, test_clock, NULL);
    amqp_link *intake = amqp_link_new(config, "test-intake", &err);
    amqp_link *server = amqp_link_new(config, "test-server", &err);
    int64_t used_a = 0, used_b = 0;

    CHECK(!api_broker_down(b));
    CHECK(api_broker_ready(b, intake, &used_a, &err) < 0 && attempts() == 1);
    CHECK(api_broker_down(b));
    /* Down: neither link connects again before the schedule says so. */
    for (int i = 0; i < 1000; i++) {
        vf_error_init(&err);
        CHECK(api_broker_ready(b, i % 2 ? intake : server, i % 2 ? &used_a : &used_b, &err) < 0);
    }
    CHECK(attempts() == 1);
    CHECK(err.code == VF_EUNAVAILABLE && strstr(err.text, "next connect attempt in"));
    /* The first wait is 0.25-0.5 s (the upper half of the backoff's first
     * ceiling; full jitter alone once drew under a millisecond, and the
     * frozen clock above was past it): after it, one link tries once. */
    now_ms += 600;
    vf_error_init(&err);
    CHECK(api_broker_ready(b, server, &used_b, &err) < 0 && attempts() == 2);
    vf_error_init(&err);
    CHECK(api_broker_ready(b, intake, &used_a, &err) < 0 && attempts() == 2);
    /* Past the cap (10 s) another attempt is always due. */
    now_ms += 10001;
    vf_error_init(&err);
    CHECK(api_broker_ready(b, intake, &used_a, &err) < 0 && attempts() == 3);

    /* 10,000 refusals at once: the first is said at once, the rest are
     * counted into the next line, 10 s later. */
    vf_log_set_level(VF_LOG_WARN);
    const char *said = refusals_logged(b, 10000);
    CHECKF(lines(said) == 1 && strstr(said, "broker unreachable (") &&
               strstr(said, "1 requests refused in the last 11 s"),
           "warned: %s", said);
    said = refusals_logged(b, 500);
    CHECKF(lines(said) == 0, "warned again within 10 s: %s", said);
    now_ms += 10000;
    said = refusals_logged(b, 1);
    CHECKF(lines(said) == 1 && strstr(said, "10500 requests refused in the last 10 s"), "%s", said);

    /* Never due at once after a failure: over 100 schedules the first wait
     * is said as at least 0.2 s (full jitter said "0.0 s" one time in ten). */
    vf_log_set_level(VF_LOG_ERROR);
    int said_at_once = 0;
    for (int i = 0; i < 100; i++) {
        api_broker *fresh = api_broker_new();
        api_broker_set_clock(fresh, test_clock, NULL);
        vf_error_init(&err);
        int before = attempts();
        CHECK(api_broker_ready(fresh, intake, &used_a, &err) < 0);
        vf_error_init(&err);
        CHECK(api_broker_ready(fresh, intake, &used_a, &err) < 0);
        const char *in = strstr(err.text, "next connect attempt in ");
        double wait_s = in ? strtod(in + strlen("next connect attempt in "), NULL) : -1;
        said_at_once += !(wait_s >= 0.2 && wait_s <= 0.5) || attempts() != before + 1;
        api_broker_free(fresh);
    }
    CHECKF(said_at_once == 0, "%d of 100 first waits outside 0.2-0.5 s or retried at once",
           said_at_once);

    amqp_link_free(intake);
    amqp_link_free(server);
    api_broker_free(b);
    api_broker_free(NULL);
    shutdown(listener, SHUT_RDWR);
    close(listener);
    pthread_join(thread, NULL);
    config_free(config);
    return test_summary();
}
