/* A minimal test harness: CHECK records a failure and carries on, so one run
 * shows every broken expectation; test_summary prints the plain closing line
 * "N passed, N failed" and returns the exit status. */
#ifndef VF_TESTLIB_H
#define VF_TESTLIB_H

#include <stdbool.h>
#include <stddef.h>

extern int test_passed;
extern int test_failed;

void test_check(bool ok, const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int test_summary(void);

/* Read a whole file into a NUL-terminated malloc'd buffer; NULL on failure. */
char *test_read_file(const char *path, size_t *len);

/* A TCP connection to 127.0.0.1:port, or -1. */
int test_connect_loopback(int port);

/* Sends `request` (raw HTTP, whole) to 127.0.0.1:port and reads the answer,
 * status line and headers included, to the end into out[size] ("" when
 * nothing came): for what libcurl's client does not show (headers) or
 * would not send. */
void test_http_exchange(int port, const char *request, char *out, size_t size);

#define CHECK(expr) test_check((expr), __FILE__, __LINE__, #expr, NULL)
#define CHECKF(expr, ...) test_check((expr), __FILE__, __LINE__, #expr, __VA_ARGS__)
/* NULL-safe string checks: a NULL `got` fails instead of crashing. */
void test_check_str(const char *got, const char *want, const char *file, int line,
                    const char *expr);
void test_check_contains(const char *haystack, const char *needle, const char *file, int line,
                         const char *expr);
#define CHECK_STR(got, want) test_check_str((got), (want), __FILE__, __LINE__, #got " == " #want)
#define CHECK_CONTAINS(haystack, needle)                                                           \
    test_check_contains((haystack), (needle), __FILE__, __LINE__, #haystack " contains " #needle)

#endif
