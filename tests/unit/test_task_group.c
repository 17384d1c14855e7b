/* task_group and the task handler's count and group path (docs/scheduling.md
 * "Groups"): members of one group over several messages, each in its own
 * transaction on a real SQLite store, count: N all or none, a policy at odds
 * with the members recorded, and the group's conditional claim. */
#include "handler_fixture.h"
#include "release_handler.h"
#include "store_groups.h"
#include "store_internal.h" /* the store's db handle: a table lock, pg_locks */
#include "store_reservations.h"
#include "store_tasks.h"
#include "task_group.h"
#include "task_handler.h"

#include <jansson.h>
#include <pthread.h>
#include <time.h>

static int handle(fixture *f, const char *body, const char *id, int64_t attempt, task_outcome *out)
{
    return handle_with(f, task_handler_handle, "task.schedule", body, id, attempt, out);
}

/* Handle `body` as task `id` and return its recorded status ("" when none)
 * and node in the buffers given. */
static void run(fixture *f, const char *id, const char *body, char status[16], char node[64],
                char *error, size_t error_size)
{
    task_outcome out;
    CHECKF(handle(f, body, id, 0, &out) == 0, "%s", id);
    snprintf(status, 16, "%s", out.status);
    snprintf(node, 64, "%s", out.node);
    if (error)
        snprintf(error, error_size, "%s", out.error ? out.error : out.error_text);
    task_outcome_close(&out);
}

static int count_live(const store_reservation *r, void *user)
{
    (void)r;
    (*(int *)user)++;
    return 0;
}

static int live_reservations(fixture *f)
{
    vf_error err;
    vf_error_init(&err);
    int n = 0;
    CHECK(store_reservations_live(f->store, FIXED_TEXT, count_live, &n, &err) == 0);
    return n;
}

static void test_anti_affinity(fixture *f)
{
    static const char body[] = "{\"requested_cpu\":1,\"requested_memory\":512,"
                               "\"group\":{\"name\":\"web\",\"policy\":\"anti-affinity\"}}";
    char status[16], node[64], error[512];
    char seen[3][64];
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "anti-%d", i);
        run(f, id, body, status, seen[i], NULL, 0);
        CHECK_STR(status, "completed");
    }
    CHECK(strcmp(seen[0], seen[1]) != 0 && strcmp(seen[1], seen[2]) != 0 &&
          strcmp(seen[0], seen[2]) != 0);
    /* The fourth finds a member on every host: it waits, the reason named. */
    run(f, "anti-3", body, status, node, error, sizeof error);
    CHECK_STR(status, "retrying");
    CHECK_CONTAINS(error, "3 group anti-affinity");
    /* Another group is not in the way. */
    run(f, "other-0",
        "{\"requested_cpu\":1,\"requested_memory\":512,"
        "\"group\":{\"name\":\"db\",\"policy\":\"anti-affinity\"}}",
        status, node, NULL, 0);
    CHECK_STR(status, "completed");
    /* Members disagreeing about the policy: invalid, with both named. */
    run(f, "anti-bad",
        "{\"requested_cpu\":1,\"requested_memory\":512,"
        "\"group\":{\"name\":\"web\",\"policy\":\"affinity\"}}",
        status, node, error, sizeof error);
    CHECK_STR(status, "failed");
    CHECK_CONTAINS(error, "group web: policy affinity, max_per_host 0 given, but its 3 members "
                          "were placed under policy anti-affinity, max_per_host 1");
}

static void test_affinity(fixture *f)
{
    static const char body[] = "{\"requested_cpu\":1,\"requested_memory\":512,"
                               "\"group\":{\"name\":\"pair\",\"policy\":\"affinity\"}}";
    char status[16], first[64], second[64];
    run(f, "aff-0", body, status, first, NULL, 0);
    CHECK_STR(status, "completed");
    run(f, "aff-1", body, status, second, NULL, 0);
    CHECK_STR(status, "completed");
    CHECK_STR(second, first);
}

static void test_count(fixture *f)
{
    int before = live_reservations(f);
    task_outcome out;
    CHECK(handle(f,
                 "{\"requested_cpu\":1,\"requested_memory\":512,\"count\":3,"
                 "\"group\":{\"name\":\"trio\",\"policy\":\"anti-affinity\"}}",
                 "count-3", 0, &out) == 0);
    CHECK_STR(out.status, "completed");
    task_outcome_close(&out);
    CHECK(live_reservations(f) == before + 3);
    store_task t;
    memset(&t, 0, sizeof t);
    vf_error err;
    vf_error_init(&err);
    CHECK(store_task_get(f->store, "count-3", &t, &err) == 0);
    json_t *result = t.result ? json_loads(t.result, 0, NULL) : NULL;
    json_t *placements = json_object_get(result, "placements");
    CHECK(json_array_size(placements) == 3);
    CHECK(json_integer_value(json_object_get(result, "count")) == 3);
    /* Each its own vmid and, anti-affine, its own host. */
    const char *n0 = json_string_value(
        json_object_get(json_object_get(json_array_get(placements, 0), "node"), "name"));
    const char *n2 = json_string_value(
        json_object_get(json_object_get(json_array_get(placements, 2), "node"), "name"));
    CHECK(n0 && n2 && strcmp(n0, n2) != 0);
    CHECK(json_integer_value(json_object_get(json_array_get(placements, 0), "vmid")) !=
          json_integer_value(json_object_get(json_array_get(placements, 1), "vmid")));
    CHECK_STR(json_string_value(json_object_get(json_object_get(result, "group"), "policy")),
              "anti-affinity");
    json_decref(result);
    store_task_clear(&t);

    /* Four anti-affine ones on three hosts: none placed, nothing held. */
    before = live_reservations(f);
    size_t held = sched_engine_reservation_count(f->engine);
    char status[16], node[64], error[512];
    run(f, "count-4",
        "{\"requested_cpu\":1,\"requested_memory\":512,\"count\":4,"
        "\"group\":{\"name\":\"quad\",\"policy\":\"anti-affinity\"}}",
        status, node, error, sizeof error);
    CHECK_STR(status, "retrying");
    CHECK_CONTAINS(error, "4 VMs (all or none): 0/3 nodes are available: 3 group anti-affinity");
    CHECK(live_reservations(f) == before);
    CHECK(sched_engine_reservation_count(f->engine) == held);
    /* count without a group: too much for the hosts together (3 x 8 vCPUs
     * x the default overcommit) places nothing either. */
    run(f, "count-big", "{\"requested_cpu\":8,\"requested_memory\":1024,\"count\":64}", status,
        node, error, sizeof error);
    CHECK_STR(status, "retrying");
    CHECK_CONTAINS(error, "64 VMs (all or none)");
    CHECK(live_reservations(f) == before);
    CHECK(sched_engine_reservation_count(f->engine) == held);
}

/* Racked hosts for the spread: bm-001 and bm-002 in r1, bm-003 in r2,
 * bm-004 in r3; the handler decides over them until restored. */
static hostset *racked_hosts(void)
{
    static const char *const racks[] = {"r1", "r1", "r2", "r3"};
    vf_error err;
    vf_error_init(&err);
    hostset *set = hostset_new();
    for (int i = 0; set && i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "bm-%03d", i + 1);
        host h = fixture_host(name);
        host_traits traits;
        memset(&traits, 0, sizeof traits);
        CHECK(label_set_put(&traits.labels, "rack", racks[i], &err) == 0);
        h.traits = &traits;
        CHECK(hostset_add(set, &h, &err) == 0);
    }
    CHECK(set && hostset_finish(set, &err) == 0);
    return set;
}

/* The rack of the host a task was placed on ("" when not placed). */
static const char *rack_of(const hostset *hosts, const char *node)
{
    const host *h = node[0] ? hostset_find(hosts, node) : NULL;
    const char *rack = h ? host_traits_label(h->traits, "rack") : NULL;
    return rack ? rack : "";
}

/* A spread group's members, each its own message and transaction (three
 * control-plane machines, as the CAPPX webhook sends them): one per rack,
 * counted from the store; a fourth goes anywhere; a member asking another
 * spread is invalid; the group row records the spread; a count with a
 * spread and no group spreads its own VMs and lists each one's domain. */
static void test_spread(fixture *f)
{
    vf_error err;
    vf_error_init(&err);
    hostset *racked = racked_hosts();
    const hostset *kept = f->handler.hosts;
    CHECK(sched_engine_set_hosts(f->engine, racked, NULL, NULL, &err) == 0);
    f->handler.hosts = racked;
    static const char body[] = "{\"requested_cpu\":1,\"requested_memory\":512,"
                               "\"spread\":{\"key\":\"rack\",\"max_skew\":1},"
                               "\"group\":{\"name\":\"cp\"}}";
    char status[16], node[64], error[512];
    const char *seen[3];
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "cp-%d", i);
        run(f, id, body, status, node, NULL, 0);
        CHECK_STR(status, "completed");
        seen[i] = rack_of(racked, node);
    }
    CHECK(strcmp(seen[0], seen[1]) != 0 && strcmp(seen[1], seen[2]) != 0 &&
          strcmp(seen[0], seen[2]) != 0);
    run(f, "cp-3", body, status, node, NULL, 0);
    CHECK_STR(status, "completed");
    store_group g;
    CHECK(store_group_read(f->store, "cp", FIXED_TEXT, &g, NULL, NULL, &err) == 0);
    CHECK(g.generation == 4 && g.policy[0] == '\0');
    CHECK_STR(g.spread.key, "rack");
    CHECK(g.spread.max_skew == 1 && g.spread.min_domains == 1);
    CHECK_STR(g.spread.when, "do_not_schedule");
    run(f, "cp-bad",
        "{\"requested_cpu\":1,\"requested_memory\":512,"
        "\"spread\":{\"key\":\"rack\",\"max_skew\":2},\"group\":{\"name\":\"cp\"}}",
        status, node, error, sizeof error);
    CHECK_STR(status, "failed");
    CHECK_CONTAINS(error, "group cp: policy (none), max_per_host 0, spread rack, max_skew 2, "
                          "do_not_schedule, min_domains 1 given, but its 4 members were placed "
                          "under policy (none), max_per_host 0 (0: none), spread rack, max_skew 1, "
                          "do_not_schedule, min_domains 1");

    task_outcome out;
    CHECK(handle(f,
                 "{\"requested_cpu\":1,\"requested_memory\":512,\"count\":3,"
                 "\"spread\":{\"key\":\"rack\"}}",
                 "spread-3", 0, &out) == 0);
    CHECK_STR(out.status, "completed");
    task_outcome_close(&out);
    store_task t;
    memset(&t, 0, sizeof t);
    CHECK(store_task_get(f->store, "spread-3", &t, &err) == 0);
    json_t *result = t.result ? json_loads(t.result, 0, NULL) : NULL;
    json_t *placements = json_object_get(result, "placements");
    const char *d0 = json_string_value(json_object_get(json_array_get(placements, 0), "domain"));
    const char *d1 = json_string_value(json_object_get(json_array_get(placements, 1), "domain"));
    const char *d2 = json_string_value(json_object_get(json_array_get(placements, 2), "domain"));
    CHECK(d0 && d1 && d2 && strcmp(d0, d1) != 0 && strcmp(d1, d2) != 0 && strcmp(d0, d2) != 0);
    CHECK_STR(json_string_value(json_object_get(json_object_get(result, "spread"), "key")), "rack");
    json_decref(result);
    store_task_clear(&t);

    sched_engine_release_all(f->engine);
    CHECK(sched_engine_set_hosts(f->engine, kept, NULL, NULL, &err) == 0);
    f->handler.hosts = kept;
    hostset_free(racked);
}

/* task.release of a task placed with count 3 gives back every placement,
 * through a reservation book as the worker keeps one: each host claimed,
 * the engine holding none of them afterwards, the next catch-up finding
 * nothing stale. */
static void test_release_count(fixture *f)
{
    vf_error err;
    vf_error_init(&err);
    reservation_book *book = reservation_book_new(f->engine, &err);
    CHECK(book != NULL);
    sched_engine_release_all(f->engine);
    CHECK(reservation_book_load(book, f->store, FIXED_MS, &err) >= 0);
    f->handler.book = book;
    size_t held = sched_engine_reservation_count(f->engine);
    int live = live_reservations(f);
    task_outcome out;
    CHECK(store_begin(f->store, &err) == 0);
    CHECK(reservation_book_catch_up(book, f->store, FIXED_MS, &err) >= 0);
    static const char body[] = "{\"task_id\":\"rel-3\",\"requested_cpu\":1,"
                               "\"requested_memory\":256,\"count\":3}";
    task_message msg = {(const unsigned char *)body,
                        strlen(body),
                        false,
                        strlen(body),
                        "task.schedule",
                        "rel-3",
                        NULL,
                        false,
                        0,
                        "guest",
                        false,
                        NULL};
    memset(&out, 0, sizeof out);
    CHECK(task_handler_handle(&f->handler, &msg, &out, &err) == 0);
    CHECK_STR(out.status, "completed");
    task_outcome_close(&out);
    CHECK(store_commit(f->store, &err) == 0);
    reservation_book_committed(book);
    CHECK(live_reservations(f) == live + 3);
    CHECK(sched_engine_reservation_count(f->engine) == held + 3);

    static const char release[] = "{\"task_id\":\"rel-3\"}";
    task_message rel = {(const unsigned char *)release,
                        strlen(release),
                        false,
                        strlen(release),
                        "task.release",
                        "rel-3-release",
                        NULL,
                        false,
                        0,
                        "guest",
                        false,
                        NULL};
    CHECK(store_begin(f->store, &err) == 0);
    CHECK(reservation_book_catch_up(book, f->store, FIXED_MS, &err) >= 0);
    memset(&out, 0, sizeof out);
    CHECKF(release_handler_handle(&f->handler, &rel, &out, &err) == 0, "%s", err.text);
    CHECK_STR(out.status, "released");
    task_outcome_close(&out);
    CHECKF(store_commit(f->store, &err) == 0, "%s", err.text);
    reservation_book_committed(book);
    CHECK(live_reservations(f) == live);
    CHECK(sched_engine_reservation_count(f->engine) == held);
    /* The book's picture is the store's: the next batch claims without a
     * conflict on the hosts the release changed. */
    CHECK(store_begin(f->store, &err) == 0);
    CHECK(reservation_book_catch_up(book, f->store, FIXED_MS, &err) >= 0);
    memset(&out, 0, sizeof out);
    msg.body = (const unsigned char *)"{\"task_id\":\"rel-again\",\"requested_cpu\":1,"
                                      "\"requested_memory\":256,\"count\":3}";
    msg.body_len = strlen((const char *)msg.body);
    msg.body_size = msg.body_len;
    msg.message_id = "rel-again";
    CHECKF(task_handler_handle(&f->handler, &msg, &out, &err) == 0, "%s", err.text);
    CHECK_STR(out.status, "completed");
    task_outcome_close(&out);
    CHECKF(store_commit(f->store, &err) == 0, "%s", err.text);
    reservation_book_committed(book);
    f->handler.book = NULL;
    reservation_book_free(book);
}

/* Two writers read the group at one generation: the second claim fails as
 * a conflict, so its batch is decided again. */
static void test_claim_conflict(fixture *f)
{
    vf_error err;
    vf_error_init(&err);
    store_group g;
    CHECK(store_group_read(f->store, "race", FIXED_TEXT, &g, NULL, NULL, &err) == 0);
    CHECK(g.generation == 0);
    CHECK(store_begin(f->store, &err) == 0);
    CHECK(store_group_claim(f->store, "race", "anti-affinity", 1, NULL, 0, FIXED_TEXT, &err) == 0);
    CHECK(store_commit(f->store, &err) == 0);
    CHECK(store_begin(f->store, &err) == 0);
    CHECK(store_group_claim(f->store, "race", "anti-affinity", 1, NULL, 0, FIXED_TEXT, &err) == -1);
    CHECK(err.code == VF_ECONFLICT);
    CHECK_CONTAINS(err.text, "group race changed since read");
    (void)store_rollback(f->store, NULL);
    CHECK(store_group_read(f->store, "race", FIXED_TEXT, &g, NULL, NULL, &err) == 0);
    CHECK(g.generation == 1);
    CHECK_STR(g.policy, "anti-affinity");
    vf_error_init(&err);
    CHECK(store_begin(f->store, &err) == 0);
    CHECK(store_group_claim(f->store, "race", "anti-affinity", 1, NULL, 1, FIXED_TEXT, &err) == 0);
    CHECK(store_commit(f->store, &err) == 0);
}

/* Two writers read the group in transactions open at once (PostgreSQL,
 * where writers run side by side): the first to claim commits, the
 * second's claim at the generation it read is a conflict. */
static void test_claim_race(const char *location)
{
    vf_error err;
    vf_error_init(&err);
    store *a = store_open(location, STORE_READ_WRITE, &err);
    store *b = a ? store_open(location, STORE_READ_WRITE, &err) : NULL;
    CHECKF(a && b, "%s", err.text);
    if (!a || !b)
        goto out;
    store_group ga, gb;
    CHECK(store_begin(a, &err) == 0);
    CHECK(store_group_read(a, "race", FIXED_TEXT, &ga, NULL, NULL, &err) == 0);
    CHECK(store_begin(b, &err) == 0);
    CHECK(store_group_read(b, "race", FIXED_TEXT, &gb, NULL, NULL, &err) == 0);
    CHECK(ga.generation == 0 && gb.generation == 0);
    CHECK(store_group_claim(a, "race", "affinity", 0, NULL, ga.generation, FIXED_TEXT, &err) == 0);
    CHECK(store_commit(a, &err) == 0);
    CHECK(store_group_claim(b, "race", "affinity", 0, NULL, gb.generation, FIXED_TEXT, &err) == -1);
    CHECKF(err.code == VF_ECONFLICT, "%s", err.text);
    (void)store_rollback(b, NULL);
    /* Read again, B claims at the generation A left. */
    vf_error_init(&err);
    CHECK(store_begin(b, &err) == 0);
    CHECK(store_group_read(b, "race", FIXED_TEXT, &gb, NULL, NULL, &err) == 0);
    CHECK(gb.generation == 1);
    CHECK(store_group_claim(b, "race", "affinity", 0, NULL, gb.generation, FIXED_TEXT, &err) == 0);
    CHECKF(store_commit(b, &err) == 0, "%s", err.text);

    /* The same with writes deferred, as the worker sends them on
     * PostgreSQL: the stale claim is sent, and fails the commit. */
    store_defer_writes(a);
    store_defer_writes(b);
    vf_error_init(&err);
    CHECK(store_begin(a, &err) == 0);
    CHECK(store_group_read(a, "race", FIXED_TEXT, &ga, NULL, NULL, &err) == 0);
    CHECK(store_begin(b, &err) == 0);
    CHECK(store_group_read(b, "race", FIXED_TEXT, &gb, NULL, NULL, &err) == 0);
    CHECK(ga.generation == 2 && gb.generation == 2);
    CHECK(store_group_claim(a, "race", "affinity", 0, NULL, ga.generation, FIXED_TEXT, &err) == 0);
    CHECKF(store_commit(a, &err) == 0, "%s", err.text);
    int sent = store_group_claim(b, "race", "affinity", 0, NULL, gb.generation, FIXED_TEXT, &err);
    int committed = sent == 0 ? store_commit(b, &err) : -1;
    CHECK(committed == -1);
    CHECKF(err.code == VF_ECONFLICT, "%s", err.text);
    if (committed < 0)
        (void)store_rollback(b, NULL);
    vf_error_init(&err);
    CHECK(store_group_read(b, "race", FIXED_TEXT, &gb, NULL, NULL, &err) == 0);
    CHECK(gb.generation == 3);
out:
    store_close(b);
    store_close(a);
}

/* ---- one group read, one snapshot (PostgreSQL) ---- */

typedef struct snapshot_read {
    store *s;
    store_group group;
    int members;
    int rc;
    vf_error err;
} snapshot_read;

static int count_read_member(const store_group_member *m, void *ctx)
{
    (void)m;
    ((snapshot_read *)ctx)->members++;
    return 0;
}

static void *read_group(void *arg)
{
    snapshot_read *r = arg;
    vf_error_init(&r->err);
    r->rc = store_begin(r->s, &r->err);
    if (r->rc == 0)
        r->rc =
            store_group_read(r->s, "snap", FIXED_TEXT, &r->group, count_read_member, r, &r->err);
    vf_error ignored;
    vf_error_init(&ignored);
    (void)store_rollback(r->s, &ignored);
    return NULL;
}

/* Readers waiting for a lock on `reservations`, as pg_locks has them now
 * (not a per-transaction snapshot as pg_stat_activity is); -1 on error.
 * The statement stays in *slot. */
static int64_t waiting_on_reservations(store *s, db_stmt **slot)
{
    vf_error err;
    vf_error_init(&err);
    db_stmt *st = db_prepare(s->db, slot,
                             "SELECT COUNT(*) FROM pg_locks WHERE NOT granted "
                             "AND relation = CAST('reservations' AS regclass)",
                             &err);
    int64_t n = -1;
    if (st && db_step(st, "counting lock waits", &err) == DB_ROW)
        n = db_column_int64(st, 0);
    db_reset(st);
    return n;
}

/* A member committed while another worker reads its group is seen with the
 * group's generation and policy, or not at all: the read is one snapshot.
 * Read in two statements (the group's row, then its members), a member
 * committed between them came without its generation (0, no policy): a
 * decision would judge it under no policy, and an affinity partner was
 * recorded `invalid` (test_workers_groups on PostgreSQL: "bm-005/None").
 * The writer holds `reservations` locked while it records the member, so
 * the reader waits on it at its members; the writer then commits. */
static void test_read_snapshot(const char *location)
{
    vf_error err;
    vf_error_init(&err);
    store *writer = store_open(location, STORE_READ_WRITE, &err);
    store *reader = writer ? store_open(location, STORE_READ_WRITE, &err) : NULL;
    CHECKF(writer && reader, "%s", err.text);
    if (!writer || !reader)
        goto out;
    CHECK(store_begin(writer, &err) == 0);
    store_task_fields task = {.id = "snap-a",
                              .kind = "schedule",
                              .status = "completed",
                              .request = "{}",
                              .node = "bm-000",
                              .vmid = 4242,
                              .at = FIXED_TEXT};
    CHECKF(store_task_insert(writer, &task, &err) == 0, "%s", err.text);
    CHECKF(db_exec(writer->db, "LOCK TABLE reservations IN ACCESS EXCLUSIVE MODE",
                   "locking reservations", &err) == 0,
           "%s", err.text);
    CHECK(store_group_claim(writer, "snap", "affinity", 0, NULL, 0, FIXED_TEXT, &err) == 0);
    CHECK(store_reservation_add(writer, "snap-a", "bm-000", 1, 256, 0, 4242, FIXED_TEXT,
                                "2999-01-01T00:00:00.000Z", &err) == 0);
    CHECK(store_reservations_set_group(writer, "snap-a", "snap", &err) == 0);
    snapshot_read r = {.s = reader};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, read_group, &r) == 0);
    /* Until the reader waits on the table (a bound, not a timed check). */
    int64_t waiting = 0;
    db_stmt *locks = NULL;
    for (int i = 0; i < 3000 && waiting == 0; i++) {
        waiting = waiting_on_reservations(writer, &locks);
        if (waiting == 0)
            nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    CHECKF(waiting == 1, "the reader waits on the locked table (%lld waiting)", (long long)waiting);
    db_stmt_free(locks);
    CHECKF(store_commit(writer, &err) == 0, "%s", err.text);
    pthread_join(thread, NULL);
    CHECKF(r.rc == 0, "%s", r.err.text);
    CHECKF(r.members == 1 && r.group.generation == 1, "%d members at generation %lld", r.members,
           (long long)r.group.generation);
    CHECK_STR(r.group.policy, "affinity");
    /* What the handler judges by: the partner, affinity like the member
     * seen, is not at odds with it (it was: "placed under policy "). */
    json_t *body = json_loads("{\"requested_cpu\":1,\"requested_memory\":256,"
                              "\"group\":{\"name\":\"snap\",\"policy\":\"affinity\"}}",
                              0, NULL);
    sched_request req;
    CHECK(body && sched_request_parse(body, &req, &err) == 0);
    task_group g = {.row = r.group, .n_members = (uint32_t)r.members};
    char why[512] = "";
    CHECKF(!task_group_mismatch(&g, &req, why, sizeof why), "%s", why);
    json_decref(body);
out:
    store_close(reader);
    store_close(writer);
}

int main(void)
{
    fixture f;
    CHECK(fixture_open(&f));
    /* The reservation clock at the handler's fixed time (it is the wall
     * clock otherwise, days after the fixed reservations expired). */
    vf_error err;
    vf_error_init(&err);
    CHECK(store_inventory_fresh_set(f.store, FIXED_TEXT, &err) == 0);
    test_anti_affinity(&f);
    test_affinity(&f);
    test_count(&f);
    test_claim_conflict(&f);
    test_release_count(&f);
    test_spread(&f);
    fixture_close(&f);
    store_fixture pg;
    char url[512];
    if (store_fixture_init(&pg, "group_race") == 0) {
        /* 1: VF_PG_URL unset (noted); -1: set but unusable (a failure recorded). */
        if (store_fixture_pg(&pg, "group_race", url, sizeof url) == 0) {
            test_claim_race(url);
            test_read_snapshot(url);
        }
        store_fixture_close(&pg);
    } else {
        CHECK(!"a directory for the PostgreSQL part");
    }
    return test_summary();
}
