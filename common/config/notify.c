/* notify: see notify.h. */
#include "notify.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "clock.h"
#include "log.h"

/* READY=1 was sent: until then a reload says nothing, so the manager does not
 * hear READY=1 from a program still starting (not consuming yet). */
static atomic_bool told_ready;

static void send_state(const char *state)
{
    /* unset_environment 0: threads started later, and a re-exec, may notify too. */
    int rc = sd_notify(0, state);
    if (rc < 0)
        log_debug("sd_notify: %s", strerror(-rc));
}

void notify_ready(const char *status)
{
    atomic_store(&told_ready, true);
    char state[256];
    snprintf(state, sizeof state, "READY=1\nSTATUS=%.200s", status ? status : "running");
    send_state(state);
}

void notify_reloading(void)
{
    if (!atomic_load(&told_ready))
        return;
    char state[96];
    snprintf(state, sizeof state, "RELOADING=1\nMONOTONIC_USEC=%" PRId64, clock_mono_us());
    send_state(state);
}

void notify_reloaded(void)
{
    if (atomic_load(&told_ready))
        send_state("READY=1");
}

void notify_stopping(void)
{
    send_state("STOPPING=1");
}
