/* relay_policy: receiver matching, Retry-After parsing, schedule and jitter. */
#include "relay_policy.h"
#include "testlib.h"

#include <math.h>

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

int main(void)
{
    test_match();
    test_retry_after();
    test_schedule();
    return test_summary();
}
