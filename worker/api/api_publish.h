/* api_publish: the requests virtflow-api publishes one at a time
 * (task.release), each with a publisher confirm, on a link of their own:
 * the link, when it last heard from the broker, and the outcome of the
 * publish in flight. task.schedule goes through the intake's link
 * (api_intake.h), whose groups are recorded, published and taken back
 * together. One thread at a time (the server's). */
#ifndef VF_API_PUBLISH_H
#define VF_API_PUBLISH_H

#include "api_broker.h"
#include "config.h"
#include "vf_error.h"

typedef struct api_publisher api_publisher;

/* A publisher whose link connects on demand through `broker` (borrowed,
 * outlives it). NULL with err. */
api_publisher *api_publisher_new(const vf_config *config, api_broker *broker, vf_error *err)
    __attribute__((warn_unused_result));

/* NULL is a no-op. Before the broker it was made with. */
void api_publisher_free(api_publisher *p);

/* Connect the link if it is down (or idle past amqp.heartbeat_s, so
 * probably closed by the broker). 0, or -1 with err. */
int api_publisher_ready(api_publisher *p, vf_error *err) __attribute__((warn_unused_result));

/* api_publish_to (api_internal.h) on this publisher. */
int api_publisher_send(api_publisher *p, const char *routing_key, const char *message_id,
                       const char *task_id, const char *body, vf_error *err)
    __attribute__((warn_unused_result));

#endif
