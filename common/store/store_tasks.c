/* store_tasks: the tasks and task_events tables. */
#include "store_tasks.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "grow.h"

/* The columns a task is inserted with; TASK_COLUMNS (what is read) adds the
 * operator's mark, which only store_task_set_action writes. */
#define TASK_INSERT_COLUMNS                                                                        \
    "id, kind, status, reason, attempts, request, result, error, node, vmid, created_at, "         \
    "updated_at"
#define TASK_COLUMNS TASK_INSERT_COLUMNS ", action, action_detail, reply_to, correlation_id"

void store_task_clear(store_task *t)
{
    if (!t)
        return;
    free(t->id);
    free(t->kind);
    free(t->status);
    free(t->reason);
    free(t->request);
    free(t->result);
    free(t->error);
    free(t->node);
    free(t->created_at);
    free(t->updated_at);
    free(t->action);
    free(t->action_detail);
    free(t->reply_to);
    free(t->correlation_id);
    memset(t, 0, sizeof *t);
}

/* Owned copy of a text column; *ok turns false if a non-NULL value could
 * not be copied. */
static char *column_dup(db_stmt *st, int column, bool *ok)
{
    const char *text = db_column_text(st, column);
    if (!text)
        return NULL;
    char *copy = strdup(text);
    if (!copy)
        *ok = false;
    return copy;
}

/* Copy the current row (TASK_COLUMNS order) into *t. */
static int task_from_row(db_stmt *st, store_task *t)
{
    bool ok = true;
    memset(t, 0, sizeof *t);
    t->id = column_dup(st, 0, &ok);
    t->kind = column_dup(st, 1, &ok);
    t->status = column_dup(st, 2, &ok);
    t->reason = column_dup(st, 3, &ok);
    t->attempts = (int)db_column_int64(st, 4);
    t->request = column_dup(st, 5, &ok);
    t->result = column_dup(st, 6, &ok);
    t->error = column_dup(st, 7, &ok);
    t->node = column_dup(st, 8, &ok);
    t->vmid = db_column_is_null(st, 9) ? -1 : db_column_int64(st, 9);
    t->created_at = column_dup(st, 10, &ok);
    t->updated_at = column_dup(st, 11, &ok);
    t->action = column_dup(st, 12, &ok);
    t->action_detail = column_dup(st, 13, &ok);
    t->reply_to = column_dup(st, 14, &ok);
    t->correlation_id = column_dup(st, 15, &ok);
    if (!ok) {
        store_task_clear(t);
        return -1;
    }
    return 0;
}

/* ---- tasks read ahead for a transaction ---- */

typedef struct prefetched {
    char *id;  /* owned */
    int row;   /* in rows; -1: no such task */
    bool gone; /* written through the handle since: ask the server */
} prefetched;

/* Tasks read ahead for the open transaction (store_tasks_prefetch), kept
 * in the store's transaction cache. */
typedef struct store_prefetch {
    prefetched *ids; /* sorted by id, no duplicates */
    size_t n_ids;
    store_rows rows;
} store_prefetch;

static int compare_prefetched(const void *a, const void *b)
{
    return strcmp(((const prefetched *)a)->id, ((const prefetched *)b)->id);
}

static void prefetch_free(void *data)
{
    store_prefetch *p = data;
    for (size_t i = 0; i < p->n_ids; i++)
        free(p->ids[i].id);
    free(p->ids);
    store_rows_free(&p->rows);
    free(p);
}

/* The tasks read ahead, when the open transaction has them. */
static store_prefetch *prefetch_of(store *s)
{
    return s->tx_cache.free == prefetch_free ? s->tx_cache.data : NULL;
}

static prefetched *prefetch_find(store *s, const char *id)
{
    store_prefetch *p = prefetch_of(s);
    if (!p || !id)
        return NULL;
    prefetched key = {.id = (char *)id};
    return bsearch(&key, p->ids, p->n_ids, sizeof key, compare_prefetched);
}

/* A task written through the handle: its prefetched row is stale. */
static void prefetch_forget(store *s, const char *id)
{
    prefetched *known = prefetch_find(s, id);
    if (known)
        known->gone = true;
}

int store_tasks_prefetch(store *s, const char *const *ids, size_t n, vf_error *err)
{
    store_tx_cache_drop(s);
    if (!store_is_pg(s) || !store_in_transaction(s) || n == 0)
        return 0;
    int rc = -1;
    store_pg_array array = {0};
    for (size_t i = 0; i < n; i++)
        store_pg_array_text(&array, ids[i]);
    char *literal = store_pg_array_finish(&array);
    store_prefetch *p = calloc(1, sizeof *p);
    if (!literal || !p || !(p->ids = calloc(n, sizeof *p->ids))) {
        vf_error_set(err, VF_ENOMEM, "store %s: reading a batch's tasks: out of memory", s->path);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(p->ids[p->n_ids].id = strdup(ids[i]))) {
            vf_error_set(err, VF_ENOMEM, "store %s: reading a batch's tasks: out of memory",
                         s->path);
            goto out;
        }
        p->ids[p->n_ids++].row = -1;
    }
    qsort(p->ids, p->n_ids, sizeof *p->ids, compare_prefetched);
    size_t kept = 0;
    for (size_t i = 0; i < p->n_ids; i++) {
        if (kept && strcmp(p->ids[kept - 1].id, p->ids[i].id) == 0)
            free(p->ids[i].id);
        else
            p->ids[kept++] = p->ids[i];
    }
    p->n_ids = kept;
    db_stmt *st =
        store_stmt(s, STORE_STMT_TASKS_PREFETCH,
                   "SELECT " TASK_COLUMNS " FROM tasks WHERE id = ANY(CAST(?1 AS text[]))", err);
    if (!st)
        goto out;
    db_bind_text(st, 1, literal);
    if (store_rows_collect(s, st, 0, &p->rows, "reading a batch's tasks", err) != 0)
        goto out;
    for (int row = 0; row < p->rows.count; row++) {
        prefetched key = {.id = (char *)store_rows_text(&p->rows, row, 0)};
        prefetched *known = bsearch(&key, p->ids, p->n_ids, sizeof key, compare_prefetched);
        if (known)
            known->row = row;
    }
    s->tx_cache = (store_tx_cache){.data = p, .free = prefetch_free};
    p = NULL;
    rc = 0;
out:
    free(literal);
    if (p)
        prefetch_free(p);
    return rc;
}

/* Row `row` of a prefetch into *t (owned copies). */
static int task_from_prefetched(const store_rows *rows, int row, store_task *t)
{
    bool ok = true;
    char **fields[] = {&t->id,         &t->kind,
                       &t->status,     &t->reason,
                       NULL,           &t->request,
                       &t->result,     &t->error,
                       &t->node,       NULL,
                       &t->created_at, &t->updated_at,
                       &t->action,     &t->action_detail,
                       &t->reply_to,   &t->correlation_id};
    memset(t, 0, sizeof *t);
    for (int column = 0; column < (int)(sizeof fields / sizeof fields[0]); column++) {
        const char *text = fields[column] ? store_rows_text(rows, row, column) : NULL;
        if (text && !(*fields[column] = strdup(text)))
            ok = false;
    }
    t->attempts = (int)store_rows_int(rows, row, 4);
    t->vmid = store_rows_id(rows, row, 9);
    if (!ok) {
        store_task_clear(t);
        return -1;
    }
    return 0;
}

int store_task_get(store *s, const char *id, store_task *out, vf_error *err)
{
    prefetched *known = prefetch_find(s, id);
    if (known && !known->gone) {
        if (known->row < 0)
            return 1;
        if (task_from_prefetched(&prefetch_of(s)->rows, known->row, out) != 0) {
            vf_error_set(err, VF_ENOMEM, "store %s: reading task %s: out of memory", s->path, id);
            return -1;
        }
        return 0;
    }
    db_stmt *st =
        store_stmt(s, STORE_STMT_TASK_GET, "SELECT " TASK_COLUMNS " FROM tasks WHERE id = ?1", err);
    if (!st)
        return -1;
    int result = -1;
    db_bind_text(st, 1, id);
    int rc = db_step(st, "reading a task", err);
    if (rc == DB_DONE) {
        result = 1;
    } else if (rc != DB_ROW) {
        /* err is set */
    } else if (task_from_row(st, out) != 0) {
        vf_error_set(err, VF_ENOMEM, "store %s: reading task %s: out of memory", s->path, id);
    } else {
        result = 0;
    }
    db_reset(st);
    return result;
}

/* The request's "vm_name" when it is a JSON object with a string there
 * (owned), else NULL: the tasks_by_vm_name column (schema/017). Parsed only
 * when the text names the key, so most requests cost a strstr. */
static char *request_vm_name(const char *request)
{
    if (!request || !strstr(request, "\"vm_name\""))
        return NULL;
    json_t *body = json_loads(request, 0, NULL);
    const char *name = json_string_value(json_object_get(body, "vm_name"));
    char *copy = name ? strdup(name) : NULL;
    json_decref(body);
    return copy;
}

/* The insert statement (`or_skip`: one that skips a known id) with t's
 * fields and `vm_name` bound (borrowed until the statement ran); NULL with
 * err. */
static db_stmt *insert_stmt(store *s, const store_task_fields *t, const char *vm_name, bool or_skip,
                            vf_error *err)
{
    db_stmt *st = or_skip ? store_stmt(s, STORE_STMT_TASK_INSERT_NEW,
                                       "INSERT INTO tasks (" TASK_INSERT_COLUMNS
                                       ", reply_to, correlation_id, vm_name) VALUES "
                                       "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12, "
                                       "?13, ?14) ON CONFLICT (id) DO NOTHING",
                                       err)
                          : store_stmt(s, STORE_STMT_TASK_INSERT,
                                       "INSERT INTO tasks (" TASK_INSERT_COLUMNS
                                       ", reply_to, correlation_id, vm_name) VALUES "
                                       "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12, "
                                       "?13, ?14)",
                                       err);
    if (!st)
        return NULL;
    db_bind_text(st, 1, t->id);
    db_bind_text(st, 2, t->kind);
    db_bind_text(st, 3, t->status);
    db_bind_text(st, 4, t->reason);
    db_bind_int64(st, 5, t->attempts);
    db_bind_text(st, 6, t->request);
    db_bind_text(st, 7, t->result);
    db_bind_text(st, 8, t->error);
    db_bind_text(st, 9, t->node);
    store_bind_id(st, 10, t->vmid);
    db_bind_text(st, 11, t->at);
    db_bind_text(st, 12, t->reply_to);
    db_bind_text(st, 13, t->correlation_id);
    db_bind_text(st, 14, vm_name);
    prefetch_forget(s, t->id);
    return st;
}

int store_task_insert(store *s, const store_task_fields *t, vf_error *err)
{
    char *vm_name = request_vm_name(t->request);
    int rc = -1;
    db_stmt *st = insert_stmt(s, t, vm_name, false, err);
    if (st && store_defers(s))
        rc = store_exec_deferred(st, "recording a task", &(db_expect){0}, err);
    else if (st)
        rc = store_exec_change(s, st, "recording a task", err) < 0 ? -1 : 0;
    free(vm_name);
    return rc;
}

int store_task_insert_new(store *s, const store_task_fields *t, vf_error *err)
{
    char *vm_name = request_vm_name(t->request);
    db_stmt *st = insert_stmt(s, t, vm_name, true, err);
    int changed = st ? store_exec_change(s, st, "recording a task", err) : -1;
    free(vm_name);
    return changed < 0 ? -1 : changed > 0 ? 1 : 0;
}

int store_task_undo(store *s, const char *id, vf_error *err)
{
    store_prefetch *p = prefetch_of(s);
    prefetched *known = prefetch_find(s, id);
    if (!store_defers(s) || !p || !known) {
        vf_error_set(err, VF_EINTERNAL, "store %s: task %s: nothing read ahead to put back",
                     s->path, id);
        return -1;
    }
    db_stmt *st;
    if (known->row < 0) {
        st = store_stmt(s, STORE_STMT_TASK_UNDO_NEW, "DELETE FROM tasks WHERE id = ?1", err);
        if (!st)
            return -1;
        db_bind_text(st, 1, id);
        return store_exec_deferred(st, "undoing a task's record", &(db_expect){0}, err);
    }
    /* The columns a worker's transaction writes (store_task_update,
     * store_task_set_action), as read. */
    st = store_stmt(s, STORE_STMT_TASK_UNDO,
                    "UPDATE tasks SET status = ?2, reason = ?3, attempts = ?4, result = ?5, "
                    "error = ?6, node = ?7, vmid = ?8, updated_at = ?9, action = ?10, "
                    "action_detail = ?11, reply_to = ?12, correlation_id = ?13 WHERE id = ?1",
                    err);
    if (!st)
        return -1;
    const store_rows *rows = &p->rows;
    int row = known->row;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, store_rows_text(rows, row, 2));
    db_bind_text(st, 3, store_rows_text(rows, row, 3));
    db_bind_int64(st, 4, store_rows_int(rows, row, 4));
    db_bind_text(st, 5, store_rows_text(rows, row, 6));
    db_bind_text(st, 6, store_rows_text(rows, row, 7));
    db_bind_text(st, 7, store_rows_text(rows, row, 8));
    store_bind_id(st, 8, store_rows_id(rows, row, 9));
    db_bind_text(st, 9, store_rows_text(rows, row, 11));
    db_bind_text(st, 10, store_rows_text(rows, row, 12));
    db_bind_text(st, 11, store_rows_text(rows, row, 13));
    db_bind_text(st, 12, store_rows_text(rows, row, 14));
    db_bind_text(st, 13, store_rows_text(rows, row, 15));
    db_expect expect = {.min_changes = 1,
                        .short_code = VF_EINTERNAL,
                        .short_text = "a task undone vanished inside its own transaction"};
    return store_exec_deferred(st, "undoing a task's record", &expect, err);
}

int store_task_update(store *s, const store_task_fields *t, vf_error *err)
{
    db_stmt *st = t->check_attempts
                      ? store_stmt(s, STORE_STMT_TASK_UPDATE_IF,
                                   "UPDATE tasks SET status = ?2, reason = ?3, attempts = ?4, "
                                   "result = ?5, error = ?6, node = ?7, vmid = ?8, "
                                   "updated_at = ?9, reply_to = coalesce(reply_to, ?11), "
                                   "correlation_id = CASE WHEN reply_to IS NULL THEN ?12 "
                                   "ELSE correlation_id END WHERE id = ?1 AND attempts = ?10",
                                   err)
                      : store_stmt(s, STORE_STMT_TASK_UPDATE,
                                   "UPDATE tasks SET status = ?2, reason = ?3, attempts = ?4, "
                                   "result = ?5, error = ?6, node = ?7, vmid = ?8, "
                                   "updated_at = ?9, reply_to = coalesce(reply_to, ?10), "
                                   "correlation_id = CASE WHEN reply_to IS NULL THEN ?11 "
                                   "ELSE correlation_id END WHERE id = ?1",
                                   err);
    if (!st)
        return -1;
    db_bind_text(st, 1, t->id);
    db_bind_text(st, 2, t->status);
    db_bind_text(st, 3, t->reason);
    db_bind_int64(st, 4, t->attempts);
    db_bind_text(st, 5, t->result);
    db_bind_text(st, 6, t->error);
    db_bind_text(st, 7, t->node);
    store_bind_id(st, 8, t->vmid);
    db_bind_text(st, 9, t->at);
    /* The client's channel after the attempts checked, when they are. */
    int next = 10;
    if (t->check_attempts)
        db_bind_int64(st, next++, t->expected_attempts);
    db_bind_text(st, next, t->reply_to);
    db_bind_text(st, next + 1, t->correlation_id);
    prefetch_forget(s, t->id);
    if (store_defers(s)) {
        char missing[128];
        snprintf(missing, sizeof missing,
                 t->check_attempts ? "task %s was recorded by another worker meanwhile"
                                   : "task %s vanished inside its own transaction",
                 t->id);
        db_expect expect = {.min_changes = 1,
                            .short_code = t->check_attempts ? VF_ECONFLICT : VF_EINTERNAL,
                            .short_text = missing};
        return store_exec_deferred(st, "updating a task", &expect, err);
    }
    int changed = store_exec_change(s, st, "updating a task", err);
    if (changed < 0)
        return -1;
    return changed == 0 ? 1 : 0;
}

int store_task_withdraw(store *s, const char *id, vf_error *err)
{
    if (store_batch_flush(s, err) != 0)
        return -1;
    db_stmt *st = store_stmt(s, STORE_STMT_TASK_WITHDRAW_EVENTS,
                             "DELETE FROM task_events WHERE task_id = ?1 AND EXISTS "
                             "(SELECT 1 FROM tasks WHERE id = ?1 AND status = 'queued')",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    if (store_exec_change(s, st, "withdrawing a queued task's history", err) < 0)
        return -1;
    st = store_stmt(s, STORE_STMT_TASK_WITHDRAW,
                    "DELETE FROM tasks WHERE id = ?1 AND status = 'queued'", err);
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    int changed = store_exec_change(s, st, "withdrawing a queued task", err);
    if (changed < 0)
        return -1;
    return changed == 0 ? 1 : 0;
}

int store_task_event_add(store *s, const char *task_id, const char *at, const char *status,
                         const char *detail, vf_error *err)
{
    if (store_batches(s))
        return store_batch_add(s, STORE_BATCH_TASK_EVENTS,
                               (const char *const[]){task_id, at, status, detail}, err);
    db_stmt *st = store_stmt(
        s, STORE_STMT_TASK_EVENT_ADD,
        "INSERT INTO task_events (task_id, at, status, detail) VALUES (?1, ?2, ?3, ?4)", err);
    if (!st)
        return -1;
    db_bind_text(st, 1, task_id);
    db_bind_text(st, 2, at);
    db_bind_text(st, 3, status);
    db_bind_text(st, 4, detail);
    return store_exec_change(s, st, "recording task history", err) < 0 ? -1 : 0;
}

/* Run `st` (bound, a SELECT of id, task_id, at, status, detail) and call fn
 * for each row. */
static int each_task_event(store *s, db_stmt *st, store_task_event_fn fn, void *ctx, vf_error *err)
{
    store_rows rows = {0};
    if (store_rows_collect(s, st, 0, &rows, "reading task history", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    for (int i = 0; i < rows.count; i++) {
        store_task_event event = {
            .id = store_rows_int(&rows, i, 0),
            .task_id = store_rows_text(&rows, i, 1),
            .at = store_rows_text(&rows, i, 2),
            .status = store_rows_text(&rows, i, 3),
            .detail = store_rows_text(&rows, i, 4),
        };
        if (fn(&event, ctx) != 0)
            break;
    }
    store_rows_free(&rows);
    return 0;
}

int store_task_events(store *s, const char *task_id, store_task_event_fn fn, void *ctx,
                      vf_error *err)
{
    if (store_batch_flush(s, err) != 0)
        return -1;
    db_stmt *st = store_stmt(s, STORE_STMT_TASK_EVENTS,
                             "SELECT id, task_id, at, status, detail FROM task_events "
                             "WHERE task_id = ?1 ORDER BY id",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, task_id);
    return each_task_event(s, st, fn, ctx, err);
}

int store_task_events_after(store *s, const char *task_id, int64_t after_id, int limit,
                            store_task_event_fn fn, void *ctx, vf_error *err)
{
    if (store_batch_flush(s, err) != 0)
        return -1;
    /* task_events_by_task (task_id, id): one range. */
    db_stmt *st = store_stmt(s, STORE_STMT_TASK_EVENTS_AFTER,
                             "SELECT id, task_id, at, status, detail FROM task_events "
                             "WHERE task_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, task_id);
    db_bind_int64(st, 2, after_id);
    store_bind_limit(st, 3, limit);
    return each_task_event(s, st, fn, ctx, err);
}

/* The filters of store_task_filter in its field order; each `?` of a
 * fragment is bound to the filter's value. Who submitted a task is in its
 * history: the key name virtflow-api recorded with the queued row, or the
 * AMQP user (broker-checked) of the message a worker took. History details
 * are JSON the programs wrote, so the casts cannot fail. */
static const char *const task_filter_sql[STORE_TASK_FILTERS] = {
    "status = ?",
    "reason = ?",
    "kind = ?",
    "node = ?",
    "created_at >= ?",
    "vm_name = ?",
    ("EXISTS (SELECT 1 FROM task_events e WHERE e.task_id = tasks.id AND "
     "(json_extract(e.detail, '$.submitter') = ? OR json_extract(e.detail, '$.publisher') = ?))"),
    "lower(error) LIKE lower(?) ESCAPE '\\'",
};
static const char *const task_filter_pg[STORE_TASK_FILTERS] = {
    [6] = "EXISTS (SELECT 1 FROM task_events e WHERE e.task_id = tasks.id AND "
          "(e.detail::jsonb ->> 'submitter' = ? OR e.detail::jsonb ->> 'publisher' = ?))",
};

const char *store_task_filter_sql(const store *s, int i)
{
    return store_is_pg(s) && task_filter_pg[i] ? task_filter_pg[i] : task_filter_sql[i];
}

int store_task_filter_params(int i)
{
    int n = 0;
    for (const char *q = strchr(task_filter_sql[i], '?'); q; q = strchr(q + 1, '?'))
        n++;
    return n;
}

/* "%text%" with LIKE's own characters escaped (ESCAPE '\\'): owned, or NULL
 * when out of memory. */
static char *like_contains(const char *text)
{
    char *out = malloc(2 * strlen(text) + 3), *o = out;
    if (!out)
        return NULL;
    *o++ = '%';
    for (const char *c = text; *c; c++) {
        if (*c == '%' || *c == '_' || *c == '\\')
            *o++ = '\\';
        *o++ = *c;
    }
    *o++ = '%';
    *o = '\0';
    return out;
}

int store_task_filter_values(const store_task_filter *f, const char *values[STORE_TASK_FILTERS],
                             char **like)
{
    *like = f->error ? like_contains(f->error) : NULL;
    if (f->error && !*like)
        return -1;
    const char *in_order[STORE_TASK_FILTERS] = {f->status, f->reason,  f->kind,      f->node,
                                                f->since,  f->vm_name, f->submitter, *like};
    memcpy(values, in_order, sizeof in_order);
    return 0;
}

/* Step `st` (bound, a SELECT of TASK_COLUMNS) to its end, then call fn for
 * each row: the rows are copied first so the callback may use the store. */
static int each_task(store *s, db_stmt *st, store_task_fn fn, void *ctx, vf_error *err)
{
    int result = -1;
    store_task *tasks = NULL;
    size_t count = 0, capacity = 0;
    for (;;) {
        int rc = db_step(st, "listing tasks", err);
        if (rc == DB_DONE)
            break;
        if (rc != DB_ROW)
            goto out;
        if (grow_array((void **)&tasks, &capacity, count + 1, sizeof *tasks) < 0)
            goto nomem;
        if (task_from_row(st, &tasks[count]) != 0)
            goto nomem;
        count++;
    }
    db_reset(st);
    for (size_t i = 0; i < count; i++)
        if (fn(&tasks[i], ctx) != 0)
            break;
    result = 0;
    goto out;
nomem:
    vf_error_set(err, VF_ENOMEM, "store %s: listing tasks: out of memory", s->path);
out:
    db_reset(st);
    for (size_t i = 0; i < count; i++)
        store_task_clear(&tasks[i]);
    free(tasks);
    return result;
}

int store_task_list(store *s, const store_task_filter *filter, store_task_fn fn, void *ctx,
                    vf_error *err)
{
    store_task_filter none = {0};
    if (!filter)
        filter = &none;
    const char *values[STORE_TASK_FILTERS];
    char *error_like = NULL;
    if (store_task_filter_values(filter, values, &error_like) < 0) {
        vf_error_set(err, VF_ENOMEM, "store %s: listing tasks: out of memory", s->path);
        return -1;
    }
    unsigned mask = 0;
    for (int i = 0; i < STORE_TASK_FILTERS; i++)
        if (values[i])
            mask |= 1u << i;
    if (!s->task_list[mask]) {
        /* Built only from the fixed fragments above; values are bound. */
        char sql[1024];
        size_t len = (size_t)snprintf(sql, sizeof sql, "SELECT " TASK_COLUMNS " FROM tasks");
        const char *joiner = " WHERE ";
        for (int i = 0; i < STORE_TASK_FILTERS; i++) {
            if (!(mask & (1u << i)))
                continue;
            len += (size_t)snprintf(sql + len, sizeof sql - len, "%s%s", joiner,
                                    store_task_filter_sql(s, i));
            joiner = " AND ";
        }
        snprintf(sql + len, sizeof sql - len, " ORDER BY created_at DESC, id DESC LIMIT ?");
        if (!db_prepare(s->db, &s->task_list[mask], sql, err)) {
            free(error_like);
            return -1;
        }
    }
    db_stmt *st = s->task_list[mask];
    int index = 1;
    for (int i = 0; i < STORE_TASK_FILTERS; i++)
        for (int k = 0; values[i] && k < store_task_filter_params(i); k++)
            db_bind_text(st, index++, values[i]);
    store_bind_limit(st, index, filter->limit);

    int rc = each_task(s, st, fn, ctx, err);
    free(error_like);
    return rc;
}

int store_tasks_waiting(store *s, const char *kind, int limit, store_task_fn fn, void *ctx,
                        vf_error *err)
{
    /* tasks_by_status_updated (schema/007): one index range. */
    db_stmt *st = store_stmt(s, STORE_STMT_TASKS_WAITING,
                             "SELECT " TASK_COLUMNS " FROM tasks WHERE status = 'retrying' "
                             "AND kind = ?1 ORDER BY updated_at LIMIT ?2",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, kind);
    db_bind_int64(st, 2, limit);
    return each_task(s, st, fn, ctx, err);
}

int store_tasks_stale_queued(store *s, const char *before, int limit, store_task_fn fn, void *ctx,
                             vf_error *err)
{
    /* tasks_by_status_updated (schema/007): one index range. */
    db_stmt *st =
        store_stmt(s, STORE_STMT_TASKS_STALE_QUEUED,
                   "SELECT " TASK_COLUMNS " FROM tasks WHERE status = 'queued' "
                   "AND kind IN ('schedule', 'spare') AND updated_at < ?1 ORDER BY updated_at "
                   "LIMIT ?2",
                   err);
    if (!st)
        return -1;
    db_bind_text(st, 1, before);
    db_bind_int64(st, 2, limit);
    return each_task(s, st, fn, ctx, err);
}

int store_task_requeue_touch(store *s, const char *id, const char *seen, const char *at,
                             vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_TASK_REQUEUE_TOUCH,
                             "UPDATE tasks SET updated_at = ?3 WHERE id = ?1 AND "
                             "status = 'queued' AND updated_at = ?2",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, seen);
    db_bind_text(st, 3, at);
    int changed = store_exec_change(s, st, "recording a requeue", err);
    if (changed < 0)
        return -1;
    return changed == 0 ? 1 : 0;
}

int store_task_give_up(store *s, const char *id, const char *seen, const char *at,
                       const char *reason, const char *error, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_TASK_GIVE_UP,
                             "UPDATE tasks SET status = 'failed', reason = ?4, error = ?5, "
                             "updated_at = ?3 WHERE id = ?1 AND status = 'queued' AND "
                             "updated_at = ?2",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, seen);
    db_bind_text(st, 3, at);
    db_bind_text(st, 4, reason);
    db_bind_text(st, 5, error);
    int changed = store_exec_change(s, st, "failing a lost task", err);
    if (changed < 0)
        return -1;
    return changed == 0 ? 1 : 0;
}

int store_task_set_action(store *s, const char *id, const char *expected, const char *status,
                          const char *action, const char *detail, vf_error *err)
{
    db_stmt *st = store_stmt(s, STORE_STMT_TASK_SET_ACTION,
                             "UPDATE tasks SET action = ?3, action_detail = ?4 WHERE id = ?1 "
                             "AND COALESCE(action, '') = ?2 AND (CAST(?5 AS TEXT) IS NULL OR "
                             "status = ?5)",
                             err);
    if (!st)
        return -1;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, expected ? expected : "");
    db_bind_text(st, 3, action);
    db_bind_text(st, 4, detail);
    db_bind_text(st, 5, status);
    prefetch_forget(s, id);
    if (store_defers(s))
        return store_exec_deferred(st, "marking a task", &(db_expect){0}, err);
    int changed = store_exec_change(s, st, "marking a task", err);
    if (changed < 0)
        return -1;
    return changed == 0 ? 1 : 0;
}
