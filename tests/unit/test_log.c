/* log: one line per event whatever the values hold. Task ids, message ids and
 * error texts come from clients: a newline must not forge a second line, and
 * an escape sequence must not reach the terminal of whoever reads the log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    return test_summary();
}
