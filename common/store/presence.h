/* presence: a program's row in the processes table (store_processes.h),
 * written at start, again every LEASE_RENEW_S, and deleted at a clean stop,
 * so `virtflowctl workers` and the console's Workers page show each live
 * worker and relay with its host, version, start, last heartbeat, what it
 * holds and its leases.
 *
 * A value type the program keeps (presence_init), used by one thread at a
 * time: the worker beats from its checkpoint thread, the relay from its
 * loop. A heartbeat that fails is logged once per outage and costs nothing
 * else: the row only informs. */
#ifndef VF_PRESENCE_H
#define VF_PRESENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"
#include "store_hosts.h"

typedef struct presence {
    char owner[STORE_OWNER_SIZE]; /* the name its leases carry */
    const char *program;          /* a string constant */
    char host[256];
    int64_t pid;
    char version[96];
    char started_at[STORE_TIME_SIZE];
    int64_t beat_ms; /* clock_wall_ms of the last heartbeat written; 0: none yet */
    bool failing;    /* the last heartbeat failed (logged) */
} presence;

/* Fill *p for `owner` (store_owner_name) and `program`, started now. */
void presence_init(presence *p, const char *owner, const char *program);

/* Write the heartbeat when LEASE_RENEW_S has passed since the last one (or
 * there was none), with `in_hand` (messages held, deliveries in flight). */
void presence_beat(presence *p, store *s, int64_t in_hand);

/* Delete the row: a clean stop. */
void presence_end(const presence *p, store *s);

#endif
