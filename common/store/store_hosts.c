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

/* store_reservations_counted's rows (store_reservations.c), on the hosts
 * of the CTE `n` (nodes): ?2 the reservation clock, ?3 the reader's view. */
#define COUNTED_ON_NODES                                                                           \
    "SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "                                      \
    "WHERE node IN (SELECT node FROM n) AND released_at IS NULL AND expires_at > ?2 "              \
    "UNION ALL SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "                            \
    "WHERE node IN (SELECT node FROM n) AND bound_at IS NOT NULL AND bound_at > ?3 "               \
    "UNION ALL SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "                            \
    "WHERE node IN (SELECT node FROM n) AND bound_at IS NOT NULL AND expires_at > ?2 "             \
    "AND bound_at <= ?3 "                                                                          \
    "UNION ALL SELECT " STORE_RESERVATION_COLUMNS " FROM reservations "                            \
    "WHERE node IN (SELECT node FROM n) AND " STORE_RESERVATION_HOLDS_RESOURCES                    \
    " AND expires_at <= ?2 AND bound_at <= ?3 ORDER BY 1"

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

int store_changes_since(store *s, int64_t since_seq, int64_t since_id, const int64_t *skip_ids,
                        size_t n_skip, char *clock, int64_t *latest_id,
                        store_host_generation_fn host_fn, store_reservation_fn reservation_fn,
                        void *ctx, vf_error *err)
{
    char *skip = store_json_ids(skip_ids, n_skip);
    if (!skip) {
        vf_error_set(err, VF_ENOMEM, "store %s: reading what other writers changed: out of memory",
                     s->path);
        return -1;
    }
    /* One statement: the reservations first, whose columns fix the types
     * PostgreSQL gives the union's; then the hosts' generations and the
     * clock's row (with the largest reservation id), their figures in three
     * columns of their own. */
    db_stmt *st = store_stmt(
        s, STORE_STMT_CHANGES_SINCE,
        store_is_pg(s)
            ? "SELECT 2, " STORE_RESERVATION_COLUMNS ", NULL, NULL, NULL "
              "FROM reservations WHERE id > ?2 AND id NOT IN "
              "(SELECT CAST(value AS bigint) FROM json_array_elements_text(CAST(?3 AS json)) "
              "value) "
              "UNION ALL SELECT 1, NULL, NULL, node, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
              "NULL, NULL, NULL, NULL, NULL, generation, changed_seq, NULL "
              "FROM host_generations WHERE changed_seq > ?1 "
              "UNION ALL SELECT 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
              "NULL, "
              "NULL, NULL, NULL, NULL, (SELECT coalesce(max(id), 0) FROM reservations), NULL, "
              "(SELECT fresh_at FROM inventory_clock WHERE id = 1) ORDER BY 1, 18, 2"
            : "SELECT 2, " STORE_RESERVATION_COLUMNS ", NULL, NULL, NULL "
              "FROM reservations WHERE id > ?2 AND id NOT IN (SELECT value FROM json_each(?3)) "
              "UNION ALL SELECT 1, NULL, NULL, node, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
              "NULL, NULL, NULL, NULL, NULL, generation, changed_seq, NULL "
              "FROM host_generations WHERE changed_seq > ?1 "
              "UNION ALL SELECT 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
              "NULL, "
              "NULL, NULL, NULL, NULL, (SELECT coalesce(max(id), 0) FROM reservations), NULL, "
              "(SELECT fresh_at FROM inventory_clock WHERE id = 1) ORDER BY 1, 18, 2",
        err);
    if (!st) {
        free(skip);
        return -1;
    }
    db_bind_int64(st, 1, since_seq);
    db_bind_int64(st, 2, since_id);
    db_bind_text(st, 3, skip);
    store_rows rows = {0};
    int rc = store_rows_collect(s, st, 0, &rows, "reading what other writers changed", err);
    free(skip);
    if (rc != 0) {
        store_rows_free(&rows);
        return -1;
    }
    if (clock)
        store_now(clock);
    bool stop = false;
    for (int i = 0; i < rows.count && !stop; i++) {
        int64_t kind = store_rows_int(&rows, i, 0);
        if (kind == 0) {
            const char *fresh = store_rows_text(&rows, i, 18);
            /* Fixed-width RFC 3339 text: comparing the text compares the times. */
            if (clock && fresh && strlen(fresh) < STORE_TIME_SIZE && strcmp(fresh, clock) < 0)
                snprintf(clock, STORE_TIME_SIZE, "%s", fresh);
            if (latest_id)
                *latest_id = store_rows_int(&rows, i, 16);
        } else if (kind == 1 && host_fn) {
            store_host_generation host = {.node = store_rows_text(&rows, i, 3),
                                          .generation = store_rows_int(&rows, i, 16),
                                          .changed_seq = store_rows_int(&rows, i, 17)};
            stop = host_fn(&host, ctx) != 0;
        } else if (kind == 2 && reservation_fn) {
            store_reservation r = store_reservation_at(&rows, i, 1);
            stop = reservation_fn(&r, ctx) != 0;
        }
    }
    store_rows_free(&rows);
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
            ? "WITH n AS (SELECT json_array_elements_text(?1::json) AS node) " COUNTED_ON_NODES
            : "WITH n AS (SELECT value AS node FROM json_each(?1)) " COUNTED_ON_NODES,
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
