/* relay_policy: receiver matching, Retry-After parsing, schedule and jitter. */
#include "relay_policy.h"
#include "testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_match(void)
{
    CHECK(relay_policy_match("*", "task.completed"));
    CHECK(relay_policy_match("task.*", "task.completed"));
    CHECK(relay_policy_match("task.*", "task.failed"));
    CHECK(relay_policy_match("task.*", "task.a.b"));
    CHECK(!relay_policy_match("task.*", "task"));
    CHECK(!relay_policy_match("task.*", "task."));
    CHECK(!relay_policy_match("task.*", "tasks.completed"));
    CHECK(!relay_policy_match("task.*", "spare.ready"));
    CHECK(relay_policy_match("spare.ready", "spare.ready"));
    CHECK(!relay_policy_match("spare.ready", "spare.ready2"));
    CHECK(!relay_policy_match("spare.ready", "spare.failed"));
    CHECK(!relay_policy_match("spare.ready", NULL));
    /* Operational events: only by name, never through "*". */
    CHECK(!relay_policy_match("*", "receiver.disabled"));
    CHECK(!relay_policy_match("*", "delivery.exhausted"));
    CHECK(relay_policy_match("*", "some.future.type"));
    CHECK(relay_policy_match("receiver.*", "receiver.recovered"));
    CHECK(relay_policy_match("delivery.exhausted", "delivery.exhausted"));
    char ready[] = "spare.ready", task[] = "task.*";
    char *patterns[] = {ready, task};
    CHECK(relay_policy_match_any(patterns, 2, "task.failed"));
    CHECK(relay_policy_match_any(patterns, 2, "spare.ready"));
    CHECK(!relay_policy_match_any(patterns, 2, "spare.released"));
    CHECK(!relay_policy_match_any(patterns, 0, "task.failed"));
}

static void test_retry_after(void)
{
    double d = -1;
    CHECK(relay_policy_retry_after("120", 0, &d) == 0 && d == 120);
    CHECK(relay_policy_retry_after(" 0 ", 0, &d) == 0 && d == 0);
    CHECK(relay_policy_retry_after("99999999999999999999", 0, &d) == 0 &&
          d == RELAY_RETRY_AFTER_MAX_S);
    /* 1445412480 = Wed, 21 Oct 2015 07:28:00 GMT */
    CHECK(relay_policy_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480 - 30, &d) == 0 &&
          d == 30);
    CHECK(relay_policy_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480 + 30, &d) == 0 &&
          d == 0);
    CHECK(relay_policy_retry_after("-5", 0, &d) == -1);
    CHECK(relay_policy_retry_after("1.5", 0, &d) == -1);
    CHECK(relay_policy_retry_after("soon", 0, &d) == -1);
    CHECK(relay_policy_retry_after("", 0, &d) == -1);
    CHECK(relay_policy_retry_after("Wed, 21 Oct 2015 07:28:00", 0, &d) == -1);
}

static void test_schedule(void)
{
    const int schedule[] = {0, 5, 300, 1800};
    /* attempts made -> delay before the next one */
    CHECK(relay_policy_next_delay(schedule, 4, 1, -1, 0.5) == 5);
    CHECK(relay_policy_next_delay(schedule, 4, 2, -1, 0.5) == 300);
    CHECK(relay_policy_next_delay(schedule, 4, 3, -1, 0.5) == 1800);
    CHECK(relay_policy_next_delay(schedule, 4, 4, -1, 0.5) == -1); /* exhausted */
    CHECK(relay_policy_next_delay(schedule, 4, 0, -1, 0.5) == -1);
    /* Jitter stays within ±10 % and covers the range. */
    double low = relay_policy_next_delay(schedule, 4, 2, -1, 0.0);
    double high = relay_policy_next_delay(schedule, 4, 2, -1, 0.999999);
    CHECK(fabs(low - 270) < 1e-6);
    CHECK(high > 329.9 && high <= 330);
    /* Retry-After longer than the schedule wins; shorter does not shorten it. */
    CHECK(relay_policy_next_delay(schedule, 4, 1, 60, 0.5) == 60);
    CHECK(relay_policy_next_delay(schedule, 4, 2, 60, 0.5) == 300);
    /* A one-entry schedule means a single attempt. */
    CHECK(relay_policy_next_delay(schedule, 1, 1, -1, 0.5) == -1);
}

static void test_event(void)
{
    char *id = NULL, *type = NULL;
    vf_error err;
    const char good[] = "{\"id\":\"evt_1\",\"type\":\"task.completed\",\"data\":{}}";
    vf_error_init(&err);
    CHECK(relay_policy_event(good, strlen(good), NULL, &id, &type, &err) == 0);
    CHECK_STR(id, "evt_1");
    CHECK_STR(type, "task.completed");
    free(id);
    free(type);

    /* No id in the body: the AMQP message_id stands in. */
    const char no_id[] = "{\"type\":\"task.failed\"}";
    vf_error_init(&err);
    CHECK(relay_policy_event(no_id, strlen(no_id), "msg-7", &id, &type, &err) == 0);
    CHECK_STR(id, "msg-7");
    free(id);
    free(type);

    /* Bodies the relay dead-letters, each with the reason it logs. */
    const char *bad[] = {
        "not json",
        "[1,2]",
        "{\"type\":\"task.failed\"}",                  /* no id anywhere */
        "{\"id\":\"evt 1\",\"type\":\"task.failed\"}", /* space breaks a header */
        "{\"id\":\"evt\\r\\nX: y\",\"type\":\"t\"}",   /* header injection */
        "{\"id\":\"evt_1\",\"type\":\"\"}",            /* empty type */
        "{\"id\":\"evt_1\",\"type\":7}",               /* type not a string */
        "{\"id\":\"evt_\\u0000x\",\"type\":\"t\"}",    /* NUL in a string */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vf_error_init(&err);
        id = type = (char *)"untouched";
        CHECK(relay_policy_event(bad[i], strlen(bad[i]), NULL, &id, &type, &err) == -1);
        CHECK(err.code == VF_EINVAL);
        CHECK(id == NULL && type == NULL);
    }
    char long_id[400];
    int n = snprintf(long_id, sizeof long_id, "{\"id\":\"%0300d\",\"type\":\"t\"}", 1);
    vf_error_init(&err);
    CHECK(relay_policy_event(long_id, (size_t)n, NULL, &id, &type, &err) == -1);
    CHECK_CONTAINS(err.text, "1-256 printable");
}

/* What a publisher chose (message ids, user names) is logged on one line
 * that cannot drive the operator's terminal. */
static void test_escape(void)
{
    char out[64];
    relay_policy_escape("evt_123", out, sizeof out);
    CHECK_STR(out, "evt_123");
    relay_policy_escape(NULL, out, sizeof out);
    CHECK_STR(out, "(none)");
    relay_policy_escape("a\r\nb\x1b]0;pwned\x07", out, sizeof out);
    CHECK_STR(out, "a\\x0d\\x0ab\\x1b]0;pwned\\x07");
    relay_policy_escape("q\"\\\xc3\xa9", out, sizeof out);
    CHECK_STR(out, "q\\x22\\x5c\\xc3\\xa9");
    char small[8];
    relay_policy_escape("abcdefghij", small, sizeof small);
    CHECK_STR(small, "abcd...");
    relay_policy_escape("abcd", small, sizeof small);
    CHECK_STR(small, "abcd");
    relay_policy_escape("\x1b\x1b\x1b", small, sizeof small);
    CHECK_STR(small, "\\x1b...");
}

int main(void)
{
    test_escape();
    test_match();
    test_retry_after();
    test_schedule();
    test_event();
    return test_summary();
}
