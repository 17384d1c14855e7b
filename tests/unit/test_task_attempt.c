/* task_attempt: which attempt a message stands for (issue 13, finding 5).
 * x-virtflow-attempt is believed only from a trusted publisher (the worker's
 * own retries), and then clamped to 1..retry.max_attempts, so neither a
 * client's 5 (every retry skipped) nor 2147483648 (recorded as -2147483648,
 * overflowing attempt - 1) can reach the handler. */
#include "task_attempt.h"
#include "testlib.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int number(const vf_config *c, int64_t attempt, const char *user_id)
{
    task_message msg;
    memset(&msg, 0, sizeof msg);
    msg.routing_key = "task.schedule";
    msg.attempt = attempt;
    msg.user_id = user_id;
    return task_attempt_number(c, &msg);
}

int main(void)
{
    vf_config *c = config_defaults(); /* amqp.urls: guest; retry.max_attempts 5 */
    CHECK(c != NULL);
    if (!c)
        return test_summary();

    /* The worker's own retries (user_id = the worker's login) count. */
    CHECK(number(c, 0, "guest") == 1);
    CHECK(number(c, 2, "guest") == 2);
    CHECK(number(c, 5, "guest") == 5);
    /* ... clamped to retry.max_attempts, in 64 bits before any cast. */
    CHECK(number(c, 6, "guest") == 5);
    CHECK(number(c, INT64_C(2147483648), "guest") == 5);
    CHECK(number(c, INT64_C(4294967297), "guest") == 5); /* 2^32 + 1: an int cast gives 1 */
    CHECK(number(c, INT64_MAX, "guest") == 5);
    CHECK(number(c, -1, "guest") == 1);
    CHECK(number(c, INT64_MIN, "guest") == 1);

    /* Anyone else's header is ignored: attempt 1. */
    CHECK(number(c, 5, "virtflow-client") == 1);
    CHECK(number(c, INT64_C(2147483648), "virtflow-client") == 1);
    CHECK(number(c, 2, NULL) == 1);
    CHECK(number(c, 2, "") == 1);
    CHECK(number(c, 2, "Guest") == 1);

    /* relay.trusted_publishers, when set, is the trusted set. */
    static const char text[] = "relay:\n  trusted_publishers: [virtflow-worker]\n"
                               "retry:\n  max_attempts: 3\n";
    vf_error err;
    vf_error_init(&err);
    vf_config *listed = config_load_string(text, strlen(text), "c.yaml", &err);
    CHECKF(listed != NULL, "%s", err.text);
    if (listed) {
        CHECK(number(listed, 2, "virtflow-worker") == 2);
        CHECK(number(listed, 9, "virtflow-worker") == 3);
        CHECK(number(listed, 2, "guest") == 1);
    }
    config_free(listed);
    config_free(c);
    return test_summary();
}
