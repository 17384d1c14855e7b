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

/* PostgreSQL for the store tests. When VF_PG_URL names a server
 * (tests/run.sh starts one), test_pg_url creates a fresh schema there named
 * after `name` and this process, and writes a URL whose connections use only
 * that schema; test_pg_cleanup drops every schema made so. Returns 0, or -1
 * (message printed) when VF_PG_URL is unset (*skipped true) or unusable. */
int test_pg_url(const char *name, char *url, size_t size, bool *skipped);
void test_pg_cleanup(void);
/* Run sql on VF_PG_URL's database as an administrator would. 0 or -1. */
int test_pg_exec(const char *sql);

/* The store tests' usual course: run(sqlite_path), then, in a fresh schema
 * named after `name`, run(url) on PostgreSQL when VF_PG_URL is set (a note
 * when unset, a failure when set but unusable), then drop the schemas. */
void test_each_store(const char *name, const char *sqlite_path, void (*run)(const char *location));

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
