/* One logging facility: printf-style, one line per event, to stderr.
 * The level is checked before arguments are evaluated (the macros below),
 * so a disabled debug line costs one comparison. Never pass a secret. */
#ifndef VF_LOG_H
#define VF_LOG_H

typedef enum { VF_LOG_DEBUG = 0, VF_LOG_INFO, VF_LOG_WARN, VF_LOG_ERROR } vf_log_level;

/* text: "TIME PROGRAM LEVEL: message", for people. json: one object per
 * line, {"time","level","program","message"} plus the ids of the current
 * log context as fields, for Loki or Elasticsearch. */
typedef enum { VF_LOG_FORMAT_TEXT = 0, VF_LOG_FORMAT_JSON } vf_log_format;

/* The ids a line is about, as fields of a JSON line ("task", "event",
 * "receiver", "message_id", and the task's outcome below). Set per thread while a task or event is
 * being handled, so call sites need not repeat them; NULL members are left out. The strings are
 * borrowed: clear the context before they die. */
typedef struct vf_log_ids {
    const char *task;
    const char *event;
    const char *receiver;
    const char *message_id;
    /* What the line says of the task, as fields too ("status", "reason",
     * "node", "error", "attempt"), so a log query need not parse the
     * message; NULL or "" (attempt 0) are left out. */
    const char *status;
    const char *reason;
    const char *node;
    const char *error;
    int attempt;
} vf_log_ids;

extern vf_log_level vf_log_threshold;

/* Parse "debug", "info", "warn"/"warning", "error". Returns 0 or -1. */
int vf_log_parse_level(const char *name, vf_log_level *out);
void vf_log_set_level(vf_log_level level);
/* Program name printed in every line ("virtflow-worker"). Borrowed; must outlive logging. */
void vf_log_set_program(const char *name);
void vf_log_set_format(vf_log_format format);

/* This thread's log context: `ids` is copied (the strings are not); NULL
 * clears it. */
void vf_log_set_ids(const vf_log_ids *ids);

void vf_log_write(vf_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define VF_LOG(level, ...)                                                                         \
    do {                                                                                           \
        if ((level) >= vf_log_threshold)                                                           \
            vf_log_write((level), __VA_ARGS__);                                                    \
    } while (0)
#define log_debug(...) VF_LOG(VF_LOG_DEBUG, __VA_ARGS__)
#define log_info(...) VF_LOG(VF_LOG_INFO, __VA_ARGS__)
#define log_warn(...) VF_LOG(VF_LOG_WARN, __VA_ARGS__)
#define log_error(...) VF_LOG(VF_LOG_ERROR, __VA_ARGS__)

#endif
