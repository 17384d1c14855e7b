#include "store_fixture.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "testlib.h"

#define PG_SCHEMAS 16
static char pg_schemas[PG_SCHEMAS][64];
static int pg_schema_count;
static bool pg_unset_noted;

int store_fixture_init(store_fixture *f, const char *name)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/vf-test-%.48s-XXXXXX", name);
    if (!mkdtemp(f->dir)) {
        perror("mkdtemp");
        f->dir[0] = '\0';
        return -1;
    }
    return 0;
}

char *store_fixture_file(const store_fixture *f, const char *file, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", f->dir, file);
    return buf;
}

/* "drop cascades to ...": nothing a test reader needs. */
static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

int store_fixture_pg_exec(const char *sql)
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

int store_fixture_pg(store_fixture *f, const char *name, char *url, size_t size)
{
    (void)f;
    const char *base = getenv("VF_PG_URL");
    if (!base || !*base) {
        if (!pg_unset_noted)
            printf("VF_PG_URL unset: PostgreSQL part skipped\n");
        pg_unset_noted = true;
        return 1;
    }
    int rc = -1;
    if (pg_schema_count < PG_SCHEMAS) {
        char *schema = pg_schemas[pg_schema_count];
        snprintf(schema, sizeof pg_schemas[0], "vftest_%.32s_%ld", name, (long)getpid());
        char sql[256];
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", schema,
                 schema);
        if (store_fixture_pg_exec(sql) == 0) {
            pg_schema_count++;
            snprintf(url, size, "%s%soptions=-csearch_path%%3D%s", base,
                     strchr(base, '?') ? "&" : "?", schema);
            rc = 0;
        }
    }
    CHECKF(rc == 0, "VF_PG_URL is set but unusable (schema for %s)", name);
    return rc;
}

void store_fixture_each(store_fixture *f, const char *name, void (*run)(const char *location))
{
    char location[512];
    char file[128];
    snprintf(file, sizeof file, "%.120s.db", name);
    run(store_fixture_file(f, file, location, sizeof location));
    if (store_fixture_pg(f, name, location, sizeof location) == 0)
        run(location);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, entry->d_name);
        if (unlink(path) != 0)
            fprintf(stderr, "could not remove %s\n", path);
    }
    closedir(d);
    if (rmdir(dir) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

void store_fixture_close(store_fixture *f)
{
    if (f->dir[0])
        remove_dir(f->dir);
    f->dir[0] = '\0';
    for (int i = 0; i < pg_schema_count; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %.63s CASCADE", pg_schemas[i]);
        store_fixture_pg_exec(sql);
    }
    pg_schema_count = 0;
}
