/* hangup: what the daemons do on SIGHUP until they can reload (issue 26):
 * say so in the log and go on, instead of the default action, which ends
 * the process without a word (systemd's and kill -HUP's habit of sending it
 * to ask for a reload made that a silent outage). */
#ifndef VF_HANGUP_H
#define VF_HANGUP_H

#include "vf_error.h"

/* Blocks SIGHUP in the calling thread (call it before any other thread
 * starts, so every thread inherits the mask) and starts a detached thread
 * that waits for it (sigwait) and logs a warning each time: nothing was
 * reloaded, restart to apply a changed configuration. Returns 0, or -1
 * with err when the thread cannot start (SIGHUP then keeps its default). */
int hangup_notice_start(vf_error *err) __attribute__((warn_unused_result));

#endif
