/* store_spares: the spares table (spare.prepare / spare.release). Part of the store: what store.h
 * says about durability, timestamps, strings, errors, threads and listing callbacks holds here too.
 */
#ifndef VF_STORE_SPARES_H
#define VF_STORE_SPARES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* ---- spares (spare.prepare / spare.release) ---- */

/* One spares row. In listings every string is borrowed (valid during the
 * callback); as input to store_spare_add / store_spare_update, borrowed for
 * the call. NULL strings are SQL NULL. */
typedef struct store_spare {
    int64_t id;          /* assigned by store_spare_add */
    const char *task_id; /* the spare.prepare task */
    const char *upgrade_id;
    const char *cluster;
    int index; /* 1..count */
    const char *name;
    const char *node;
    const char *ip;
    int64_t vmid;
    double cpu;           /* vCPUs */
    int64_t memory;       /* MiB */
    int64_t disk;         /* GiB */
    const char *state;    /* provisioning, waiting_ready, ready, failed, releasing, released */
    int attempts;         /* provisioner attempts of the current step */
    const char *next_at;  /* the driver's next step is due; NULL: nothing to do */
    const char *ready_by; /* Ready deadline */
    int ready_timeout_s;
    const char *release_task_id;
    int64_t pipeline_id; /* -1: none */
    const char *pipeline_url;
    const char *last_error;
    const char *created_at;
    const char *updated_at;
} store_spare;

typedef int (*store_spare_fn)(const store_spare *spare, void *ctx);

/* Record a spare (task_id must exist). Returns 0 or -1. */
int store_spare_add(store *s, const store_spare *spare, vf_error *err)
    __attribute__((warn_unused_result));

/* Overwrite state, attempts, next_at, ready_by, release_task_id, pipeline_id,
 * pipeline_url, last_error and updated_at of spare->id, but only while its
 * updated_at still equals `seen_updated_at` (the value the caller read): two
 * threads changing one spare cannot overwrite each other unseen. Returns 0,
 * 1 if no such spare or it changed meanwhile (re-read it), -1. */
int store_spare_update(store *s, const store_spare *spare, const char *seen_updated_at,
                       vf_error *err) __attribute__((warn_unused_result));

typedef enum {
    STORE_SPARES_OF_TASK,    /* key: prepare task id, by index */
    STORE_SPARES_OF_UPGRADE, /* key: upgrade id, oldest task first, by index */
    STORE_SPARES_OF_RELEASE, /* key: release task id */
    STORE_SPARES_DUE,        /* key: now; next_at <= now, earliest first */
    STORE_SPARES_ALL,        /* key ignored; oldest first */
} store_spare_query;

/* Call fn for each spare the query selects (at most `limit`, 0: all). */
int store_spare_list(store *s, store_spare_query query, const char *key, int limit,
                     store_spare_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

#endif
