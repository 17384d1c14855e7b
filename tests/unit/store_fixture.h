/* The store tests' one fixture: a private temporary directory for SQLite
 * files, and a fresh PostgreSQL schema on VF_PG_URL's server for each run
 * that wants one. store_fixture_close removes the directory with everything
 * in it and drops every schema made. One fixture at a time per process. */
#ifndef VF_STORE_FIXTURE_H
#define VF_STORE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct store_fixture {
    char dir[96]; /* "/tmp/vf-test-<name>-XXXXXX" once made */
} store_fixture;

/* Make the directory, named after `name`. 0, or -1 (message printed). */
int store_fixture_init(store_fixture *f, const char *name) __attribute__((warn_unused_result));

/* Write the path of `file` inside the directory to buf; returns buf. */
char *store_fixture_file(const store_fixture *f, const char *file, char *buf, size_t size);

/* A fresh schema on VF_PG_URL's server named after `name` and this process;
 * url gets a location whose connections use only that schema. Returns 0
 * (url written), 1 when VF_PG_URL is unset (a note printed once), -1 when it
 * is set but unusable (a test failure recorded). */
int store_fixture_pg(store_fixture *f, const char *name, char *url, size_t size);

/* The usual course: run(<dir>/<name>.db) on SQLite, then run(url) on a
 * fresh PostgreSQL schema as store_fixture_pg gives it. */
void store_fixture_each(store_fixture *f, const char *name, void (*run)(const char *location));

/* Run sql on VF_PG_URL's database as an administrator would. 0 or -1. */
int store_fixture_pg_exec(const char *sql);

/* Remove the directory and all it holds, drop the schemas made. */
void store_fixture_close(store_fixture *f);

#endif
