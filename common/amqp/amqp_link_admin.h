/* amqp_link_admin: what virtflowctl asks of the broker besides publishing
 * (submit --wait, dead, stats), on an amqp_link's connection. The programs
 * that run (worker, relay) never call these. */
#ifndef VF_AMQP_LINK_ADMIN_H
#define VF_AMQP_LINK_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "amqp_link.h"

/* A private queue for replies (reply_to): server-named, exclusive and
 * auto-delete, so it disappears with this connection, and consumed at once
 * (manual acks; replies come out of amqp_link_next like any delivery).
 * Unlike amqp_link_consume it is NOT restarted by a later connect: a reply
 * queue cannot outlive its connection, so after a failure the caller must
 * declare a new one (and ask again). Writes the queue's name, NUL-terminated,
 * into name. Returns 0, or -1 with err (VF_EUNAVAILABLE, VF_EINVAL when
 * `size` cannot hold the name). */
int amqp_link_reply_queue(amqp_link *link, char *name, size_t size, vf_error *err)
    __attribute__((warn_unused_result));

/* Bind `queue` (say a reply queue, to watch events) to `exchange` with
 * routing key `key`. Returns 0, or -1 with err (VF_EUNAVAILABLE). */
int amqp_link_bind(amqp_link *link, const char *queue, const char *exchange, const char *key,
                   vf_error *err) __attribute__((warn_unused_result));

/* Take one message from `queue` (basic.get, manual ack) to inspect it
 * without a consumer. The message stays unacked on this connection: settle it
 * with amqp_link_ack (gone) or amqp_link_reject (requeue=true puts it back);
 * messages left unsettled go back to the queue when the connection closes.
 * While unsettled a message is not handed out again, so successive calls walk
 * through the queue. Returns 1 with *out filled (owned:
 * amqp_link_delivery_close) and *remaining (optional) = messages left after
 * it, 0 when the queue is empty, -1 with err (VF_EINVAL: no such queue, which
 * closes the channel and so disconnects the link; VF_EUNAVAILABLE). */
int amqp_link_get(amqp_link *link, const char *queue, amqp_link_delivery *out, uint32_t *remaining,
                  vf_error *err) __attribute__((warn_unused_result));

/* Messages ready in `queue` and its consumer count, by passive declare on a
 * side channel (a missing queue does not disturb publishing or consuming).
 * Returns 0, or -1 with err (VF_EINVAL: no such queue; VF_EUNAVAILABLE). */
int amqp_link_queue_depth(amqp_link *link, const char *queue, uint32_t *messages,
                          uint32_t *consumers, vf_error *err) __attribute__((warn_unused_result));

#endif
