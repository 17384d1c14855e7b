/* reload: what virtflow-worker and virtflow-relay share for a SIGHUP reload.
 *
 * The file is read again (the one the program started with: -c, else
 * $VIRTFLOW_CONFIG, else /etc/virtflow/config.yaml, as config_resolve found
 * it), the VIRTFLOW_* variables applied over it as at start-up
 * (config_apply_environment: the process's environment does not change), and
 * checked in full. An invalid file changes nothing: the error is
 * logged and the program goes on with what it runs on. A valid one is
 * compared key by key (config_diff): each changed key the program cannot
 * apply while running is logged as needing a restart (compared with the
 * start-up config, whose value stays in force); the keys it can apply are
 * compared with the last config applied, and applied all together or not at
 * all, by the program, at a safe point of its main loop. */
#ifndef VF_RELOAD_H
#define VF_RELOAD_H

#include <stdbool.h>

#include "config.h"

typedef struct reloader {
    const vf_config *startup; /* borrowed: the config the program started with */
    vf_config *applied;       /* owned: the last reload applied; NULL: none yet */
    unsigned program;         /* CONFIG_RELOADS_WORKER or CONFIG_RELOADS_RELAY */
    /* reload_read hands over a valid file even when no key it reloads
     * changed: the program reads more than the file (the relay's secret
     * files, rotated under the same names). */
    bool always;
} reloader;

/* `startup` must outlive the reloader. */
void reload_init(reloader *r, const vf_config *startup, unsigned program);

/* The values the program runs on for the keys it reloads: the last applied
 * config, else the start-up one. Borrowed, valid until the next
 * reload_commit. */
const vf_config *reload_current(const reloader *r);

/* Reads the file again. Returns an owned config when some key the program
 * reloads changed, or the file is valid and `always` is set (apply it, then
 * reload_commit or reload_abandon), else NULL: invalid file (logged as an
 * error), no file to read (started on the built-in defaults), or nothing the
 * program reloads changed (logged). Keys that need a restart are logged
 * either way. */
vf_config *reload_read(reloader *r) __attribute__((warn_unused_result));

/* The program applied `next`: logs each key applied, keeps `next` (owned
 * now) as the config applied and frees the one before, which nothing may
 * borrow any more. */
void reload_commit(reloader *r, vf_config *next);

/* The program could not apply `next` (`why`): logs that nothing was applied
 * and frees it. */
void reload_abandon(reloader *r, vf_config *next, const char *why);

/* Frees the applied config. */
void reload_close(reloader *r);

#endif
