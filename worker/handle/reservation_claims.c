/* reservation_claims: a batch's placements claimed by fit (reservations.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "log.h"
#include "reservations_internal.h"
#include "store_hosts.h"

/* The snapshot's guests on each host, for the claims' `shown` lists. */
static int index_guests(reservation_book *book, vf_error *err)
{
    const hostset *set = sched_engine_snapshot(book->engine);
    if (book->guests.of == set && set)
        return 0;
    reservation_guests_free(&book->guests);
    if (!set)
        return 0;
    guest_index *g = &book->guests;
    g->start = calloc(set->n_hosts + 1, sizeof *g->start);
    g->vmids = malloc((set->n_guests ? set->n_guests : 1) * sizeof *g->vmids);
    if (!g->start || !g->vmids) {
        reservation_guests_free(g);
        vf_error_set(err, VF_ENOMEM, "out of memory indexing the inventory's guests");
        return -1;
    }
    for (size_t i = 0; i < set->n_guests; i++)
        g->start[set->guests[i].host_index + 1]++;
    for (size_t i = 0; i < set->n_hosts; i++)
        g->start[i + 1] += g->start[i];
    size_t *at = malloc((set->n_hosts + 1) * sizeof *at);
    if (!at) {
        reservation_guests_free(g);
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
        (void)resource_name_lower(amounts->items[i].name, name);
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
    reservation_holder h = {book->engine, book->clock, book->view_at, 0, err, false};
    if (store_reservations_counted_nodes(s, &node, 1, book->clock, book->view_at,
                                         reservations_hold_row, &h, err) < 0 ||
        h.failed)
        return -1;
    return 0;
}

/* Hold the reservation a missed claim found holding its vmid, unless the
 * engine does already (its host was just taken again). */
static int hold_vmid_holder(const store_reservation *row, void *ctx)
{
    reservation_holder *h = ctx;
    if (reservations_held_already(h->engine, row))
        return 0;
    return reservations_hold_row(row, h);
}

/* A claim missed because `vmid` is held: hold the store's row that holds
 * it, as the picture will once the catch-up brings it (the feed may never
 * bring it: a row committed after the ids the feed read past, on
 * PostgreSQL). A row, not a hold of the vmid alone: the decisions after it
 * are made over store rows, which `virtflowctl explain --replay` rebuilds
 * digest for digest; the catch-up and the host's reloads know it as held
 * (reservations_held_already), and its release ends it as any other's. The
 * picture's rules count every row the claim found live (the reservation
 * clock is never ahead of the wall clock the claim judged expiry by); a
 * row released since holds nothing, and its vmid is free again. */
static int hold_missed_vmid(reservation_book *book, store *s, int64_t vmid, vf_error *err)
{
    if (vmid <= 0)
        return 0;
    reservation_holder h = {book->engine, book->clock, book->view_at, 0, err, false};
    if (store_reservation_holding_vmid(claims_store(book, s), vmid, hold_vmid_holder, &h, err) <
            0 ||
        h.failed)
        return -1;
    return 0;
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
    return v == STORE_CLAIM_VMID_HELD ? hold_missed_vmid(book, s, c->vmid, err) : 0;
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
            rc = hold_missed_vmid(book, s, claims[i].vmid, err);
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

/* A queue's claims as the store takes them, with their hosts and view. */
typedef struct claim_set {
    store_claim *claims;
    store_claim_host *hosts;
    size_t n, n_hosts;
    char now[STORE_TIME_SIZE];
    store_claim_view view; /* points into now: a set is not moved */
} claim_set;

static void claim_set_close(claim_set *set)
{
    free(set->claims);
    free(set->hosts);
}

static int claim_set_open(reservation_book *book, const claim_queue *q, claim_set *set,
                          vf_error *err)
{
    memset(set, 0, sizeof *set);
    set->claims = malloc(q->n * sizeof *set->claims);
    set->hosts = calloc(q->n, sizeof *set->hosts);
    if (!set->claims || !set->hosts) {
        claim_set_close(set);
        vf_error_set(err, VF_ENOMEM, "out of memory claiming placements");
        return -1;
    }
    set->n = q->n;
    for (size_t i = 0; i < q->n; i++)
        set->claims[i] = q->items[i].claim;
    if (index_guests(book, err) < 0) {
        claim_set_close(set);
        return -1;
    }
    set->n_hosts = claim_hosts(book, set->claims, set->n, set->hosts);
    set->view = view_of(book, set->now);
    return 0;
}

int reservation_book_settle(reservation_book *book, store *s, reservation_misses *misses,
                            vf_error *err)
{
    claim_queue *q = &book->queued;
    if (q->n == 0)
        return 0;
    claim_set set;
    store_claim_result *results = calloc(q->n, sizeof *results);
    int rc = -1;
    if (!results) {
        vf_error_set(err, VF_ENOMEM, "out of memory claiming placements");
        reservation_queue_clear(q);
        return -1;
    }
    if (claim_set_open(book, q, &set, err) < 0) {
        free(results);
        reservation_queue_clear(q);
        return -1;
    }
    store_claim_stats stats = {0};
    if (store_claims_record(claims_store(book, s), set.hosts, set.n_hosts, set.claims, set.n,
                            &set.view, false, results, &stats, err) < 0)
        goto out;
    book->stats.claims += set.n;
    book->stats.claim_trips++;
    book->stats.lock_wait_ms += stats.lock_wait_ms;
    rc = 0;
    for (size_t i = 0; rc == 0 && i < set.n; i++) {
        if (results[i].verdict == STORE_CLAIM_RECORDED)
            rc = note_recorded(book, results[i].reservation_id, err);
        else if (add_miss(misses, set.claims[i].task_id, err) < 0 ||
                 after_miss(book, s, &set.claims[i], results[i].verdict, err) < 0)
            rc = -1;
    }
out:
    claim_set_close(&set);
    free(results);
    reservation_queue_clear(q);
    return rc;
}

int reservation_book_send_with_commit(reservation_book *book, store *s, vf_error *err)
{
    claim_queue *q = &book->with_commit;
    if (q->n == 0)
        return 0;
    claim_set set;
    int rc = claim_set_open(book, q, &set, err);
    if (rc == 0) {
        rc = store_claims_defer(s, set.hosts, set.n_hosts, set.claims, set.n, &set.view, err);
        book->stats.claims += set.n;
        claim_set_close(&set);
    }
    /* The texts must live until the statement's parameters are sent:
     * store_claims_defer has sent them (libpq copies them). */
    reservation_queue_clear(q);
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

void reservation_book_committed(reservation_book *book)
{
    reservation_queue_clear(&book->queued);
    reservation_queue_clear(&book->with_commit);
    book->n_recorded = 0;
}

void reservation_book_rolled_back(reservation_book *book, bool certain, const char *at)
{
    reservation_queue_clear(&book->queued);
    reservation_queue_clear(&book->with_commit);
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
