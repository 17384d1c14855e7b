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

#endif
