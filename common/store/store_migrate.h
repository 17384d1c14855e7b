/* store_migrate: the schema migrations embedded from schema/NNN_*.sql by
 * schema/embed_sql.cmake (generated store_schema.c). Private to store_*.c. */
#ifndef VF_STORE_MIGRATE_H
#define VF_STORE_MIGRATE_H

typedef struct store_migration {
    int version;      /* the schema version after this migration: 1, 2, ... */
    const char *name; /* file name, for messages: "001_init.sql" */
    const char *sql;  /* the whole file, NUL-terminated */
} store_migration;

/* In version order, numbered 1..count without gaps (checked at build time). */
extern const store_migration store_migrations[];
extern const int store_migrations_count;

/* The same migrations for PostgreSQL, from schema/pg/NNN_*.sql: the same
 * numbers, tables, columns and meanings in PostgreSQL's dialect. */
extern const store_migration store_pg_migrations[];
extern const int store_pg_migrations_count;

#endif
