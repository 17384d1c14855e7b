/* console: the route table, the safety rules (see console.h) and the
 * actions. */
#include "clock.h"
#include "console.h"
#include "httpd_route.h"
#include "store_config.h"
#include "store_deliveries.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* No script may run, whatever a page ends up holding; styles and pictures
 * come from the console itself (bars are SVG attributes, not style=). */
static const char security_policy[] =
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'";

/* SHA-256 of both sides, compared with CRYPTO_memcmp: the time taken says
 * nothing about how much of the token was right, nor its length. */
static bool token_matches(const char *expected, const char *given)
{
    unsigned char a[EVP_MAX_MD_SIZE], b[EVP_MAX_MD_SIZE];
    unsigned int alen = 0, blen = 0;
    if (!expected || !given)
        return false;
    if (!EVP_Digest(expected, strlen(expected), a, &alen, EVP_sha256(), NULL) ||
        !EVP_Digest(given, strlen(given), b, &blen, EVP_sha256(), NULL) || alen != blen)
        return false;
    return CRYPTO_memcmp(a, b, alen) == 0;
}

/* Off loopback: HTTP Basic with the token as the password. */
static bool basic_auth_ok(console *c, const httpd_request *req)
{
    const char *header = httpd_header(req, "Authorization");
    if (!header || strncasecmp(header, "Basic ", 6) != 0)
        return false;
    const char *b64 = header + 6;
    size_t n = strlen(b64);
    if (n == 0 || n > 4 * 1024 || n % 4 != 0)
        return false;
    unsigned char decoded[3 * 1024 + 4];
    int len = EVP_DecodeBlock(decoded, (const unsigned char *)b64, (int)n);
    if (len < 0)
        return false;
    /* EVP_DecodeBlock counts the padding as zero bytes: drop them. */
    for (size_t i = n; i > 0 && b64[i - 1] == '=' && len > 0; i--)
        len--;
    decoded[len] = '\0';
    const char *colon = memchr(decoded, ':', (size_t)len);
    return colon && token_matches(c->token, colon + 1);
}

/* ---- log in once: a session cookie after the token ---- */

#define SESSION_COOKIE "vf_console"

/* The log-in the request's cookie names, or -1: none, unknown or expired. */
static int session_of(console *c, const httpd_request *req)
{
    const char *cookies = httpd_header(req, "Cookie");
    const char *at = cookies ? strstr(cookies, SESSION_COOKIE "=") : NULL;
    if (!at)
        return -1;
    at += strlen(SESSION_COOKIE "=");
    char given[65];
    size_t len = strcspn(at, "; ");
    if (len != 64)
        return -1;
    memcpy(given, at, 64);
    given[64] = '\0';
    int64_t now = clock_wall_ms();
    for (int i = 0; i < CONSOLE_SESSIONS; i++)
        if (c->sessions[i].id[0] && c->sessions[i].expires_ms > now &&
            CRYPTO_memcmp(c->sessions[i].id, given, 64) == 0)
            return i;
    return -1;
}

/* A new log-in in a free slot (else the one that expires first); its id
 * (64 hex digits of 32 random bytes) into id. -1 without randomness. */
static int session_new(console *c, char id[65])
{
    unsigned char bytes[32];
    if (RAND_bytes(bytes, sizeof bytes) != 1)
        return -1;
    for (size_t i = 0; i < sizeof bytes; i++)
        snprintf(id + 2 * i, 3, "%02x", bytes[i]);
    int slot = 0;
    for (int i = 0; i < CONSOLE_SESSIONS; i++)
        if (c->sessions[i].expires_ms < c->sessions[slot].expires_ms)
            slot = i;
    snprintf(c->sessions[slot].id, sizeof c->sessions[slot].id, "%s", id);
    c->sessions[slot].expires_ms = clock_wall_ms() + (int64_t)CONSOLE_SESSION_S * 1000;
    return 0;
}

/* Where to go after logging in: a path of this console, else /tasks. */
static void next_page(const httpd_request *req, char *out, size_t size)
{
    char next[256];
    bool ours = httpd_form(req, "next", next, sizeof next) && next[0] == '/' && next[1] != '/' &&
                !strpbrk(next, "\r\n\\");
    snprintf(out, size, "%s", ours ? next : "/tasks");
}

/* GET /login: the one form that takes the token. */
static int login_page(console *c, const httpd_request *req, html *page)
{
    console_page_start(page, "Log in", "");
    if (session_of(c, req) >= 0) {
        html_raw(page,
                 "<p id=\"outcome\">Logged in: the actions need no token here until "
                 "you log out or %d hours pass.</p>",
                 CONSOLE_SESSION_S / 3600);
    } else {
        const char *next = httpd_query(req, "next");
        html_raw(page,
                 "<p>The token of <code>--token-file</code>, once: this browser then "
                 "acts without it (a cookie, for %d hours, sent to this console only).</p>"
                 "<form method=\"post\" action=\"/login\"><input type=\"hidden\" "
                 "name=\"next\" value=\"",
                 CONSOLE_SESSION_S / 3600);
        html_text(page, next && next[0] == '/' ? next : "/tasks");
        html_raw(page, "\"><input type=\"password\" name=\"token\" placeholder=\"token\" "
                       "autocomplete=\"off\" required> <button id=\"login-button\">Log in</button>"
                       "</form>");
    }
    console_page_end(page);
    return 200;
}

/* POST /login: the right token sets the session cookie and goes on. */
static int log_in(console *c, const httpd_request *req, httpd_response *resp, html *page)
{
    char token[1024], id[65], next[256];
    console_page_start(page, "Log in", "");
    if (!httpd_form(req, "token", token, sizeof token) || !token_matches(c->token, token)) {
        console_page_error(page, "Wrong or missing token.");
        console_page_end(page);
        return 403;
    }
    if (session_new(c, id) < 0) {
        console_page_error(page, "No randomness for a session id; use the token per form.");
        console_page_end(page);
        return 500;
    }
    snprintf(resp->set_cookie, sizeof resp->set_cookie,
             SESSION_COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d", id,
             CONSOLE_SESSION_S);
    next_page(req, next, sizeof next);
    snprintf(resp->location, sizeof resp->location, "%s", next);
    html_raw(page, "<p id=\"outcome\">Logged in.</p>");
    console_page_end(page);
    return 303;
}

/* POST /logout: the session ends here and in the browser. */
static int log_out(console *c, const httpd_request *req, httpd_response *resp, html *page)
{
    int slot = session_of(c, req);
    if (slot >= 0)
        memset(&c->sessions[slot], 0, sizeof c->sessions[slot]);
    snprintf(resp->set_cookie, sizeof resp->set_cookie,
             SESSION_COOKIE "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    snprintf(resp->location, sizeof resp->location, "/tasks");
    console_page_start(page, "Log out", "");
    html_raw(page, "<p id=\"outcome\">Logged out.</p>");
    console_page_end(page);
    return 303;
}

/* An action may go on: the form's token, a log-in's cookie, or (off
 * loopback) the HTTP Basic token every request carries already. */
static bool action_allowed(console *c, const httpd_request *req)
{
    char token[1024];
    return c->require_auth || session_of(c, req) >= 0 ||
           (httpd_form(req, "token", token, sizeof token) && token_matches(c->token, token));
}

/* POST /actions/resubmit: `virtflowctl task resubmit ID`, the same code. */
static int action_resubmit(console *c, const httpd_request *req, html *page)
{
    char id[512];
    console_page_start(page, "Resubmit", "/tasks");
    if (!httpd_form(req, "task_id", id, sizeof id) || !id[0]) {
        console_page_error(page, "task_id is missing");
        console_page_end(page);
        return 400;
    }
    const char *args[] = {"task",   "resubmit", "--by", "virtflowctl serve (console)",
                          "--json", id,         NULL};
    char *out = NULL, *errors = NULL;
    int rc = console_run_ctl(c, args, &out, &errors);
    json_t *answer = rc == 0 && out ? json_loads(out, 0, NULL) : NULL;
    const char *fresh = json_string_value(json_object_get(answer, "task_id"));
    if (fresh) {
        html_raw(page, "<p id=\"outcome\">Resubmitted as <a class=\"task\" id=\"new-task\" "
                       "href=\"/task?id=");
        html_url_part(page, fresh);
        html_raw(page, "\">");
        html_text(page, fresh);
        html_raw(page, "</a>.</p>");
    } else {
        html_raw(page, "<p class=\"error\" id=\"outcome\">Not resubmitted: <code>");
        html_text(page, id);
        html_raw(page, "</code></p><pre>");
        html_text(page, errors && errors[0] ? errors : "virtflowctl task resubmit failed");
        html_raw(page, "</pre>");
    }
    html_raw(page, "<p><a href=\"/task?id=");
    html_url_part(page, id);
    html_raw(page, "\">Back to the task</a></p>");
    console_page_end(page);
    json_decref(answer);
    free(out);
    free(errors);
    return fresh ? 200 : rc == 1 || rc == 2 ? 409 : 502;
}

/* POST /actions/redrive: `virtflowctl dead redrive ID`, the same code. */
static int action_redrive(console *c, const httpd_request *req, html *page)
{
    char id[512];
    console_page_start(page, "Redrive", "/dead");
    if (!httpd_form(req, "message_id", id, sizeof id) || !id[0]) {
        console_page_error(page, "message_id is missing");
        console_page_end(page);
        return 400;
    }
    const char *args[] = {"dead", "redrive", "--json", id, NULL};
    char *out = NULL, *errors = NULL;
    int rc = console_run_ctl(c, args, &out, &errors);
    if (rc == 0) {
        html_raw(page, "<p id=\"outcome\">Redriven: <code>");
        html_text(page, id);
        html_raw(page, "</code></p>");
    } else {
        html_raw(page, "<p class=\"error\" id=\"outcome\">Not redriven: <code>");
        html_text(page, id);
        html_raw(page, "</code></p><pre>");
        html_text(page, errors && errors[0] ? errors : "virtflowctl dead redrive failed");
        html_raw(page, "</pre>");
    }
    html_raw(page, "<p><a href=\"/dead\">Back to the dead letters</a></p>");
    console_page_end(page);
    free(out);
    free(errors);
    return rc == 0 ? 200 : rc == 1 ? 404 : 502;
}

/* POST /actions/cancel, /actions/retry-now: `virtflowctl task cancel |
 * retry-now ID`, the same code. Refused (409) unless the task is retrying. */
static int action_task(console *c, const httpd_request *req, const char *action, html *page)
{
    char id[512];
    console_page_start(page, strcmp(action, "cancel") == 0 ? "Cancel" : "Retry now", "/tasks");
    if (!httpd_form(req, "task_id", id, sizeof id) || !id[0]) {
        console_page_error(page, "task_id is missing");
        console_page_end(page);
        return 400;
    }
    const char *args[] = {"task",   action, "--by", "virtflowctl serve (console)",
                          "--json", id,     NULL};
    char *out = NULL, *errors = NULL;
    int rc = console_run_ctl(c, args, &out, &errors);
    if (rc == 0) {
        json_t *answer = out ? json_loads(out, 0, NULL) : NULL;
        html_raw(page, "<p id=\"outcome\">");
        html_text(page, action);
        html_raw(page, " <code>");
        html_text(page, id);
        html_raw(page, "</code>: ");
        html_text(page, json_string_value(json_object_get(answer, "note")));
        html_raw(page, "</p>");
        json_decref(answer);
    } else {
        html_raw(page, "<p class=\"error\" id=\"outcome\">Not done: <code>");
        html_text(page, id);
        html_raw(page, "</code></p><pre>");
        html_text(page, errors && errors[0] ? errors : "virtflowctl task failed");
        html_raw(page, "</pre>");
    }
    html_raw(page, "<p><a href=\"/task?id=");
    html_url_part(page, id);
    html_raw(page, "\">Back to the task</a></p>");
    console_page_end(page);
    free(out);
    free(errors);
    return rc == 0 ? 200 : rc == 1 ? 409 : 502;
}

/* POST /actions/redeliver: what `virtflowctl redeliver` does, on a
 * read-write handle of its own for this one change. */
static int action_redeliver(console *c, const httpd_request *req, html *page)
{
    char event_id[512], receiver[256];
    console_page_start(page, "Redeliver", "/deliveries");
    if (!httpd_form(req, "event_id", event_id, sizeof event_id) || !event_id[0]) {
        console_page_error(page, "event_id is missing");
        console_page_end(page);
        return 400;
    }
    bool one_receiver = httpd_form(req, "receiver", receiver, sizeof receiver) && receiver[0];
    vf_error err;
    vf_error_init(&err);
    store *rw = store_config_open(c->config, STORE_READ_WRITE, &err);
    int status = 200;
    if (!rw) {
        console_page_error(page, err.text);
        status = 503;
    } else {
        char now[STORE_TIME_SIZE];
        store_now(now);
        int changed =
            store_delivery_redeliver(rw, event_id, one_receiver ? receiver : NULL, now, &err);
        if (changed < 0) {
            console_page_error(page, err.text);
            status = 503;
        } else if (changed == 0) {
            console_page_error(page, "no failed or delivered delivery of that event to reset");
            status = 404;
        } else {
            html_raw(page, "<p id=\"outcome\">%d deliver%s of <code>", changed,
                     changed == 1 ? "y" : "ies");
            html_text(page, event_id);
            html_raw(page, "</code> reset to pending.</p>");
        }
    }
    store_close(rw);
    html_raw(page, "<p><a href=\"/deliveries\">Back to the deliveries</a></p>");
    console_page_end(page);
    return status;
}

static void reply_page(httpd_response *resp, int status, html *page)
{
    size_t len = 0;
    char *body = html_take(page, &len);
    if (!body) {
        httpd_reply_text(resp, 500, "text/plain; charset=utf-8", "out of memory\n");
        return;
    }
    httpd_reply_take(resp, status, "text/html; charset=utf-8", body, len);
}

static int refuse(html *page, const char *title, const char *message, int status)
{
    console_page_start(page, title, "");
    console_page_error(page, message);
    console_page_end(page);
    return status;
}

/* GET /console.css: the one stylesheet (html.h). */
static int stylesheet(console *c, const httpd_request *req, httpd_response *resp, html *page)
{
    (void)c;
    (void)req;
    (void)page;
    httpd_reply_text(resp, 200, "text/css; charset=utf-8", html_stylesheet);
    return 0;
}

/* GET /: the tasks. */
static int home(console *c, const httpd_request *req, httpd_response *resp, html *page)
{
    (void)c;
    (void)req;
    (void)page;
    snprintf(resp->location, sizeof resp->location, "/tasks");
    httpd_reply_text(resp, 303, "text/plain; charset=utf-8", "see /tasks\n");
    return 0;
}

static int action_cancel(console *c, const httpd_request *req, html *page)
{
    return action_task(c, req, "cancel", page);
}

static int action_retry_now(console *c, const httpd_request *req, html *page)
{
    return action_task(c, req, "retry-now", page);
}

/* What a route asks beyond its method and path. */
typedef enum {
    SCOPE_OPEN,   /* every console's: whoever passed HTTP Basic off loopback */
    SCOPE_LOGIN,  /* offered with --allow-actions: logging in and out */
    SCOPE_ACTION, /* offered with --allow-actions; the token too (action_allowed) */
} route_scope;

/* The routes (httpd_route.h): every console's first, then those offered
 * with --allow-actions only (routes_offered). */
typedef struct route {
    httpd_route at;
    route_scope scope;
    /* One of: a page, built into `page`, returning the status to answer it
     * with; */
    int (*page)(console *c, const httpd_request *req, html *page);
    /* or an answer that sets headers of resp too: the same, or 0 when it
     * replied itself (page unused). */
    int (*answer)(console *c, const httpd_request *req, httpd_response *resp, html *page);
} route;

static const route routes[] = {
    {{"GET", "/", false}, SCOPE_OPEN, NULL, home},
    {{"GET", "/console.css", false}, SCOPE_OPEN, NULL, stylesheet},
    {{"GET", "/tasks", false}, SCOPE_OPEN, console_tasks_page, NULL},
    {{"GET", "/task", false}, SCOPE_OPEN, console_task_page, NULL},
    {{"GET", "/hosts", false}, SCOPE_OPEN, console_hosts_page, NULL},
    {{"GET", "/deliveries", false}, SCOPE_OPEN, console_deliveries_page, NULL},
    {{"GET", "/dead", false}, SCOPE_OPEN, console_dead_page, NULL},
    {{"GET", "/overview", false}, SCOPE_OPEN, console_overview_page, NULL},
    {{"GET", "/charts", false}, SCOPE_OPEN, console_charts_page, NULL},
    {{"GET", "/workers", false}, SCOPE_OPEN, console_workers_page, NULL},
    {{"GET", "/login", false}, SCOPE_LOGIN, login_page, NULL},
    {{"POST", "/login", false}, SCOPE_LOGIN, NULL, log_in},
    {{"POST", "/logout", false}, SCOPE_LOGIN, NULL, log_out},
    {{"POST", "/actions/resubmit", false}, SCOPE_ACTION, action_resubmit, NULL},
    {{"POST", "/actions/redrive", false}, SCOPE_ACTION, action_redrive, NULL},
    {{"POST", "/actions/redeliver", false}, SCOPE_ACTION, action_redeliver, NULL},
    {{"POST", "/actions/cancel", false}, SCOPE_ACTION, action_cancel, NULL},
    {{"POST", "/actions/retry-now", false}, SCOPE_ACTION, action_retry_now, NULL},
};

/* How many rows this console has: a read-only one stops at the first row
 * offered with --allow-actions, so its paths are unknown there (404). */
static size_t routes_offered(const console *c)
{
    size_t n = 0;
    while (n < sizeof routes / sizeof routes[0] &&
           (c->allow_actions || routes[n].scope == SCOPE_OPEN))
        n++;
    return n;
}

/* Answers the request into resp or page: the page's status, or 0 when resp
 * holds the answer. */
static int route_request(console *c, const httpd_request *req, httpd_response *resp, html *page)
{
    bool post = strcmp(req->method, "POST") == 0;
    if (post && !c->allow_actions) /* whatever the path: no action can run */
        return refuse(page, "Refused",
                      "This console is read-only: actions need virtflowctl serve "
                      "--allow-actions --token-file FILE.",
                      403);
    httpd_route_match match;
    const route *r =
        httpd_route_find(routes, routes_offered(c), sizeof routes[0], req, resp, &match);
    if (!r && match.path) {
        char detail[128]; /* resp->allow holds the path's methods (httpd_route_find) */
        snprintf(detail, sizeof detail, "%s takes %s.", match.path, resp->allow);
        return refuse(page, "Method not allowed", detail, 405);
    }
    if (!r)
        return refuse(page, "Not found", post ? "No such action." : "No such page.", 404);
    if (r->scope == SCOPE_ACTION && !action_allowed(c, req))
        return refuse(page, "Refused", "Wrong or missing token (or log in once: /login).", 403);
    return r->page ? r->page(c, req, page) : r->answer(c, req, resp, page);
}

void console_handle(void *ctx, const httpd_request *req, httpd_response *resp)
{
    console *c = ctx;
    snprintf(resp->security_policy, sizeof resp->security_policy, "%s", security_policy);
    if (c->require_auth && !basic_auth_ok(c, req)) {
        snprintf(resp->authenticate, sizeof resp->authenticate,
                 "Basic realm=\"virtflow console\", charset=\"UTF-8\"");
        httpd_reply_text(resp, 401, "text/plain; charset=utf-8",
                         "the token is needed (any user name, the token as the password)\n");
        return;
    }
    html page;
    html_init(&page);
    console_page_set_login(!c->allow_actions                            ? CONSOLE_ACTIONS_OFF
                           : c->require_auth || session_of(c, req) >= 0 ? CONSOLE_LOGGED_IN
                                                                        : CONSOLE_LOGGED_OUT);
    int status = route_request(c, req, resp, &page);
    if (status > 0)
        reply_page(resp, status, &page);
    else
        html_close(&page);
}
