/* store_claims: placements claimed by fit (store_claims.h). PostgreSQL runs
 * the claim in the server (virtflow_claim, schema/pg/021_ledger.sql);
 * SQLite counts here, under the caller's write lock, by the same rules. */
#include "store_claims.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* What both backends allow a placement over its limit: the engine's own
 * epsilon for vCPUs and memory, which are real numbers summed in two orders. */
#define CLAIM_EPSILON 1e-6

/* ---- PostgreSQL: the claim as the server's function takes it ---- */

/* The function's array parameters, in its order (schema/pg/021). */
enum {
    P_TASKS,
    P_NODES,
    P_CPUS,
    P_MEMORIES,
    P_DISKS,
    P_VMIDS,
    P_RESOURCES,
    P_PRIORITIES,
    P_CREATED,
    P_EXPIRES,
    P_GROUPS,
    P_VMID_ONLY,
    P_LIM_CPU,
    P_LIM_MEMORY,
    P_LIM_DISK,
    P_LIM_SLOTS,
    P_LIM_RES,
    P_HOST_NODES,
    P_HOST_SHOWN,
    P_HOST_RES_INV,
    P_ARRAYS
};

/* A host's shown vmids as a JSON array (NULL: none). Owned; *failed set
 * when out of memory. */
static char *shown_json(const store_claim_host *h, bool *failed)
{
    if (!h->n_shown)
        return NULL;
    json_t *list = json_array();
    for (size_t k = 0; list && k < h->n_shown; k++)
        if (json_array_append_new(list, json_integer(h->shown[k])) != 0) {
            json_decref(list);
            list = NULL;
        }
    char *text = list ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    *failed |= !text;
    return text;
}

/* The placements and hosts as the function's arrays (owned texts), or -1
 * when out of memory. */
static int claim_arrays(const store_claim_host *hosts, size_t n_hosts, const store_claim *claims,
                        size_t n, char *out[P_ARRAYS])
{
    store_pg_array a[P_ARRAYS] = {0};
    for (size_t i = 0; i < n; i++) {
        const store_claim *c = &claims[i];
        store_pg_array_text(&a[P_TASKS], c->task_id);
        store_pg_array_text(&a[P_NODES], c->node);
        store_pg_array_double(&a[P_CPUS], c->cpu);
        store_pg_array_int(&a[P_MEMORIES], c->memory);
        store_pg_array_int(&a[P_DISKS], c->disk);
        if (c->vmid >= 0)
            store_pg_array_int(&a[P_VMIDS], c->vmid);
        else
            store_pg_array_null(&a[P_VMIDS]);
        store_pg_array_text(&a[P_RESOURCES], c->resources);
        if (c->has_priority)
            store_pg_array_int(&a[P_PRIORITIES], c->priority);
        else
            store_pg_array_null(&a[P_PRIORITIES]);
        store_pg_array_text(&a[P_CREATED], c->created_at);
        store_pg_array_text(&a[P_EXPIRES], c->expires_at);
        store_pg_array_text(&a[P_GROUPS], c->group);
        store_pg_array_bool(&a[P_VMID_ONLY], c->vmid_only);
        if (c->check_cpu)
            store_pg_array_double(&a[P_LIM_CPU], c->limit_cpu);
        else
            store_pg_array_null(&a[P_LIM_CPU]);
        if (c->check_memory)
            store_pg_array_double(&a[P_LIM_MEMORY], c->limit_memory);
        else
            store_pg_array_null(&a[P_LIM_MEMORY]);
        if (c->check_disk)
            store_pg_array_int(&a[P_LIM_DISK], c->limit_disk);
        else
            store_pg_array_null(&a[P_LIM_DISK]);
        if (c->check_slots)
            store_pg_array_int(&a[P_LIM_SLOTS], c->limit_slots);
        else
            store_pg_array_null(&a[P_LIM_SLOTS]);
        store_pg_array_text(&a[P_LIM_RES], c->limit_resources);
    }
    bool failed = false;
    for (size_t i = 0; i < n_hosts; i++) {
        char *shown = shown_json(&hosts[i], &failed);
        store_pg_array_text(&a[P_HOST_NODES], hosts[i].node);
        store_pg_array_text(&a[P_HOST_SHOWN], shown);
        store_pg_array_bool(&a[P_HOST_RES_INV], hosts[i].counts_resources);
        free(shown);
    }
    for (int k = 0; k < P_ARRAYS; k++) {
        out[k] = store_pg_array_finish(&a[k]);
        failed |= !out[k];
    }
    if (!failed)
        return 0;
    for (int k = 0; k < P_ARRAYS; k++) {
        free(out[k]);
        out[k] = NULL;
    }
    return -1;
}

#define CLAIM_CALL                                                                                 \
    "virtflow_claim(CAST(?1 AS text[]), CAST(?2 AS text[]), CAST(?3 AS float8[]), "                \
    "CAST(?4 AS bigint[]), CAST(?5 AS bigint[]), CAST(?6 AS bigint[]), CAST(?7 AS text[]), "       \
    "CAST(?8 AS integer[]), CAST(?9 AS text[]), CAST(?10 AS text[]), CAST(?11 AS text[]), "        \
    "CAST(?12 AS boolean[]), CAST(?13 AS float8[]), CAST(?14 AS float8[]), "                       \
    "CAST(?15 AS bigint[]), CAST(?16 AS bigint[]), CAST(?17 AS text[]), CAST(?18 AS text[]), "     \
    "CAST(?19 AS text[]), CAST(?20 AS boolean[]), CAST(?21 AS text), CAST(?22 AS text), "          \
    "CAST(?23 AS text))"

/* The claim's statement in `id`, its parameters bound (the texts copied by
 * libpq); NULL with err. */
static db_stmt *claim_stmt(store *s, store_stmt_id id, const char *sql,
                           const store_claim_host *hosts, size_t n_hosts, const store_claim *claims,
                           size_t n, const store_claim_view *view, vf_error *err)
{
    char *arrays[P_ARRAYS] = {0};
    db_stmt *st = NULL;
    if (claim_arrays(hosts, n_hosts, claims, n, arrays) < 0)
        vf_error_set(err, VF_ENOMEM, "store %s: claiming placements: out of memory", s->path);
    else if ((st = store_stmt(s, id, sql, err))) {
        for (int k = 0; k < P_ARRAYS; k++)
            db_bind_text(st, k + 1, arrays[k]);
        db_bind_text(st, P_ARRAYS + 1, view->clock);
        db_bind_text(st, P_ARRAYS + 2, view->view_at);
        db_bind_text(st, P_ARRAYS + 3, view->now);
    }
    for (int k = 0; k < P_ARRAYS; k++)
        free(arrays[k]);
    return st;
}

static int record_pg(store *s, const store_claim_host *hosts, size_t n_hosts,
                     const store_claim *claims, size_t n, const store_claim_view *view,
                     store_claim_result *results, store_claim_stats *stats, vf_error *err)
{
    if (store_in_transaction(s)) {
        vf_error_set(err, VF_EINTERNAL, "store %s: a claim runs in a transaction of its own",
                     s->path);
        return -1;
    }
    db_stmt *st = claim_stmt(s, STORE_STMT_CLAIM,
                             "SELECT seq, verdict, reservation_id, lock_wait_ms FROM " CLAIM_CALL,
                             hosts, n_hosts, claims, n, view, err);
    if (!st)
        return -1;
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "claiming placements", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    int rc = rows.count == (int)n ? 0 : -1;
    for (int i = 0; rc == 0 && i < rows.count; i++) {
        int64_t seq = store_rows_int(&rows, i, 0);
        if (seq < 0 || (size_t)seq >= n) {
            rc = -1;
            break;
        }
        results[seq].verdict = (store_claim_verdict)store_rows_int(&rows, i, 1);
        results[seq].reservation_id =
            store_rows_text(&rows, i, 2) ? store_rows_int(&rows, i, 2) : 0;
        if (stats && i == 0)
            stats->lock_wait_ms += store_rows_double(&rows, i, 3);
    }
    if (rc != 0)
        vf_error_set(err, VF_EINTERNAL, "store %s: claiming %zu placements: %d answers", s->path, n,
                     rows.count);
    store_rows_free(&rows);
    return rc;
}

/* ---- SQLite: the same counting, here ---- */

/* The hosts as SQLite's count reads them: [{"node", "shown"}]. Owned text
 * or NULL when out of memory. */
static char *hosts_json(const store_claim_host *hosts, size_t n)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++) {
        json_t *o = json_object(), *shown = json_array();
        int rc = o && shown ? 0 : -1;
        for (size_t k = 0; rc == 0 && k < hosts[i].n_shown; k++)
            rc = json_array_append_new(shown, json_integer(hosts[i].shown[k]));
        rc |= json_object_set_new(o, "node", json_string(hosts[i].node));
        rc |= json_object_set_new(o, "shown", shown);
        if (rc != 0 || json_array_append_new(list, o) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    char *text = list ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    return text;
}

/* What the store holds on one host, for the claimer's view. */
typedef struct host_use {
    const store_claim_host *host;
    double cpu, memory;
    int64_t disk, slots;
    json_t *resources; /* owned: {"gpu": amount} */
} host_use;

static host_use *use_of(host_use *use, size_t n, const char *node)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(use[i].host->node, node) == 0)
            return &use[i];
    return NULL;
}

static bool shown_on(const store_claim_host *h, int64_t vmid)
{
    for (size_t i = 0; i < h->n_shown; i++)
        if (h->shown[i] == vmid)
            return true;
    return false;
}

/* A custom resource's name in lower case (names are compared without
 * regard to case: traits.h), bounded. */
static void lower_name(const char *name, char out[64])
{
    size_t i = 0;
    for (; name[i] && i < 63; i++)
        out[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
    out[i] = '\0';
}

/* Add the amounts of JSON object text `resources` to `into`. */
static void add_resources(json_t *into, const char *resources, int sign)
{
    json_t *held = resources ? json_loads(resources, 0, NULL) : NULL;
    const char *name;
    json_t *amount;
    json_object_foreach(held, name, amount)
    {
        if (!json_is_integer(amount))
            continue;
        char key[64];
        lower_name(name, key);
        json_int_t before = json_integer_value(json_object_get(into, key));
        json_object_set_new(into, key, json_integer(before + sign * json_integer_value(amount)));
    }
    json_decref(held);
}

/* What the store holds on the claims' hosts for the claimer's view, as
 * store_reservations_counted_nodes counts it, summed by SQLite: the rows
 * held, and those bound that the claimer's inventory does not show (a
 * store's many live reservations cost a pass over an index, not a copy
 * each). The per-host "shown" lists come in `hosts_text` (hosts_json).
 * Held rows are summed as found; only bound rows are looked up in their
 * host's list, reached from the list's side: joining every row with the
 * list after gathering them had SQLite build an index over the rows for
 * every batch (5.6 ms for 200 placements on 200 hosts holding 1,000 rows,
 * 1.8 ms this way). A NULL vmid is in no non-empty list: such a bound row
 * counts only when its host shows no VM, as before. */
static int count_capacity(store *s, host_use *use, size_t n_hosts, const char *hosts_text,
                          const store_claim_view *view, vf_error *err)
{
    db_stmt *st = store_stmt(
        s, STORE_STMT_CLAIM_USED,
        "WITH n AS (SELECT json_extract(value, '$.node') AS node, "
        "json_extract(value, '$.shown') AS shown FROM json_each(?1)) "
        "SELECT node, total(cpu), total(memory), total(disk), total(slot) FROM ("
        "SELECT node, cpu, memory, disk, "
        "CASE WHEN coalesce(vmid_only, 0) = 0 THEN 1 ELSE 0 END AS slot FROM reservations "
        "WHERE node IN (SELECT node FROM n) AND released_at IS NULL AND expires_at > ?2 "
        "UNION ALL SELECT r.node, r.cpu, r.memory, r.disk, "
        "CASE WHEN coalesce(r.vmid_only, 0) = 0 THEN 1 ELSE 0 END "
        "FROM n JOIN reservations r ON r.node = n.node "
        "WHERE r.bound_at IS NOT NULL AND r.bound_at > ?3 "
        "AND NOT (r.vmid IN (SELECT value FROM json_each(n.shown))) "
        "UNION ALL SELECT r.node, r.cpu, r.memory, r.disk, "
        "CASE WHEN coalesce(r.vmid_only, 0) = 0 THEN 1 ELSE 0 END "
        "FROM n JOIN reservations r ON r.node = n.node "
        "WHERE r.bound_at IS NOT NULL AND r.bound_at <= ?3 AND r.expires_at > ?2 "
        "AND NOT (r.vmid IN (SELECT value FROM json_each(n.shown)))) "
        "GROUP BY node",
        err);
    if (!st)
        return -1;
    db_bind_text(st, 1, hosts_text);
    db_bind_text(st, 2, view->clock);
    db_bind_text(st, 3, view->view_at);
    store_rows rows = {0};
    int rc = store_rows_collect(s, st, 0, &rows, "counting hosts' reservations", err);
    for (int i = 0; rc == 0 && i < rows.count; i++) {
        host_use *u = use_of(use, n_hosts, store_rows_text(&rows, i, 0));
        if (!u)
            continue;
        u->cpu = store_rows_double(&rows, i, 1);
        u->memory = store_rows_double(&rows, i, 2);
        u->disk = (int64_t)store_rows_double(&rows, i, 3);
        u->slots = (int64_t)store_rows_double(&rows, i, 4);
    }
    store_rows_free(&rows);
    return rc;
}

/* The custom resources the store holds on the claims' hosts for the
 * claimer's view: held, bound but not shown, and those of bound VMs that
 * have not ended (unless the host's inventory counts them itself); ended
 * ones nowhere. Rows holding some are few: they are read one by one. */
static int count_resources(store *s, host_use *use, size_t n_hosts, const char *nodes_text,
                           const store_claim_view *view, vf_error *err)
{
    db_stmt *st =
        store_stmt(s, STORE_STMT_CLAIM_USED_RESOURCES,
                   "WITH n AS (SELECT value AS node FROM json_each(?1)) "
                   "SELECT node, vmid, resources, 0, 1 FROM reservations "
                   "WHERE node IN (SELECT node FROM n) AND released_at IS NULL AND expires_at > ?2 "
                   "AND resources IS NOT NULL "
                   "UNION ALL SELECT node, vmid, resources, 1, bound_at > ?3 OR expires_at > ?2 "
                   "FROM reservations WHERE node IN (SELECT node FROM n) "
                   "AND " STORE_RESERVATION_HOLDS_RESOURCES,
                   err);
    if (!st)
        return -1;
    db_bind_text(st, 1, nodes_text);
    db_bind_text(st, 2, view->clock);
    db_bind_text(st, 3, view->view_at);
    store_rows rows = {0};
    int rc = store_rows_collect(s, st, 0, &rows, "counting hosts' custom resources", err);
    for (int i = 0; rc == 0 && i < rows.count; i++) {
        host_use *u = use_of(use, n_hosts, store_rows_text(&rows, i, 0));
        if (!u)
            continue;
        bool bound = store_rows_int(&rows, i, 3) != 0;
        bool capacity = store_rows_int(&rows, i, 4) != 0 &&
                        !(bound && shown_on(u->host, store_rows_id(&rows, i, 1)));
        /* A bound VM's custom resources count while they have not ended
         * (the query's rows), unless the host's inventory counts them. */
        if (capacity || (bound && !u->host->counts_resources))
            add_resources(u->resources, store_rows_text(&rows, i, 2), +1);
    }
    store_rows_free(&rows);
    return rc;
}

/* What the store holds on each claim host (use[i].host) for the view. */
static int count_used(store *s, host_use *use, size_t n_hosts, const store_claim *claims, size_t n,
                      const store_claim_view *view, vf_error *err)
{
    bool resources = false;
    for (size_t i = 0; i < n; i++)
        resources |= claims[i].resources && claims[i].limit_resources;
    store_claim_host *hosts = malloc((n_hosts ? n_hosts : 1) * sizeof *hosts);
    const char **nodes = malloc((n_hosts ? n_hosts : 1) * sizeof *nodes);
    char *hosts_text = NULL, *nodes_text = NULL;
    for (size_t i = 0; hosts && nodes && i < n_hosts; i++) {
        hosts[i] = *use[i].host;
        nodes[i] = use[i].host->node;
    }
    int rc = -1;
    if (!hosts || !nodes || !(hosts_text = hosts_json(hosts, n_hosts)) ||
        !(nodes_text = store_json_strings(nodes, n_hosts)))
        vf_error_set(err, VF_ENOMEM, "store %s: claiming placements: out of memory", s->path);
    else
        rc = count_capacity(s, use, n_hosts, hosts_text, view, err);
    if (rc == 0 && resources)
        rc = count_resources(s, use, n_hosts, nodes_text, view, err);
    free(hosts);
    free(nodes);
    free(hosts_text);
    free(nodes_text);
    return rc;
}

/* Whether claim `c` fits on `u`, which already counts the earlier claims. */
static bool fits(const store_claim *c, const host_use *u)
{
    if (c->check_cpu && !(u->cpu + c->cpu <= c->limit_cpu + CLAIM_EPSILON))
        return false;
    if (c->check_memory && !(u->memory + (double)c->memory <= c->limit_memory + CLAIM_EPSILON))
        return false;
    if (c->check_disk && !(u->disk + c->disk <= c->limit_disk))
        return false;
    if (c->check_slots && !c->vmid_only && !(u->slots + 1 <= c->limit_slots))
        return false;
    if (c->resources && c->limit_resources) {
        json_t *asked = json_loads(c->resources, 0, NULL);
        json_t *left = json_loads(c->limit_resources, 0, NULL);
        bool ok = true;
        const char *name;
        json_t *amount;
        json_object_foreach(asked, name, amount)
        {
            char key[64];
            lower_name(name, key);
            json_t *limit = json_object_get(left, key);
            if (limit && json_integer_value(json_object_get(u->resources, key)) +
                                 json_integer_value(amount) >
                             json_integer_value(limit))
                ok = false;
        }
        json_decref(asked);
        json_decref(left);
        if (!ok)
            return false;
    }
    return true;
}

/* Count claim `c` on `u`, as the next claim on the host must see it. */
static void count_claim(const store_claim *c, host_use *u)
{
    u->cpu += c->cpu;
    u->memory += (double)c->memory;
    u->disk += c->disk;
    if (!c->vmid_only)
        u->slots++;
    add_resources(u->resources, c->resources, +1);
}

/* Insert claim `c`; 1 recorded (*id), 0 its vmid is held, -1 error. */
static int insert_one(store *s, const store_claim *c, const store_claim_view *view, int64_t *id,
                      vf_error *err)
{
    for (int pass = 0; pass < 2; pass++) {
        db_stmt *st = store_stmt(
            s, STORE_STMT_RESERVATION_INSERT_CLAIMED,
            "INSERT INTO reservations (task_id, node, cpu, memory, disk, vmid, created_at, "
            "expires_at, priority, resources, group_name, vmid_only) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) "
            "ON CONFLICT (vmid) WHERE released_at IS NULL AND vmid IS NOT NULL DO NOTHING",
            err);
        if (!st)
            return -1;
        db_bind_text(st, 1, c->task_id);
        db_bind_text(st, 2, c->node);
        db_bind_double(st, 3, c->cpu);
        db_bind_int64(st, 4, c->memory);
        db_bind_int64(st, 5, c->disk);
        store_bind_id(st, 6, c->vmid);
        db_bind_text(st, 7, c->created_at);
        db_bind_text(st, 8, c->expires_at);
        if (c->has_priority)
            db_bind_int64(st, 9, c->priority);
        else
            db_bind_null(st, 9);
        db_bind_text(st, 10, c->resources);
        db_bind_text(st, 11, c->group);
        if (c->vmid_only)
            db_bind_int64(st, 12, 1);
        else
            db_bind_null(st, 12);
        int added = store_exec_change(s, st, "recording a claimed reservation", err);
        if (added < 0)
            return -1;
        if (added > 0) {
            *id = db_inserted_id(st);
            return 1;
        }
        /* Held: by a reservation that has expired, whose vmid is free again. */
        int released =
            pass == 0 ? store_reservation_release_expired_vmid(s, c->vmid, view->now, err) : 0;
        if (released < 0)
            return -1;
        if (released == 0)
            return 0;
    }
    return 0;
}

/* Undo the reservations this call recorded (all or none, one missed). */
static int unrecord(store *s, store_claim_result *results, size_t n, vf_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (results[i].verdict != STORE_CLAIM_RECORDED || !results[i].reservation_id)
            continue;
        db_stmt *st = store_stmt(s, STORE_STMT_RESERVATION_UNRECORD,
                                 "DELETE FROM reservations WHERE id = ?1", err);
        if (!st)
            return -1;
        db_bind_int64(st, 1, results[i].reservation_id);
        if (store_exec_change(s, st, "undoing a claimed reservation", err) < 0)
            return -1;
        results[i].reservation_id = 0;
        results[i].verdict = STORE_CLAIM_NO_ROOM; /* the others' miss made it go */
    }
    return 0;
}

static int record_sqlite(store *s, const store_claim_host *hosts, size_t n_hosts,
                         const store_claim *claims, size_t n, const store_claim_view *view,
                         bool all_or_none, store_claim_result *results, vf_error *err)
{
    if (!store_in_transaction(s)) {
        vf_error_set(err, VF_EINTERNAL, "store %s: a claim needs the writer's transaction",
                     s->path);
        return -1;
    }
    host_use *use = calloc(n_hosts ? n_hosts : 1, sizeof *use);
    int rc = use ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n_hosts; i++) {
        use[i].host = &hosts[i];
        if (!(use[i].resources = json_object()))
            rc = -1;
    }
    if (rc != 0)
        vf_error_set(err, VF_ENOMEM, "store %s: claiming placements: out of memory", s->path);
    if (rc == 0)
        rc = count_used(s, use, n_hosts, claims, n, view, err);
    bool missed = false;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        results[i] = (store_claim_result){STORE_CLAIM_NO_ROOM, 0};
        host_use *u = use_of(use, n_hosts, claims[i].node);
        if (!u) {
            vf_error_set(err, VF_EINTERNAL, "store %s: claim on %s, a host not listed", s->path,
                         claims[i].node);
            rc = -1;
            break;
        }
        bool fit = fits(&claims[i], u);
        count_claim(&claims[i], u); /* the next ones count it, as the server's function does */
        if (!fit || (all_or_none && missed)) {
            missed = true;
            continue;
        }
        int64_t id = 0;
        int added = insert_one(s, &claims[i], view, &id, err);
        if (added < 0)
            rc = -1;
        else if (added == 0)
            results[i].verdict = STORE_CLAIM_VMID_HELD;
        else
            results[i] = (store_claim_result){STORE_CLAIM_RECORDED, id};
        missed |= added == 0;
    }
    if (rc == 0 && all_or_none && missed)
        rc = unrecord(s, results, n, err);
    for (size_t i = 0; use && i < n_hosts; i++)
        json_decref(use[i].resources);
    free(use);
    return rc;
}

int store_claims_record(store *s, const store_claim_host *hosts, size_t n_hosts,
                        const store_claim *claims, size_t n, const store_claim_view *view,
                        bool all_or_none, store_claim_result *results, store_claim_stats *stats,
                        vf_error *err)
{
    if (n == 0)
        return 0;
    if (!store_is_pg(s))
        return record_sqlite(s, hosts, n_hosts, claims, n, view, all_or_none, results, err);
    if (all_or_none) {
        vf_error_set(err, VF_EINTERNAL, "store %s: all-or-none claims go with the commit", s->path);
        return -1;
    }
    return record_pg(s, hosts, n_hosts, claims, n, view, results, stats, err);
}

int store_claims_defer(store *s, const store_claim_host *hosts, size_t n_hosts,
                       const store_claim *claims, size_t n, const store_claim_view *view,
                       vf_error *err)
{
    if (n == 0)
        return 0;
    if (!store_is_pg(s)) {
        store_claim_result *results = calloc(n, sizeof *results);
        if (!results) {
            vf_error_set(err, VF_ENOMEM, "store %s: claiming placements: out of memory", s->path);
            return -1;
        }
        int rc = record_sqlite(s, hosts, n_hosts, claims, n, view, true, results, err);
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (results[i].verdict != STORE_CLAIM_RECORDED) {
                vf_error_set(err, VF_ECONFLICT, "host %s has no room left for task %s%s",
                             claims[i].node, claims[i].task_id,
                             results[i].verdict == STORE_CLAIM_VMID_HELD ? " (its vmid is held)"
                                                                         : "");
                rc = -1;
            }
        free(results);
        return rc;
    }
    if (!store_defers(s)) {
        vf_error_set(err, VF_EINTERNAL,
                     "store %s: claims with the commit need a transaction of deferred writes",
                     s->path);
        return -1;
    }
    db_stmt *st =
        claim_stmt(s, STORE_STMT_CLAIM_CHECKED,
                   "SELECT 1 / (count(*) FILTER (WHERE verdict <> 0) = 0)::int FROM " CLAIM_CALL,
                   hosts, n_hosts, claims, n, view, err);
    if (!st)
        return -1;
    char missed[160];
    snprintf(missed, sizeof missed,
             "a placement of task %s (one of %zu claimed with the commit) no longer fits",
             claims[0].task_id, n);
    db_expect expect = {.short_code = VF_ECONFLICT, .short_text = missed, .checks_itself = true};
    return store_exec_deferred(st, "claiming placements with the commit", &expect, err);
}

int store_claims_withdraw(store *s, const int64_t *ids, size_t n, const char *at, vf_error *err)
{
    if (n == 0)
        return 0;
    char *text = store_json_ids(ids, n);
    if (!text) {
        vf_error_set(err, VF_ENOMEM, "store %s: withdrawing claims: out of memory", s->path);
        return -1;
    }
    db_stmt *st =
        store_stmt(s, STORE_STMT_RESERVATION_WITHDRAW,
                   store_is_pg(s) ? "UPDATE reservations SET released_at = ?2 WHERE id IN "
                                    "(SELECT CAST(value AS bigint) FROM "
                                    "json_array_elements_text(CAST(?1 AS json)) value) "
                                    "AND released_at IS NULL"
                                  : "UPDATE reservations SET released_at = ?2 WHERE id IN "
                                    "(SELECT value FROM json_each(?1)) AND released_at IS NULL",
                   err);
    int released = -1;
    if (st) {
        db_bind_text(st, 1, text);
        db_bind_text(st, 2, at);
        released = store_exec_change(s, st, "withdrawing claimed reservations", err);
    }
    free(text);
    return released;
}
