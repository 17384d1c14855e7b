/* console_page: what the console's pages share: the console's state, the
 * page frame (navigation, errors, the action token field), bars as SVG,
 * and running virtflowctl for an action. Below both the router (console.c)
 * and the page files. */
#ifndef VF_CONSOLE_PAGE_H
#define VF_CONSOLE_PAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "html.h"
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

/* Start a page: doctype, head, title, the navigation with `active` marked. */
void console_page_start(html *page, const char *title, const char *active);
/* The same with a <meta http-equiv="refresh"> every refresh_s seconds
 * (0: none): the reload the user chose, without a script. */
void console_page_start_refresh(html *page, const char *title, const char *active, int refresh_s);

/* ?refresh=off|5|30 as seconds (0 for off or absent), -1 when it is none of
 * these. */
int console_refresh_arg(const char *value);
void console_page_end(html *page);

/* An error paragraph; `message` is escaped. */
void console_page_error(html *page, const char *message);

/* The action form fields for the token, when actions are on. */
void console_token_field(html *page);

/* A horizontal bar as inline SVG: `used` of `capacity` (and `reserved`
 * beyond used), width in pixels; labels escaped. */
void console_bar(html *page, double allocated, double reserved, double capacity, int width);

/* Run this program with `args` (NULL-terminated, without argv[0]; -c is
 * added when the console was given one), stdout into *out (malloc'd) and
 * stderr into *errors (malloc'd). Returns the exit status, or -1 when it
 * could not be run. */
int console_run_ctl(console *c, const char *const *args, char **out, char **errors);

#endif
