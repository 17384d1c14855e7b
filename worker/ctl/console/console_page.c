/* console_page: what every console page uses: the page frame, bars, and
 * running virtflowctl itself for the actions (console_page.h). */
#include "console_page.h"
#include "clock.h"
#include "strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long `virtflowctl dead ...` may take: more than a broker that answers
 * needs (a connect and a walk of up to 100 messages), less than a browser's
 * patience. */
#define CTL_DEADLINE_MS 15000

static const struct {
    const char *path;
    const char *label;
} nav[] = {
    {"/overview", "Overview"},     {"/tasks", "Tasks"},       {"/hosts", "Hosts"},
    {"/deliveries", "Deliveries"}, {"/dead", "Dead letters"}, {"/workers", "Workers"},
    {"/charts", "Pictures"},
};

/* The request being answered: console_page_set_login (the httpd thread's). */
static console_login login;

int console_refresh_arg(const char *value)
{
    if (!value || !value[0] || strcmp(value, "off") == 0)
        return 0;
    if (strcmp(value, "5") == 0)
        return 5;
    if (strcmp(value, "30") == 0)
        return 30;
    return -1;
}

void console_page_start(html *page, const char *title, const char *active)
{
    console_page_start_refresh(page, title, active, 0);
}

void console_page_start_refresh(html *page, const char *title, const char *active, int refresh_s)
{
    html_raw(page, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    /* Reloads the same URL, so whatever the page shows (filters, cursor)
     * stays; the page's links carry refresh= on. */
    if (refresh_s > 0)
        html_raw(page, "<meta http-equiv=\"refresh\" content=\"%d\">", refresh_s);
    html_raw(page, "<link rel=\"stylesheet\" href=\"/console.css\"><title>");
    html_text(page, title);
    html_raw(page,
             " - virtflow</title></head><body><nav><strong class=\"muted\">virtflow</strong> ");
    for (size_t i = 0; i < sizeof nav / sizeof nav[0]; i++)
        html_raw(page, "<a href=\"%s\"%s>%s</a>", nav[i].path,
                 strcmp(nav[i].path, active) == 0 ? " class=\"on\"" : "", nav[i].label);
    if (login == CONSOLE_LOGGED_OUT)
        html_raw(page, "<a id=\"login\" href=\"/login\">Log in</a>");
    else if (login == CONSOLE_LOGGED_IN)
        html_raw(page, "<form class=\"inline\" method=\"post\" action=\"/logout\">"
                       "<button id=\"logout\">Log out</button></form>");
    html_raw(page, "</nav><main><h1>");
    html_text(page, title);
    html_raw(page, "</h1>\n");
}

void console_page_end(html *page)
{
    html_raw(page, "</main></body></html>\n");
}

void console_page_error(html *page, const char *message)
{
    html_raw(page, "<p class=\"error\" id=\"error\">");
    html_text(page, message);
    html_raw(page, "</p>\n");
}

void console_page_set_login(console_login state)
{
    login = state;
}

void console_token_field(html *page)
{
    if (login == CONSOLE_LOGGED_IN)
        return;
    html_raw(page, "<input type=\"password\" name=\"token\" placeholder=\"token\" "
                   "autocomplete=\"off\" required>");
}

void console_bar(html *page, double allocated, double reserved, double capacity, int width)
{
    double scale = capacity > 0 ? width / capacity : 0;
    double a = allocated * scale, r = reserved * scale;
    if (a < 0)
        a = 0;
    if (a > width)
        a = width;
    if (r < 0)
        r = 0;
    if (a + r > width)
        r = width - a;
    html_raw(page,
             "<svg class=\"bar\" width=\"%d\" height=\"14\" role=\"img\">"
             "<rect width=\"%d\" height=\"14\" fill=\"#dfe8df\"/>"
             "<rect class=\"allocated\" width=\"%.1f\" height=\"14\" fill=\"#5577aa\"/>"
             "<rect class=\"reserved\" x=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"#e0a030\"/>"
             "</svg>",
             width, width, a, a, r);
}

int console_run_ctl(console *c, const char *const *args, char **out, char **errors)
{
    *out = NULL;
    *errors = NULL;
    const char *argv[24];
    size_t n = 0;
    argv[n++] = "virtflowctl";
    for (size_t i = 0; args[i] && n < 20; i++)
        argv[n++] = args[i];
    if (c->config_path) {
        argv[n++] = "-c";
        argv[n++] = c->config_path;
    }
    argv[n] = NULL;
    int out_pipe[2];
    FILE *err_file = tmpfile();
    if (!err_file)
        return -1;
    if (pipe(out_pipe) < 0) {
        fclose(err_file);
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(out_pipe[0]);
        close(out_pipe[1]);
        fclose(err_file);
        return -1;
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(out_pipe[1], 1);
        dup2(fileno(err_file), 2);
        close(out_pipe[0]);
        execv(c->self_exe, (char *const *)argv);
        _exit(127);
    }
    close(out_pipe[1]);
    int64_t deadline_ms = clock_mono_ms() + CTL_DEADLINE_MS;
    bool timed_out = false;
    strbuf buf = {0}; /* failed: what comes is read and dropped */
    for (;;) {
        /* Every page waits while this runs (one server thread): a broker
         * that swallows packets must not hold the console for the link's
         * own connect and RPC timeouts, so the command gets a deadline. */
        int waited =
            poll(&(struct pollfd){.fd = out_pipe[0], .events = POLLIN}, 1,
                 (int)(deadline_ms - clock_mono_ms() > 0 ? deadline_ms - clock_mono_ms() : 0));
        if (waited < 0 && errno == EINTR)
            continue;
        if (waited <= 0) {
            kill(pid, SIGKILL); /* our own child; its unacked messages go back */
            timed_out = true;
            break;
        }
        char chunk[4096];
        ssize_t got = read(out_pipe[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        strbuf_append(&buf, chunk, (size_t)got);
    }
    close(out_pipe[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    /* stderr: a few lines at most, read back from the start. */
    char errbuf[2048];
    rewind(err_file);
    size_t elen = fread(errbuf, 1, sizeof errbuf - 1, err_file);
    errbuf[elen] = '\0';
    fclose(err_file);
    if (timed_out)
        snprintf(errbuf, sizeof errbuf,
                 "virtflowctl %s did not answer within %d s (is the broker "
                 "reachable?)",
                 args[0], CTL_DEADLINE_MS / 1000);
    *out = strbuf_take(&buf);
    *errors = strdup(errbuf);
    return !timed_out && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
