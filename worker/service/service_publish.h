/* service_publish: the worker's publisher. It publishes with confirms on
 * the broker link, keeps every publish until its confirm is settled, lists
 * the confirmed events to mark in the store's outbox, and sweeps the outbox
 * for events left unconfirmed. It owns that state; the service calls these
 * functions and never touches its fields. */
#ifndef VF_SERVICE_PUBLISH_H
#define VF_SERVICE_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "amqp_link.h"
#include "amqp_refusals.h"
#include "store.h"
#include "vf_error.h"
#include "wal_sync.h"

#define CONFIRM_TIMEOUT_MS 30000
#define MAX_UNCONFIRMED 2000 /* publishes in flight before the loop waits for confirms */

/* PUB_RECHECK: a waiting task sent again (service_recheck.c); like a reply,
 * a nack costs nothing but the hint. */
typedef enum { PUB_EVENT, PUB_REPLY, PUB_RETRY, PUB_DEAD, PUB_RECHECK } publish_kind;

typedef struct service_publisher service_publisher;

/* Borrows link, store, sync and refusals (the paths the broker refused,
 * amqp_refusals.h; they must outlive it), copies owner (this
 * worker in the store's leases), and takes the link's confirm callback.
 * Returns an owned publisher, or NULL with err set (out of memory). */
service_publisher *service_publish_new(amqp_link *link, store *store, wal_sync *sync,
                                       const char *owner, amqp_refusals *refusals, vf_error *err);
/* Frees the publishes in flight and the confirmed list. NULL is a no-op. */
void service_publish_free(service_publisher *pub);

/* The link's confirm callback (user: the publisher): the publish with `tag`
 * is confirmed (ok) or failed; an unknown tag changes nothing. */
void service_publish_on_confirm(uint64_t tag, bool ok, const char *reason, void *user);

/* Publish and keep it until its confirm is settled. For PUB_RETRY and
 * PUB_DEAD, delivery_tag is the message to ack once confirmed; event_id
 * (copied) is the PUB_EVENT's event, or the PUB_REPLY's task. Returns 0, 1
 * when the broker refuses that path (amqp_refusals_blocks: nothing
 * published, nothing kept; the caller settles the message otherwise), or -1
 * with err set (then nothing is kept). The outbox sweep settles a refused
 * task request (refused_request.h) and leaves refused events where they are. */
int service_publish_tracked(service_publisher *pub, const char *exchange, const char *key,
                            const amqp_link_message *msg, publish_kind kind, uint64_t delivery_tag,
                            const char *event_id, vf_error *err);
/* Keep a publish already made under `tag` (publishes come in tag order).
 * Returns 0 or -1 (out of memory). */
int service_publish_track(service_publisher *pub, uint64_t tag, publish_kind kind,
                          uint64_t delivery_tag, const char *event_id, vf_error *err);
/* The publish kept under `tag`: 1 confirmed, 0 waiting, -1 failed; -2 when
 * none is kept under it (never made, or settled). */
int service_publish_state(const service_publisher *pub, uint64_t tag);
/* Publishes whose confirm is not settled yet. */
size_t service_publish_in_flight(const service_publisher *pub);
/* Whether a retry or dead letter is not settled yet: its message must be
 * acked (or handed back) alone, not by an ack-multiple of a later batch. */
bool service_publish_republish_waiting(const service_publisher *pub);
/* The connection is being rebuilt: what was in flight on the earlier one
 * has no confirm coming (its events stay in the outbox, its messages come
 * back from the broker). */
void service_publish_link_lost(service_publisher *pub);

/* Act on the confirms that have arrived (all of them once the link is
 * down). Returns 0, or -1 with err when acking a message failed. */
int service_publish_settle(service_publisher *pub, vf_error *err);

/* The events confirmed and not yet marked in the store, oldest first; the
 * id is borrowed, valid until the next call that settles or marks. */
size_t service_publish_confirmed_count(const service_publisher *pub);
const char *service_publish_confirmed_id(const service_publisher *pub, size_t i);
/* Inside the caller's open transaction: mark the confirmed events in the
 * outbox at `at`; *marked tells how many (the first ones listed). They stay
 * listed until service_publish_marks_committed says that transaction
 * committed. Returns 0 or -1 with err. */
int service_publish_mark_confirmed(service_publisher *pub, const char *at, size_t *marked,
                                   vf_error *err);
/* The transaction that marked the first `marked` confirmed events has
 * committed: forget them (those confirmed meanwhile stay). */
void service_publish_marks_committed(service_publisher *pub, size_t marked);
/* Marks in a transaction of their own, when no batch is coming to carry
 * them. Returns 0 or -1 with err. */
int service_publish_flush_confirmed_now(service_publisher *pub, vf_error *err);

/* Whether the outbox is due a sweep (every OUTBOX_SWEEP_INTERVAL_S). */
bool service_publish_sweep_due(const service_publisher *pub);
/* Publish the outbox's unconfirmed events (the housekeeping lease holder).
 * Returns 0, SWEEP_BROKER when the broker link failed, SWEEP_STORE when the
 * store did (a store outage is not a reason to drop the broker link), or
 * SWEEP_SYNC when a WAL sync failed (nothing more may be acked). */
#define SWEEP_BROKER (-1)
#define SWEEP_STORE (-2)
#define SWEEP_SYNC (-3)
int service_publish_sweep_outbox(service_publisher *pub, bool stopping, vf_error *err);

#endif
