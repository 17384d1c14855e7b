#include "api_metrics.h"

#include <stdio.h>
#include <stdlib.h>

#include "metrics.h"
#include "process_metrics.h"

/* A GET is a store read (a millisecond), a POST adds a commit and a broker
 * confirm; 5 s is where a POST gives up waiting for the confirm. */
static const double request_seconds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                         0.1,    0.25,  0.5,    1,     2.5,  5,     10};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct api_metrics {
    metrics *m;
    metrics_family *requests; /* {route, status} */
    metrics_family *duration; /* {route} seconds */
    metrics_series *accepted, *refused;
    process_metrics process;
};

static void collect(metrics *m, void *arg)
{
    (void)m;
    api_metrics *am = arg;
    process_metrics_collect(&am->process);
}

api_metrics *api_metrics_new(vf_error *err)
{
    api_metrics *am = calloc(1, sizeof *am);
    if (!am || !(am->m = metrics_new())) {
        free(am);
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    static const char *const route_status[] = {"route", "status"};
    static const char *const route[] = {"route"};
    static const char *const outcome[] = {"outcome"}; /* label names are borrowed */
    metrics_family *submissions;
    if (!(am->requests = metrics_family_add(am->m, METRICS_COUNTER, "virtflow_api_requests_total",
                                            "HTTP requests answered, by route and status", 2,
                                            route_status, NULL, 0, err)) ||
        !(am->duration =
              metrics_family_add(am->m, METRICS_HISTOGRAM, "virtflow_api_request_duration_seconds",
                                 "Time from a request's arrival to its answer, by route", 1, route,
                                 request_seconds, COUNT(request_seconds), err)) ||
        !(submissions = metrics_family_add(
              am->m, METRICS_COUNTER, "virtflow_api_submissions_total",
              "POST /schedule requests that reached the broker: accepted (recorded queued and "
              "confirmed) or refused (503, nothing recorded)",
              1, outcome, NULL, 0, err))) {
        api_metrics_free(am);
        return NULL;
    }
    am->accepted = metrics_series_get(submissions, (const char *const[]){"accepted"});
    am->refused = metrics_series_get(submissions, (const char *const[]){"refused"});
    if (!am->accepted || !am->refused || process_metrics_define(am->m, &am->process, err) < 0) {
        if (err->code == VF_OK)
            vf_error_set(err, VF_ENOMEM, "out of memory defining metrics");
        api_metrics_free(am);
        return NULL;
    }
    metrics_set_collect(am->m, collect, am);
    return am;
}

void api_metrics_free(api_metrics *am)
{
    if (!am)
        return;
    metrics_free(am->m);
    free(am);
}

void api_metrics_request(api_metrics *am, const char *route, int status, double seconds)
{
    if (!am)
        return;
    char code[16];
    snprintf(code, sizeof code, "%d", status);
    metrics_add(metrics_series_get(am->requests, (const char *const[]){route, code}), 1);
    metrics_observe(metrics_series_get(am->duration, (const char *const[]){route}), seconds);
}

void api_metrics_submission(api_metrics *am, bool accepted)
{
    if (am)
        metrics_add(accepted ? am->accepted : am->refused, 1);
}

int api_metrics_render(api_metrics *am, char **out, size_t *out_len)
{
    return metrics_render(am->m, out, out_len);
}
