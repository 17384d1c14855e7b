/* api_routes: the routes of virtflow-api, beneath its router. The router
 * (api.c) holds the one table of routes (method, path template, scope,
 * handler): it finds the route a request names (httpd_route.h, the loop
 * every HTTP server here shares), answers 405 with Allow for a path whose
 * methods differ, 404 for no path, checks the route's scope
 * (api_allow) and counts the request under the route's template. A handler
 * only answers. Each route file defines its handlers, declared here; none
 * includes the router. */
#ifndef VF_API_ROUTES_H
#define VF_API_ROUTES_H

#include "api_internal.h"
#include "httpd.h"

/* One request as a route sees it. */
typedef struct api_call {
    const httpd_request *req;
    const api_caller *caller;
    const char *param; /* the {...} segment of the path ("" for a path without) */
} api_call;

typedef void (*api_route_fn)(api *a, const api_call *call, httpd_response *resp);

/* api_v1.c */
void api_route_submit_task(api *a, const api_call *call, httpd_response *resp);
void api_route_list_tasks(api *a, const api_call *call, httpd_response *resp);
void api_route_task(api *a, const api_call *call, httpd_response *resp);
void api_route_release_task(api *a, const api_call *call, httpd_response *resp);
void api_route_deliveries(api *a, const api_call *call, httpd_response *resp);
void api_route_dead_letters(api *a, const api_call *call, httpd_response *resp);
void api_route_hosts(api *a, const api_call *call, httpd_response *resp);

/* api_spare.c: POST /spare/prepare, /spare/release and their /v1 twins
 * (the path says which); GET of their request schemas. */
void api_route_spare(api *a, const api_call *call, httpd_response *resp);
void api_route_spare_schema(api *a, const api_call *call, httpd_response *resp);

/* api_redeliver.c */
void api_route_redeliver(api *a, const api_call *call, httpd_response *resp);
void api_route_redelivery(api *a, const api_call *call, httpd_response *resp);

/* api_watch.c: Server-Sent Events (GET only: a stream has no HEAD). */
void api_route_watch_events(api *a, const api_call *call, httpd_response *resp);
void api_route_watch_task(api *a, const api_call *call, httpd_response *resp);

/* The prototype's routes (api_schedule.c, api_result.c), the admission
 * webhook (api_admission.c), the reference (api_docs.c). */
void api_route_schedule(api *a, const api_call *call, httpd_response *resp);
void api_route_result(api *a, const api_call *call, httpd_response *resp);
void api_route_admission(api *a, const api_call *call, httpd_response *resp);
void api_route_docs(api *a, const api_call *call, httpd_response *resp);
void api_route_docs_style(api *a, const api_call *call, httpd_response *resp);
void api_route_docs_try(api *a, const api_call *call, httpd_response *resp);

#endif
