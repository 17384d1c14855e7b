/* store: what the relay adds to deliveries — per-receiver due scan, requeue
 * after a crash, operator redelivery. */
#include "store.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T0 "2026-11-22T01:00:00.000Z"
#define T1 "2026-11-22T01:00:01.000Z"
#define T2 "2026-11-22T01:00:02.000Z"

typedef struct seen {
    char items[16][64];
    char status[16][16];
    int attempts[16];
    int n;
} seen;

static int collect(const store_delivery *d, void *ctx)
{
    seen *s = ctx;
    if (s->n < 16) {
        snprintf(s->items[s->n], sizeof s->items[0], "%s/%s", d->event_id, d->receiver);
        snprintf(s->status[s->n], sizeof s->status[0], "%s", d->status);
        s->attempts[s->n] = d->attempts;
        s->n++;
    }
    return 0;
}

static void set_state(store *s, const char *event, const char *receiver, const char *status,
                      int attempts)
{
    store_delivery_change c = {.event_id = event,
                               .receiver = receiver,
                               .status = status,
                               .attempts = attempts,
                               .next_attempt_at = strcmp(status, "pending") == 0 ? T0 : NULL,
                               .last_code = 500,
                               .last_error = "HTTP 500"};
    CHECK(store_delivery_update(s, &c, NULL) == 0);
}

static const char *status_of(store *s, const char *event, const char *receiver, int *attempts)
{
    static seen out;
    memset(&out, 0, sizeof out);
    store_delivery_filter f = {.event_id = event, .receiver = receiver};
    CHECK(store_delivery_list(s, &f, collect, &out, NULL) == 0);
    if (attempts)
        *attempts = out.n ? out.attempts[0] : -1;
    return out.n ? out.status[0] : "(none)";
}

/* Everything below on one store: an SQLite file or a PostgreSQL schema. */
static void run(const char *path)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    if (!s)
        return;

    /* Receiver "slow" has a backlog due first; "fast" still gets its rows. */
    for (int i = 0; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof id, "evt_%d", i);
        CHECK(store_delivery_add(s, id, "slow", "{}", T0, NULL) == 0);
    }
    CHECK(store_delivery_add(s, "evt_9", "fast", "{}", T1, NULL) == 0);
    seen due = {0};
    CHECK(store_deliveries_due(s, T2, 3, collect, &due, NULL) == 0);
    CHECK(due.n == 3 && strstr(due.items[0], "/slow"));
    memset(&due, 0, sizeof due);
    CHECK(store_deliveries_due_receiver(s, "fast", T2, 3, collect, &due, NULL) == 0);
    CHECK(due.n == 1);
    CHECK_STR(due.items[0], "evt_9/fast");
    memset(&due, 0, sizeof due);
    CHECK(store_deliveries_due_receiver(s, "fast", T0, 3, collect, &due, NULL) == 0);
    CHECK(due.n == 0); /* not due yet at T0 */

    /* A crash leaves rows 'delivering': requeue makes them due again and
     * leaves every other state alone. */
    set_state(s, "evt_0", "slow", "delivering", 2);
    set_state(s, "evt_1", "slow", "delivering", 0);
    set_state(s, "evt_2", "slow", "delivered", 1);
    set_state(s, "evt_3", "slow", "failed", 4);
    CHECK(store_deliveries_requeue(s, T2, NULL) == 2);
    int attempts = 0;
    CHECK_STR(status_of(s, "evt_0", "slow", &attempts), "pending");
    CHECK(attempts == 2);
    CHECK_STR(status_of(s, "evt_1", "slow", NULL), "pending");
    CHECK_STR(status_of(s, "evt_2", "slow", NULL), "delivered");
    CHECK_STR(status_of(s, "evt_3", "slow", NULL), "failed");
    CHECK(store_deliveries_requeue(s, T2, NULL) == 0);

    /* Redeliver: failed and delivered rows restart their schedule; pending
     * ones are not touched; a receiver narrows it down. */
    CHECK(store_delivery_add(s, "evt_3", "fast", "{}", T0, NULL) == 0);
    set_state(s, "evt_3", "fast", "failed", 4);
    CHECK(store_delivery_redeliver(s, "evt_3", "fast", T2, NULL) == 1);
    CHECK_STR(status_of(s, "evt_3", "fast", &attempts), "pending");
    CHECK(attempts == 0);
    CHECK_STR(status_of(s, "evt_3", "slow", NULL), "failed");
    CHECK(store_delivery_redeliver(s, "evt_3", NULL, T2, NULL) == 1);
    CHECK_STR(status_of(s, "evt_3", "slow", NULL), "pending");
    CHECK(store_delivery_redeliver(s, "evt_2", NULL, T2, NULL) == 1);
    CHECK_STR(status_of(s, "evt_2", "slow", NULL), "pending");
    CHECK(store_delivery_redeliver(s, "evt_4", NULL, T2, NULL) == 0); /* pending already */
    CHECK(store_delivery_redeliver(s, "evt_nope", NULL, T2, NULL) == 0);
    memset(&due, 0, sizeof due);
    CHECK(store_deliveries_due_receiver(s, "slow", T2, 0, collect, &due, NULL) == 0);
    CHECK(due.n == 5);

    store_close(s);
}

int main(void)
{
    char dir[] = "/tmp/test_store_deliveries_XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[128];
    snprintf(path, sizeof path, "%s/store.db", dir);
    run(path);
    char url[512];
    bool skipped = false;
    if (test_pg_url("deliveries", url, sizeof url, &skipped) == 0)
        run(url);
    else if (skipped)
        printf("VF_PG_URL unset: PostgreSQL part skipped\n");
    else
        CHECKF(false, "VF_PG_URL is set but unusable");
    test_pg_cleanup();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return test_summary();
}
