/* notify: tells the service manager where the program is (sd_notify(3),
 * libsystemd), for units with Type=notify: READY=1 once it consumes or
 * serves, RELOADING=1 then READY=1 around a SIGHUP reload, STOPPING=1 when it
 * begins to stop. Without $NOTIFY_SOCKET (not under systemd) every call is a
 * no-op; a failure to send is logged at debug level and otherwise ignored:
 * the program's work never depends on the manager hearing it. */
#ifndef VF_NOTIFY_H
#define VF_NOTIFY_H

/* READY=1 with STATUS=`status` (may be NULL). Safe to repeat. */
void notify_ready(const char *status);

/* RELOADING=1 with MONOTONIC_USEC= (what systemd 253's Type=notify-reload
 * asks for; older ones ignore it); nothing before the first notify_ready (a
 * reload while starting). Follow it with notify_reloaded. */
void notify_reloading(void);

/* READY=1 again after a reload, if notify_ready was called before. */
void notify_reloaded(void);

/* STOPPING=1. */
void notify_stopping(void);

#endif
