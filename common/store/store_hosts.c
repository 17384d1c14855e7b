/* store_hosts: host generations and leases, what lets several workers share
 * one store (schema/003_shared_store.sql). */
#include "store_hosts.h"
#include "store_internal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ids.h"
#include "store_reservations.h"

/* "@<pid namespace inode>.<boot id>", or "" when /proc does not tell them:
 * what makes a process id mean one process (leases.h). */
static void process_scope(char *out, size_t size)
{
    out[0] = '\0';
    struct stat ns;
    if (stat("/proc/self/ns/pid", &ns) != 0)
        return;
    char boot[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return;
    bool read = fgets(boot, sizeof boot, f) != NULL;
    fclose(f);
    if (!read)
        return;
    boot[strcspn(boot, "\r\n")] = '\0';
    /* A UUID: anything else (an empty or odd file) proves nothing. */
    if (strlen(boot) < 16 || strspn(boot, "0123456789abcdefABCDEF-") != strlen(boot))
        return;
    snprintf(out, size, "@%llu.%s", (unsigned long long)ns.st_ino, boot);
}

void store_owner_name(char out[STORE_OWNER_SIZE])
{
    char host[64] = "";
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    char scope[80];
    process_scope(scope, sizeof scope);
    char random[IDS_LEN];
    ids_new("w", random);
    snprintf(out, STORE_OWNER_SIZE, "%s%s:%ld:%s", host, scope, (long)getpid(), random);
}

int store_hosts_changed(store *s, int64_t since, char *clock, store_host_generation_fn fn,
                        void *ctx, vf_error *err)
{
    /* The inventory clock's row first (changed_seq 0; every change has a
     * larger one), then the changes. */
    db_stmt *st = store_stmt(s, STORE_STMT_HOSTS_CHANGED,
                             "SELECT NULL, 0, 0, fresh_at FROM inventory_clock WHERE id = 1 "
                             "UNION ALL SELECT node, generation, changed_seq, NULL "
                             "FROM host_generations WHERE changed_seq > ?1 ORDER BY 3",
                             err);
    if (!st)
        return -1;
    db_bind_int64(st, 1, since);
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "reading changed hosts", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    int first = 0;
    if (rows.count > 0 && !store_rows_text(&rows, 0, 0)) {
        const char *fresh = store_rows_text(&rows, 0, 3);
        first = 1;
        if (clock) {
            store_now(clock);
            /* Fixed-width RFC 3339 text: comparing the text compares the times. */
            if (fresh && strlen(fresh) < STORE_TIME_SIZE && strcmp(fresh, clock) < 0)
                snprintf(clock, STORE_TIME_SIZE, "%s", fresh);
        }
    } else if (clock) {
        store_now(clock);
    }
    for (int i = first; i < rows.count; i++) {
        store_host_generation host = {.node = store_rows_text(&rows, i, 0),
                                      .generation = store_rows_int(&rows, i, 1),
                                      .changed_seq = store_rows_int(&rows, i, 2)};
        if (fn(&host, ctx) != 0)
            break;
    }
    store_rows_free(&rows);
    return 0;
}

/* PostgreSQL's claim statements, shared by both ways of running them. */
static const char host_lock_sql[] =
    "SELECT generation FROM host_generations WHERE node = ?1 FOR UPDATE NOWAIT";
static const char host_claim_pg_sql[] = "UPDATE host_generations SET generation = generation + 1, "
                                        "changed_seq = nextval('host_generations_seq') "
                                        "WHERE node = ?1 AND generation = ?2";
static const char host_claim_new_pg_sql[] =
    "INSERT INTO host_generations (node, generation, changed_seq) "
    "VALUES (?1, 1, nextval('host_generations_seq')) "
    "ON CONFLICT (node) DO NOTHING";

/* store_host_claim with deferred writes (store_defer_writes): the same
 * statements, sent without waiting; the lock refused or the generation
 * moved fails the commit with VF_ECONFLICT. A host nobody has changed has
 * no row, and generations start at 1, so a claim from generation 0 is the
 * insert alone. */
static int claim_deferred(store *s, const char *node, int64_t expected, vf_error *err)
{
    db_stmt *lock = store_stmt(s, STORE_STMT_HOST_LOCK, host_lock_sql, err);
    if (!lock)
        return -1;
    db_bind_text(lock, 1, node);
    db_expect busy = {.busy_code = VF_ECONFLICT};
    if (store_exec_deferred(lock, "locking a host's generation", &busy, err) < 0)
        return -1;
    db_stmt *st = expected > 0
                      ? store_stmt(s, STORE_STMT_HOST_CLAIM, host_claim_pg_sql, err)
                      : store_stmt(s, STORE_STMT_HOST_CLAIM_NEW, host_claim_new_pg_sql, err);
    if (!st)
        return -1;
    db_bind_text(st, 1, node);
    if (expected > 0)
        db_bind_int64(st, 2, expected);
    char changed[160];
    snprintf(changed, sizeof changed,
             "host %s changed under the decision (decided at generation %lld)", node,
             (long long)expected);
    db_expect expect = {.min_changes = 1, .short_code = VF_ECONFLICT, .short_text = changed};
    return store_exec_deferred(st, "claiming a host", &expect, err);
}

int store_host_claim(store *s, const char *node, int64_t expected, int64_t changed_seq,
                     vf_error *err)
{
    if (!store_in_transaction(s)) {
        vf_error_set(err, VF_EINTERNAL, "store %s: a host claim needs a write transaction",
                     s->path);
        return -1;
    }
    if (store_defers(s))
        return claim_deferred(s, node, expected, err);
    /* PostgreSQL has no store-wide write lock: take the host's row now, and
     * NOWAIT: a host another transaction holds is about to change, so this
     * decision is stale already; failing at once (rather than waiting, and
     * deadlocking when two batches take two hosts in opposite orders) lets
     * the caller decide the batch again alone (store_begin_exclusive). On
     * SQLite the write transaction holds the one write lock already. */
    if (store_is_pg(s)) {
        db_stmt *lock = store_stmt(s, STORE_STMT_HOST_LOCK, host_lock_sql, err);
        if (!lock)
            return -1;
        db_bind_text(lock, 1, node);
        vf_error step_err;
        vf_error_init(&step_err);
        int rc = db_step(lock, "locking a host's generation", &step_err);
        db_reset(lock);
        if (rc < 0) {
            /* "Unavailable" here is the lock NOWAIT refused (or a lost
             * connection, which ended the transaction anyway). */
            vf_error_set(err, step_err.code == VF_EUNAVAILABLE ? VF_ECONFLICT : step_err.code,
                         "host %s is being changed by another worker's transaction (%s)", node,
                         step_err.text);
            return -1;
        }
    }
    /* One conditional write: it succeeds only from the generation the caller
     * decided from, and holds the host until the commit. (No RETURNING: it
     * costs SQLite 3.40 more than the update itself.) PostgreSQL numbers the
     * change from a sequence: it cannot see the others' uncommitted numbers. */
    db_stmt *st =
        store_stmt(s, STORE_STMT_HOST_CLAIM,
                   store_is_pg(s) ? host_claim_pg_sql
                                  : "UPDATE host_generations SET generation = generation + 1, "
                                    "changed_seq = ?3 WHERE node = ?1 AND generation = ?2",
                   err);
    if (!st)
        return -1;
    db_bind_text(st, 1, node);
    db_bind_int64(st, 2, expected);
    if (!store_is_pg(s))
        db_bind_int64(st, 3, changed_seq);
    int changed = store_exec_change(s, st, "claiming a host", err);
    if (changed < 0)
        return -1;
    if (changed == 0 && expected == 0) {
        /* A host nobody has changed yet has no row: the first claim makes it. */
        st = store_stmt(s, STORE_STMT_HOST_CLAIM_NEW,
                        store_is_pg(s)
                            ? host_claim_new_pg_sql
                            : "INSERT INTO host_generations (node, generation, changed_seq) "
                              "VALUES (?1, 1, ?2) ON CONFLICT (node) DO NOTHING",
                        err);
        if (!st)
            return -1;
        db_bind_text(st, 1, node);
        if (!store_is_pg(s))
            db_bind_int64(st, 2, changed_seq);
        changed = store_exec_change(s, st, "claiming a new host", err);
        if (changed < 0)
            return -1;
    }
    if (changed == 0) {
        vf_error_set(err, VF_ECONFLICT,
                     "host %s changed under the decision (decided at generation %lld)", node,
                     (long long)expected);
        return -1;
    }
    return 0;
}

/* The latest place in the change order, for a writer that claims hosts. */
int store_hosts_latest_seq(store *s, int64_t *seq, vf_error *err)
{
    if (store_is_pg(s)) {
        *seq = 0;
        return 0;
    }
    db_stmt *st = store_stmt(s, STORE_STMT_HOSTS_LATEST,
                             "SELECT coalesce(max(changed_seq), 0) FROM host_generations", err);
    if (!st)
        return -1;
    int rc = db_step(st, "reading the latest host change", err);
    if (rc != DB_ROW) {
        if (rc == DB_DONE)
            vf_error_set(err, VF_EINTERNAL, "store %s: no row for max(changed_seq)", s->path);
        db_reset(st);
        return -1;
    }
    *seq = db_column_int64(st, 0);
    db_reset(st);
    return 0;
}

bool store_writers_serialized(const store *s)
{
    return !store_is_pg(s);
}

int store_reservations_counted_nodes(store *s, const char *const *nodes, size_t n, const char *now,
                                     const char *view_at, store_reservation_fn fn, void *ctx,
                                     vf_error *err)
{
    if (n == 0)
        return 0;
    char *text = store_json_strings(nodes, n);
    if (!text) {
        vf_error_set(err, VF_ENOMEM, "store %s: listing hosts' reservations: out of memory",
                     s->path);
        return -1;
    }
    /* The sets of store_reservations_counted, for these hosts. */
    db_stmt *st = store_stmt(
        s, STORE_STMT_RESERVATIONS_COUNTED_NODES,
        store_is_pg(s)
            ? "WITH n AS (SELECT json_array_elements_text(?1::json) AS node) "
              "SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
              "WHERE node IN (SELECT node FROM n) AND released_at IS NULL AND expires_at > ?2 "
              "UNION ALL SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
              "WHERE node IN (SELECT node FROM n) AND bound_at IS NOT NULL AND bound_at > ?3 "
              "UNION ALL SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
              "WHERE node IN (SELECT node FROM n) AND bound_at IS NOT NULL AND expires_at > ?2 "
              "AND bound_at <= ?3 ORDER BY 1"
            : "WITH n AS (SELECT value AS node FROM json_each(?1)) "
              "SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
              "WHERE node IN (SELECT node FROM n) AND released_at IS NULL AND expires_at > ?2 "
              "UNION ALL SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
              "WHERE node IN (SELECT node FROM n) AND bound_at IS NOT NULL AND bound_at > ?3 "
              "UNION ALL SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
              "WHERE node IN (SELECT node FROM n) AND bound_at IS NOT NULL AND expires_at > ?2 "
              "AND bound_at <= ?3 ORDER BY 1",
        err);
    if (!st) {
        free(text);
        return -1;
    }
    db_bind_text(st, 1, text);
    db_bind_text(st, 2, now);
    db_bind_text(st, 3, view_at);
    /* Bound, not copied, on SQLite: freed once the rows are read. */
    int rc = store_reservations_each(s, st, "listing hosts' reservations", fn, ctx, err);
    free(text);
    return rc;
}

int store_lease_acquire(store *s, const char *name, const char *owner, const char *now,
                        const char *until, vf_error *err)
{
    /* One statement, so two workers racing for a free lease cannot both win:
     * the update applies only to our own lease or to one that has expired.
     * Taking it from another owner moves it to the next epoch; renewing our
     * own keeps the epoch. */
    db_stmt *st = store_stmt(
        s, STORE_STMT_LEASE_ACQUIRE,
        "INSERT INTO leases (name, owner, acquired_at, expires_at, epoch) "
        "VALUES (?1, ?2, ?3, ?4, 1) "
        "ON CONFLICT (name) DO UPDATE SET "
        "acquired_at = CASE WHEN leases.owner = excluded.owner THEN leases.acquired_at "
        "ELSE excluded.acquired_at END, "
        "epoch = CASE WHEN leases.owner = excluded.owner THEN leases.epoch "
        "ELSE leases.epoch + 1 END, "
        "owner = excluded.owner, expires_at = excluded.expires_at "
        "WHERE leases.owner = excluded.owner OR leases.expires_at <= excluded.acquired_at",
        err);
    if (!st)
        return -1;
    db_bind_text(st, 1, name);
    db_bind_text(st, 2, owner);
    db_bind_text(st, 3, now);
    db_bind_text(st, 4, until);
    int changed = store_exec_change(s, st, "taking a lease", err);
    return changed < 0 ? -1 : changed > 0;
}

int store_lease_release(store *s, const char *name, const char *owner, vf_error *err)
{
    /* Expired, not deleted: the row keeps its epoch, so the next holder's is
     * higher than any a paused holder may still carry. */
    db_stmt *st = store_stmt(s, STORE_STMT_LEASE_RELEASE,
                             "UPDATE leases SET expires_at = acquired_at "
                             "WHERE name = ?1 AND owner = ?2",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, name);
    db_bind_text(st, 2, owner);
    return store_exec_change(s, st, "giving up a lease", err) < 0 ? -1 : 0;
}

int store_lease_forget(store *s, const char *name, const char *owner, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_LEASE_FORGET,
                             "DELETE FROM leases WHERE name = ?1 AND owner = ?2", err);
    if (!st)
        return -1;
    db_bind_text(st, 1, name);
    db_bind_text(st, 2, owner);
    return store_exec_change(s, st, "forgetting a lease", err) < 0 ? -1 : 0;
}

int store_lease_fence(store *s, const char *name, const char *owner, int64_t epoch, vf_error *err)
{
    if (!store_in_transaction(s)) {
        vf_error_set(err, VF_EINTERNAL, "store %s: a lease fence needs a write transaction",
                     s->path);
        return -1;
    }
    /* A write that changes nothing but matches only while `owner` holds the
     * lease at `epoch`: it locks the row until the commit (PostgreSQL; SQLite
     * holds its one write lock already), so no take-over commits between this
     * check and the caller's records. */
    db_stmt *st = store_stmt(s, STORE_STMT_LEASE_FENCE,
                             "UPDATE leases SET epoch = epoch "
                             "WHERE name = ?1 AND owner = ?2 AND epoch = ?3",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, name);
    db_bind_text(st, 2, owner);
    db_bind_int64(st, 3, epoch);
    int changed = store_exec_change(s, st, "checking a lease's epoch", err);
    return changed < 0 ? -1 : changed > 0;
}

int store_leases_renew(store *s, const char *owner, const char *until, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_LEASES_RENEW,
                             "UPDATE leases SET expires_at = ?2 WHERE owner = ?1", err);
    if (!st)
        return -1;
    db_bind_text(st, 1, owner);
    db_bind_text(st, 2, until);
    return store_exec_change(s, st, "renewing leases", err);
}

int store_lease_holder(store *s, const char *name, char *holder, size_t size, int64_t *epoch,
                       vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_LEASE_HOLDER,
                             "SELECT owner, epoch FROM leases WHERE name = ?1", err);
    if (!st)
        return -1;
    db_bind_text(st, 1, name);
    store_rows rows = {0};
    if (store_rows_collect(s, st, 1, &rows, "reading a lease", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    int found = rows.count > 0 && store_rows_text(&rows, 0, 0);
    if (found) {
        snprintf(holder, size, "%s", store_rows_text(&rows, 0, 0));
        if (epoch)
            *epoch = store_rows_int(&rows, 0, 1);
    }
    store_rows_free(&rows);
    return found;
}

int store_lease_take_over(store *s, const char *name, const char *previous, const char *owner,
                          const char *now, const char *until, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_LEASE_TAKE_OVER,
                             "UPDATE leases SET owner = ?3, acquired_at = ?4, expires_at = ?5, "
                             "epoch = epoch + 1 "
                             "WHERE name = ?1 AND owner = ?2",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, name);
    db_bind_text(st, 2, previous);
    db_bind_text(st, 3, owner);
    db_bind_text(st, 4, now);
    db_bind_text(st, 5, until);
    int changed = store_exec_change(s, st, "taking over a lease", err);
    return changed < 0 ? -1 : changed > 0;
}

int store_leases_live(store *s, const char *prefix, const char *now,
                      int (*fn)(const char *owner, void *ctx), void *ctx, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_LEASES_LIVE,
                             "SELECT owner FROM leases WHERE substr(name, 1, length(CAST(?1 AS "
                             "TEXT))) = CAST(?1 AS TEXT) "
                             "AND expires_at > ?2",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, prefix);
    db_bind_text(st, 2, now);
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "listing leases", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.count; i++)
        if (fn(store_rows_text(&rows, i, 0), ctx) != 0)
            break;
    store_rows_free(&rows);
    return 0;
}
