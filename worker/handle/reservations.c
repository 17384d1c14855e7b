#include "reservations.h"

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

/* The task id of the holds that keep a vmid another claim was found to
 * hold out of the next decisions, until the next catch-up brings the real
 * reservation: '~' is no character of a task id, so no task can have it. */
#define HELD_VMID_TASK "~vmid-held"

typedef struct holder {
    sched_engine *engine;
    const char *clock;   /* the reservation clock */
    const char *view_at; /* the snapshot's fetch time */
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

static int hold_row(const store_reservation *row, void *ctx)
{
    holder *h = ctx;
    sched_reservation res;
    memset(&res, 0, sizeof res);
    snprintf(res.task_id, sizeof res.task_id, "%s", row->task_id);
    snprintf(res.node, sizeof res.node, "%s", row->node);
    res.vmid = row->vmid > 0 ? (uint32_t)row->vmid : 0;
    bool shown = row->bound_at && sched_engine_shows_guest(h->engine, res.vmid, res.node);
    bool capacity = counts_capacity(row, shown, h->clock, h->view_at);
    /* A bound VM's custom resources, while it exists, when its host's
     * inventory does not count them itself (docs/guarantees.md "The ledger"). */
    bool resources_only = !capacity && row->bound_at && row->resources &&
                          !row->resources_ended_at &&
                          !sched_engine_counts_resources(h->engine, res.node);
    if (!capacity && !resources_only)
        return 0;
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
    holder h = {engine, now, view_at, 0, err, false};
    if (store_reservations_counted(s, now, view_at, hold_row, &h, err) < 0 || h.failed)
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
    int64_t generation; /* the store's, when the engine's picture of it was taken */
} known_host;

/* A claim waiting for the end of the batch (PostgreSQL), with copies of
 * what it points to. */
typedef struct queued_claim {
    store_claim claim;
    char *texts; /* owned: the strings claim points to, in one allocation */
} queued_claim;

typedef struct claim_queue {
    queued_claim *items;
    size_t n, cap;
} claim_queue;

/* The snapshot's guests, by host: which bound reservations a claim must
 * not count again (store_claim_host.shown). Built again when the engine's
 * snapshot changes. */
typedef struct guest_index {
    const hostset *of;
    size_t *start;  /* n_hosts + 1 */
    int64_t *vmids; /* grouped by host */
} guest_index;

struct reservation_book {
    sched_engine *engine; /* borrowed */
    store *claims;        /* borrowed; NULL: the batches' own store */
    known_host *hosts;    /* sorted by node */
    size_t n_hosts, cap_hosts;
    int64_t seen_seq; /* host generations up to this changed_seq are in the picture */
    /* Generations are numbered in one order and committed in another on
     * PostgreSQL: each catch-up reads again from the number seen a second
     * or two before, so that a release committed late is not missed. */
    int64_t lag_seq[2];
    int64_t lag_shifted_ms; /* monotonic */
    int64_t seen_id;        /* reservations recorded up to this id are in the picture */
    bool reload_all;        /* take the whole store's picture again at the next catch-up */
    /* The snapshot time the picture was taken for (store text). A newer one
     * counts a subset of what it held (schema/009): the engine's expiry and
     * snapshot switch drop the rest. An older one may count more. */
    char view_at[STORE_TIME_SIZE];
    char clock[STORE_TIME_SIZE]; /* the reservation clock of the last catch-up */
    claim_queue queued;          /* PostgreSQL: claimed at the end of the batch */
    claim_queue with_commit;     /* PostgreSQL: claimed with the commit, all or none */
    int64_t *recorded;           /* reservations the open batch's queued claims recorded */
    size_t n_recorded, cap_recorded;
    int64_t *own; /* reservations this book recorded after seen_id: the feed skips them */
    size_t n_own, cap_own;
    guest_index guests;
    reservation_claim_stats stats;
};

static void queue_clear(claim_queue *q)
{
    for (size_t i = 0; i < q->n; i++)
        free(q->items[i].texts);
    q->n = 0;
}

static void guest_index_free(guest_index *g)
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
    queue_clear(&book->queued);
    queue_clear(&book->with_commit);
    free(book->queued.items);
    free(book->with_commit.items);
    free(book->recorded);
    free(book->own);
    guest_index_free(&book->guests);
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

/* Whether the engine holds this very reservation already (our own claim,
 * or one a host's reload brought). */
static bool held_already(const sched_engine *engine, const store_reservation *row)
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
    holder h = {book->engine, book->clock, c->view_at, 0, c->err, false};
    if (store_reservations_counted_nodes(c->store, (const char *const *)c->changed, c->n_changed,
                                         book->clock, c->view_at, hold_row, &h, c->err) < 0 ||
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
    if (is_changed(c, row->node) || held_already(c->book->engine, row))
        return 0;
    holder h = {c->book->engine, c->book->clock, c->view_at, 0, c->err, false};
    if (hold_row(row, &h) != 0) {
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
    /* The real reservation behind a vmid found held comes with this catch-up. */
    sched_engine_release(book->engine, HELD_VMID_TASK);
    if (book->reload_all)
        return reload_everything(book, s, view_ms, err);
    return follow_changes(book, s, false, book->view_at, err);
}

/* ---- claims ---- */

/* The snapshot's guests on each host, for the claims' `shown` lists. */
static int index_guests(reservation_book *book, vf_error *err)
{
    const hostset *set = sched_engine_snapshot(book->engine);
    if (book->guests.of == set && set)
        return 0;
    guest_index_free(&book->guests);
    if (!set)
        return 0;
    guest_index *g = &book->guests;
    g->start = calloc(set->n_hosts + 1, sizeof *g->start);
    g->vmids = malloc((set->n_guests ? set->n_guests : 1) * sizeof *g->vmids);
    if (!g->start || !g->vmids) {
        guest_index_free(g);
        vf_error_set(err, VF_ENOMEM, "out of memory indexing the inventory's guests");
        return -1;
    }
    for (size_t i = 0; i < set->n_guests; i++)
        g->start[set->guests[i].host_index + 1]++;
    for (size_t i = 0; i < set->n_hosts; i++)
        g->start[i + 1] += g->start[i];
    size_t *at = malloc((set->n_hosts + 1) * sizeof *at);
    if (!at) {
        guest_index_free(g);
        vf_error_set(err, VF_ENOMEM, "out of memory indexing the inventory's guests");
        return -1;
    }
    memcpy(at, g->start, (set->n_hosts + 1) * sizeof *at);
    for (size_t i = 0; i < set->n_guests; i++)
        g->vmids[at[set->guests[i].host_index]++] = set->guests[i].vmid;
    free(at);
    g->of = set;
    return 0;
}

/* The claims' hosts, each listed once, with what the snapshot says of it.
 * `hosts` has room for n. Returns how many. */
static size_t claim_hosts(reservation_book *book, const store_claim *claims, size_t n,
                          store_claim_host *hosts)
{
    const hostset *set = book->guests.of;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < m && strcmp(hosts[k].node, claims[i].node) != 0)
            k++;
        if (k < m)
            continue;
        store_claim_host *h = &hosts[m++];
        memset(h, 0, sizeof *h);
        h->node = claims[i].node;
        const host *found = set ? hostset_find(set, claims[i].node) : NULL;
        if (!found)
            continue;
        size_t index = (size_t)(found - set->hosts);
        h->shown = book->guests.vmids + book->guests.start[index];
        h->n_shown = book->guests.start[index + 1] - book->guests.start[index];
        h->counts_resources = found->traits && found->traits->counts_allocated;
    }
    return m;
}

/* JSON object text of `amounts` (amounts of 0 left out), names in lower
 * case as the claims compare them; NULL when there is none (*failed set
 * when out of memory). Owned. */
static char *amounts_text(const resource_amounts *amounts, bool keep_zero, bool *failed)
{
    if (!amounts || !amounts->n)
        return NULL;
    json_t *o = json_object();
    for (size_t i = 0; o && i < amounts->n; i++) {
        if (!keep_zero && amounts->items[i].amount == 0)
            continue;
        char name[RESOURCE_NAME_LEN];
        size_t k = 0;
        for (; amounts->items[i].name[k] && k < sizeof name - 1; k++) {
            char ch = amounts->items[i].name[k];
            name[k] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
        }
        name[k] = '\0';
        if (json_object_set_new(o, name, json_integer(amounts->items[i].amount)) < 0) {
            json_decref(o);
            o = NULL;
        }
    }
    char *text = o && json_object_size(o) ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (!o || (json_object_size(o) && !text))
        *failed = true;
    json_decref(o);
    return text;
}

/* The store's form of `c`, its texts owned by *texts (one allocation,
 * freed by the caller). Returns 0, or -1 with VF_ENOMEM. */
static int to_store_claim(const reservation_claim *c, store_claim *out, char **texts, vf_error *err)
{
    memset(out, 0, sizeof *out);
    *texts = NULL;
    bool failed = false;
    bool vmid_only = c->kind == SCHED_HOLD_VMID_ONLY;
    char *resources = vmid_only ? NULL : amounts_text(c->resources, false, &failed);
    sched_claim_limits limits;
    sched_engine_claim_limits(c->engine, c->node, c->req, &limits);
    char *left =
        vmid_only || !limits.resources ? NULL : amounts_text(&limits.resources_left, true, &failed);
    /* Copies of every string, in one block: a queued claim outlives the
     * caller's buffers. */
    const char *parts[] = {c->task_id, c->node->name, c->created_at, c->expires_at,
                           c->group,   resources,     left};
    size_t size = 0;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        size += parts[i] ? strlen(parts[i]) + 1 : 0;
    char *block = failed ? NULL : malloc(size ? size : 1);
    if (!block) {
        free(resources);
        free(left);
        vf_error_set(err, VF_ENOMEM, "out of memory claiming a placement of task %s", c->task_id);
        return -1;
    }
    const char *copied[sizeof parts / sizeof *parts];
    char *at = block;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        copied[i] = NULL;
        if (!parts[i])
            continue;
        size_t len = strlen(parts[i]) + 1;
        memcpy(at, parts[i], len);
        copied[i] = at;
        at += len;
    }
    free(resources);
    free(left);
    *out = (store_claim){
        .task_id = copied[0],
        .node = copied[1],
        .cpu = vmid_only ? 0 : c->cpu,
        .memory = vmid_only ? 0 : c->memory,
        .disk = vmid_only ? 0 : c->disk,
        .vmid = c->vmid ? (int64_t)c->vmid : -1,
        .resources = copied[5],
        .has_priority = c->has_priority,
        .priority = c->priority,
        .created_at = copied[2],
        .expires_at = copied[3],
        .group = copied[4],
        .vmid_only = vmid_only,
        .check_cpu = !vmid_only && limits.cpu,
        .check_memory = !vmid_only && limits.memory,
        .check_disk = !vmid_only && limits.disk,
        .check_slots = !vmid_only && limits.slots,
        .limit_cpu = limits.cpu_left,
        .limit_memory = limits.memory_left,
        .limit_disk = limits.disk_left,
        .limit_slots = limits.slots_left,
        .limit_resources = copied[6],
    };
    *texts = block;
    return 0;
}

static int enqueue(claim_queue *q, const reservation_claim *c, vf_error *err)
{
    if (grow_array((void **)&q->items, &q->cap, q->n + 1, sizeof *q->items) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory claiming a placement of task %s", c->task_id);
        return -1;
    }
    queued_claim *item = &q->items[q->n];
    if (to_store_claim(c, &item->claim, &item->texts, err) < 0)
        return -1;
    q->n++;
    return 0;
}

static store *claims_store(reservation_book *book, store *s)
{
    return book->claims ? book->claims : s;
}

/* The claims' view: the reservation clock and snapshot time of the
 * picture, and now. */
static store_claim_view view_of(reservation_book *book, char now[STORE_TIME_SIZE])
{
    store_now(now);
    return (store_claim_view){book->clock[0] ? book->clock : now,
                              book->view_at[0] ? book->view_at : now, now};
}

/* Take the store's picture of `node` again (a claim on it missed): its
 * committed picture, the one the claims count (on PostgreSQL the claims'
 * own handle; the batch's transaction there may hold releases the claims
 * cannot see yet, and a picture with them would decide the same miss
 * again). */
static int reload_host(reservation_book *book, store *s, const char *node, vf_error *err)
{
    s = claims_store(book, s);
    sched_engine_release_node(book->engine, node);
    holder h = {book->engine, book->clock, book->view_at, 0, err, false};
    if (store_reservations_counted_nodes(s, &node, 1, book->clock, book->view_at, hold_row, &h,
                                         err) < 0 ||
        h.failed)
        return -1;
    return 0;
}

/* A claim missed because `vmid` is held: keep it out of the next decisions
 * until the catch-up brings the reservation that holds it. */
static int hold_missed_vmid(reservation_book *book, int64_t vmid, vf_error *err)
{
    if (vmid <= 0)
        return 0;
    sched_reservation res;
    memset(&res, 0, sizeof res);
    snprintf(res.task_id, sizeof res.task_id, "%s", HELD_VMID_TASK);
    res.vmid = (uint32_t)vmid;
    res.kind = SCHED_HOLD_VMID_ONLY;
    return sched_engine_reserve(book->engine, &res, err);
}

/* What a miss of `c` (verdict `v`) leaves: the task's holds gone, the
 * host's picture the store's, a held vmid kept out. */
static int after_miss(reservation_book *book, store *s, const store_claim *c, store_claim_verdict v,
                      vf_error *err)
{
    book->stats.missed++;
    sched_engine_release(book->engine, c->task_id);
    if (reload_host(book, s, c->node, err) < 0)
        return -1;
    return v == STORE_CLAIM_VMID_HELD ? hold_missed_vmid(book, c->vmid, err) : 0;
}

/* A reservation this book recorded: the feed of others' need not bring it. */
static int note_own(reservation_book *book, int64_t id, vf_error *err)
{
    if (id <= book->seen_id)
        return 0;
    if (grow_array((void **)&book->own, &book->cap_own, book->n_own + 1, sizeof *book->own) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory following recorded claims");
        return -1;
    }
    book->own[book->n_own++] = id;
    return 0;
}

/* Recorded by a queued claim: withdrawn if the batch rolls back for certain. */
static int note_recorded(reservation_book *book, int64_t id, vf_error *err)
{
    if (grow_array((void **)&book->recorded, &book->cap_recorded, book->n_recorded + 1,
                   sizeof *book->recorded) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory following recorded claims");
        return -1;
    }
    book->recorded[book->n_recorded++] = id;
    return note_own(book, id, err);
}

/* SQLite: record the claims of one task now, all or none, in the batch's
 * transaction. */
static int claim_now(reservation_book *book, store *s, const store_claim *claims, size_t n,
                     vf_error *err)
{
    store_claim_host *hosts = calloc(n, sizeof *hosts);
    store_claim_result *results = calloc(n, sizeof *results);
    int rc = -1;
    if (!hosts || !results) {
        vf_error_set(err, VF_ENOMEM, "out of memory claiming placements");
        goto out;
    }
    if (index_guests(book, err) < 0)
        goto out;
    size_t n_hosts = claim_hosts(book, claims, n, hosts);
    char now[STORE_TIME_SIZE];
    store_claim_view view = view_of(book, now);
    if (store_claims_record(s, hosts, n_hosts, claims, n, &view, true, results, NULL, err) < 0)
        goto out;
    book->stats.claims += n;
    bool missed = false;
    for (size_t i = 0; i < n; i++)
        missed |= results[i].verdict != STORE_CLAIM_RECORDED;
    rc = 0;
    for (size_t i = 0; !missed && rc == 0 && i < n; i++)
        rc = note_own(book, results[i].reservation_id, err);
    if (!missed || rc < 0)
        goto out;
    /* Nothing of the task is recorded: its holds go, and each of its hosts
     * is the store's again; the transaction goes as a whole, decided again
     * (a set recorded all or none: a group's members were counted from the
     * picture that has just proved stale). */
    book->stats.missed++;
    sched_engine_release(book->engine, claims[0].task_id);
    for (size_t i = 0; i < n_hosts && rc == 0; i++)
        rc = reload_host(book, s, hosts[i].node, err);
    for (size_t i = 0; i < n && rc == 0; i++)
        if (results[i].verdict == STORE_CLAIM_VMID_HELD)
            rc = hold_missed_vmid(book, claims[i].vmid, err);
    if (rc == 0) {
        vf_error_set(err, VF_ECONFLICT,
                     "a placement of task %s no longer fits where it was decided (%s); deciding "
                     "again",
                     claims[0].task_id, claims[0].node);
        rc = -1;
    }
out:
    free(hosts);
    free(results);
    return rc;
}

/* PostgreSQL's claims wait for the end of the batch; SQLite's, under the
 * store's one write lock, are checked at once. */
static bool queues_claims(store *s)
{
    return !store_writers_serialized(s);
}

int reservation_book_claim(reservation_book *book, store *s, const reservation_claim *claim,
                           vf_error *err)
{
    (void)s;
    return enqueue(&book->queued, claim, err);
}

int reservation_book_claim_all(reservation_book *book, store *s, const reservation_claim *claims,
                               size_t n, vf_error *err)
{
    if (queues_claims(s)) {
        for (size_t i = 0; i < n; i++)
            if (enqueue(&book->with_commit, &claims[i], err) < 0)
                return -1;
        return 0;
    }
    store_claim *c = calloc(n ? n : 1, sizeof *c);
    char **texts = calloc(n ? n : 1, sizeof *texts);
    int rc = c && texts ? 0 : -1;
    if (rc < 0)
        vf_error_set(err, VF_ENOMEM, "out of memory claiming placements");
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = to_store_claim(&claims[i], &c[i], &texts[i], err);
    if (rc == 0)
        rc = claim_now(book, s, c, n, err);
    for (size_t i = 0; texts && i < n; i++)
        free(texts[i]);
    free(texts);
    free(c);
    return rc;
}

static int add_miss(reservation_misses *m, const char *task_id, vf_error *err)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->task_ids[i], task_id) == 0)
            return 0;
    if (grow_array((void **)&m->task_ids, &m->cap, m->n + 1, sizeof *m->task_ids) < 0) {
        vf_error_set(err, VF_ENOMEM, "out of memory listing claims that missed");
        return -1;
    }
    snprintf(m->task_ids[m->n++], REQUEST_TASK_ID_LEN, "%s", task_id);
    return 0;
}

int reservation_book_settle(reservation_book *book, store *s, reservation_misses *misses,
                            vf_error *err)
{
    claim_queue *q = &book->queued;
    if (q->n == 0)
        return 0;
    size_t n = q->n;
    store_claim *claims = malloc(n * sizeof *claims);
    store_claim_host *hosts = calloc(n, sizeof *hosts);
    store_claim_result *results = calloc(n, sizeof *results);
    int rc = -1;
    if (!claims || !hosts || !results) {
        vf_error_set(err, VF_ENOMEM, "out of memory claiming placements");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        claims[i] = q->items[i].claim;
    if (index_guests(book, err) < 0)
        goto out;
    size_t n_hosts = claim_hosts(book, claims, n, hosts);
    char now[STORE_TIME_SIZE];
    store_claim_view view = view_of(book, now);
    store_claim_stats stats = {0};
    if (store_claims_record(claims_store(book, s), hosts, n_hosts, claims, n, &view, false, results,
                            &stats, err) < 0)
        goto out;
    book->stats.claims += n;
    book->stats.claim_trips++;
    book->stats.lock_wait_ms += stats.lock_wait_ms;
    rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (results[i].verdict == STORE_CLAIM_RECORDED)
            rc = note_recorded(book, results[i].reservation_id, err);
        else if (add_miss(misses, claims[i].task_id, err) < 0 ||
                 after_miss(book, s, &claims[i], results[i].verdict, err) < 0)
            rc = -1;
    }
out:
    free(claims);
    free(hosts);
    free(results);
    queue_clear(q);
    return rc;
}

int reservation_book_send_with_commit(reservation_book *book, store *s, vf_error *err)
{
    claim_queue *q = &book->with_commit;
    if (q->n == 0)
        return 0;
    size_t n = q->n;
    store_claim *claims = malloc(n * sizeof *claims);
    store_claim_host *hosts = calloc(n, sizeof *hosts);
    int rc = -1;
    if (!claims || !hosts) {
        vf_error_set(err, VF_ENOMEM, "out of memory claiming placements");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        claims[i] = q->items[i].claim;
    if (index_guests(book, err) < 0)
        goto out;
    size_t n_hosts = claim_hosts(book, claims, n, hosts);
    char now[STORE_TIME_SIZE];
    store_claim_view view = view_of(book, now);
    rc = store_claims_defer(s, hosts, n_hosts, claims, n, &view, err);
    book->stats.claims += n;
out:
    free(claims);
    free(hosts);
    /* The texts must live until the statement's parameters are sent:
     * store_claims_defer has sent them (libpq copies them). */
    queue_clear(q);
    return rc;
}

void reservation_book_pending_members(const reservation_book *book, const char *group,
                                      void (*fn)(const char *node, void *ctx), void *ctx)
{
    for (size_t i = 0; i < book->with_commit.n; i++) {
        const store_claim *c = &book->with_commit.items[i].claim;
        if (c->group && strcmp(c->group, group) == 0)
            fn(c->node, ctx);
    }
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

void reservation_book_committed(reservation_book *book)
{
    queue_clear(&book->queued);
    queue_clear(&book->with_commit);
    book->n_recorded = 0;
}

void reservation_book_rolled_back(reservation_book *book, bool certain, const char *at)
{
    queue_clear(&book->queued);
    queue_clear(&book->with_commit);
    /* What the batch's claims recorded holds room for tasks the store does
     * not show placed: give it back, or (the commit's fate unknown) leave it
     * to expire or to the task's next attempt. The engine holds them no
     * more either way: the picture is taken again. */
    if (book->n_recorded && certain && book->claims) {
        vf_error ignored;
        vf_error_init(&ignored);
        if (store_claims_withdraw(book->claims, book->recorded, book->n_recorded, at, &ignored) < 0)
            log_warn("reservations: %zu claims of a batch rolled back are left to expire: %s",
                     book->n_recorded, ignored.text);
    }
    book->n_recorded = 0;
    book->reload_all = true;
}
