/* hangup: see hangup.h. */
#include "hangup.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "log.h"

static void *notice(void *arg)
{
    sigset_t *hup = arg;
    for (;;) {
        int sig = 0;
        if (sigwait(hup, &sig) != 0)
            continue;
        log_warn("SIGHUP: configuration reload is not supported yet; nothing was reloaded and "
                 "the process goes on (restart it to apply a changed configuration)");
    }
    return NULL;
}

int hangup_notice_start(vf_error *err)
{
    static sigset_t hup;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    int rc = pthread_sigmask(SIG_BLOCK, &hup, NULL);
    pthread_t thread;
    pthread_attr_t attr;
    if (rc == 0 && (rc = pthread_attr_init(&attr)) == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&thread, &attr, notice, &hup);
        pthread_attr_destroy(&attr);
    }
    if (rc != 0) {
        (void)pthread_sigmask(SIG_UNBLOCK, &hup, NULL);
        vf_error_set(err, VF_EINTERNAL, "cannot watch for SIGHUP: %s", strerror(rc));
        return -1;
    }
    return 0;
}
