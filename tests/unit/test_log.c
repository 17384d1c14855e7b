/* log: one line per event whatever the values hold. Task ids, message ids and
 * error texts come from clients: a newline must not forge a second line, and
 * an escape sequence must not reach the terminal of whoever reads the log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "log.h"
#include "testlib.h"

/* Run one log call with stderr captured; returns what it wrote (static). */
static const char *captured(void (*emit)(void))
{
    static char text[16384];
    char path[] = "/tmp/test_log_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    emit();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return text;
}

static void emit_hostile(void)
{
    log_warn("message %s on %s: %s", "id\x1b]0;pwned\x07\x1b[2J\n2026-01-01 forged line",
             "task.schedule", "not JSON \xc2\x9b\xff");
}

static void emit_long(void)
{
    static char value[6000];
    memset(value, '\x1b', sizeof value - 1);
    log_error("task t1: %s", value);
}

static void emit_debug(void)
{
    log_debug("hidden %s", "\x1b");
}

static void emit_json_mix(void)
{
    vf_log_set_ids(&(vf_log_ids){
        .task = "t\"1\n", .event = "evt_1", .receiver = "up\x1b[2J", .message_id = "m\xff"});
    log_warn("quotes \" and \\ backslash, newline\nsecond, tab\t, ESC \x1b[2J, BEL \x07, NUL-free "
             "C1 \xc2\x9b, bad UTF-8 \xff\xfe, unicode \xc3\xa9");
    vf_log_set_ids(NULL);
    log_info("no ids here: %s", "{\"json\": \"inside\"}");
    emit_long();
}

/* log.format: json: every line is one JSON object with time, level, program
 * and message, plus the ids of the thread's log context; whatever the
 * message holds, nothing breaks a line or the JSON. */
static void test_json(void)
{
    vf_log_set_format(VF_LOG_FORMAT_JSON);
    const char *out = captured(emit_json_mix);
    vf_log_set_format(VF_LOG_FORMAT_TEXT);
    CHECK(!strchr(out, '\x1b') && !strchr(out, '\x07'));
    int lines = 0;
    for (const char *line = out; *line;) {
        const char *end = strchr(line, '\n');
        CHECKF(end != NULL, "a line without its newline: %s", line);
        if (!end)
            break;
        json_error_t jerr;
        json_t *obj = json_loadb(line, (size_t)(end - line), JSON_REJECT_DUPLICATES, &jerr);
        CHECKF(json_is_object(obj), "line %d is not a JSON object (%s): %.*s", lines + 1, jerr.text,
               (int)(end - line), line);
        const char *fields[] = {"time", "level", "program", "message"};
        for (size_t i = 0; obj && i < 4; i++)
            CHECKF(json_is_string(json_object_get(obj, fields[i])), "line %d: no %s", lines + 1,
                   fields[i]);
        if (lines == 0 && obj) {
            CHECK_STR(json_string_value(json_object_get(obj, "level")), "warn");
            CHECK_STR(json_string_value(json_object_get(obj, "program")), "test-log");
            CHECK_STR(json_string_value(json_object_get(obj, "task")), "t\"1\\n");
            CHECK_STR(json_string_value(json_object_get(obj, "event")), "evt_1");
            CHECK_STR(json_string_value(json_object_get(obj, "receiver")), "up\\x1b[2J");
            CHECK_STR(json_string_value(json_object_get(obj, "message_id")), "m\\xff");
            CHECK_CONTAINS(json_string_value(json_object_get(obj, "message")),
                           "quotes \" and \\ backslash, newline\\nsecond");
            CHECK_CONTAINS(json_string_value(json_object_get(obj, "message")), "unicode \xc3\xa9");
        }
        if (lines == 1 && obj) {
            CHECK(json_object_get(obj, "task") == NULL); /* the context was cleared */
            CHECK_STR(json_string_value(json_object_get(obj, "message")),
                      "no ids here: {\"json\": \"inside\"}");
        }
        json_decref(obj);
        lines++;
        line = end + 1;
    }
    CHECKF(lines == 3, "%d lines", lines);
}

static void emit_outcome(void)
{
    vf_log_set_ids(&(vf_log_ids){.task = "t2",
                                 .status = "retrying",
                                 .reason = "",
                                 .node = "bm-001",
                                 .error = "0/3 nodes: \x1b",
                                 .attempt = 2});
    log_info("task t2: retrying");
    vf_log_set_ids(NULL);
}

/* A task's outcome as fields of its JSON line (issue 26): status, node,
 * error (escaped like the message) and attempt; empty ones left out. */
static void test_json_outcome(void)
{
    vf_log_set_format(VF_LOG_FORMAT_JSON);
    const char *out = captured(emit_outcome);
    vf_log_set_format(VF_LOG_FORMAT_TEXT);
    json_t *obj = json_loads(out, JSON_DISABLE_EOF_CHECK, NULL);
    CHECKF(json_is_object(obj), "not JSON: %s", out);
    CHECK_STR(json_string_value(json_object_get(obj, "status")), "retrying");
    CHECK_STR(json_string_value(json_object_get(obj, "node")), "bm-001");
    CHECK_STR(json_string_value(json_object_get(obj, "error")), "0/3 nodes: \\x1b");
    CHECK(json_integer_value(json_object_get(obj, "attempt")) == 2);
    CHECK(json_object_get(obj, "reason") == NULL);
    json_decref(obj);
}

int main(void)
{
    vf_log_set_program("test-log");
    const char *out = captured(emit_hostile);
    CHECK_CONTAINS(out, " test-log warn: message id\\x1b]0;pwned\\x07\\x1b[2J\\n2026-01-01 forged "
                        "line on task.schedule: not JSON \\u009b\\xff\n");
    CHECKF(strchr(out, '\n') == out + strlen(out) - 1, "one line: %s", out);
    CHECK(!strchr(out, '\x1b') && !strchr(out, '\x07'));

    /* A long value is cut, never split into lines or into half an escape. */
    out = captured(emit_long);
    size_t len = strlen(out);
    CHECKF(len > 2000 && out[len - 1] == '\n' && strchr(out, '\n') == out + len - 1, "%zu", len);
    CHECK(!strchr(out, '\x1b'));
    CHECK(len >= 5 && memcmp(out + len - 5, "\\x1b\n", 5) == 0);

    /* Below the threshold nothing is written at all. */
    vf_log_set_level(VF_LOG_INFO);
    CHECK_STR(captured(emit_debug), "");
    test_json();
    test_json_outcome();
    return test_summary();
}
