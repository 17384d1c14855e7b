#include "reservations.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "ids.h"
#include "store_hosts.h"
#include "store_reservations.h"

typedef struct holder {
    sched_engine *engine;
    long count;
    vf_error *err;
    bool failed;
} holder;

/* Store time text (2026-11-22T01:02:03.123Z) as Unix milliseconds, which
 * ids_parse_time gives in whole seconds: two placements in one second keep
 * their order, and an expiry keeps its millisecond. 0, or -1 unreadable. */
static int parse_time_ms(const char *text, int64_t *unix_ms)
{
    int64_t seconds = 0;
    if (!text || ids_parse_time(text, &seconds) < 0)
        return -1;
    const char *dot = strchr(text, '.');
    int64_t ms = 0;
    for (int i = 1; dot && i <= 3 && dot[i] >= '0' && dot[i] <= '9'; i++)
        ms = ms * 10 + (dot[i] - '0');
    *unix_ms = seconds * 1000 + ms;
    return 0;
}

static int hold(const store_reservation *row, void *ctx)
{
    holder *h = ctx;
    sched_reservation res;
    memset(&res, 0, sizeof res);
    snprintf(res.task_id, sizeof res.task_id, "%s", row->task_id);
    snprintf(res.node, sizeof res.node, "%s", row->node);
    res.cpu = row->cpu;
    res.memory = row->memory;
    res.disk = row->disk;
    res.vmid = row->vmid > 0 ? (uint32_t)row->vmid : 0;
    if (row->request) {
        /* Custom resources are held as vCPUs are: the store keeps them in the
         * task's request. An unreadable one holds none (it was checked when
         * the task was decided). */
        json_t *request = json_loads(row->request, 0, NULL);
        vf_error ignored;
        vf_error_init(&ignored);
        if (resource_amounts_parse(json_object_get(request, "resources"), "resources",
                                   &res.resources, &ignored) < 0)
            memset(&res.resources, 0, sizeof res.resources);
        json_decref(request);
    }
    int64_t expires_ms = 0;
    if (parse_time_ms(row->expires_at, &expires_ms) < 0)
        res.expires = 0; /* unreadable expiry: hold it until released */
    else                 /* rounded up as a new hold's (sched_hold_expiry_s) */
        res.expires = sched_hold_expiry_s(expires_ms);
    /* Preemptible while its VM has not appeared (a bound one never is). */
    res.has_priority = row->has_priority && !row->bound_at && !row->released_at;
    res.priority = row->priority;
    (void)parse_time_ms(row->created_at, &res.created); /* unreadable: 0, the oldest */
    if (row->bound_at) {
        /* Ended because another view showed the VM: ours does not (yet) when
         * it is older than that view, so it counts until ours is newer than
         * both that view and the expiry (store_reservations_counted). */
        if (sched_engine_shows_guest(h->engine, res.vmid, res.node))
            return 0; /* our snapshot counts it already */
        int64_t bound = 0;
        if (res.expires && ids_parse_time(row->bound_at, &bound) == 0 && bound >= res.expires)
            res.expires = bound + 1;
    }
    if (sched_engine_reserve(h->engine, &res, h->err) < 0) {
        h->failed = true;
        return 1; /* stop: the error is in h->err */
    }
    h->count++;
    return 0;
}

/* The time of the snapshot the engine decides from, as store text: that of
 * `view_ms`, or the reservation clock `now` while there is none. */
static void view_text(int64_t view_ms, const char *now, char out[STORE_TIME_SIZE])
{
    if (view_ms <= 0 || store_format_time(view_ms, out) < 0)
        snprintf(out, STORE_TIME_SIZE, "%s", now);
}

/* Hold what a reader deciding from `view_at` counts; the reservation clock
 * into `now`. */
static long hold_counted(store *s, sched_engine *engine, int64_t view_ms, char now[STORE_TIME_SIZE],
                         char view_at[STORE_TIME_SIZE], vf_error *err)
{
    /* Judged against the inventory clock, not the wall clock: a hold whose
     * time ran out while the inventory was stale still counts (see
     * schema/005_inventory_clock.sql). */
    if (store_reservation_clock(s, now, err) < 0)
        return -1;
    view_text(view_ms, now, view_at);
    holder h = {engine, 0, err, false};
    if (store_reservations_counted(s, now, view_at, hold, &h, err) < 0 || h.failed)
        return -1;
    return h.count;
}

long reservations_hold_live(store *s, sched_engine *engine, int64_t view_ms, vf_error *err)
{
    char now[STORE_TIME_SIZE], view_at[STORE_TIME_SIZE];
    return hold_counted(s, engine, view_ms, now, view_at, err);
}

/* ---- the worker's book ---- */

typedef struct known_host {
    char node[HOST_NAME_LEN];
    int64_t generation; /* the store's, when the engine's picture of it was made */
    bool claimed;       /* by the open transaction */
} known_host;

struct reservation_book {
    sched_engine *engine; /* borrowed */
    known_host *hosts;    /* sorted by node */
    size_t n_hosts, cap_hosts;
    known_host *undo; /* claims of the open transaction: generations before */
    size_t n_undo, cap_undo;
    int64_t seen_seq; /* every change up to this changed_seq is in the picture */
    int64_t txn_seq;  /* the open transaction's place in the change order; 0: unknown yet */
    bool caught_up;   /* the open transaction began with a catch-up... */
    bool serialized;  /* ...on a store with one writer at a time (store_writers_serialized) */
    bool reload_all;  /* a conflict showed the picture stale in a way the change order may
                         not reveal (PostgreSQL): take the whole store's picture again */
    /* The snapshot time the picture was taken for (store text). A newer one
     * counts a subset of what it held (schema/009): the engine's expiry and
     * snapshot switch drop the rest. An older one may count more. */
    char view_at[STORE_TIME_SIZE];
};

reservation_book *reservation_book_new(sched_engine *engine, vf_error *err)
{
    reservation_book *book = calloc(1, sizeof *book);
    if (!book) {
        vf_error_set(err, VF_ENOMEM, "out of memory for the reservation book");
        return NULL;
    }
    book->engine = engine;
    return book;
}

void reservation_book_free(reservation_book *book)
{
    if (!book)
        return;
    free(book->hosts);
    free(book->undo);
    free(book);
}

/* Index of `node` in the sorted list, inserting it at generation 0 (a host
 * the store has never changed) when absent; -1 when out of memory. */
static long known_index(reservation_book *book, const char *node)
{
    size_t lo = 0, hi = book->n_hosts;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(book->hosts[mid].node, node);
        if (cmp == 0)
            return (long)mid;
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (grow_array((void **)&book->hosts, &book->cap_hosts, book->n_hosts + 1,
                   sizeof *book->hosts) < 0)
        return -1;
    memmove(&book->hosts[lo + 1], &book->hosts[lo], (book->n_hosts - lo) * sizeof *book->hosts);
    memset(&book->hosts[lo], 0, sizeof *book->hosts);
    snprintf(book->hosts[lo].node, sizeof book->hosts[lo].node, "%s", node);
    book->n_hosts++;
    return (long)lo;
}

typedef struct catch_up {
    reservation_book *book;
    store *store;
    const char *now;
    const char *view_at;
    bool loading; /* at start: the engine already holds everything */
    long reloaded;
    char **changed; /* owned copies: hosts another writer changed, reloaded at once */
    size_t n_changed, cap_changed;
    vf_error *err;
    bool failed;
} catch_up;

static int reload_host(const store_host_generation *changed, void *arg)
{
    catch_up *c = arg;
    reservation_book *book = c->book;
    if (changed->changed_seq > book->seen_seq)
        book->seen_seq = changed->changed_seq;
    long i = known_index(book, changed->node);
    if (i < 0) {
        vf_error_set(c->err, VF_ENOMEM, "out of memory following host %s", changed->node);
        c->failed = true;
        return 1;
    }
    if (book->hosts[i].generation == changed->generation)
        return 0; /* our own change, already in the picture */
    book->hosts[i].generation = changed->generation;
    if (c->loading)
        return 0;
    /* Another writer changed this host: take the store's picture of it,
     * with the others' (reload_changed). A copy of the name: the book's
     * array moves as it grows. */
    char *name = NULL;
    if (grow_array((void **)&c->changed, &c->cap_changed, c->n_changed + 1, sizeof *c->changed) <
            0 ||
        !(name = strdup(changed->node))) {
        vf_error_set(c->err, VF_ENOMEM, "out of memory following host %s", changed->node);
        c->failed = true;
        return 1;
    }
    c->changed[c->n_changed++] = name;
    return 0;
}

/* Take the store's picture of every host another writer changed: one
 * statement for all of them. */
static int reload_changed(catch_up *c)
{
    for (size_t i = 0; i < c->n_changed; i++)
        sched_engine_release_node(c->book->engine, c->changed[i]);
    holder h = {c->book->engine, 0, c->err, false};
    if (store_reservations_counted_nodes(c->store, (const char *const *)c->changed, c->n_changed,
                                         c->now, c->view_at, hold, &h, c->err) < 0 ||
        h.failed)
        return -1;
    c->reloaded = (long)c->n_changed;
    return 0;
}

static long follow_changes(reservation_book *book, store *s, bool loading, vf_error *err)
{
    char now[STORE_TIME_SIZE]; /* the reservation clock, as reservations_hold_live */
    catch_up c = {book, s, now, book->view_at, loading, 0, NULL, 0, 0, err, false};
    long rc = -1;
    if (store_hosts_changed(s, book->seen_seq, now, reload_host, &c, err) < 0 || c.failed ||
        reload_changed(&c) < 0)
        goto out;
    rc = c.reloaded;
out:
    for (size_t i = 0; i < c.n_changed; i++)
        free(c.changed[i]);
    free(c.changed);
    return rc;
}

long reservation_book_load(reservation_book *book, store *s, int64_t view_ms, vf_error *err)
{
    /* Generations first: a change made between the two reads is then seen
     * again at the first catch-up, never missed. */
    char now[STORE_TIME_SIZE];
    if (follow_changes(book, s, true, err) < 0)
        return -1;
    return hold_counted(s, book->engine, view_ms, now, book->view_at, err);
}

/* Forget the picture and take the store's whole one again, as at start. */
static long reload_everything(reservation_book *book, store *s, int64_t view_ms, vf_error *err)
{
    sched_engine_release_all(book->engine);
    book->n_hosts = 0;
    book->seen_seq = 0;
    if (reservation_book_load(book, s, view_ms, err) < 0)
        return -1;
    book->reload_all = false;
    return (long)book->n_hosts;
}

long reservation_book_catch_up(reservation_book *book, store *s, int64_t view_ms, vf_error *err)
{
    char view_at[STORE_TIME_SIZE];
    view_text(view_ms, book->view_at, view_at);
    /* A snapshot older than the picture's (a worker that started before its
     * first fetch, a source that went back) may count reservations the
     * picture left out: take it whole again. A newer one only narrows. */
    if (strcmp(view_at, book->view_at) < 0)
        book->reload_all = true;
    else
        memcpy(book->view_at, view_at, sizeof view_at);
    long reloaded = book->reload_all ? reload_everything(book, s, view_ms, err)
                                     : follow_changes(book, s, false, err);
    int64_t latest = 0;
    if (reloaded < 0 || store_hosts_latest_seq(s, &latest, err) < 0)
        return -1;
    book->txn_seq = latest + 1;
    book->caught_up = true;
    book->serialized = store_writers_serialized(s);
    return reloaded;
}

int reservation_book_claim(reservation_book *book, store *s, const char *node, vf_error *err)
{
    long i = known_index(book, node);
    if (i < 0 || grow_array((void **)&book->undo, &book->cap_undo, book->n_undo + 1,
                            sizeof *book->undo) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory claiming host %s", node);
        return -1;
    }
    if (book->hosts[i].claimed)
        return 0; /* already this transaction's */
    /* The transaction's place in the change order, read once: by its
     * catch-up, else here (never a catch-up here: the engine's picture must
     * stay the one the caller decided from, so a stale one conflicts). */
    if (!book->txn_seq) {
        int64_t latest = 0;
        if (store_hosts_latest_seq(s, &latest, err) < 0)
            return -1;
        book->txn_seq = latest + 1;
    }
    if (store_host_claim(s, node, book->hosts[i].generation, book->txn_seq, err) < 0)
        return -1;
    book->undo[book->n_undo++] = book->hosts[i];
    book->hosts[i].generation++;
    book->hosts[i].claimed = true;
    return 0;
}

long reservation_book_release(reservation_book *book, store *s, sched_engine *engine,
                              const char *task_id, const char *node, const char *at, vf_error *err)
{
    if (book && reservation_book_claim(book, s, node, err) < 0)
        return -1;
    int ended = store_reservation_release_task(s, task_id, at, err);
    if (ended < 0)
        return -1;
    if (book && ended > 0) {
        long i = known_index(book, node);
        if (i >= 0)
            book->hosts[i].generation += ended; /* the trigger's bumps: ours */
    }
    sched_engine_release(engine, task_id);
    return ended;
}

long reservation_book_preempt(reservation_book *book, store *s, sched_engine *engine,
                              const char *task_id, const char *node, int32_t below, const char *at,
                              vf_error *err)
{
    if (book && reservation_book_claim(book, s, node, err) < 0)
        return -1;
    int ended = store_reservation_preempt(s, task_id, node, below, at, err);
    if (ended < 0)
        return -1;
    if (ended == 0) {
        /* The engine held it and the store has it no more (bound, released,
         * expired): the picture is stale. */
        vf_error_set(err, VF_ECONFLICT,
                     "the reservation of task %s on %s changed meanwhile: not preempted", task_id,
                     node);
        return -1;
    }
    if (book) {
        long i = known_index(book, node);
        if (i >= 0)
            book->hosts[i].generation += ended; /* the trigger's bumps: ours */
    }
    sched_engine_release(engine, task_id);
    return ended;
}

long reservation_book_release_each(reservation_book *book, store *s, sched_engine *engine,
                                   const char *task_id, const char *const *nodes, size_t n,
                                   const char *at, vf_error *err)
{
    for (size_t k = 0; book && k < n; k++)
        if (reservation_book_claim(book, s, nodes[k], err) < 0)
            return -1;
    int ended = store_reservation_release_task(s, task_id, at, err);
    if (ended < 0)
        return -1;
    if (book && ended > 0 && (size_t)ended == n) {
        for (size_t k = 0; k < n; k++) {
            long i = known_index(book, nodes[k]);
            if (i >= 0)
                book->hosts[i].generation++; /* the trigger's bump for this one */
        }
    } else if (book && ended > 0) {
        /* Which hosts the ended ones were on is not known here. */
        book->reload_all = true;
    }
    sched_engine_release(engine, task_id);
    return ended;
}

static void end_claims(reservation_book *book)
{
    for (size_t k = 0; k < book->n_undo; k++) {
        long i = known_index(book, book->undo[k].node);
        if (i >= 0)
            book->hosts[i].claimed = false;
    }
}

void reservation_book_committed(reservation_book *book)
{
    /* SQLite: the transaction held the store's one write lock from its
     * catch-up to this commit, so its claims are the only changes up to
     * txn_seq: no need to read them back. */
    if (book->caught_up && book->serialized && book->n_undo > 0 && book->txn_seq > book->seen_seq)
        book->seen_seq = book->txn_seq;
    end_claims(book);
    book->n_undo = 0;
    book->txn_seq = 0;
    book->caught_up = false;
}

void reservation_book_rolled_back(reservation_book *book, bool conflict)
{
    /* With writers side by side (PostgreSQL) a change may commit under a
     * number below one already seen, and stay unseen by the change order:
     * after a conflict, take the whole picture again. On SQLite a conflict
     * only comes from a transaction that did not catch up first. */
    if (conflict)
        book->reload_all = true;
    end_claims(book);
    book->txn_seq = 0;
    book->caught_up = false;
    while (book->n_undo > 0) {
        const known_host *before = &book->undo[--book->n_undo];
        long i = known_index(book, before->node);
        if (i >= 0)
            book->hosts[i].generation = before->generation;
    }
}
