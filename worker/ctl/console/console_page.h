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

/* Browsers logged in at once; a new log-in past them replaces the oldest. */
#define CONSOLE_SESSIONS 32
/* How long a log-in lasts (a working day), as the cookie's Max-Age. */
#define CONSOLE_SESSION_S (12 * 3600)

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
    /* Log-ins (POST /login with the token): the session ids their cookies
     * carry, each until expires_ms (wall clock); an empty id is a free slot.
     * The httpd thread's, as everything here. */
    struct {
        char id[65];
        int64_t expires_ms;
    } sessions[CONSOLE_SESSIONS];
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

/* Where the request being answered stands, set by the router before any
 * page is built (the httpd thread answers one request at a time): actions
 * off (no log-in shown), logged out, or logged in (its session cookie, or
 * HTTP Basic off loopback), which the navigation and the action forms show. */
typedef enum { CONSOLE_ACTIONS_OFF, CONSOLE_LOGGED_OUT, CONSOLE_LOGGED_IN } console_login;
void console_page_set_login(console_login state);

/* The action form fields for the token, when actions are on and the
 * browser is not logged in (logged in, the session cookie authorizes). */
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
