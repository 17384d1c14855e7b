/* store_dead_letters: a message parked twice is one row; redrive marks it;
 * the list filters by redrive and walks keyset pages; bodies come back as
 * printable excerpts. On SQLite and, with VF_PG_URL, PostgreSQL. */
#include "store.h"

#include "store_dead_letters.h"
#include "store_fixture.h"
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
    char excerpt[16][600];
    char redriven[16][32];
    char reason[16][64];
    int64_t last_id;
    char last_parked[32];
    int n;
} seen;

static int collect(const store_dead_letter *d, void *ctx)
{
    seen *s = ctx;
    if (s->n < 16) {
        snprintf(s->items[s->n], sizeof s->items[0], "%s/%s", d->message_id ? d->message_id : "-",
                 d->routing_key);
        snprintf(s->excerpt[s->n], sizeof s->excerpt[0], "%s", d->body_excerpt);
        snprintf(s->redriven[s->n], sizeof s->redriven[0], "%s",
                 d->redriven_at ? d->redriven_at : "");
        snprintf(s->reason[s->n], sizeof s->reason[0], "%s", d->reason);
        s->last_id = d->id;
        snprintf(s->last_parked, sizeof s->last_parked, "%s", d->parked_at);
        s->n++;
    }
    return 0;
}

static void park(store *s, const char *id, const char *key, const char *body, const char *why,
                 const char *at)
{
    store_dead_letter_park p = {.routing_key = key,
                                .message_id = id,
                                .task_id = id,
                                .reason = why,
                                .parked_by = "worker",
                                .parked_at = at,
                                .body = (const unsigned char *)body,
                                .body_len = strlen(body),
                                .body_bytes = strlen(body)};
    vf_error err;
    vf_error_init(&err);
    CHECKF(store_dead_letter_record(s, &p, &err) == 0, "%s", err.text);
}

static void run(const char *path)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    if (!s)
        return;

    park(s, "tsk_a", "task.schedule", "{\"task_id\":\"tsk_a\"}", "retries ran out", T0);
    park(s, NULL, "task.schedule", "not json\x01\\", "not JSON", T0);
    park(s, NULL, "task.schedule", "other garbage", "not JSON", T1);
    park(s, "tsk_b", "task.release", "{\"task_id\":\"tsk_b\"}", "no such task", T1);
    /* The first one again (its park not confirmed the first time): one row,
     * parked at the later time with the later reason. */
    park(s, "tsk_a", "task.schedule", "{\"task_id\":\"tsk_a\"}", "exhausted", T2);

    seen all = {0};
    store_dead_letter_filter every = {.parked = -1};
    CHECK(store_dead_letter_list(s, &every, collect, &all, NULL) == 0);
    CHECK(all.n == 4);
    CHECK_STR(all.items[0], "tsk_a/task.schedule");
    CHECK_STR(all.reason[0], "exhausted");
    CHECK_STR(all.items[1], "tsk_b/task.release");
    CHECK_STR(all.items[2], "-/task.schedule");
    CHECK_STR(all.excerpt[3], "not json\\x01\\x5c"); /* printable, the rest escaped */

    /* Redrive: the message known by its id, and one known by its body,
     * each marked only while its record is the park read before. */
    char seen_at[STORE_TIME_SIZE];
    CHECK(store_dead_letter_parked_at(s, "task.schedule", "tsk_a", NULL, 0, seen_at, NULL) == 0);
    CHECK_STR(seen_at, T2);
    CHECK(store_dead_letter_redriven(s, "task.schedule", "tsk_a", NULL, 0, T1, T2, NULL) == 0);
    CHECK(store_dead_letter_redriven(s, "task.schedule", "tsk_a", NULL, 0, seen_at, T2, NULL) == 1);
    const char *garbage = "other garbage";
    CHECK(store_dead_letter_parked_at(s, "task.schedule", NULL, (const unsigned char *)garbage,
                                      strlen(garbage), seen_at, NULL) == 0);
    CHECK_STR(seen_at, T1);
    CHECK(store_dead_letter_redriven(s, "task.schedule", NULL, (const unsigned char *)garbage,
                                     strlen(garbage), seen_at, T2, NULL) == 1);
    CHECK(store_dead_letter_parked_at(s, "task.schedule", "tsk_nope", NULL, 0, seen_at, NULL) == 0);
    CHECK_STR(seen_at, "");
    CHECK(store_dead_letter_redriven(s, "task.schedule", "tsk_nope", NULL, 0, T0, T2, NULL) == 0);
    seen parked = {0};
    store_dead_letter_filter only_parked = {.parked = 1};
    CHECK(store_dead_letter_list(s, &only_parked, collect, &parked, NULL) == 0);
    CHECK(parked.n == 2);
    CHECK_STR(parked.items[0], "tsk_b/task.release");
    seen redriven = {0};
    store_dead_letter_filter only_redriven = {.parked = 0};
    CHECK(store_dead_letter_list(s, &only_redriven, collect, &redriven, NULL) == 0);
    CHECK(redriven.n == 2 && strcmp(redriven.redriven[0], T2) == 0);
    /* Parked again after a redrive: parked, not redriven any more. */
    park(s, "tsk_a", "task.schedule", "{\"task_id\":\"tsk_a\"}", "exhausted again", T2);
    memset(&parked, 0, sizeof parked);
    CHECK(store_dead_letter_list(s, &only_parked, collect, &parked, NULL) == 0);
    CHECK(parked.n == 3 && strcmp(parked.items[0], "tsk_a/task.schedule") == 0);

    /* Pages of one, from each page's last row: every row once, in order. */
    store_dead_letter_filter page = {.parked = -1, .limit = 1};
    char after[32];
    int walked = 0;
    for (int round = 0; round < 6; round++) {
        seen got = {0};
        CHECK(store_dead_letter_list(s, &page, collect, &got, NULL) == 0);
        if (got.n == 0)
            break;
        CHECK_STR(got.items[0], all.items[walked]);
        walked++;
        snprintf(after, sizeof after, "%s", got.last_parked);
        page.after_parked_at = after;
        page.after_id = got.last_id;
    }
    CHECK(walked == 4);
    store_close(s);
}

int main(void)
{
    store_fixture f;
    if (store_fixture_init(&f, "store-dead-letters") != 0)
        return 1;
    store_fixture_each(&f, "dead_letters", run);
    store_fixture_close(&f);
    return test_summary();
}
