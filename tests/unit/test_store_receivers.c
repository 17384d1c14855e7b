/* store_receivers on SQLite and PostgreSQL: a receiver's breaker written and
 * read back, the lag per receiver, and bulk redelivery (what it matches, the
 * pace it spreads the due times at, idempotent on its id, its progress). */
#include "store.h"

#include "store_deliveries.h"
#include "store_fixture.h"
#include "store_receivers.h"
#include "testlib.h"

#include <stdio.h>
#include <string.h>

#define T0 "2026-11-22T01:00:00.000Z"
#define T1 "2026-11-22T01:00:01.000Z"
#define T9 "2026-11-22T01:00:09.000Z"
#define NOW_MS 1795309300000LL /* 2026-11-22T01:01:40Z */

typedef struct states_seen {
    int n;
    char receiver[4][32], state[4][16], failing_since[4][32];
} states_seen;

static int note_state(const store_receiver_state *st, void *user)
{
    states_seen *seen = user;
    if (seen->n < 4) {
        snprintf(seen->receiver[seen->n], 32, "%s", st->receiver);
        snprintf(seen->state[seen->n], 16, "%s", st->state);
        snprintf(seen->failing_since[seen->n], 32, "%s",
                 st->failing_since ? st->failing_since : "-");
    }
    seen->n++;
    return 0;
}

static void test_states(store *s)
{
    store_receiver_state down = {.receiver = "hooks",
                                 .state = "disabled",
                                 .failing_since = T0,
                                 .disabled_at = T1,
                                 .last_error = "HTTP 503",
                                 .updated_at = T1};
    CHECK(store_receiver_state_put(s, &down, NULL) == 0);
    store_receiver_state other = {.receiver = "audit", .state = "enabled", .updated_at = T0};
    CHECK(store_receiver_state_put(s, &other, NULL) == 0);
    states_seen seen = {0};
    CHECK(store_receiver_states(s, note_state, &seen, NULL) == 0);
    CHECK(seen.n == 2);
    CHECK_STR(seen.receiver[1], "hooks");
    CHECK_STR(seen.state[1], "disabled");
    CHECK_STR(seen.failing_since[1], T0);
    /* Overwritten, not added. */
    store_receiver_state up = {.receiver = "hooks", .state = "enabled", .updated_at = T9};
    CHECK(store_receiver_state_put(s, &up, NULL) == 0);
    memset(&seen, 0, sizeof seen);
    CHECK(store_receiver_states(s, note_state, &seen, NULL) == 0);
    CHECK(seen.n == 2);
    CHECK_STR(seen.state[1], "enabled");
    CHECK_STR(seen.failing_since[1], "-");
}

static int note_lag(const char *receiver, const char *oldest_due_at, void *user)
{
    char *out = user;
    size_t used = strlen(out);
    snprintf(out + used, 256 - used, "%s=%s;", receiver, oldest_due_at);
    return 0;
}

static void fail(store *s, const char *event, const char *receiver, const char *status,
                 int attempts, const char *next)
{
    store_delivery_change c = {.event_id = event,
                               .receiver = receiver,
                               .status = status,
                               .attempts = attempts,
                               .next_attempt_at = next,
                               .last_code = 503,
                               .last_error = "HTTP 503"};
    CHECK(store_delivery_update(s, &c, NULL) == 0);
}

static int note_due(const store_delivery *row, void *user)
{
    char *out = user;
    size_t used = strlen(out);
    snprintf(out + used, 256 - used, "%s@%s;", row->event_id,
             row->next_attempt_at ? row->next_attempt_at : "-");
    return 0;
}

static void test_redelivery(store *s)
{
    /* hooks: e1 exhausted, e2 waiting for a retry, e3 delivered, e4 never
     * tried yet, e0 exhausted but older than `since`; audit: e1 exhausted. */
    const char *events[] = {"e0", "e1", "e2", "e3", "e4"};
    const char *created[] = {"2026-11-22T00:00:00.000Z", T0, T0, T0, T1};
    for (int i = 0; i < 5; i++)
        CHECK(store_delivery_add(s, events[i], "hooks", "{}", created[i], NULL) == 0);
    CHECK(store_delivery_add(s, "e1", "audit", "{}", T0, NULL) == 0);
    fail(s, "e0", "hooks", "failed", 8, NULL);
    fail(s, "e1", "hooks", "failed", 8, NULL);
    fail(s, "e2", "hooks", "pending", 2, T9);
    fail(s, "e3", "hooks", "delivered", 1, NULL);
    fail(s, "e1", "audit", "failed", 8, NULL);

    char lag[256] = "";
    CHECK(store_deliveries_lag(s, T9, note_lag, lag, NULL) == 0);
    CHECKF(strcmp(lag, "hooks=" T1 ";") == 0, "%s", lag); /* e4, never tried, due since T1 */

    store_redelivery out;
    store_redelivery_request req = {.id = "rdl_1",
                                    .receiver = "hooks",
                                    .since = "2026-11-22T00:30:00.000Z",
                                    .rate_per_s = 2,
                                    .requested_by = "test",
                                    .request = "{\"receiver\":\"hooks\",\"since\":\"1h\"}",
                                    .now_ms = NOW_MS};
    CHECK(store_redelivery_start(s, &req, &out, NULL) == 0);
    /* e1 and e2 (their last attempt failed), not e0 (too old), e3, e4. */
    CHECKF(out.matched == 2 && out.pending == 2 && out.delivered == 0, "%lld %lld",
           (long long)out.matched, (long long)out.pending);
    CHECK_STR(out.status_filter, "failed");
    CHECK(out.rate_per_s == 2);
    /* At 2/s, one after the other, oldest first: due now, then half a
     * second later. */
    char due[256] = "";
    store_delivery_filter f = {.receiver = "hooks", .status = "pending"};
    CHECK(store_delivery_list(s, &f, note_due, due, NULL) == 0);
    CHECKF(strstr(due, "e1@2026-11-22T01:01:40.000Z;") &&
               strstr(due, "e2@2026-11-22T01:01:40.500Z;"),
           "%s", due);
    /* Again under the same id, the same request: nothing reset twice. */
    fail(s, "e1", "hooks", "delivered", 1, NULL);
    CHECK(store_redelivery_start(s, &req, &out, NULL) == 1);
    CHECK(out.matched == 2 && out.delivered == 1 && out.pending == 1);
    /* The same id with another request: refused. */
    store_redelivery_request other = req;
    other.request = "{\"receiver\":\"hooks\",\"since\":\"2h\"}";
    CHECK(store_redelivery_start(s, &other, &out, NULL) == 2);
    /* Exhausted only: the audit's e1 (another receiver's row untouched before). */
    store_redelivery_request exhausted = {.id = "rdl_2",
                                          .receiver = "audit",
                                          .since = T0,
                                          .exhausted_only = true,
                                          .request = "{}",
                                          .now_ms = NOW_MS};
    CHECK(store_redelivery_start(s, &exhausted, &out, NULL) == 0);
    CHECK(out.matched == 1 && out.rate_per_s == 0);
    CHECK_STR(out.status_filter, "exhausted");
    CHECK(store_redelivery_get(s, "rdl_2", &out, NULL) == 0 && out.pending == 1);
    CHECK(store_redelivery_get(s, "rdl_none", &out, NULL) == 1);
}

static void run(const char *location)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(location, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    if (!s)
        return;
    test_states(s);
    test_redelivery(s);
    store_close(s);
}

int main(void)
{
    store_fixture f;
    if (store_fixture_init(&f, "store-receivers") != 0)
        return 1;
    store_fixture_each(&f, "receivers", run);
    store_fixture_close(&f);
    return test_summary();
}
