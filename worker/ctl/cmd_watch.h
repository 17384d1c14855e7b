/* virtflowctl task ID --watch and tasks --watch: following a task, or every
 * event, from the store as they are recorded (what GET /v1/tasks/{id}/events
 * and GET /v1/events stream, for a client with the store at hand). */
#ifndef VF_CMD_WATCH_H
#define VF_CMD_WATCH_H

#include <stdbool.h>

/* Print task `id`'s history rows, those recorded so far and then each as it
 * is recorded, until the task rests (final, or a spare task ready). Exit
 * status: 0 it ended completed, released or ready; 1 failed or cancelled,
 * or no such task; 3, 4 as every command. */
int ctl_task_watch(const char *config_path, const char *id, bool json);

/* Print every event recorded since `since` (NULL: from now on; an event id,
 * 30m, 2h, 1d or an RFC 3339 UTC time), one line each, until interrupted. */
int ctl_tasks_watch(const char *config_path, const char *since, bool json);

#endif
