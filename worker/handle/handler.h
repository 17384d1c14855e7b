/* handler: the types every message handler shares (task_handler,
 * spare_handler, task_attempt), beneath all of them. A handler decides what
 * one request message does and records it inside the caller's open store
 * transaction: `task_handler` is the context it is handed, `task_message` the
 * message as it came off the queue, `task_outcome` what the caller does after
 * the commit (ack, publish the event, retry through a delay tier, park). */
#ifndef VF_HANDLER_H
#define VF_HANDLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "hostset.h"
#include "reservations.h"
#include "store.h"

typedef struct task_handler {
    store *store;               /* borrowed, in a transaction */
    sched_engine *engine;       /* borrowed */
    const vf_config *config;    /* borrowed */
    const hostset *hosts;       /* the engine's snapshot; NULL = no inventory yet */
    const char *inventory_note; /* "inventory is stale (...)" or "" */
    int64_t (*now_ms)(void);    /* clock seam: Unix milliseconds */
    reservation_book *book;     /* borrowed; claims each reservation's host at the generation
                                   decided from. NULL: the store's only writer (tests) */
    const char *worker;         /* this worker's name (store_owner_name), in every attempt's
                                   history: several workers share a store. NULL: none */
    /* Whether the broker refuses this worker's publish of `routing_key` on
     * exchange virtflow (the service's amqp_refusals.h): a preemption, whose
     * victim's request must be published again, is then not made. NULL:
     * never refused. */
    bool (*refuses)(void *context, const char *routing_key);
    void *refuses_context;
    /* What this batch decides over, recorded with each decision
     * (provenance.h); NULL: nothing recorded (tests, dry runs). */
    const struct decision_view *view;
} task_handler;

/* The message as it came off the queue; borrowed. */
typedef struct task_message {
    const unsigned char *body; /* NUL-terminated (as amqp_link hands it out) */
    size_t body_len;
    bool too_large;
    uint64_t body_size; /* announced by the broker, for the too-large reason */
    const char *routing_key;
    const char *message_id;
    const char *reply_to;
    bool redelivered;
    int64_t attempt; /* x-virtflow-attempt; 0 = absent (first attempt) */
    /* The AMQP user_id (checked by the broker), NULL when absent: `attempt`
     * is believed only from a trusted publisher (the worker's own retries),
     * see task_attempt_open. */
    const char *user_id;
    /* x-virtflow-recheck: a waiting task sent again because room grew
     * (believed only from a trusted publisher, see task_handler.h). */
    bool recheck;
    /* The body as task_attempt_read read it (borrowed, never changed), or
     * NULL: task_attempt_open reads it. */
    json_t *parsed;
    const char *correlation_id; /* AMQP correlation_id, NULL when absent */
} task_message;

typedef enum {
    TASK_ACK = 0, /* done: ack after commit (and after the event's publish, if any) */
    TASK_RETRY,   /* republish through retry tier `delay_s` with attempt `next_attempt` */
    TASK_DEAD,    /* republish to virtflow.dead with `error`, then ack */
} task_action;

/* A reply to another task's client, published after the commit (best
 * effort, as every reply: the store has the answer): a preemption tells each
 * victim's client its placement was taken. */
typedef struct outcome_reply {
    char *to;             /* owned; the client's reply_to */
    char *correlation_id; /* owned; NULL: none */
    char *body;           /* owned; JSON text */
} outcome_reply;

/* An outbox row beyond the outcome's event, published after the commit as
 * the event is (a preemption writes the victims' events and requests). */
typedef struct outcome_message {
    char *id;   /* owned; AMQP message_id */
    char *key;  /* owned; routing key on exchange virtflow */
    char *body; /* owned; JSON text */
} outcome_message;

typedef struct task_outcome {
    task_action action;
    char task_id[REQUEST_TASK_ID_LEN]; /* "" when the message was unreadable */
    bool reserved;                     /* the engine holds a reservation under task_id */
    bool duplicate;                    /* the task was already final: nothing was recorded */
    bool released;    /* a reservation was given back (task.release): the engine no longer holds
                         it, so a rollback must take the store's whole picture again */
    bool placed;      /* an ordinary placement: logged at debug, counted in the periodic summary */
    char *event_id;   /* owned; the outbox row written, to publish after commit */
    char *event_key;  /* owned; routing key event.<type> */
    char *event_body; /* owned; JSON text */
    char *reply_body; /* owned; the result for reply_to, or NULL */
    /* Owned; where reply_body goes when the message names no reply_to but
     * the task recorded one (a request republished from the outbox: a
     * preempted task decided again). NULL: the message's reply_to. */
    char *reply_to;
    char *correlation_id;
    outcome_reply *replies; /* owned, n_replies of them: to other tasks' clients */
    size_t n_replies, cap_replies;
    outcome_message *more; /* owned, n_more of them; further outbox rows, in their order */
    size_t n_more, cap_more;
    int next_attempt;
    int delay_s;
    char *error;     /* owned; for TASK_DEAD (x-virtflow-error) and logs */
    char status[16]; /* the task's status as recorded ("" when nothing was), for metrics */
    char reason[16]; /* its reason when failed, else "" */
    /* The scheduling profile the request named ("" = default), for metrics. */
    char scheduler[REQUEST_SCHEDULER_NAME_LEN];
    /* The request's priority (queue_order.h), echoed in the result, history
     * and events only when the request or the config gives one
     * (has_priority): the common path's results stay as they were. */
    bool has_priority;
    int32_t priority;
    /* What the log's JSON lines carry as fields (log.h vf_log_ids): the
     * attempt recorded (0: none), its host ("" when none), its error
     * (shortened; "" when none). */
    int attempt;
    char node[HOST_NAME_LEN];
    char error_text[256];
    char summary[768]; /* one line for the log */
} task_outcome;

void task_outcome_close(task_outcome *outcome);

/* Decide and record one message inside the open transaction: 0 with *out
 * filled, or -1 with err when the store failed (the caller rolls the whole
 * batch back). task_handler_handle, spare_handler_handle,
 * release_handler_handle. */
typedef int (*handler_handle_fn)(task_handler *handler, const task_message *msg, task_outcome *out,
                                 vf_error *err);

/* Which handler takes a routing key, and what the worker calls its kind. */
typedef struct handler_entry {
    const char *routing_key; /* NULL: every key no other entry names */
    const char *kind;        /* "schedule", "spare", "release": the metrics' kind label */
    handler_handle_fn handle;
    /* Whether the body's priority orders the batch (queue_order.h): only
     * task.schedule bodies carry one. */
    bool ordered_by_priority;
} handler_entry;

/* The entry for `routing_key` (NULL too): spare.prepare and spare.release
 * go to the spare handler, task.release to the release handler, every
 * other key to the task handler (its own checks park what it cannot
 * read). The one place that decides; never NULL, static. */
const handler_entry *handler_for(const char *routing_key);

#endif
