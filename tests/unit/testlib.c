#include "testlib.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

int test_passed;
int test_failed;

void test_check(bool ok, const char *file, int line, const char *expr, const char *fmt, ...)
{
    if (ok) {
        test_passed++;
        return;
    }
    test_failed++;
    fprintf(stderr, "FAIL %s:%d: %s", file, line, expr);
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs(" -- ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
}

void test_check_str(const char *got, const char *want, const char *file, int line, const char *expr)
{
    bool ok = got && want && strcmp(got, want) == 0;
    test_check(ok, file, line, expr, "got \"%s\", want \"%s\"", got ? got : "(null)",
               want ? want : "(null)");
}

void test_check_contains(const char *haystack, const char *needle, const char *file, int line,
                         const char *expr)
{
    bool ok = haystack && needle && strstr(haystack, needle) != NULL;
    test_check(ok, file, line, expr, "\"%s\" lacks \"%s\"", haystack ? haystack : "(null)",
               needle ? needle : "(null)");
}

int test_summary(void)
{
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed ? 1 : 0;
}

char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
        if (cap - n - 1 == 0) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* ---- PostgreSQL ---- */

#define TEST_PG_SCHEMAS 16
static char pg_schemas[TEST_PG_SCHEMAS][64];
static int pg_schema_count;

/* "drop cascades to ...": nothing a test reader needs. */
static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

int test_pg_exec(const char *sql)
{
    PGconn *conn = PQconnectdb(getenv("VF_PG_URL"));
    int rc = -1;
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "VF_PG_URL: %s", PQerrorMessage(conn));
    } else {
        PQsetNoticeProcessor(conn, ignore_notice, NULL);
        PGresult *res = PQexec(conn, sql);
        if (PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK)
            rc = 0;
        else
            fprintf(stderr, "VF_PG_URL: %s: %s", sql, PQresultErrorMessage(res));
        PQclear(res);
    }
    PQfinish(conn);
    return rc;
}

int test_pg_url(const char *name, char *url, size_t size, bool *skipped)
{
    const char *base = getenv("VF_PG_URL");
    *skipped = !base || !*base;
    if (*skipped || pg_schema_count == TEST_PG_SCHEMAS)
        return -1;
    char *schema = pg_schemas[pg_schema_count];
    snprintf(schema, sizeof pg_schemas[0], "vftest_%s_%ld", name, (long)getpid());
    char sql[256];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", schema, schema);
    if (test_pg_exec(sql) != 0)
        return -1;
    pg_schema_count++;
    snprintf(url, size, "%s%soptions=-csearch_path%%3D%s", base, strchr(base, '?') ? "&" : "?",
             schema);
    return 0;
}

void test_pg_cleanup(void)
{
    for (int i = 0; i < pg_schema_count; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %.63s CASCADE", pg_schemas[i]);
        test_pg_exec(sql);
    }
    pg_schema_count = 0;
}

void test_each_store(const char *name, const char *sqlite_path, void (*run)(const char *location))
{
    run(sqlite_path);
    char url[512];
    bool skipped = false;
    if (test_pg_url(name, url, sizeof url, &skipped) == 0)
        run(url);
    else if (skipped)
        printf("VF_PG_URL unset: PostgreSQL part skipped\n");
    else
        CHECKF(false, "VF_PG_URL is set but unusable");
    test_pg_cleanup();
}
