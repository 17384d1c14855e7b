/* hangup: see hangup.h. */
#include "hangup.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "log.h"

static atomic_int requested;

static void *notice(void *arg)
{
    sigset_t *hup = arg;
    for (;;) {
        int sig = 0;
        if (sigwait(hup, &sig) != 0)
            continue;
        log_warn("SIGHUP: this program has nothing to reload; nothing was reloaded and "
                 "the process goes on (restart it to apply a changed configuration)");
    }
    return NULL;
}

static void *watch(void *arg)
{
    sigset_t *hup = arg;
    for (;;) {
        int sig = 0;
        if (sigwait(hup, &sig) != 0)
            continue;
        atomic_store(&requested, 1);
    }
    return NULL;
}

bool hangup_take(void)
{
    return atomic_exchange(&requested, 0) != 0;
}

static int start(void *(*fn)(void *), vf_error *err)
{
    static sigset_t hup;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    int rc = pthread_sigmask(SIG_BLOCK, &hup, NULL);
    pthread_t thread;
    pthread_attr_t attr;
    if (rc == 0 && (rc = pthread_attr_init(&attr)) == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&thread, &attr, fn, &hup);
        pthread_attr_destroy(&attr);
    }
    if (rc != 0) {
        (void)pthread_sigmask(SIG_UNBLOCK, &hup, NULL);
        vf_error_set(err, VF_EINTERNAL, "cannot watch for SIGHUP: %s", strerror(rc));
        return -1;
    }
    return 0;
}

int hangup_notice_start(vf_error *err)
{
    return start(notice, err);
}

int hangup_watch_start(vf_error *err)
{
    return start(watch, err);
}
