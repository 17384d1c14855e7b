/* console: the operators' web console of `virtflowctl serve`: pages over the
 * store (tasks, one task, hosts, deliveries, dead letters, workers, pictures) and,
 * only when started with --allow-actions and a token, four actions (redrive a
 * dead letter, redeliver an event, retry now or cancel a retrying task).
 *
 * Safety, in one place (console.c): every page is built with html.h, so text
 * from the store, the broker or the query string is shown as text; every
 * answer carries a Content-Security-Policy that allows no script at all; a
 * POST without --allow-actions is refused (403), and one whose form token
 * does not match the token file is refused (403), compared in constant time.
 * Off loopback every request needs the token (HTTP Basic, any user name);
 * cmd_serve refuses to listen off loopback without one. Before any of this,
 * httpd answers 421 to a Host header that is not a loopback name, the
 * --listen host or an --allow-host name (cmd_serve sets the list), so a page
 * that rebinds its own name to the console's address reads nothing.
 *
 * Routing (console.c) is a table through httpd_route.h, with a scope per
 * row: the pages are every console's, log-in and the actions are only on a
 * console started with --allow-actions (elsewhere their paths are unknown,
 * 404), and an action needs the token. A path known under other methods is
 * 405 with Allow (GET of an action: Allow: POST).
 *
 * The page files (console_tasks.c, console_hosts.c, console_deliveries.c,
 * console_workers.c, console_charts.c) each render one group of pages into an html buffer; they
 * read the store and the inventory only. */
#ifndef VF_CONSOLE_H
#define VF_CONSOLE_H

#include <stdbool.h>

#include "console_page.h"
#include "engine.h"
#include "hostset.h"
#include "httpd.h"

/* The httpd handler; ctx is a console. */
void console_handle(void *ctx, const httpd_request *req, httpd_response *resp);

/* Pages: each fills `page` (started and ended inside) and returns the HTTP
 * status to answer with. */
int console_tasks_page(console *c, const httpd_request *req, html *page);
int console_task_page(console *c, const httpd_request *req, html *page);
int console_hosts_page(console *c, const httpd_request *req, html *page);
int console_deliveries_page(console *c, const httpd_request *req, html *page);
int console_dead_page(console *c, const httpd_request *req, html *page);
int console_charts_page(console *c, const httpd_request *req, html *page);
int console_overview_page(console *c, const httpd_request *req, html *page);
int console_workers_page(console *c, const httpd_request *req, html *page);

/* Headroom per pool and shape as one SVG under a "Headroom" heading (the
 * hosts page): `loads[i]` is what live reservations hold on host i. */
void console_headroom_svg(console *c, html *page, const hostset *hosts,
                          const sched_host_load *loads, const sched_params *params);

/* The forecast per pool and reference shape (console_forecast.c): the past
 * demand and its projection to the day the pool runs out, one SVG each,
 * under a "Forecast" heading (the hosts page). */
void console_forecast_svg(console *c, html *page, const hostset *hosts,
                          const sched_host_load *loads, const sched_params *params);

/* Host utilisation as one SVG (used on the hosts and the pictures pages). */
int console_hosts_svg(console *c, html *page, char *error, size_t error_size);

#endif
