/* store_dead_letters: a record of the messages parked in virtflow.dead, kept
 * by the programs that park them, so that readers (GET /v1/dead-letters) never
 * read the queue itself: a basic.get with requeue counts a delivery against
 * each message of a quorum queue and hides it from other readers while held
 * (docs/api.md "Dead letters"). Part of the store: what store.h says about
 * durability, timestamps, strings, errors, threads and listing callbacks holds
 * here too. */
#ifndef VF_STORE_DEAD_LETTERS_H
#define VF_STORE_DEAD_LETTERS_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* How much of a body the record keeps, before escaping (virtflowctl dead
 * list shows as much). */
#define STORE_DEAD_LETTER_EXCERPT 120

/* What a parker knows of one message; borrowed. */
typedef struct store_dead_letter_park {
    const char *routing_key;   /* the original one: required */
    const char *message_id;    /* NULL: none */
    const char *task_id;       /* NULL or "": none */
    const char *reason;        /* why it is parked: required */
    const char *parked_by;     /* "worker" or "relay" */
    const char *parked_at;     /* store time */
    const unsigned char *body; /* NULL when not read (too large) */
    size_t body_len;           /* bytes at body */
    uint64_t body_bytes;       /* the whole body's size */
} store_dead_letter_park;

/* Record that a message is parked (again). A message is known by its routing
 * key and message_id, else by its routing key and the SHA-256 of its body:
 * parking it again (a park whose publish was not confirmed, handled again;
 * or a redriven message parked anew) updates its one row, which is parked
 * again from then on. On PostgreSQL inside a deferred transaction the write
 * is deferred. Returns 0 or -1. */
int store_dead_letter_record(store *s, const store_dead_letter_park *park, vf_error *err)
    __attribute__((warn_unused_result));

/* When the message (routing key, message_id, body as for
 * store_dead_letter_record) was last parked, into parked_at; "" when the
 * store has no record of it. Returns 0 or -1. */
int store_dead_letter_parked_at(store *s, const char *routing_key, const char *message_id,
                                const unsigned char *body, size_t body_len,
                                char parked_at[STORE_TIME_SIZE], vf_error *err)
    __attribute__((warn_unused_result));

/* virtflowctl dead redrive moved the message back to work at `now`: marked
 * redriven only while its record is still the park `parked_at` (read with
 * store_dead_letter_parked_at before the move), so that a worker which
 * parked the message anew meanwhile (a redriven message that fails again)
 * is not overwritten. Returns the number of rows marked (0: no such record,
 * or parked anew), or -1. */
int store_dead_letter_redriven(store *s, const char *routing_key, const char *message_id,
                               const unsigned char *body, size_t body_len, const char *parked_at,
                               const char *now, vf_error *err) __attribute__((warn_unused_result));

/* One row, borrowed during the callback. */
typedef struct store_dead_letter {
    int64_t id;
    const char *routing_key;
    const char *message_id; /* NULL: none */
    const char *task_id;    /* NULL: none */
    const char *reason;
    const char *parked_by;
    const char *parked_at;
    int64_t body_bytes;
    const char *body_excerpt; /* printable ASCII, other bytes as \xNN */
    const char *redriven_at;  /* NULL while parked */
} store_dead_letter;

typedef int (*store_dead_letter_fn)(const store_dead_letter *row, void *ctx);

typedef struct store_dead_letter_filter {
    int parked; /* 1: only those still parked, 0: only redriven ones, -1: both */
    /* A keyset page: the rows after (older than) this one, as the next page
     * of a list whose last row it was. NULL after_parked_at: from the newest. */
    const char *after_parked_at;
    int64_t after_id;
    int limit; /* 0: no limit */
} store_dead_letter_filter;

/* Call fn for each row matching the filter, newest parked first (parked_at,
 * then id, descending). */
int store_dead_letter_list(store *s, const store_dead_letter_filter *filter,
                           store_dead_letter_fn fn, void *ctx, vf_error *err)
    __attribute__((warn_unused_result));

#endif
