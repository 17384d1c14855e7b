/* Tests of worker/reservations (the reservation book and its claims) and
 * the store's claims, vmid uniqueness and leases: two "workers" — two
 * store handles (and, on PostgreSQL, the claims' handle each), two
 * engines, two books — share one real SQLite file or PostgreSQL schema, as
 * several worker processes do. */
#include "holds.h"
#include "ids.h"
#include "leases.h"
#include "reservations.h"
#include "sched_fixture.h"
#include "store.h"
#include "store_claims.h"
#include "store_groups.h"
#include "store_hosts.h"
#include "store_reservations.h"
#include "store_tasks.h"
#include "store_stats.h"
#include "store_fixture.h"
#include "store_internal.h" /* the store's db handle: its prepared statements */
#include "testlib.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FAR_FUTURE "2999-01-01T00:00:00.000Z"
#define PAST "2000-01-01T00:00:00.000Z"
#define LONG_AGO "1990-01-01T00:00:00.000Z" /* before every expiry */

typedef struct worker {
    store *store;
    store *claims; /* PostgreSQL: the claims' own handle, as the worker's; NULL on SQLite */
    sched_engine *engine;
    reservation_book *book;
} worker;

static hostset *hosts;

static void worker_open(worker *w, const char *path)
{
    vf_error err;
    vf_error_init(&err);
    sched_params params;
    fixture_params(&params);
    w->store = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(w->store != NULL, "%s", err.text);
    w->claims = NULL;
    if (!store_writers_serialized(w->store)) {
        store_defer_writes(w->store); /* as the worker's batches */
        w->claims = store_open(path, STORE_READ_WRITE, &err);
        CHECKF(w->claims != NULL, "%s", err.text);
    }
    w->engine = sched_engine_new(&params, &err);
    CHECK(w->engine != NULL);
    CHECK(sched_engine_set_hosts(w->engine, hosts, NULL, NULL, &err) == 0);
    w->book = reservation_book_new(w->engine, w->claims, &err);
    CHECK(w->book != NULL);
    CHECKF(reservation_book_load(w->book, w->store, 0, &err) >= 0, "%s", err.text);
}

static void worker_close(worker *w)
{
    reservation_book_free(w->book);
    sched_engine_free(w->engine);
    store_close(w->claims);
    store_close(w->store);
}

static void add_task(store *s, const char *id)
{
    vf_error err;
    vf_error_init(&err);
    store_task_fields f = {.id = id,
                           .kind = "schedule",
                           .status = "completed",
                           .vmid = -1,
                           .at = "2026-11-22T01:00:00.000Z"};
    CHECKF(store_task_insert(s, &f, &err) == 0, "%s", err.text);
}

static sched_request request_of(double cpu)
{
    sched_request req;
    sched_request_init(&req);
    req.cpu = cpu;
    req.memory = 1024;
    req.disk = 10;
    return req;
}

/* What a handler does for one placement: hold it in the engine, claim it
 * (queued for the end of the batch, settle). Returns 0 or -1. */
static int reserve(worker *w, const char *task, const char *node, int64_t vmid, double cpu,
                   const char *expires, vf_error *err)
{
    sched_reservation res;
    memset(&res, 0, sizeof res);
    snprintf(res.task_id, sizeof res.task_id, "%s", task);
    snprintf(res.node, sizeof res.node, "%s", node);
    res.cpu = cpu;
    res.memory = 1024;
    res.disk = 10;
    res.vmid = vmid > 0 ? (uint32_t)vmid : 0;
    if (sched_engine_reserve(w->engine, &res, err) < 0)
        return -1;
    sched_request req = request_of(cpu);
    reservation_claim c = {.task_id = task,
                           .engine = w->engine,
                           .node = hostset_find(hosts, node),
                           .vmid = res.vmid,
                           .cpu = cpu,
                           .memory = 1024,
                           .disk = 10,
                           .req = &req,
                           .created_at = "2026-11-22T01:00:00.000Z",
                           .expires_at = expires,
                           .kind = SCHED_HOLD_FULL};
    return reservation_book_claim(w->book, w->store, &c, err);
}

/* The end of a batch: its queued claims settled (PostgreSQL), into
 * *missed (may be NULL) how many missed. */
static int settle(worker *w, size_t *missed, vf_error *err)
{
    reservation_misses m = {0};
    int rc = reservation_book_settle(w->book, w->store, &m, err);
    if (missed)
        *missed = m.n;
    reservation_misses_close(&m);
    return rc;
}

static bool commit(worker *w)
{
    vf_error err;
    vf_error_init(&err);
    size_t missed = 0;
    if (settle(w, &missed, &err) < 0 || missed ||
        reservation_book_send_with_commit(w->book, w->store, &err) < 0 ||
        store_commit(w->store, &err) < 0) {
        fprintf(stderr, "commit: %s (%zu missed)\n", err.text, missed);
        (void)store_rollback(w->store, NULL);
        reservation_book_rolled_back(w->book, true, "2026-11-22T01:00:00.000Z");
        return false;
    }
    reservation_book_committed(w->book);
    return true;
}

static void rollback(worker *w, const char *task)
{
    vf_error err;
    vf_error_init(&err);
    CHECK(store_rollback(w->store, &err) == 0);
    sched_engine_release(w->engine, task);
    reservation_book_rolled_back(w->book, true, "2026-11-22T01:00:00.000Z");
}

static double reserved_cpu(worker *w, const char *node)
{
    const host *h = hostset_find(hosts, node);
    return sched_engine_host_load(w->engine, (size_t)(h - hosts->hosts))->cpu;
}

/* The store's live vCPUs on `node`. */
typedef struct live_sum {
    const char *node;
    double cpu;
    int count;
} live_sum;

static int sum_live(const store_reservation *r, void *ctx)
{
    live_sum *sum = ctx;
    if (strcmp(r->node, sum->node) == 0) {
        sum->cpu += r->cpu;
        sum->count++;
    }
    return 0;
}

static double store_cpu(store *s, const char *node)
{
    vf_error err;
    vf_error_init(&err);
    live_sum sum = {node, 0, 0};
    CHECKF(store_reservations_live(s, LONG_AGO, sum_live, &sum, &err) == 0, "%s", err.text);
    return sum.cpu;
}

static long catch_up(worker *w)
{
    vf_error err;
    vf_error_init(&err);
    long n = reservation_book_catch_up(w->book, w->store, 0, &err);
    CHECKF(n >= 0, "%s", err.text);
    return n;
}

/* Issue 35: a claim is refused only when its host has no room left for it
 * in what the store holds, never because something else changed there. The
 * fixture's hosts have 16 cores at 4.0 overcommit: 64 vCPUs. */
static void test_claims_by_fit(const char *path)
{
    worker a, b;
    worker_open(&a, path);
    worker_open(&b, path);
    vf_error err;
    vf_error_init(&err);

    /* b records 40 vCPUs on bm-1. */
    CHECK(store_begin(b.store, &err) == 0);
    CHECK(catch_up(&b) == 0);
    add_task(b.store, "t-b1");
    CHECKF(reserve(&b, "t-b1", "bm-1", 100, 40, FAR_FUTURE, &err) == 0, "%s", err.text);
    CHECK(commit(&b));

    /* a never saw it; 20 more still fit beside it: recorded, no conflict. */
    CHECK(store_begin(a.store, &err) == 0);
    add_task(a.store, "t-a1");
    CHECKF(reserve(&a, "t-a1", "bm-1", 101, 20, FAR_FUTURE, &err) == 0, "%s", err.text);
    CHECK(commit(&a));
    CHECK(store_cpu(a.store, "bm-1") == 60);

    /* a, still blind to b's 40, decides 8 more: they do not fit beside 60.
     * Nothing is recorded; a's picture of bm-1 is the store's again. */
    CHECK(store_begin(a.store, &err) == 0);
    add_task(a.store, "t-a2");
    CHECK(reserve(&a, "t-a2", "bm-1", 102, 8, FAR_FUTURE, &err) == 0);
    size_t missed = 0;
    CHECKF(settle(&a, &missed, &err) == 0, "%s", err.text);
    CHECKF(missed == 1, "%zu missed", missed);
    CHECK(reserved_cpu(&a, "bm-1") == 60);
    CHECK(store_cpu(a.store, "bm-1") == 60);
    /* 4 do fit: decided again over that picture, recorded. */
    CHECKF(reserve(&a, "t-a2", "bm-1", 102, 4, FAR_FUTURE, &err) == 0, "%s", err.text);
    CHECK(commit(&a));
    CHECK(store_cpu(a.store, "bm-1") == 64);

    /* A vmid held by another's reservation (a's t-a1), on another host:
     * missed, and the row holding it held in b's picture from then on, as
     * the store has it (its 20 vCPUs on bm-1 beside b's own 40): b's next
     * decisions are made over store rows, which a replay rebuilds. */
    CHECK(store_begin(b.store, &err) == 0);
    add_task(b.store, "t-b2");
    CHECK(reserve(&b, "t-b2", "bm-2", 101, 1, FAR_FUTURE, &err) == 0);
    missed = 0;
    CHECKF(settle(&b, &missed, &err) == 0, "%s", err.text);
    CHECKF(missed == 1, "%zu missed", missed);
    CHECK(vmidset_has(&sched_engine_holds(b.engine)->reserved_vmids, 101));
    CHECK(holds_has(sched_engine_holds(b.engine), "t-a1", "bm-1", 101));
    CHECKF(reserved_cpu(&b, "bm-1") == 60, "%g", reserved_cpu(&b, "bm-1"));
    CHECK(commit(&b));

    /* The catch-up brings a's other reservations to b (t-a1 not twice); a
     * release by anyone (here a's store handle, as the spare driver or an
     * operator would) reaches b's picture too. */
    CHECK(store_begin(b.store, &err) == 0);
    CHECK(catch_up(&b) == 0);
    CHECK(store_rollback(b.store, &err) == 0);
    CHECKF(reserved_cpu(&b, "bm-1") == 64, "%g", reserved_cpu(&b, "bm-1"));
    CHECK(store_reservation_release_task(a.store, "t-b1", "2026-11-22T02:00:00.000Z", &err) == 1);
    CHECK(store_begin(b.store, &err) == 0);
    CHECK(catch_up(&b) == 1);
    CHECK(store_rollback(b.store, &err) == 0);
    CHECK(reserved_cpu(&b, "bm-1") == 24);

    /* A batch rolled back for certain gives back what its claims recorded
     * (PostgreSQL recorded them in transactions of their own). */
    CHECK(store_begin(a.store, &err) == 0);
    CHECK(catch_up(&a) >= 0);
    add_task(a.store, "t-a3");
    CHECK(reserve(&a, "t-a3", "bm-2", 103, 4, FAR_FUTURE, &err) == 0);
    CHECK(settle(&a, &missed, &err) == 0 && missed == 0);
    rollback(&a, "t-a3");
    CHECK(store_cpu(a.store, "bm-2") == 0);

    worker_close(&a);
    worker_close(&b);
}

/* The inventory fetched at `at` shows the VM of these holds: end them, as
 * the worker's inventory sync does. */
typedef struct shown {
    store *store;
    const char *at;
    int ended;
} shown;

static void end_shown(const sched_reservation *res, void *user)
{
    shown *sh = user;
    vf_error err;
    vf_error_init(&err);
    int rc = store_reservation_release_vmid(sh->store, res->vmid, res->node,
                                            "2026-11-22T02:00:05.000Z", sh->at, &err);
    CHECKF(rc >= 0, "%s", err.text);
    sh->ended += rc > 0 ? rc : 0;
}

static int64_t ms_of(const char *text)
{
    int64_t s = 0;
    CHECK(ids_parse_time(text, &s) == 0);
    return s * 1000;
}

static long catch_up_at(worker *w, const char *view_at)
{
    vf_error err;
    vf_error_init(&err);
    CHECK(store_begin(w->store, &err) == 0);
    long n = reservation_book_catch_up(w->book, w->store, ms_of(view_at), &err);
    CHECKF(n >= 0, "%s", err.text);
    CHECK(store_rollback(w->store, &err) == 0);
    return n;
}

/* Issue 21, item 1: a ends a hold because its newer inventory shows the VM;
 * b, whose snapshot is older and does not, must keep counting it (else a
 * second VM goes to a full host, with the same vmid). It counts until b's
 * snapshot shows the VM, or is newer than the one that did and the hold's
 * time has run out. */
static void test_diverging_views(const char *path)
{
    worker a, b, c;
    worker_open(&a, path);
    worker_open(&b, path);
    vf_error err;
    vf_error_init(&err);
    hostset *with_vms = hostset_new();
    const char *names[] = {"bm-1", "bm-2", "bm-3"};
    for (size_t i = 0; i < 3; i++) {
        host h = fixture_host(names[i]);
        CHECK(hostset_add(with_vms, &h, &err) == 0);
    }
    CHECK(hostset_add_guest(with_vms, 100, 0, &err) == 0);
    CHECK(hostset_add_guest(with_vms, 101, 0, &err) == 0);
    CHECK(hostset_finish(with_vms, &err) == 0);

    /* t1 holds 8 vCPUs and vmid 100 far into the future; t2 holds 4 vCPUs
     * and vmid 101 until 01:10, long past by the wall clock. */
    CHECK(store_begin(a.store, &err) == 0);
    CHECK(reservation_book_catch_up(a.book, a.store, 0, &err) == 0);
    add_task(a.store, "t1");
    add_task(a.store, "t2");
    CHECKF(reserve(&a, "t1", "bm-1", 100, 8, FAR_FUTURE, &err) == 0, "%s", err.text);
    CHECKF(reserve(&a, "t2", "bm-1", 101, 4, "2026-11-22T01:10:00.000Z", &err) == 0, "%s",
           err.text);
    CHECK(commit(&a));
    /* b sees t1 only: t2 has expired by the store's clock (the wall clock
     * here: no inventory fetch was recorded). */
    CHECK(catch_up_at(&b, "2026-11-22T01:30:00.000Z") == 0);
    CHECK(reserved_cpu(&b, "bm-1") == 8);

    /* a's inventory, fetched at 02:00, shows both VMs: a ends both holds. */
    shown sh = {a.store, "2026-11-22T02:00:00.000Z", 0};
    CHECK(store_begin(a.store, &err) == 0);
    CHECKF(sched_engine_set_hosts(a.engine, with_vms, end_shown, &sh, &err) == 0, "%s", err.text);
    CHECK(store_commit(a.store, &err) == 0);
    CHECK(sh.ended == 2); /* a's engine still held t2: its expiry had not run */
    CHECK(reserved_cpu(&a, "bm-1") == 0);

    /* b's snapshot (01:30) is older than the evidence: both count again,
     * t2 too, although its time ran out: a VM is there, b cannot see it. */
    CHECK(catch_up_at(&b, "2026-11-22T01:30:00.000Z") == 1);
    CHECK(reserved_cpu(&b, "bm-1") == 12);

    /* A worker that started now (no snapshot: t1 only, unexpired) and then
     * got an old snapshot counts both. */
    worker_open(&c, path);
    CHECK(reserved_cpu(&c, "bm-1") == 8);
    CHECK(catch_up_at(&c, "2026-11-22T01:30:00.000Z") >= 0);
    CHECK(reserved_cpu(&c, "bm-1") == 12);
    worker_close(&c);

    /* b's next snapshot still lacks the VMs but is newer than the evidence:
     * t2 ends with b's expiry pass; t1 counts until it expires. */
    CHECK(catch_up_at(&b, "2026-11-22T02:30:00.000Z") == 0);
    CHECK(sched_engine_expire(b.engine, ms_of("2026-11-22T02:30:00.000Z") / 1000) == 1);
    CHECK(reserved_cpu(&b, "bm-1") == 8);
    worker_open(&c, path);
    CHECK(catch_up_at(&c, "2026-11-22T02:30:00.000Z") >= 0);
    CHECK(reserved_cpu(&c, "bm-1") == 8);
    worker_close(&c);

    /* b's snapshot shows the VM: the host's own figures count it now. */
    CHECK(sched_engine_set_hosts(b.engine, with_vms, NULL, NULL, &err) == 0);
    CHECK(reserved_cpu(&b, "bm-1") == 0);
    worker_open(&c, path);
    CHECK(sched_engine_set_hosts(c.engine, with_vms, NULL, NULL, &err) == 0);
    CHECK(catch_up_at(&c, "2026-11-22T02:30:00.000Z") >= 0);
    CHECK(reserved_cpu(&c, "bm-1") == 0);
    worker_close(&c);

    /* Back on a snapshot without the VMs but newer than the evidence, a
     * fresh worker still counts t1 (not expired), yet no longer t2. */
    CHECK(sched_engine_set_hosts(b.engine, hosts, NULL, NULL, &err) == 0);
    worker_open(&c, path);
    CHECK(catch_up_at(&c, "2026-11-22T03:00:00.000Z") >= 0);
    CHECK(reserved_cpu(&c, "bm-1") == 8);
    worker_close(&c);

    worker_close(&a);
    worker_close(&b);
    hostset_free(with_vms);
}

/* Many claimers at once on one host with room for exactly 64 one-vCPU
 * placements: 4 processes, 40 placements each, one claim per transaction
 * (the claims of each process's batches). Exactly 64 are recorded, the
 * rest refused for room: the claims' host locks order them. */
static void test_concurrent_claims_fit(const char *path)
{
    enum { CLAIMERS = 4, EACH = 40 };
    /* The store made (migrated) before the claimers start: what they race
     * for is the claims, not the first open, whose migration under Valgrind
     * (two tests at once) outlasted the others' busy timeout. */
    vf_error made;
    vf_error_init(&made);
    store *fresh = store_open(path, STORE_READ_WRITE, &made);
    CHECKF(fresh != NULL, "%s", made.text);
    store_close(fresh);
    pid_t pids[CLAIMERS];
    for (int p = 0; p < CLAIMERS; p++) {
        pids[p] = fork();
        if (pids[p] != 0)
            continue;
        int recorded = 0;
        worker w;
        worker_open(&w, path);
        for (int i = 0; i < EACH; i++) {
            vf_error err;
            vf_error_init(&err);
            char task[32];
            snprintf(task, sizeof task, "cc-%d-%02d", p, i);
            /* The store busy past its timeout (a slow run: Valgrind) is a
             * batch not recorded, as the worker takes it: rolled back. */
            if (store_begin(w.store, &err) < 0) {
                if (err.code == VF_EUNAVAILABLE)
                    continue;
                _exit(100);
            }
            add_task(w.store, task);
            int rc = reserve(&w, task, "bm-3", 1000 + p * 100 + i, 1, FAR_FUTURE, &err);
            size_t missed = 0;
            if (rc == 0 && settle(&w, &missed, &err) < 0) {
                if (err.code != VF_EUNAVAILABLE)
                    _exit(101);
                missed = 1;
            }
            if (missed) {
                (void)store_rollback(w.store, NULL);
                reservation_book_rolled_back(w.book, true, "2026-11-22T01:00:00.000Z");
                continue;
            }
            if (rc < 0) {
                (void)store_rollback(w.store, NULL);
                reservation_book_rolled_back(w.book, true, "2026-11-22T01:00:00.000Z");
                continue;
            }
            if (!commit(&w)) /* rolled back (a store busy past its timeout) */
                continue;
            recorded++;
        }
        worker_close(&w);
        _exit(recorded);
    }
    int total = 0;
    for (int p = 0; p < CLAIMERS; p++) {
        int status = 0;
        CHECK(waitpid(pids[p], &status, 0) == pids[p]);
        CHECKF(WIFEXITED(status) && WEXITSTATUS(status) <= EACH, "claimer %d: status %d", p,
               status);
        total += WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    }
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(path, STORE_READ_ONLY, &err);
    CHECKF(s != NULL, "%s", err.text);
    CHECKF(store_cpu(s, "bm-3") == 64, "bm-3 holds %g vCPUs", store_cpu(s, "bm-3"));
    CHECKF(total == 64, "%d placements recorded", total);
    store_close(s);
}

/* PostgreSQL: a claim never waits for another worker's open transaction.
 * Worker a's batch released a reservation on bm-2 (its host generation's
 * row locked until a commits) and stays open, as a paused worker's would;
 * b's claim on bm-2, from another process, still completes meanwhile. */
static void test_claim_beside_open_transaction(const char *url)
{
    worker a;
    worker_open(&a, url);
    vf_error err;
    vf_error_init(&err);
    CHECK(store_begin(a.store, &err) == 0);
    add_task(a.store, "o-1");
    CHECK(reserve(&a, "o-1", "bm-2", 800, 2, FAR_FUTURE, &err) == 0);
    CHECK(commit(&a));
    CHECK(store_begin(a.store, &err) == 0);
    CHECK(store_reservation_release_task(a.store, "o-1", "2026-11-22T02:00:00.000Z", &err) == 1);
    pid_t child = fork();
    if (child == 0) {
        worker b;
        worker_open(&b, url);
        vf_error_init(&err);
        int ok = store_begin(b.store, &err) == 0;
        add_task(b.store, "o-2");
        ok = ok && reserve(&b, "o-2", "bm-2", 801, 2, FAR_FUTURE, &err) == 0;
        ok = ok && commit(&b);
        worker_close(&b);
        _exit(ok ? 0 : 1);
    }
    /* A condition, not a time: the child finishes while a stays open (were
     * it waiting for a, it would wait until the statement timeout). */
    int status = -1;
    for (int i = 0; i < 600 && waitpid(child, &status, WNOHANG) == 0; i++) {
        struct timespec step = {0, 50 * 1000 * 1000};
        nanosleep(&step, NULL);
    }
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "the claim beside an open transaction finished (status %d)", status);
    if (status == -1) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
    }
    CHECK(store_rollback(a.store, &err) == 0);
    worker_close(&a);
}

typedef struct vmid_holders {
    int64_t vmid;
    int count;
    char task_id[64];
} vmid_holders;

static int count_holder(const store_reservation *r, void *ctx)
{
    vmid_holders *h = ctx;
    if (r->vmid == h->vmid) {
        h->count++;
        snprintf(h->task_id, sizeof h->task_id, "%s", r->task_id);
    }
    return 0;
}

/* A vmid is held by one live reservation at most: a claim of a vmid held
 * elsewhere misses; one whose holder has expired (no sweep marked it yet)
 * frees it and is recorded, the holder released. */
static void test_vmid_held_once(const char *path)
{
    worker a, b;
    worker_open(&a, path);
    worker_open(&b, path);
    vf_error err;
    vf_error_init(&err);

    CHECK(store_begin(a.store, &err) == 0);
    add_task(a.store, "v-a");
    CHECK(reserve(&a, "v-a", "bm-1", 500, 1, FAR_FUTURE, &err) == 0);
    CHECK(commit(&a));

    /* Another host, the same vmid, from a picture that never saw it. */
    CHECK(store_begin(b.store, &err) == 0);
    add_task(b.store, "v-b");
    CHECK(reserve(&b, "v-b", "bm-2", 500, 1, FAR_FUTURE, &err) == 0);
    size_t missed = 0;
    CHECKF(settle(&b, &missed, &err) == 0, "%s", err.text);
    CHECKF(missed == 1, "%zu missed", missed);
    rollback(&b, "v-b");

    CHECK(store_begin(a.store, &err) == 0);
    add_task(a.store, "v-old");
    CHECK(reserve(&a, "v-old", "bm-1", 501, 1, PAST, &err) == 0);
    CHECK(commit(&a));
    CHECK(store_begin(b.store, &err) == 0);
    CHECK(catch_up(&b) >= 0);
    add_task(b.store, "v-new");
    CHECKF(reserve(&b, "v-new", "bm-2", 501, 1, FAR_FUTURE, &err) == 0, "%s", err.text);
    CHECKF(commit(&b), "%s", "the reservation replacing an expired holder commits");
    vmid_holders held = {.vmid = 501};
    CHECK(store_reservations_counted(a.store, LONG_AGO, LONG_AGO, count_holder, &held, &err) == 0);
    CHECKF(held.count == 1, "vmid 501 held %d times", held.count);
    CHECK_STR(held.task_id, "v-new");

    /* A reservation without a vmid (NULL: no conflict, no holder to free)
     * is recorded once. */
    CHECK(store_begin(a.store, &err) == 0);
    add_task(a.store, "v-none");
    CHECKF(reserve(&a, "v-none", "bm-3", -1, 1, FAR_FUTURE, &err) == 0, "%s", err.text);
    CHECK(commit(&a));
    vmid_holders none = {.vmid = -1};
    CHECK(store_reservations_counted(a.store, LONG_AGO, LONG_AGO, count_holder, &none, &err) == 0);
    CHECKF(none.count == 1, "a reservation without a vmid recorded %d times", none.count);

    worker_close(&a);
    worker_close(&b);
}

/* A reservation written directly in a transaction of deferred writes
 * (PostgreSQL): a live holder of its vmid fails the commit, an expired one
 * is freed. */
static void test_vmid_held_once_deferred(const char *path)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    store_defer_writes(s);
    CHECK(store_begin(s, &err) == 0);
    add_task(s, "d-a");
    add_task(s, "d-old");
    CHECK(store_reservation_add(s, "d-a", "bm-1", 1, 1, 1, 600, PAST, FAR_FUTURE, &err) == 0);
    CHECK(store_reservation_add(s, "d-old", "bm-1", 1, 1, 1, 601, PAST, PAST, &err) == 0);
    CHECK(store_commit(s, &err) == 0);
    CHECK(store_begin(s, &err) == 0);
    add_task(s, "d-b");
    CHECK(store_reservation_add(s, "d-b", "bm-2", 1, 1, 1, 600, PAST, FAR_FUTURE, &err) == 0);
    CHECK(store_commit(s, &err) < 0);
    CHECKF(err.code == VF_ECONFLICT, "code %d: %s", err.code, err.text);
    CHECK_CONTAINS(err.text, "vmid 600");
    vf_error_init(&err);
    CHECK(store_begin(s, &err) == 0);
    add_task(s, "d-new");
    CHECK(store_reservation_add(s, "d-new", "bm-2", 1, 1, 1, 601, "2026-11-22T01:00:00.000Z",
                                FAR_FUTURE, &err) == 0);
    CHECKF(store_commit(s, &err) == 0, "%s", err.text);
    vmid_holders held = {.vmid = 601};
    CHECK(store_reservations_counted(s, LONG_AGO, LONG_AGO, count_holder, &held, &err) == 0);
    CHECKF(held.count == 1 && strcmp(held.task_id, "d-new") == 0, "vmid 601 held %d times",
           held.count);
    store_close(s);
}

static int count_live_of_task(const store_reservation *r, void *ctx)
{
    if (!r->released_at)
        ++*(int *)ctx;
    return 0;
}

/* A redelivered task gives back what its earlier claims hold, not what its
 * new decision claims at the same moment. On PostgreSQL the release is
 * deferred to the commit, after this decision's claim is recorded: it
 * released that one too, the task was placed without a reservation and its
 * vmid given again (test_workers_shared_store_proxied: "vmids given
 * twice"). */
static void test_release_unanswered_spares_new_claim(const char *path)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(path, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    const char *now = "2026-11-22T01:00:00.000Z";
    CHECK(store_begin(s, &err) == 0);
    add_task(s, "u-1");
    CHECK(store_reservation_add(s, "u-1", "bm-1", 1, 1, 1, 700, PAST, FAR_FUTURE, &err) == 0);
    CHECKF(store_commit(s, &err) == 0, "%s", err.text);
    store_defer_writes(s);
    CHECK(store_begin(s, &err) == 0);
    CHECK(store_reservation_release_unanswered(s, "u-1", now, &err) == 0);
    CHECK(store_reservation_add(s, "u-1", "bm-2", 1, 1, 1, 701, now, FAR_FUTURE, &err) == 0);
    CHECK(store_reservation_release_unanswered(s, "u-1", now, &err) == 0);
    CHECKF(store_commit(s, &err) == 0, "%s", err.text);
    int live = 0;
    CHECK(store_task_reservations(s, "u-1", count_live_of_task, &live, &err) == 0);
    CHECKF(live == 1, "the new claim alone held: %d live", live);
    vmid_holders held = {.vmid = 701};
    CHECK(store_reservations_counted(s, LONG_AGO, LONG_AGO, count_holder, &held, &err) == 0);
    CHECKF(held.count == 1, "vmid 701 held %d times", held.count);
    store_close(s);
}

/* A hold that ends within a second ends in the engine no earlier than in
 * the store. The engine expires holds by whole seconds of the inventory's
 * fetch time, the store by the millisecond: rounded down, the engine freed
 * the room of a reservation the store still held for up to a second, a
 * waiting task rechecked on that room was refused by the store and decided
 * again, and the room then looked as if it had never grown (the recheck
 * on room never came: test_recheck_on_room failed so under load). */
static void test_expiry_within_a_second(const char *path)
{
    worker a, b;
    worker_open(&a, path);
    worker_open(&b, path);
    vf_error err;
    vf_error_init(&err);
    CHECK(sched_hold_expiry_s(0) == 0);
    CHECK(sched_hold_expiry_s(1000) == 1);
    CHECK(sched_hold_expiry_s(1001) == 2);
    CHECK(sched_hold_expiry_s(1999) == 2);

    CHECK(store_begin(a.store, &err) == 0);
    add_task(a.store, "e-1");
    CHECK(reserve(&a, "e-1", "bm-3", 700, 2, "2999-01-01T01:10:00.700Z", &err) == 0);
    CHECK(commit(&a));
    /* b reads the hold from the store, as a restarted worker does (in the
     * future: the store's clock is the wall clock until a fetch is recorded). */
    CHECK(catch_up_at(&b, "2999-01-01T01:05:00.000Z") >= 0);
    CHECK(reserved_cpu(&b, "bm-3") == 2);

    /* An inventory fetched at 01:10:00.200: the store keeps it... */
    CHECK(store_begin(b.store, &err) == 0);
    CHECK(store_reservations_expire(b.store, "2999-01-01T01:10:00.200Z", &err) == 0);
    CHECK(store_commit(b.store, &err) == 0);
    /* ...and so does the engine (second 01:10:00). */
    CHECK(sched_engine_expire(b.engine, ms_of("2999-01-01T01:10:00.200Z") / 1000) == 0);
    CHECK(reserved_cpu(&b, "bm-3") == 2);

    /* Fetched at 01:10:01.000: both end it. */
    CHECK(store_begin(b.store, &err) == 0);
    CHECK(store_reservations_expire(b.store, "2999-01-01T01:10:01.000Z", &err) == 1);
    CHECK(store_commit(b.store, &err) == 0);
    CHECK(sched_engine_expire(b.engine, ms_of("2999-01-01T01:10:01.000Z") / 1000) == 1);
    CHECK(reserved_cpu(&b, "bm-3") == 0);

    worker_close(&a);
    worker_close(&b);
}

static void test_leases(const char *path)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(path, STORE_READ_WRITE, &err);
    CHECK(s != NULL);
    const char *t0 = "2026-11-22T01:00:00.000Z", *t1 = "2026-11-22T01:00:30.000Z",
               *t2 = "2026-11-22T01:01:00.000Z", *t3 = "2026-11-22T01:01:30.000Z";
    CHECK(store_lease_acquire(s, "spares", "w1", t0, t1, &err) == 1);
    CHECK(store_lease_acquire(s, "spares", "w2", t0, t1, &err) == 0);
    CHECK(store_lease_acquire(s, "outbox", "w2", t0, t1, &err) == 1); /* another job */
    CHECK(store_lease_acquire(s, "spares", "w1", t1, t2, &err) == 1); /* renewed */
    CHECK(store_lease_acquire(s, "spares", "w2", t1, t2, &err) == 0);
    /* w1 stopped renewing (died): w2 takes over once it expired, and w1 has
     * lost it when it comes back. */
    CHECK(store_lease_acquire(s, "spares", "w2", t2, t3, &err) == 1);
    CHECK(store_lease_acquire(s, "spares", "w1", t2, t3, &err) == 0);
    /* A clean stop gives it up at once. */
    CHECK(store_lease_release(s, "spares", "w1", &err) == 0); /* not w1's: no-op */
    CHECK(store_lease_acquire(s, "spares", "w1", t2, t3, &err) == 0);
    CHECK(store_lease_release(s, "spares", "w2", &err) == 0);
    CHECK(store_lease_acquire(s, "spares", "w1", t2, t3, &err) == 1);
    /* Every take-over by another owner is a new epoch (w1, w2, w1: 3), a
     * clean stop included: the row stays, so epochs never start again. */
    char holder[STORE_OWNER_SIZE];
    int64_t epoch = 0;
    CHECK(store_lease_holder(s, "spares", holder, sizeof holder, &epoch, &err) == 1);
    CHECK_STR(holder, "w1");
    CHECKF(epoch == 3, "epoch %lld", (long long)epoch);
    CHECK(store_lease_acquire(s, "spares", "w1", t2, t3, &err) == 1); /* renewal: same epoch */
    CHECK(store_lease_holder(s, "spares", holder, sizeof holder, &epoch, &err) == 1 && epoch == 3);
    /* A record is fenced by the epoch it was started under. */
    CHECK(store_begin(s, &err) == 0);
    CHECK(store_lease_fence(s, "spares", "w1", 3, &err) == 1);
    CHECK(store_lease_fence(s, "spares", "w1", 2, &err) == 0);
    CHECK(store_lease_fence(s, "spares", "w2", 3, &err) == 0);
    CHECK(store_commit(s, &err) == 0);
    CHECK(store_lease_fence(s, "spares", "w1", 3, &err) == -1); /* outside a transaction */
    char owner[STORE_OWNER_SIZE], other[STORE_OWNER_SIZE];
    store_owner_name(owner);
    store_owner_name(other);
    CHECK(strcmp(owner, other) != 0);

    /* Renewal extends only the owner's leases; a holder can be replaced
     * only while it still holds the lease. */
    CHECK(store_leases_renew(s, "w1", "2026-11-22T01:05:00.000Z", &err) == 1);
    CHECK(store_lease_acquire(s, "spares", "w2", t3, t3, &err) == 0);
    CHECK(store_lease_holder(s, "spares", holder, sizeof holder, NULL, &err) == 1);
    CHECK_STR(holder, "w1");
    CHECK(store_lease_holder(s, "nothing", holder, sizeof holder, NULL, &err) == 0);
    CHECK(store_lease_take_over(s, "spares", "w9", "w2", t3, t3, &err) == 0);
    CHECK(store_lease_take_over(s, "spares", "w1", "w2", t3, t3, &err) == 1);
    CHECK(store_lease_holder(s, "spares", holder, sizeof holder, &epoch, &err) == 1);
    CHECK_STR(holder, "w2");
    CHECK(epoch == 4);

    /* lease_hold takes a lease over at once from a dead process of this
     * machine (a worker restarted after kill -9), not from a live one. */
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    /* Our owner name's host part: host name, "@", PID namespace, ".", boot. */
    char host[128], bare[64] = "";
    snprintf(host, sizeof host, "%.127s", owner);
    *strrchr(host, ':') = '\0';
    *strrchr(host, ':') = '\0';
    CHECKF(strchr(host, '@') && strchr(strchr(host, '@'), '.'), "scope in %s", owner);
    snprintf(bare, sizeof bare, "%.*s", (int)(strchr(host, '@') - host), host);
    char dead[STORE_OWNER_SIZE], alive[STORE_OWNER_SIZE];
    snprintf(dead, sizeof dead, "%s:%ld:w_dead", host, (long)child);
    snprintf(alive, sizeof alive, "%s:%ld:w_alive", host, (long)getppid());
    CHECK(lease_holder_dead(dead, owner));
    CHECK(!lease_holder_dead(alive, owner));
    CHECK(!lease_holder_dead(owner, owner));
    CHECK(!lease_holder_dead("elsewhere:1:w_x", owner));
    CHECK(!lease_holder_dead("garbage", owner));
    char same_pid[STORE_OWNER_SIZE];
    snprintf(same_pid, sizeof same_pid, "%s:%ld:w_earlier_life", host, (long)getpid());
    CHECK(lease_holder_dead(same_pid, owner));
    /* The same host name and process id in another PID namespace (another
     * container under the same host name) or another boot is another
     * process: never judged dead. Nor is a holder named without a scope. */
    char other_ns[STORE_OWNER_SIZE], other_boot[STORE_OWNER_SIZE], no_scope[STORE_OWNER_SIZE];
    snprintf(other_ns, sizeof other_ns, "%s@1.%s:%ld:w_x", bare, strchr(host, '.') + 1,
             (long)getpid());
    snprintf(other_boot, sizeof other_boot, "%.*s.00000000-0000-0000-0000-000000000000:%ld:w_x",
             (int)(strchr(host, '.') - host), host, (long)getpid());
    snprintf(no_scope, sizeof no_scope, "%s:%ld:w_x", bare, (long)getpid());
    CHECK(!lease_holder_dead(other_ns, owner));
    CHECK(!lease_holder_dead(other_boot, owner));
    CHECK(!lease_holder_dead(no_scope, owner));
    CHECK(!lease_holder_dead(dead, no_scope));

    CHECK(store_lease_acquire(s, "job-alive", alive, t0, "2999-01-01T00:00:00.000Z", &err) == 1);
    CHECK(lease_hold(s, "job-alive", owner, NULL, &err) == 0);
    CHECK(store_lease_acquire(s, "job-other-ns", other_ns, t0, "2999-01-01T00:00:00.000Z", &err) ==
          1);
    CHECK(lease_hold(s, "job-other-ns", owner, NULL, &err) == 0);
    CHECK(store_lease_acquire(s, "job-dead", dead, t0, "2999-01-01T00:00:00.000Z", &err) == 1);
    epoch = 0;
    CHECK(lease_hold(s, "job-dead", owner, &epoch, &err) == 1 && epoch == 2);
    CHECK(lease_still_held(s, "job-dead", owner, 2, &err) == 1);
    CHECK(lease_still_held(s, "job-dead", owner, 1, &err) == 0);
    CHECK(lease_hold(s, "job-free", owner, &epoch, &err) == 1 && epoch == 1);
    CHECK(lease_renew_all(s, owner, &err) == 0);

    /* Workers announce themselves; a dead one does not count as alive. */
    int others = -1;
    CHECK(lease_announce(s, owner, &err) == 0);
    CHECK(lease_others_alive(s, owner, &others, &err) == 0 && others == 0);
    CHECK(lease_announce(s, alive, &err) == 0);
    CHECK(lease_announce(s, dead, &err) == 0);
    CHECK(lease_others_alive(s, owner, &others, &err) == 0 && others == 1);
    lease_withdraw(s, alive);
    CHECK(lease_others_alive(s, owner, &others, &err) == 0 && others == 0);

    /* vmid classes: live workers never share one; a dead one's is free at
     * once for a process of its scope, a given-back one for anyone. */
    uint32_t slot = 99, other_slot = 99;
    CHECK(lease_take_slot(s, owner, 4, 2, &slot, &err) == 1 && slot == 2);
    CHECK(lease_take_slot(s, alive, 4, 2, &other_slot, &err) == 1 && other_slot == 3);
    CHECK(lease_take_slot(s, other_ns, 4, 3, &other_slot, &err) == 1 && other_slot == 0);
    CHECK(lease_keep_slot(s, owner, 4, 2, &err) == 1);
    CHECK(lease_keep_slot(s, alive, 4, 2, &err) == 0);
    CHECK(store_lease_acquire(s, "vmid-slot:4:1", dead, t0, "2999-01-01T00:00:00.000Z", &err) == 1);
    CHECK(lease_take_slot(s, owner, 4, 1, &other_slot, &err) == 1 && other_slot == 1);
    /* Every class held by a live worker: none. */
    CHECK(lease_take_slot(s, "elsewhere:7:abc", 4, 0, &other_slot, &err) == 0);
    lease_give_slot(s, alive, 4, 3);
    CHECK(lease_take_slot(s, "elsewhere:7:abc", 4, 0, &other_slot, &err) == 1 && other_slot == 3);
    /* Another stride is another set of classes. */
    CHECK(lease_take_slot(s, alive, 8, 2, &other_slot, &err) == 1 && other_slot == 2);
    /* A live worker paused past its class's lease: the class is taken by
     * the next worker that asks, and the paused one, renewing, learns it
     * lost it (then takes another: service.c keep_vmid_slot). */
    const char *paused = "elsewhere:9:w_paused";
    CHECK(store_lease_acquire(s, "vmid-slot:2:0", paused, t0, t1, &err) == 1);
    CHECK(lease_take_slot(s, alive, 2, 0, &other_slot, &err) == 1 && other_slot == 0);
    CHECK(lease_keep_slot(s, paused, 2, 0, &err) == 0);
    CHECK(lease_take_slot(s, paused, 2, 0, &other_slot, &err) == 1 && other_slot == 1);
    CHECK(lease_keep_slot(s, alive, 2, 0, &err) == 1);
    store_close(s);
}

/* Before a call that prepares one statement on s's PostgreSQL connection:
 * note the statements prepared so far. */
static void prepared_mark(store *s)
{
    vf_error err;
    vf_error_init(&err);
    CHECKF(db_exec(s->db,
                   "DROP TABLE IF EXISTS pg_temp.vf_seen; "
                   "CREATE TEMP TABLE vf_seen AS SELECT name FROM pg_prepared_statements",
                   "noting prepared statements", &err) == 0,
           "%s", err.text);
}

/* The generic plan of each statement prepared since prepared_mark (`n` of
 * them), as EXPLAIN prints it: the plan a prepared statement keeps from
 * its sixth execution on, whatever its parameters (plan_cache_mode =
 * force_generic_plan skips the five custom plans). Each must contain
 * `expected`. */
static void check_generic_plans(store *s, int n, const char *expected)
{
    vf_error err;
    vf_error_init(&err);
    db_stmt *slot = NULL;
    db_stmt *st =
        db_prepare(s->db, &slot,
                   "SELECT name, cardinality(parameter_types) FROM pg_prepared_statements "
                   "WHERE name NOT IN (SELECT name FROM pg_temp.vf_seen) "
                   "AND statement NOT LIKE '%pg_prepared_statements%'",
                   &err);
    char explain[4][128];
    int found = 0;
    while (st && db_step(st, "listing prepared statements", &err) == DB_ROW) {
        if (found < 4) {
            int len = snprintf(explain[found], sizeof explain[found], "EXPLAIN EXECUTE %.40s(",
                               db_column_text(st, 0));
            for (int64_t i = 0, params = db_column_int64(st, 1); i < params && i < 8; i++)
                len += snprintf(explain[found] + len, sizeof explain[found] - (size_t)len, "%sNULL",
                                i ? ", " : "");
            snprintf(explain[found] + len, sizeof explain[found] - (size_t)len, ")");
        }
        found++;
    }
    db_stmt_free(slot);
    CHECKF(found == n, "%d statements prepared by the call, %d expected (%s)", found, n, err.text);
    CHECKF(db_exec(s->db, "SET plan_cache_mode = force_generic_plan", "forcing generic plans",
                   &err) == 0,
           "%s", err.text);
    for (int k = 0; k < found && k < 4; k++) {
        char plan[2048] = "";
        st = db_prepare(s->db, &slot, explain[k], &err);
        size_t used = 0;
        while (st && db_step(st, "explaining", &err) == DB_ROW) {
            int len = snprintf(plan + used, sizeof plan - used, "%s\n", db_column_text(st, 0));
            if (len > 0)
                used = used + (size_t)len < sizeof plan ? used + (size_t)len : sizeof plan - 1;
        }
        db_stmt_free(slot);
        CHECKF(plan[0] != '\0', "%s: %s", explain[k], err.text);
        CHECK_CONTAINS(plan, expected);
    }
    CHECKF(db_exec(s->db, "RESET plan_cache_mode; DROP TABLE pg_temp.vf_seen", "resetting", &err) ==
               0,
           "%s", err.text);
}

/* The statements that end or mark a task's live reservations find them
 * through the task's index, whatever the table's statistics say. Each is
 * prepared once and runs thousands of times; PostgreSQL makes its generic
 * plan at the sixth run. On a table without statistics (new, or short of
 * autovacuum's first ANALYZE) every partial index on `released_at IS NULL`
 * costs the same as reservations_by_task's range, and the plan picked
 * reservations_live_by_node with no index condition: each call then read
 * every live reservation (of every host, or of the host for the
 * preemption) until an ANALYZE re-planned it. On PostgreSQL the generic
 * plan of each is checked on the fresh, empty table; on both stores the
 * statements end only live reservations of their task. */
static void test_task_statements_plan(const char *location)
{
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(location, STORE_READ_WRITE, &err);
    CHECKF(s != NULL, "%s", err.text);
    if (!s)
        return;
    bool pg = store_is_pg(s);
    add_task(s, "p-1");
    add_task(s, "p-2");
    int32_t low = 1;
    CHECK(store_reservation_add_priority(s, "p-1", "bm-1", 1, 256, 0, 601, &low, PAST, FAR_FUTURE,
                                         &err) == 0);
    CHECK(store_reservation_add(s, "p-2", "bm-1", 1, 256, 0, 602, PAST, FAR_FUTURE, &err) == 0);
    if (pg)
        prepared_mark(s);
    CHECKF(store_reservations_set_group(s, "p-1", "g", &err) == 0, "%s", err.text);
    if (pg)
        check_generic_plans(s, 1, "Index Cond: (task_id = $1)");

    if (pg)
        prepared_mark(s);
    CHECK(store_reservation_preempt(s, "p-1", "bm-1", 5, FAR_FUTURE, PAST, &err) == 1);
    if (pg)
        check_generic_plans(s, 1, "Index Cond: (task_id = $1)");
    /* Ended already: not again. */
    CHECK(store_reservation_preempt(s, "p-1", "bm-1", 5, FAR_FUTURE, PAST, &err) == 0);

    /* Two statements: the bound ones' custom resources, then the live ones. */
    if (pg)
        prepared_mark(s);
    CHECK(store_reservation_release_task(s, "p-1", PAST, &err) == 0);
    if (pg)
        check_generic_plans(s, 2, "Index Cond: (task_id = $1)");
    /* The task reserves again: only that one is live. */
    CHECK(store_reservation_add(s, "p-1", "bm-2", 1, 256, 0, 603, PAST, FAR_FUTURE, &err) == 0);
    CHECK(store_reservation_release_task(s, "p-1", PAST, &err) == 1);
    CHECK(store_reservation_release_task(s, "p-2", PAST, &err) == 1);
    CHECK(store_reservation_release_task(s, "p-2", PAST, &err) == 0);
    store_close(s);
}

/* The claim's number arrays (store_arrays.c, digits written by hand): every
 * int64 as PostgreSQL reads it, the extremes and signs included, and whole
 * doubles through the same path. */
static void test_pg_array_numbers(void)
{
    store_pg_array a = {0};
    const int64_t values[] = {0, 7, -1, 10, -42, 1234567890123, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        store_pg_array_int(&a, values[i]);
    store_pg_array_double(&a, 2.0);
    store_pg_array_double(&a, -16384.0);
    store_pg_array_double(&a, 2.5);
    store_pg_array_null(&a);
    char *text = store_pg_array_finish(&a);
    CHECK(text && strcmp(text, "{0,7,-1,10,-42,1234567890123,9223372036854775807,"
                               "-9223372036854775808,2,-16384,2.5,NULL}") == 0);
    free(text);
}

int main(void)
{
    store_fixture fixture;
    if (store_fixture_init(&fixture, "reservations") != 0)
        return 1;
    vf_error err;
    vf_error_init(&err);
    hosts = hostset_new();
    const char *names[] = {"bm-1", "bm-2", "bm-3"};
    for (size_t i = 0; i < 3; i++) {
        host h = fixture_host(names[i]);
        CHECK(hostset_add(hosts, &h, &err) == 0);
    }
    CHECK(hostset_finish(hosts, &err) == 0);

    test_pg_array_numbers();
    char path[128];
    test_claims_by_fit(store_fixture_file(&fixture, "fit.db", path, sizeof path));
    test_vmid_held_once(store_fixture_file(&fixture, "vmid.db", path, sizeof path));
    test_leases(store_fixture_file(&fixture, "lease.db", path, sizeof path));
    test_diverging_views(store_fixture_file(&fixture, "diverging.db", path, sizeof path));
    test_expiry_within_a_second(store_fixture_file(&fixture, "expiry.db", path, sizeof path));
    test_task_statements_plan(store_fixture_file(&fixture, "plan.db", path, sizeof path));
    test_concurrent_claims_fit(store_fixture_file(&fixture, "concurrent.db", path, sizeof path));
    test_release_unanswered_spares_new_claim(
        store_fixture_file(&fixture, "unanswered.db", path, sizeof path));

    /* The same on PostgreSQL, where claims run in transactions of their
     * own beside the batches' and the server's function counts. */
    char url[512];
    const char *names_pg[] = {"fit",  "vmid",       "vmid_deferred", "lease",     "diverging",
                              "plan", "concurrent", "beside",        "unanswered"};
    void (*tests_pg[])(const char *) = {test_claims_by_fit,
                                        test_vmid_held_once,
                                        test_vmid_held_once_deferred,
                                        test_leases,
                                        test_diverging_views,
                                        test_task_statements_plan,
                                        test_concurrent_claims_fit,
                                        test_claim_beside_open_transaction,
                                        test_release_unanswered_spares_new_claim};
    for (size_t i = 0; i < sizeof tests_pg / sizeof tests_pg[0]; i++) {
        if (store_fixture_pg(&fixture, names_pg[i], url, sizeof url) == 0)
            tests_pg[i](url);
    }

    hostset_free(hosts);
    store_fixture_close(&fixture);
    return test_summary();
}
