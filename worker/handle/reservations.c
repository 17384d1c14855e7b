#include "reservations_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "grow.h"
#include "ids.h"
#include "log.h"
#include "holds.h"
#include "store_claims.h"
#include "store_hosts.h"
#include "store_reservations.h"

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

/* What a reservation row holds for a reader deciding over the engine's
 * snapshot at `view_at` with the reservation clock at `clock`: the rules of
 * store_reservations_counted and of the claims (store_claims.h), which must
 * agree, or a claim would miss (or pass) where the picture said otherwise. */
static bool counts_capacity(const store_reservation *row, bool shown, const char *clock,
                            const char *view_at)
{
    if (!row->released_at)
        return row->expires_at && strcmp(row->expires_at, clock) > 0;
    if (!row->bound_at || shown)
        return false; /* released; or bound and in the snapshot's own figures */
    return strcmp(row->bound_at, view_at) > 0 ||
           (row->expires_at && strcmp(row->expires_at, clock) > 0);
}

bool reservations_row_hold(const store_reservation *row, const hostset *hosts, const char *clock,
                           const char *view_at, sched_reservation *out)
{
    sched_reservation res;
    memset(&res, 0, sizeof res);
    snprintf(res.task_id, sizeof res.task_id, "%s", row->task_id);
    snprintf(res.node, sizeof res.node, "%s", row->node);
    res.vmid = row->vmid > 0 ? (uint32_t)row->vmid : 0;
    bool shown = row->bound_at && res.vmid && hosts && hostset_guest_on(hosts, res.vmid, res.node);
    bool capacity = counts_capacity(row, shown, clock, view_at);
    /* A bound VM's custom resources, while it exists, when its host's
     * inventory does not count them itself (docs/guarantees.md "The ledger"). */
    bool resources_only = !capacity && row->bound_at && row->resources &&
                          !row->resources_ended_at &&
                          !(hosts && hostset_counts_resources(hosts, res.node));
    if (!capacity && !resources_only)
        return false;
    if (row->resources && !row->resources_ended_at) {
        /* An unreadable one holds none (it was checked when the task was
         * decided). Ended ones (the VM gone, the task released) hold none
         * either, whatever the row's capacity still counts. */
        json_t *held = json_loads(row->resources, 0, NULL);
        vf_error ignored;
        vf_error_init(&ignored);
        if (resource_amounts_parse(held, "resources", &res.resources, &ignored) < 0)
            memset(&res.resources, 0, sizeof res.resources);
        json_decref(held);
    }
    if (resources_only) {
        res.kind = SCHED_HOLD_RESOURCES_ONLY;
        res.vmid = 0; /* the inventory shows it used */
    } else {
        res.kind = row->vmid_only ? SCHED_HOLD_VMID_ONLY : SCHED_HOLD_FULL;
        res.cpu = row->cpu;
        res.memory = row->memory;
        res.disk = row->disk;
        int64_t expires_ms = 0;
        if (parse_time_ms(row->expires_at, &expires_ms) < 0)
            res.expires = 0; /* unreadable expiry: hold it until released */
        else                 /* rounded up as a new hold's (sched_hold_expiry_s) */
            res.expires = sched_hold_expiry_s(expires_ms);
        int64_t bound = 0;
        /* Ended because another view showed the VM, which ours does not
         * show: it counts until ours is newer than both that view and the
         * expiry (store_reservations_counted). */
        if (row->bound_at && res.expires && ids_parse_time(row->bound_at, &bound) == 0 &&
            bound >= res.expires)
            res.expires = bound + 1;
    }
    /* Preemptible while its VM has not appeared (a bound one never is). */
    res.has_priority =
        row->has_priority && !row->bound_at && !row->released_at && res.kind == SCHED_HOLD_FULL;
    res.priority = row->priority;
    (void)parse_time_ms(row->created_at, &res.created); /* unreadable: 0, the oldest */
    *out = res;
    return true;
}

int reservations_hold_row(const store_reservation *row, void *ctx)
{
    reservation_holder *h = ctx;
    sched_reservation res;
    if (!reservations_row_hold(row, sched_engine_snapshot(h->engine), h->clock, h->view_at, &res))
        return 0;
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
    reservation_holder h = {engine, now, view_at, 0, err, false};
    if (store_reservations_counted(s, now, view_at, reservations_hold_row, &h, err) < 0 || h.failed)
        return -1;
    return h.count;
}

long reservations_hold_live(store *s, sched_engine *engine, int64_t view_ms, vf_error *err)
{
    char now[STORE_TIME_SIZE], view_at[STORE_TIME_SIZE];
    return hold_counted(s, engine, view_ms, now, view_at, err);
}

/* ---- the worker's book ---- */

void reservation_queue_clear(claim_queue *q)
{
    for (size_t i = 0; i < q->n; i++)
        free(q->items[i].texts);
    q->n = 0;
}

void reservation_guests_free(guest_index *g)
{
    free(g->start);
    free(g->vmids);
    memset(g, 0, sizeof *g);
}

reservation_book *reservation_book_new(sched_engine *engine, store *claims, vf_error *err)
{
    reservation_book *book = calloc(1, sizeof *book);
    if (!book) {
        vf_error_set(err, VF_ENOMEM, "out of memory for the reservation book");
        return NULL;
    }
    book->engine = engine;
    book->claims = claims;
    return book;
}

void reservation_book_free(reservation_book *book)
{
    if (!book)
        return;
    reservation_queue_clear(&book->queued);
    reservation_queue_clear(&book->with_commit);
    free(book->queued.items);
    free(book->with_commit.items);
    free(book->recorded);
    free(book->own);
    reservation_guests_free(&book->guests);
    free(book->hosts);
    free(book);
}

reservation_claim_stats reservation_book_stats(const reservation_book *book)
{
    return book->stats;
}

void reservation_misses_close(reservation_misses *m)
{
    free(m->task_ids);
    memset(m, 0, sizeof *m);
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

/* ---- following the others ---- */

typedef struct catch_up {
    reservation_book *book;
    store *store;
    const char *view_at;
    bool loading;   /* at start: the engine holds everything already */
    char **changed; /* owned copies: hosts another writer released on, taken again */
    size_t n_changed, cap_changed;
    bool reloaded; /* those hosts' pictures are the store's again */
    vf_error *err;
    bool failed;
} catch_up;

static int note_changed_host(const store_host_generation *changed, void *arg)
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
        return 0; /* seen already */
    book->hosts[i].generation = changed->generation;
    if (c->loading)
        return 0;
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

bool reservations_held_already(const sched_engine *engine, const store_reservation *row)
{
    const holds *set = sched_engine_holds(engine);
    uint32_t vmid = row->vmid > 0 ? (uint32_t)row->vmid : 0;
    return holds_has(set, row->task_id, row->node, vmid);
}

static bool is_changed(const catch_up *c, const char *node)
{
    for (size_t i = 0; i < c->n_changed; i++)
        if (strcmp(c->changed[i], node) == 0)
            return true;
    return false;
}

/* Take the store's picture of every host another writer released on (one
 * statement for all), once, before any new reservation is held. */
static int reload_changed(catch_up *c)
{
    if (c->reloaded)
        return 0;
    c->reloaded = true;
    reservation_book *book = c->book;
    for (size_t i = 0; i < c->n_changed; i++)
        sched_engine_release_node(book->engine, c->changed[i]);
    reservation_holder h = {book->engine, book->clock, c->view_at, 0, c->err, false};
    if (store_reservations_counted_nodes(c->store, (const char *const *)c->changed, c->n_changed,
                                         book->clock, c->view_at, reservations_hold_row, &h,
                                         c->err) < 0 ||
        h.failed)
        return -1;
    return 0;
}

/* A reservation recorded after seen_id (the hosts' changes come first in
 * the feed, so their reloads are done): held, unless its host was taken
 * again whole or the engine holds it already (our own claim). */
static int note_added(const store_reservation *row, void *arg)
{
    catch_up *c = arg;
    if (c->loading)
        return 0;
    if (reload_changed(c) < 0) {
        c->failed = true;
        return 1;
    }
    if (is_changed(c, row->node) || reservations_held_already(c->book->engine, row))
        return 0;
    reservation_holder h = {c->book->engine, c->book->clock, c->view_at, 0, c->err, false};
    if (reservations_hold_row(row, &h) != 0) {
        c->failed = true;
        return 1;
    }
    return 0;
}

/* The generation to read the hosts' changes from: the one seen a second or
 * two ago (a release numbered before it but committed since is read then). */
static int64_t lagged_seq(reservation_book *book)
{
    int64_t now = clock_mono_ms();
    if (now - book->lag_shifted_ms >= 1000) {
        book->lag_seq[1] = book->lag_seq[0];
        book->lag_seq[0] = book->seen_seq;
        book->lag_shifted_ms = now;
    }
    return book->lag_seq[1];
}

/* Forget the own ids the feed is past. */
static void prune_own(reservation_book *book)
{
    size_t kept = 0;
    for (size_t i = 0; i < book->n_own; i++)
        if (book->own[i] > book->seen_id)
            book->own[kept++] = book->own[i];
    book->n_own = kept;
}

static long follow_changes(reservation_book *book, store *s, bool loading, const char *view_at,
                           vf_error *err)
{
    catch_up c = {.book = book, .store = s, .view_at = view_at, .loading = loading, .err = err};
    long rc = -1;
    int64_t since = loading ? 0 : lagged_seq(book);
    int64_t latest = book->seen_id;
    if (store_changes_since(s, since, loading ? INT64_MAX : book->seen_id, book->own, book->n_own,
                            book->clock, &latest, note_changed_host, note_added, &c, err) < 0 ||
        c.failed || (!loading && reload_changed(&c) < 0))
        goto out;
    /* Every reservation recorded up to the largest id is in the picture now
     * (held, or skipped as our own or as counting nothing). */
    if (latest > book->seen_id)
        book->seen_id = latest;
    prune_own(book);
    rc = (long)c.n_changed;
out:
    for (size_t i = 0; i < c.n_changed; i++)
        free(c.changed[i]);
    free(c.changed);
    return rc;
}

long reservation_book_load(reservation_book *book, store *s, int64_t view_ms, vf_error *err)
{
    /* Where the change order stands first: a change made between these
     * reads and the picture's is then seen again at the first catch-up
     * (and held once: held_already), never missed. */
    char view_at[STORE_TIME_SIZE];
    if (store_reservation_clock(s, book->clock, err) < 0)
        return -1;
    view_text(view_ms, book->clock, view_at);
    if (follow_changes(book, s, true, view_at, err) < 0)
        return -1;
    book->lag_seq[0] = book->lag_seq[1] = book->seen_seq;
    book->lag_shifted_ms = clock_mono_ms();
    return hold_counted(s, book->engine, view_ms, book->clock, book->view_at, err);
}

/* Forget the picture and take the store's whole one again, as at start. */
static long reload_everything(reservation_book *book, store *s, int64_t view_ms, vf_error *err)
{
    sched_engine_release_all(book->engine);
    book->n_hosts = 0;
    book->seen_seq = 0;
    book->seen_id = 0;
    book->n_own = 0;
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
    if (book->reload_all)
        return reload_everything(book, s, view_ms, err);
    return follow_changes(book, s, false, book->view_at, err);
}

long reservations_release_task(store *s, sched_engine *engine, const char *task_id, const char *at,
                               vf_error *err)
{
    int ended = store_reservation_release_task(s, task_id, at, err);
    if (ended < 0)
        return -1;
    sched_engine_release(engine, task_id);
    return ended;
}
