/* presence: a program's heartbeat row (presence.h). */
#include "presence.h"

#include <stdio.h>
#include <unistd.h>

#include "clock.h"
#include "leases.h"
#include "log.h"
#include "store_processes.h"
#include "version.h"

void presence_init(presence *p, const char *owner, const char *program)
{
    *p = (presence){.program = program, .pid = getpid()};
    snprintf(p->owner, sizeof p->owner, "%s", owner);
    if (gethostname(p->host, sizeof p->host) != 0)
        snprintf(p->host, sizeof p->host, "unknown");
    p->host[sizeof p->host - 1] = '\0';
    if (vf_version_commit()[0])
        snprintf(p->version, sizeof p->version, "%s (commit %s)", vf_version(),
                 vf_version_commit());
    else
        snprintf(p->version, sizeof p->version, "%s", vf_version());
    store_now(p->started_at);
}

void presence_beat(presence *p, store *s, int64_t in_hand)
{
    int64_t now = clock_wall_ms();
    if (p->beat_ms && now - p->beat_ms < LEASE_RENEW_S * 1000)
        return;
    char at[STORE_TIME_SIZE];
    store_format_time(now, at);
    store_process row = {.owner = p->owner,
                         .program = p->program,
                         .host = p->host,
                         .pid = p->pid,
                         .version = p->version,
                         .started_at = p->started_at,
                         .beat_at = at,
                         .in_hand = in_hand};
    vf_error err;
    vf_error_init(&err);
    p->beat_ms = now; /* a failure is tried again at the next one's time, not at once */
    if (store_process_beat(s, &row, &err) < 0) {
        if (!p->failing)
            log_warn("heartbeat: %s (virtflowctl workers shows this process as silent until one "
                     "is written)",
                     err.text);
        p->failing = true;
        return;
    }
    p->failing = false;
}

void presence_end(const presence *p, store *s)
{
    vf_error err;
    vf_error_init(&err);
    if (store_process_forget(s, p->owner, &err) < 0)
        log_warn("heartbeat: %s (the row stays until it is a day old)", err.text);
}
