/* console: the operators' web console of `virtflowctl serve`: pages over the
 * store (tasks, one task, hosts, deliveries, dead letters, pictures) and,
 * only when started with --allow-actions and a token, two actions (redrive a
 * dead letter, redeliver an event).
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
 * The page files (console_tasks.c, console_hosts.c, console_deliveries.c,
 * console_charts.c) each render one group of pages into an html buffer; they
 * read the store and the inventory only. */
#ifndef VF_CONSOLE_H
#define VF_CONSOLE_H

#include <stdbool.h>

#include "config.h"
#include "html.h"
#include "httpd.h"
#include "inventory.h"
#include "store.h"

/* What the pages share; owned by cmd_serve, used by the httpd thread only. */
typedef struct console {
    const vf_config *config;
    const char *config_path; /* -c as given, NULL: $VIRTFLOW_CONFIG or defaults */
    store *store;            /* read-only */
    inventory *inventory;    /* the configured inventory, fetched per hosts page */
    bool allow_actions;
    const char *token;    /* NULL: none */
    bool require_auth;    /* off loopback: every request carries the token */
    const char *self_exe; /* this program, to run `virtflowctl dead ...` */
} console;

/* The httpd handler; ctx is a console. */
void console_handle(void *ctx, const httpd_request *req, httpd_response *resp);

/* ---- shared by the page files (console.c) ---- */

/* Start a page: doctype, head, title, the navigation with `active` marked. */
void console_page_start(html *page, const char *title, const char *active);
void console_page_end(html *page);

/* An error paragraph; `message` is escaped. */
void console_page_error(html *page, const char *message);

/* The action form fields for the token, when actions are on. */
void console_token_field(html *page);

/* A horizontal bar as inline SVG: `used` of `capacity` (and `reserved`
 * beyond used), width in pixels; labels escaped. */
void console_bar(html *page, double allocated, double reserved, double capacity, int width);

/* Pages: each fills `page` (started and ended inside) and returns the HTTP
 * status to answer with. */
int console_tasks_page(console *c, const httpd_request *req, html *page);
int console_task_page(console *c, const httpd_request *req, html *page);
int console_hosts_page(console *c, const httpd_request *req, html *page);
int console_deliveries_page(console *c, const httpd_request *req, html *page);
int console_dead_page(console *c, const httpd_request *req, html *page);
int console_charts_page(console *c, const httpd_request *req, html *page);

/* Host utilisation as one SVG (used on the hosts and the pictures pages). */
int console_hosts_svg(console *c, html *page, char *error, size_t error_size);

/* Run this program with `args` (NULL-terminated, without argv[0]; -c is
 * added when the console was given one), stdout into *out (malloc'd) and
 * stderr into *errors (malloc'd). Returns the exit status, or -1 when it
 * could not be run. */
int console_run_ctl(console *c, const char *const *args, char **out, char **errors);

#endif
