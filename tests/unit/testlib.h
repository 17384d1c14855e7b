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

#define CHECK(expr) test_check((expr), __FILE__, __LINE__, #expr, NULL)
#define CHECKF(expr, ...) test_check((expr), __FILE__, __LINE__, #expr, __VA_ARGS__)
#define CHECK_STR(got, want)                                                                       \
    test_check(((got) && strcmp((got), (want)) == 0), __FILE__, __LINE__, #got " == " #want,       \
               "got \"%s\", want \"%s\"", (got) ? (got) : "(null)", (want))
#define CHECK_CONTAINS(haystack, needle)                                                           \
    test_check(((haystack) && strstr((haystack), (needle)) != NULL), __FILE__, __LINE__,          \
               #haystack " contains " #needle, "\"%s\" lacks \"%s\"",                              \
               (haystack) ? (haystack) : "(null)", (needle))

#endif
