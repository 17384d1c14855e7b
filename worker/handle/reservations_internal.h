/* reservations_internal: what reservations.c (the picture: holding the
 * store's reservations, following the other writers) and
 * reservation_claims.c (the batch's claims) share of the reservation book.
 * Only those two include it. */
#ifndef VF_RESERVATIONS_INTERNAL_H
#define VF_RESERVATIONS_INTERNAL_H

#include "reservations.h"
#include "store_claims.h"
#include "store_reservations.h"

typedef struct reservation_holder {
    sched_engine *engine;
    const char *clock;   /* the reservation clock */
    const char *view_at; /* the snapshot's fetch time */
    long count;
    vf_error *err;
    bool failed;
} reservation_holder;

typedef struct known_host {
    char node[HOST_NAME_LEN];
    int64_t generation; /* the store's, when the engine's picture of it was taken */
} known_host;

/* A claim waiting for the end of the batch (PostgreSQL), with copies of
 * what it points to. */
typedef struct queued_claim {
    store_claim claim;
    char *texts; /* owned: the strings claim points to, in one allocation */
} queued_claim;

typedef struct claim_queue {
    queued_claim *items;
    size_t n, cap;
} claim_queue;

/* The snapshot's guests, by host: which bound reservations a claim must
 * not count again (store_claim_host.shown). Built again when the engine's
 * snapshot changes. */
typedef struct guest_index {
    const hostset *of;
    size_t *start;  /* n_hosts + 1 */
    int64_t *vmids; /* grouped by host */
} guest_index;

struct reservation_book {
    sched_engine *engine; /* borrowed */
    store *claims;        /* borrowed; NULL: the batches' own store */
    known_host *hosts;    /* sorted by node */
    size_t n_hosts, cap_hosts;
    int64_t seen_seq; /* host generations up to this changed_seq are in the picture */
    /* Generations are numbered in one order and committed in another on
     * PostgreSQL: each catch-up reads again from the number seen a second
     * or two before, so that a release committed late is not missed. */
    int64_t lag_seq[2];
    int64_t lag_shifted_ms; /* monotonic */
    int64_t seen_id;        /* reservations recorded up to this id are in the picture */
    bool reload_all;        /* take the whole store's picture again at the next catch-up */
    /* The snapshot time the picture was taken for (store text). A newer one
     * counts a subset of what it held (schema/009): the engine's expiry and
     * snapshot switch drop the rest. An older one may count more. */
    char view_at[STORE_TIME_SIZE];
    char clock[STORE_TIME_SIZE]; /* the reservation clock of the last catch-up */
    claim_queue queued;          /* PostgreSQL: claimed at the end of the batch */
    claim_queue with_commit;     /* PostgreSQL: claimed with the commit, all or none */
    int64_t *recorded;           /* reservations the open batch's queued claims recorded */
    size_t n_recorded, cap_recorded;
    int64_t *own; /* reservations this book recorded after seen_id: the feed skips them */
    size_t n_own, cap_own;
    guest_index guests;
    reservation_claim_stats stats;
};

/* Hold one counted reservation row in h->engine (a store listing callback:
 * 0 to go on, 1 with h->failed and h->err set). */
int reservations_hold_row(const store_reservation *row, void *ctx);

/* Whether the engine holds this very reservation already (our own claim,
 * or one a host's reload or a missed claim brought). */
bool reservations_held_already(const sched_engine *engine, const store_reservation *row);

/* Free a queue's claims, keeping its array. */
void reservation_queue_clear(claim_queue *q);
void reservation_guests_free(guest_index *g);

#endif
