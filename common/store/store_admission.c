/* store_admission: the CAPPX machines' tasks (store_admission.h). */
#include "store_admission.h"

#include <stdio.h>
#include <string.h>

#include "store_internal.h"

int store_admission_get(store *s, const char *machine, store_admission_machine *out, vf_error *err)
{
    memset(out, 0, sizeof *out);
    db_stmt *st =
        store_stmt(s, STORE_STMT_ADMISSION_GET,
                   "SELECT task_id, owner FROM admission_machines WHERE machine = ?1", err);
    if (!st)
        return -1;
    db_bind_text(st, 1, machine);
    store_rows rows = {0};
    if (store_rows_collect(s, st, 1, &rows, "reading a machine's task", err) != 0) {
        store_rows_free(&rows);
        return -1;
    }
    int found = rows.count > 0;
    if (found) {
        const char *task_id = store_rows_text(&rows, 0, 0);
        const char *owner = store_rows_text(&rows, 0, 1);
        snprintf(out->task_id, sizeof out->task_id, "%s", task_id ? task_id : "");
        snprintf(out->owner, sizeof out->owner, "%s", owner ? owner : "");
    }
    store_rows_free(&rows);
    return found ? 0 : 1;
}

int store_admission_set(store *s, const char *machine, const char *task_id, const char *owner,
                        const char *replacing, const char *at, vf_error *err)
{
    /* A new machine by an insert that does nothing when another review
     * inserted it first; a known one only while it is still at the task the
     * caller read, so two reviews of one machine never both take it. */
    db_stmt *st =
        replacing
            ? store_stmt(s, STORE_STMT_ADMISSION_REPLACE,
                         "UPDATE admission_machines SET task_id = ?2, owner = ?3, updated_at = ?4 "
                         "WHERE machine = ?1 AND task_id = ?5",
                         err)
            : store_stmt(s, STORE_STMT_ADMISSION_ADD,
                         "INSERT INTO admission_machines (machine, task_id, owner, created_at, "
                         "updated_at) VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT (machine) DO NOTHING",
                         err);
    if (!st)
        return -1;
    db_bind_text(st, 1, machine);
    db_bind_text(st, 2, task_id);
    db_bind_text(st, 3, owner ? owner : "");
    db_bind_text(st, 4, at);
    if (replacing)
        db_bind_text(st, 5, replacing);
    int changed = store_exec_change(s, st, "recording a machine's task", err);
    return changed < 0 ? -1 : changed > 0;
}

int store_admission_forget(store *s, const char *machine, const char *task_id, vf_error *err)
{
    db_stmt *st =
        store_stmt(s, STORE_STMT_ADMISSION_FORGET,
                   "DELETE FROM admission_machines WHERE machine = ?1 AND task_id = ?2", err);
    if (!st)
        return -1;
    db_bind_text(st, 1, machine);
    db_bind_text(st, 2, task_id);
    int changed = store_exec_change(s, st, "forgetting a machine", err);
    return changed < 0 ? -1 : changed > 0;
}
