#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "text_escape.h"

vf_log_level vf_log_threshold = VF_LOG_INFO;
static const char *program = "virtflow";
static vf_log_format format = VF_LOG_FORMAT_TEXT;
static _Thread_local vf_log_ids context;

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

void vf_log_set_format(vf_log_format f)
{
    format = f;
}

void vf_log_set_ids(const vf_log_ids *ids)
{
    if (ids)
        context = *ids;
    else
        memset(&context, 0, sizeof context);
}

/* Adds `value`, escaped, as `key` (leaves it out when NULL). The escaped text
 * is valid UTF-8, which jansson insists on; jansson then quotes it. */
static void add_escaped(json_t *line, const char *key, const char *value, size_t len)
{
    if (!value)
        return;
    char escaped[2048 * TEXT_ESCAPE_GROWTH + 1];
    (void)text_escape(escaped, sizeof escaped, value, len);
    json_object_set_new(line, key, json_string(escaped));
}

/* One JSON object per line. Falls back to a fixed line when memory runs
 * out, so a line is never lost silently nor half-written. */
static void write_json(const char *time_text, const char *level, const char *message, size_t len)
{
    json_t *line = json_object();
    json_object_set_new(line, "time", json_string(time_text));
    json_object_set_new(line, "level", json_string(level));
    add_escaped(line, "program", program, strlen(program));
    add_escaped(line, "message", message, len);
    if (context.task)
        add_escaped(line, "task", context.task, strlen(context.task));
    if (context.event)
        add_escaped(line, "event", context.event, strlen(context.event));
    if (context.receiver)
        add_escaped(line, "receiver", context.receiver, strlen(context.receiver));
    if (context.message_id)
        add_escaped(line, "message_id", context.message_id, strlen(context.message_id));
    const struct {
        const char *key, *value;
    } outcome[] = {{"status", context.status},
                   {"reason", context.reason},
                   {"node", context.node},
                   {"error", context.error}};
    for (size_t i = 0; i < sizeof outcome / sizeof outcome[0]; i++)
        if (outcome[i].value && outcome[i].value[0])
            add_escaped(line, outcome[i].key, outcome[i].value, strlen(outcome[i].value));
    if (context.attempt > 0)
        json_object_set_new(line, "attempt", json_integer(context.attempt));
    char *text = line ? json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(line);
    if (text)
        fprintf(stderr, "%s\n", text);
    else
        fprintf(stderr, "{\"time\":\"%s\",\"level\":\"%s\",\"message\":\"(out of memory)\"}\n",
                time_text, level);
    free(text);
}

void vf_log_write(vf_log_level level, const char *fmt, ...)
{
    static const char *const level_names[] = {"debug", "info", "warn", "error"};
    char message[2048];
    char line[sizeof message * TEXT_ESCAPE_GROWTH + 128];
    int64_t now_ms = clock_wall_ms();
    time_t now_s = (time_t)(now_ms / 1000);
    struct tm tm;
    gmtime_r(&now_s, &tm);
    char time_text[64];
    snprintf(time_text, sizeof time_text, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)(now_ms % 1000));
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    if (len < 0)
        return;
    if ((size_t)len >= sizeof message)
        len = (int)sizeof message - 1;
    if (format == VF_LOG_FORMAT_JSON) {
        write_json(time_text, level_names[level], message, (size_t)len);
        return;
    }
    int n = snprintf(line, sizeof line, "%s %s %s: ", time_text, program, level_names[level]);
    if (n < 0)
        return;
    /* Log lines carry task ids, message ids, routing keys and error texts that
     * clients and receivers chose. Escaping the whole message catches every
     * caller: a newline cannot forge a second line, and an escape sequence
     * cannot act on the terminal of whoever reads the log. */
    (void)text_escape(line + n, sizeof line - (size_t)n, message, (size_t)len);
    fprintf(stderr, "%s\n", line);
}
