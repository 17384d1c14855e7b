/* cmd_task_actions: virtflowctl task cancel | retry-now ID (cmd_task.c
 * parses the command line). */
#ifndef VF_CMD_TASK_ACTIONS_H
#define VF_CMD_TASK_ACTIONS_H

#include <stdbool.h>

#include "ctl.h"

/* `action` "cancel" or "retry-now" on task `id`; `by` names who asks in
 * the history (NULL: the Unix user), `reason` a note (NULL: none).
 * Returns the exit status: 0 requested (or already), 1 refused (no such
 * task, not retrying, a cancel pending), 3, 4. */
int ctl_task_action(const char *action, const char *id, const char *by, const char *reason,
                    const char *config_path, bool as_json);

/* task resubmit ID (cmd_task_resubmit.c): a failed or cancelled schedule
 * task's request as a new task; prints the new id (--json: {"task_id",
 * "resubmitted_from"}). Exit 0 published, 1 refused (no such task, another
 * state, no JSON request), 2 its request is invalid, 3, 4. */
int ctl_task_resubmit(const char *id, const char *by, const char *config_path, bool as_json);

/* Who asks, for a history line: `by`, else "virtflowctl (user NAME)". */
void ctl_task_who(const char *by, char *out, size_t size);

#endif
