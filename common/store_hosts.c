/* store_hosts: host generations and leases, what lets several workers share
 * one store (schema/003_shared_store.sql). */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <unistd.h>

#include "ids.h"

void store_owner_name(char out[STORE_OWNER_SIZE])
{
    char host[64] = "";
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    char random[IDS_LEN];
    ids_new("w", random);
    snprintf(out, STORE_OWNER_SIZE, "%s:%ld:%s", host, (long)getpid(), random);
}

int store_hosts_changed(store *s, int64_t since, store_host_generation_fn fn, void *ctx,
                        vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_HOSTS_CHANGED,
                             "SELECT node, generation, changed_seq FROM host_generations "
                             "WHERE changed_seq > ?1 ORDER BY changed_seq",
                             err);
    if (!st)
        return -1;
    db_bind_int64(st, 1, since);
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "reading changed hosts", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.count; i++) {
        store_host_generation host = {.node = store_rows_text(&rows, i, 0),
                                      .generation = store_rows_int(&rows, i, 1),
                                      .changed_seq = store_rows_int(&rows, i, 2)};
        if (fn(&host, ctx) != 0)
            break;
    }
    store_rows_free(&rows);
    return 0;
}

int store_host_claim(store *s, const char *node, int64_t expected, vf_error *err)
{
    if (!store_in_transaction(s)) {
        vf_error_set(err, VF_EINTERNAL, "store %s: a host claim needs a write transaction",
                     s->path);
        return -1;
    }
    /* SQLite: a read suffices, the write transaction holds SQLite's one
     * write lock, so the generation cannot move between this check and the
     * commit. PostgreSQL has no such lock: lock the host's row until the
     * commit. NOWAIT: a host another transaction holds now is about to
     * change, so this decision is stale already; failing at once (rather
     * than waiting, and deadlocking when two batches take two hosts in
     * opposite orders) lets the caller decide the batch again alone
     * (store_begin_exclusive). A host never reserved on has no row to lock:
     * create it (generation 0, as a missing row reads) and lock that. */
    int64_t generation = 0;
    for (int pass = 0;; pass++) {
        db_stmt *st =
            store_stmt(s, STORE_STMT_HOST_GENERATION,
                       store_is_pg(s) ? "SELECT generation FROM host_generations WHERE node = ?1 "
                                        "FOR UPDATE NOWAIT"
                                      : "SELECT generation FROM host_generations WHERE node = ?1",
                       err);
        if (!st)
            return -1;
        store_bind_text(st, 1, node);
        vf_error step_err;
        vf_error_init(&step_err);
        int rc = db_step(st, "reading a host's generation", &step_err);
        if (rc == DB_ROW)
            generation = db_column_int64(st, 0);
        store_stmt_done(st);
        if (rc < 0) {
            /* On PostgreSQL "unavailable" here is the lock NOWAIT refused
             * (or a lost connection, which ended the transaction anyway). */
            if (store_is_pg(s) && step_err.code == VF_EUNAVAILABLE)
                vf_error_set(err, VF_ECONFLICT,
                             "host %s is being changed by another worker's transaction (%s)", node,
                             step_err.text);
            else
                vf_error_set(err, step_err.code, "%s", step_err.text);
            return -1;
        }
        if (rc == DB_ROW || !store_is_pg(s) || pass > 0)
            break;
        db_stmt *add = store_stmt(s, STORE_STMT_HOST_GENERATION_ADD,
                                  "INSERT INTO host_generations (node, generation, changed_seq) "
                                  "VALUES (?1, 0, 0) ON CONFLICT (node) DO NOTHING",
                                  err);
        if (!add)
            return -1;
        store_bind_text(add, 1, node);
        if (store_exec_change(s, add, "adding a host's generation", err) < 0)
            return -1;
    }
    if (generation != expected) {
        vf_error_set(err, VF_ECONFLICT,
                     "host %s changed under the decision (generation %lld, decided at %lld)", node,
                     (long long)generation, (long long)expected);
        return -1;
    }
    return 0;
}

int store_reservations_live_node(store *s, const char *node, const char *now,
                                 store_reservation_fn fn, void *ctx, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_RESERVATIONS_LIVE_NODE,
                             "SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "
                             "WHERE node = ?1 AND released_at IS NULL AND expires_at > ?2 "
                             "ORDER BY id",
                             err);
    if (!st)
        return -1;
    store_bind_text(st, 1, node);
    store_bind_text(st, 2, now);
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "listing a host's reservations", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    store_reservation_rows_each(&rows, fn, ctx);
    store_rows_free(&rows);
    return 0;
}

int store_lease_acquire(store *s, const char *name, const char *owner, const char *now,
                        const char *until, vf_error *err)
{
    /* One statement, so two workers racing for a free lease cannot both win:
     * the update applies only to our own lease or to one that has expired. */
    db_stmt *st = store_stmt(
        s, STORE_STMT_LEASE_ACQUIRE,
        "INSERT INTO leases (name, owner, acquired_at, expires_at) VALUES (?1, ?2, ?3, ?4) "
        "ON CONFLICT (name) DO UPDATE SET "
        "acquired_at = CASE WHEN leases.owner = excluded.owner THEN leases.acquired_at "
        "ELSE excluded.acquired_at END, "
        "owner = excluded.owner, expires_at = excluded.expires_at "
        "WHERE leases.owner = excluded.owner OR leases.expires_at <= excluded.acquired_at",
        err);
    if (!st)
        return -1;
    store_bind_text(st, 1, name);
    store_bind_text(st, 2, owner);
    store_bind_text(st, 3, now);
    store_bind_text(st, 4, until);
    int changed = store_exec_change(s, st, "taking a lease", err);
    return changed < 0 ? -1 : changed > 0;
}

int store_lease_release(store *s, const char *name, const char *owner, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_LEASE_RELEASE,
                             "DELETE FROM leases WHERE name = ?1 AND owner = ?2", err);
    if (!st)
        return -1;
    store_bind_text(st, 1, name);
    store_bind_text(st, 2, owner);
    return store_exec_change(s, st, "giving up a lease", err) < 0 ? -1 : 0;
}

int store_leases_renew(store *s, const char *owner, const char *until, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_LEASES_RENEW,
                             "UPDATE leases SET expires_at = ?2 WHERE owner = ?1", err);
    if (!st)
        return -1;
    store_bind_text(st, 1, owner);
    store_bind_text(st, 2, until);
    return store_exec_change(s, st, "renewing leases", err);
}

int store_lease_holder(store *s, const char *name, char *holder, size_t size, vf_error *err)
{
    db_stmt *st =
        store_stmt(s, STORE_STMT_LEASE_HOLDER, "SELECT owner FROM leases WHERE name = ?1", err);
    if (!st)
        return -1;
    store_bind_text(st, 1, name);
    store_rows rows = {0};
    if (store_rows_collect(s, st, 1, &rows, "reading a lease", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    int found = rows.count > 0 && store_rows_text(&rows, 0, 0);
    if (found)
        snprintf(holder, size, "%s", store_rows_text(&rows, 0, 0));
    store_rows_free(&rows);
    return found;
}

int store_lease_take_over(store *s, const char *name, const char *previous, const char *owner,
                          const char *now, const char *until, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_LEASE_TAKE_OVER,
                             "UPDATE leases SET owner = ?3, acquired_at = ?4, expires_at = ?5 "
                             "WHERE name = ?1 AND owner = ?2",
                             err);
    if (!st)
        return -1;
    store_bind_text(st, 1, name);
    store_bind_text(st, 2, previous);
    store_bind_text(st, 3, owner);
    store_bind_text(st, 4, now);
    store_bind_text(st, 5, until);
    int changed = store_exec_change(s, st, "taking over a lease", err);
    return changed < 0 ? -1 : changed > 0;
}
