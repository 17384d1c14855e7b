/* One logging facility: printf-style, one line per event, to stderr.
 * The level is checked before arguments are evaluated (the macros below),
 * so a disabled debug line costs one comparison. Never pass a secret. */
#ifndef VF_LOG_H
#define VF_LOG_H

typedef enum { VF_LOG_DEBUG = 0, VF_LOG_INFO, VF_LOG_WARN, VF_LOG_ERROR } vf_log_level;

extern vf_log_level vf_log_threshold;

/* Parse "debug", "info", "warn"/"warning", "error". Returns 0 or -1. */
int vf_log_parse_level(const char *name, vf_log_level *out);
void vf_log_set_level(vf_log_level level);
/* Program name printed in every line ("virtflow-worker"). Borrowed; must outlive logging. */
void vf_log_set_program(const char *name);

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
