#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "text_escape.h"

vf_log_level vf_log_threshold = VF_LOG_INFO;
static const char *program = "virtflow";

int vf_log_parse_level(const char *name, vf_log_level *out)
{
    static const struct {
        const char *name;
        vf_log_level level;
    } names[] = {{"debug", VF_LOG_DEBUG},
                 {"info", VF_LOG_INFO},
                 {"warn", VF_LOG_WARN},
                 {"warning", VF_LOG_WARN},
                 {"error", VF_LOG_ERROR}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(name, names[i].name) == 0) {
            *out = names[i].level;
            return 0;
        }
    }
    return -1;
}

void vf_log_set_level(vf_log_level level)
{
    vf_log_threshold = level;
}

void vf_log_set_program(const char *name)
{
    program = name;
}

void vf_log_write(vf_log_level level, const char *fmt, ...)
{
    static const char *const level_names[] = {"debug", "info", "warn", "error"};
    char message[2048];
    char line[sizeof message * TEXT_ESCAPE_GROWTH + 128];
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    int n = snprintf(line, sizeof line,
                     "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     now.tv_nsec / 1000000, program, level_names[level]);
    if (n < 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    if (len < 0)
        return;
    if ((size_t)len >= sizeof message)
        len = (int)sizeof message - 1;
    /* Log lines carry task ids, message ids, routing keys and error texts that
     * clients and receivers chose. Escaping the whole message catches every
     * caller: a newline cannot forge a second line, and an escape sequence
     * cannot act on the terminal of whoever reads the log. */
    (void)text_escape(line + n, sizeof line - (size_t)n, message, (size_t)len);
    fprintf(stderr, "%s\n", line);
}
