/* hangup: SIGHUP, the signal systemd's ExecReload and `kill -HUP` send to ask
 * for a reload (issue 26). Its default action ends the process without a
 * word, so every program takes it over before starting threads.
 *
 * virtflow-worker and virtflow-relay reload (hangup_watch_start, then
 * hangup_take at a safe point of their main loop: common/config/reload.h);
 * virtflow-api reads its keys file again (hangup_watch_start too). */
#ifndef VF_HANGUP_H
#define VF_HANGUP_H

#include <stdbool.h>

#include "vf_error.h"

/* Blocks SIGHUP in the calling thread (call it before any other thread
 * starts, so every thread inherits the mask) and starts a detached thread
 * that waits for it (sigwait) and logs a warning each time: nothing was
 * reloaded, restart to apply a changed configuration. Returns 0, or -1
 * with err when the thread cannot start (SIGHUP then keeps its default). */
int hangup_notice_start(vf_error *err) __attribute__((warn_unused_result));

/* Same, but the thread only records that a SIGHUP came, for hangup_take.
 * Several SIGHUPs before the next hangup_take count as one. */
int hangup_watch_start(vf_error *err) __attribute__((warn_unused_result));

/* Whether a SIGHUP came since the last call (and forget it). Any thread. */
bool hangup_take(void);

#endif
