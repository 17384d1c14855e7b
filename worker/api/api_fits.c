/* api_fits: with scheduler.unfit_requests: fail, a request no host of the
 * inventory could hold even empty is refused at once (422), as virtflowctl
 * submit refuses it (exit 2) and as the worker would fail it (never_fits):
 * the two front doors agree. The check runs on the HTTP thread over the
 * latest inventory snapshot (api_hosts.c refreshes it), with an engine kept
 * across requests and given each new snapshot once. */
#include <stdio.h>

#include "api_internal.h"
#include "log.h"
#include "never_fits.h"

/* The engine over the current snapshot, or NULL when there is no snapshot
 * (the worker then decides). Keeps a reference to the snapshot the engine
 * borrows until a newer one replaces it. */
static sched_engine *fit_engine(api *a)
{
    inventory_view now;
    inventory_acquire(a->inventory, &now);
    if (!now.hosts) {
        inventory_release(&now);
        return NULL;
    }
    vf_error err;
    vf_error_init(&err);
    if (!a->fits && !(a->fits = sched_engine_from_config(a->config, NULL, &err))) {
        log_warn("never-fits check: %s; requests are published unchecked", err.text);
        inventory_release(&now);
        return NULL;
    }
    if (now.hosts == a->fits_view.hosts) {
        inventory_release(&now);
        return a->fits;
    }
    if (sched_engine_set_hosts(a->fits, now.hosts, NULL, NULL, &err) < 0) {
        log_warn("never-fits check: %s; requests are published unchecked", err.text);
        inventory_release(&now);
        sched_engine_free(a->fits); /* its old snapshot may be half replaced */
        a->fits = NULL;
        inventory_release(&a->fits_view);
        return NULL;
    }
    inventory_release(&a->fits_view);
    a->fits_view = now;
    return a->fits;
}

bool api_never_fits(api *a, const sched_request *req, char *why, size_t size)
{
    if (a->config->scheduler.unfit_requests != CONFIG_UNFIT_FAIL || !a->inventory)
        return false;
    sched_engine *engine = fit_engine(a);
    /* An unknown profile waits at the worker (unknown_scheduler): not ours. */
    sched_engine *decider = engine ? sched_engine_profile(engine, req->scheduler_name) : NULL;
    char never[512];
    if (!decider || !sched_never_fits(decider, req, never, sizeof never))
        return false;
    snprintf(why, size,
             "never fits: %s (not published; scheduler.unfit_requests: wait lets it wait for "
             "the inventory)",
             never);
    return true;
}

void api_fits_free(api *a)
{
    sched_engine_free(a->fits);
    a->fits = NULL;
    inventory_release(&a->fits_view);
}
